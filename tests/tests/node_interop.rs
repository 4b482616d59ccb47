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

/// Node's `QueueEvents` see the children an Airlock handler invoked as
/// ordinary jobs of their queue, each ending on its own, and Node's
/// producer sees the parent complete with the children's ends.
#[tokio::test]
async fn node_queue_events_see_an_invokes_children_end_on_their_own() {
    let redis = RedisServer::start();
    let admin = Admin::connect(&redis.url()).await;
    admin.deploy("work-probe", "work-probe").await;
    admin
        .bind(
            "parents",
            "work-probe",
            json!({"starts": {"queues": ["kids"]}}),
        )
        .await;
    admin.bind("kids", "work-probe", json!({})).await;
    let _host = HostProcess::start(
        &redis.url(),
        HostOptions {
            id: "interop".into(),
            ..HostOptions::default()
        },
    );

    let jobs = json!([{"name": "order", "jobId": "order-1", "data": {"invoke": [
        {"queue": "kids", "name": "charge", "data": {"echo": {"charged": 5}}},
        {"queue": "kids", "name": "refuse", "data": {"fatal": true}},
    ]}}]);
    let node = |script: &str, args: &[&str]| {
        let out = Command::new("node")
            .arg(interop_script(script))
            .args(["--redis", &redis.url(), "--prefix", "bull"])
            .args(args)
            .output()
            .expect("run node");
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "{script} failed: {}\n{stdout}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).expect("JSON line"))
            .collect::<Vec<Value>>()
    };
    let parent = node(
        "producer.js",
        &["--queue", "parents", "--jobs", &jobs.to_string()],
    );
    assert_eq!(parent.len(), 1, "{parent:?}");
    assert_eq!(parent[0]["event"], "completed", "{parent:?}");
    let ends = &parent[0]["returnvalue"]["ends"];
    assert_eq!(ends[0], json!({"value": {"charged": 5}}), "{ends}");
    assert_eq!(ends[1]["failed"]["kind"], "guest_fatal", "{ends}");

    let heard = node("listener.js", &["--queue", "kids", "--count", "2"]);
    let completed: Vec<&Value> = heard.iter().filter(|e| e["event"] == "completed").collect();
    let failed: Vec<&Value> = heard.iter().filter(|e| e["event"] == "failed").collect();
    assert_eq!((completed.len(), failed.len()), (1, 1), "{heard:?}");
    assert_eq!(
        completed[0]["returnvalue"],
        json!({"charged": 5}),
        "{heard:?}"
    );
    assert!(
        failed[0]["failedReason"]
            .as_str()
            .is_some_and(|r| r.starts_with("guest_fatal: ")),
        "{heard:?}"
    );
    // Each is a job of `kids` whose parent is the order.
    for event in &heard {
        let id = event["jobId"].as_str().unwrap();
        let child = admin.job("kids", id).await.expect("a job of kids");
        assert!(
            child
                .parent_key
                .as_deref()
                .is_some_and(|k| k.ends_with(":parents:order-1")),
            "{id}: {:?}",
            child.parent_key
        );
    }
}

/// Jobs Node's BullMQ adds to a queue bound with `batch` run as one batch,
/// and Node's `QueueEvents` hear each complete (or fail) on its own, with
/// its own result.
#[tokio::test]
async fn node_queue_events_see_each_job_of_a_batch_end_on_its_own() {
    let redis = RedisServer::start();
    let admin = Admin::connect(&redis.url()).await;
    admin.deploy("batch-probe", "batch-probe").await;
    admin
        .bind(
            "rows",
            "batch-probe",
            json!({"batch": {"size": 6, "timeoutMs": 5000}}),
        )
        .await;
    let _host = HostProcess::start(
        &redis.url(),
        HostOptions {
            id: "interop".into(),
            ..HostOptions::default()
        },
    );
    let mut jobs: Vec<Value> = (0..5)
        .map(|i| json!({"name": "row", "data": {"row": i}}))
        .collect();
    jobs.push(json!({"name": "row", "data": {"outcome": "fatal"}}));
    let out = Command::new("node")
        .arg(interop_script("producer.js"))
        .args([
            "--redis",
            &redis.url(),
            "--prefix",
            "bull",
            "--queue",
            "rows",
        ])
        .args(["--jobs", &Value::from(jobs).to_string(), "--attempts", "1"])
        .output()
        .expect("run node");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "producer.js failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let heard: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    let completed: Vec<&Value> = heard.iter().filter(|e| e["event"] == "completed").collect();
    let failed: Vec<&Value> = heard.iter().filter(|e| e["event"] == "failed").collect();
    assert_eq!((completed.len(), failed.len()), (5, 1), "{heard:?}");
    for event in &completed {
        let result = &event["returnvalue"];
        assert_eq!(result["id"], event["jobId"], "its own result: {event}");
        assert_eq!(
            result["batch"].as_array().map(Vec::len),
            Some(6),
            "all six ran as one batch: {event}"
        );
    }
    assert!(
        failed[0]["failedReason"]
            .as_str()
            .is_some_and(|r| r.starts_with("guest_fatal: ") && r.contains("asked to fail")),
        "{heard:?}"
    );
}
