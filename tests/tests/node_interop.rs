//! Interop with the real Node `bullmq` package: jobs added by Node's
//! `Queue.add` run on an Airlock host, and Node's `QueueEvents` /
//! `job.waitUntilFinished` see their outcomes.

use std::process::Command;

use airlock_tests::host::{Admin, HostOptions, HostProcess};
use airlock_tests::interop_script;
use airlock_tests::redis_server::RedisServer;
use serde_json::{Value, json};

#[tokio::test]
async fn node_bullmq_producer_sees_airlock_results() {
    let redis = RedisServer::start();
    let admin = Admin::connect(&redis.url()).await;
    admin.deploy("payment-webhook", "payment-webhook").await;
    admin.bind("payments", "payment-webhook", json!({})).await;
    let _host = HostProcess::start(
        &redis.url(),
        HostOptions {
            id: "interop".into(),
            ..HostOptions::default()
        },
    );

    // The seeds' payment events, added by Node with the seeds' options
    // (attempts 5, exponential backoff 2 s).
    let jobs = json!([
        {"name": "payment.succeeded", "data": {"transactionId": "tx_1001", "amount": 49.99, "currency": "EUR"}, "jobId": "evt-1001"},
        {"name": "payment.succeeded", "data": {"transactionId": "tx_1002", "amount": 5}},
        {"name": "payment.succeeded", "data": {"transactionId": "tx_1003", "amount": 0}, "jobId": "evt-1003"},
        {"name": "payment.succeeded", "data": {"transactionId": "tx_1004", "amount": -20}},
    ]);
    let out = Command::new("node")
        .arg(interop_script("producer.js"))
        .args([
            "--redis",
            &redis.url(),
            "--prefix",
            "bull",
            "--queue",
            "payments",
        ])
        .args(["--jobs", &jobs.to_string(), "--timeout-ms", "60000"])
        .output()
        .expect("run node");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "producer failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let outcomes: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    assert_eq!(outcomes.len(), 4, "{stdout}");

    let by_tx = |tx: &str| -> Value {
        outcomes
            .iter()
            .find(|o| {
                o["returnvalue"]["ledgerRecordId"] == format!("led_{tx}")
                    || o["jobId"] == format!("evt-{}", &tx[3..])
            })
            .cloned()
            .unwrap_or_else(|| panic!("no outcome for {tx}: {stdout}"))
    };
    let ok = by_tx("tx_1001");
    assert_eq!(ok["event"], "completed");
    assert_eq!(ok["jobId"], "evt-1001");
    assert_eq!(
        ok["returnvalue"],
        json!({"processed": true, "ledgerRecordId": "led_tx_1001"})
    );
    assert_eq!(by_tx("tx_1002")["event"], "completed");

    let failed: Vec<&Value> = outcomes.iter().filter(|o| o["event"] == "failed").collect();
    assert_eq!(failed.len(), 2, "{stdout}");
    for f in failed {
        assert_eq!(f["failedReason"], "guest_fatal: Invalid transaction amount");
    }
    // A fatal guest error is final even with 5 attempts: one attempt made.
    let job = admin.job("payments", "evt-1003").await.unwrap();
    assert_eq!(job.attempts_made, 1);
}
