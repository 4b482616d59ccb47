//! The dashboard (`/ui`) end to end in a real browser: Debian's headless
//! Chromium driven by `playwright-core` (`tests/ui/dashboard.mjs`, its npm
//! packages pinned by `tests/ui/package-lock.json`), against a real host,
//! real Redis and real guests.
//!
//! This file builds the fleet the browser looks at — a payment queue whose
//! ledger answers slowly (so a job is seen running), a hostile queue with
//! a small fuel budget, a per-key-limited queue, the refund workflow, a
//! queue of batches — and
//! hands the script its address and tokens. The script logs in, watches,
//! acts, checks what it sees against the API, and saves a screenshot of
//! every view into `target/ui-screenshots/` (not committed).
//!
//! With `AIRLOCK_DASHBOARD_HOLD=1` the fixture is printed and kept up
//! (until the test process is killed) instead of running the script: for
//! working on the UI.

use airlock_tests::api::Api;
use airlock_tests::host::tokens;
use airlock_tests::mock_gateway::MockGateway;
use serde_json::json;

/// Where Debian's `chromium` package puts the browser.
const CHROMIUM: &str = "/usr/bin/chromium";

#[tokio::test]
async fn the_dashboard_in_a_real_browser() {
    let script = airlock_tests::ui_script("dashboard.mjs");
    let chromium = std::env::var("AIRLOCK_CHROMIUM").unwrap_or_else(|_| CHROMIUM.into());
    assert!(
        std::path::Path::new(&chromium).exists(),
        "no Chromium at {chromium}: install Debian's `chromium` package (CI does), or set AIRLOCK_CHROMIUM"
    );

    let gateway = MockGateway::start_with_ledger_delay("unused", 1500);
    let api = Api::start_with(&[
        "--egress-allow",
        &gateway.url,
        "--egress-allow-network",
        "127.0.0.1/32",
        // Seals producers, which batches are grouped by.
        "--secrets-key",
        "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
    ]);
    // A changed version of the payment handler (amounts in cents), uploaded
    // first: the setup's upload makes the original current again, and the
    // replay step compares a recorded job against this one.
    let cents = api
        .upload_version("payment-webhook", "payment-webhook-cents")
        .await;
    api.setup(
        "payments",
        "payment-webhook",
        json!({
            "egress": [gateway.url],
            "config": {"LEDGER_URL": gateway.url},
            "recordTranscripts": true,
        }),
    )
    .await;
    api.setup(
        "hostile",
        "hostile-infinite-loop",
        json!({"limits": {"fuel": 50_000_000}}),
    )
    .await;
    api.setup(
        "keyed",
        "hostile-infinite-loop",
        json!({
            "metered": false,
            "concurrency": 4,
            "limits": {"timeoutMs": 120_000},
            "keyConcurrency": {"key": "$.customerId", "limit": 1}
        }),
    )
    .await;
    api.setup(
        "refunds",
        "refund-request",
        json!({
            "egress": [gateway.url],
            "config": {"APPROVAL_URL": gateway.url},
            "recordTranscripts": true,
        }),
    )
    .await;

    api.setup(
        "rows",
        "batch-probe",
        json!({"batch": {"size": 3, "timeoutMs": 10_000}, "recordTranscripts": true}),
    )
    .await;

    let screenshots = airlock_tests::target_dir().join("ui-screenshots");
    std::fs::create_dir_all(&screenshots).unwrap();
    let env = [
        ("AIRLOCK_URL", api.url.clone()),
        ("ADMIN_TOKEN", tokens::ADMIN.to_string()),
        ("PRODUCER_TOKEN", tokens::PRODUCER.to_string()),
        ("OTHER_PRODUCER_TOKEN", tokens::OTHER_PRODUCER.to_string()),
        ("READER_TOKEN", tokens::READER.to_string()),
        ("SCREENSHOT_DIR", screenshots.display().to_string()),
        ("CENTS_DIGEST", cents),
        ("CHROMIUM", chromium),
        ("GATEWAY_URL", gateway.url.clone()),
    ];
    if std::env::var("AIRLOCK_DASHBOARD_HOLD").is_ok() {
        for (name, value) in &env {
            println!("{name}={value}");
        }
        println!("holding the fixture; kill this process to end it");
        std::future::pending::<()>().await;
    }
    let status = tokio::process::Command::new("node")
        .arg(&script)
        .envs(env)
        .status()
        .await
        .expect("node runs the dashboard script");
    assert!(status.success(), "{} failed: {status}", script.display());
}
