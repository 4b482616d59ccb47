//! `airlock run`, the local runner, through the real binary.

use std::process::Command;

use airlock_tests::{airlock_bin, guest_path};

fn airlock_run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(airlock_bin())
        .arg("run")
        .args(args)
        .env(
            "AIRLOCK_CACHE_DIR",
            std::env::temp_dir().join("airlock-cli-test-cache"),
        )
        .output()
        .expect("run airlock");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_good_job_prints_progress_logs_result_and_measurements() {
    let handler = guest_path("payment-webhook");
    let (code, stdout, _) = airlock_run(&[
        handler.to_str().unwrap(),
        "--data",
        r#"{"transactionId":"tx_7","amount":3}"#,
    ]);
    assert_eq!(code, 0, "{stdout}");
    assert!(stdout.contains("progress  10"), "{stdout}");
    assert!(stdout.contains("progress  100"), "{stdout}");
    assert!(
        stdout.contains(r#"result    {"processed":true,"ledgerRecordId":"led_tx_7"}"#),
        "{stdout}"
    );
    assert!(stdout.contains("measured  fuel "), "{stdout}");
}

#[test]
fn failures_exit_with_a_code_per_kind() {
    let looping = guest_path("hostile-infinite-loop");
    let (code, stdout, _) = airlock_run(&[looping.to_str().unwrap(), "--fuel", "1000000"]);
    assert_eq!(code, 4, "{stdout}");
    assert!(stdout.contains("fuel_exhausted"), "{stdout}");

    let (code, stdout, _) = airlock_run(&[
        looping.to_str().unwrap(),
        "--fuel",
        "off",
        "--timeout",
        "100ms",
    ]);
    assert_eq!(code, 6, "{stdout}");
    assert!(stdout.contains("timeout"), "{stdout}");

    let bomb = guest_path("hostile-memory-bomb");
    let (code, stdout, _) = airlock_run(&[bomb.to_str().unwrap(), "--memory", "8MiB"]);
    assert_eq!(code, 5, "{stdout}");

    let payment = guest_path("payment-webhook");
    let (code, stdout, _) = airlock_run(&[
        payment.to_str().unwrap(),
        "--data",
        r#"{"transactionId":"t","amount":0}"#,
        "--json",
    ]);
    assert_eq!(code, 3, "{stdout}");
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(doc["failure"]["kind"], "guest_fatal");
    assert_eq!(doc["failure"]["message"], "Invalid transaction amount");
}

#[test]
fn bad_flags_are_named() {
    let payment = guest_path("payment-webhook");
    let (code, _, stderr) = airlock_run(&[payment.to_str().unwrap(), "--memory", "lots"]);
    assert_eq!(code, 1);
    assert!(stderr.contains("--memory"), "{stderr}");

    let (code, _, stderr) = airlock_run(&[payment.to_str().unwrap(), "--memory", "64GiB"]);
    assert_eq!(code, 1);
    assert!(
        stderr.contains("--memory") && stderr.contains("maximum"),
        "{stderr}"
    );

    let (code, _, stderr) = airlock_run(&[payment.to_str().unwrap(), "--data", "{nope"]);
    assert_eq!(code, 1);
    assert!(stderr.contains("--data"), "{stderr}");

    let (code, _, stderr) = airlock_run(&["/nonexistent.wasm"]);
    assert_eq!(code, 1);
    assert!(stderr.contains("/nonexistent.wasm"), "{stderr}");
}
