//! The queue host end to end: a real `redis-server`, real `airlock serve`
//! processes, real guests, BullMQ semantics checked through BullMQ's own
//! fields.

use std::time::Duration;

use airlock::queue::{JobState, NewJob};
use airlock_tests::host::{Admin, HostOptions, HostProcess};
use airlock_tests::redis_server::{RedisOptions, RedisServer};
use serde_json::json;

const FINISH: Duration = Duration::from_secs(60);

fn host(redis: &RedisServer, id: &str) -> HostProcess {
    HostProcess::start(
        &redis.url(),
        HostOptions {
            id: id.into(),
            ..HostOptions::default()
        },
    )
}

#[tokio::test]
async fn a_job_completes_with_progress_logs_and_measurements() {
    let redis = RedisServer::start();
    let admin = Admin::connect(&redis.url()).await;
    let digest = admin.deploy("payment-webhook", "payment-webhook").await;
    admin.bind("payments", "payment-webhook", json!({})).await;
    let _host = host(&redis, "h1");

    let id = admin
        .enqueue(
            "payments",
            "payment",
            json!({"transactionId": "tx_42", "amount": 10}),
            json!({}),
        )
        .await;
    let job = admin.wait_recorded("payments", &id, FINISH).await;
    assert_eq!(job.state, JobState::Completed, "{job:#?}");
    assert_eq!(
        job.returnvalue,
        Some(json!({"processed": true, "ledgerRecordId": "led_tx_42"}))
    );
    assert_eq!(job.progress, json!(100));
    assert_eq!(job.handler_digest.as_deref(), Some(digest.as_str()));
    assert_eq!(job.processed_by_host.as_deref(), Some("h1"));
    assert!(job.metrics.fuel_used.unwrap() > 0);
    assert!(job.metrics.peak_memory_bytes.unwrap() > 0);
    assert!(job.metrics.wall_time_ms.is_some());

    let logs = admin.logs("payments", &id).await;
    assert!(
        logs.iter()
            .any(|l| l == "[info] processing transaction tx_42 for 10 USD"),
        "{logs:?}"
    );
    // A successful run's measurements live in the job hash (above); only
    // runs that fail or sleep add a summary line to the log.
    assert!(
        !logs.iter().any(|l| l.starts_with("[airlock] run")),
        "{logs:?}"
    );
}

#[tokio::test]
async fn a_flood_of_empty_log_lines_stores_only_the_capped_lines() {
    let redis = RedisServer::start();
    let admin = Admin::connect(&redis.url()).await;
    admin
        .deploy("hostile-empty-log-flood", "hostile-empty-log-flood")
        .await;
    admin
        .bind("flood", "hostile-empty-log-flood", json!({}))
        .await;
    let _host = host(&redis, "h1");
    let id = admin.enqueue("flood", "f", json!({}), json!({})).await;
    let job = admin.wait_finished("flood", &id, FINISH).await;
    assert_eq!(job.state, JobState::Completed, "{job:#?}");
    assert_eq!(job.returnvalue, Some(json!(1_000_000)));
    let stored: u64 = redis
        .cli(&["LLEN", &format!("bull:flood:{id}:logs")])
        .trim()
        .parse()
        .unwrap();
    let cap = u64::from(airlock::sandbox::Limits::default().max_log_lines);
    assert!(
        stored > 0 && stored <= cap,
        "{stored} log entries stored for a million empty lines (cap {cap})"
    );
}

#[tokio::test]
async fn retries_follow_attempts_and_exponential_backoff() {
    let redis = RedisServer::start();
    let admin = Admin::connect(&redis.url()).await;
    admin.deploy("flaky", "flaky").await;
    admin.bind("flaky", "flaky", json!({})).await;
    let _host = host(&redis, "h1");

    let id = admin
        .enqueue(
            "flaky",
            "flaky",
            json!({"succeedOnAttempt": 3}),
            json!({"attempts": 5, "backoff": {"type": "exponential", "delay": 400}}),
        )
        .await;
    let job = admin.wait_finished("flaky", &id, FINISH).await;
    assert_eq!(job.state, JobState::Completed, "{job:#?}");
    assert_eq!(job.returnvalue, Some(json!({"succeededOnAttempt": 3})));
    assert_eq!(job.attempts_made, 3);
    // Each earlier attempt keeps its own reason in the run history, where
    // BullMQ keeps none once the job completed.
    let timeline = admin.queues.timeline("flaky", &id).await.unwrap();
    let reasons: Vec<(Option<u32>, &str, Option<&str>)> = timeline
        .runs
        .iter()
        .map(|r| (r.attempt, r.end.as_str(), r.reason.as_deref()))
        .collect();
    assert_eq!(
        reasons,
        [
            (Some(1), "guest_retry", Some("attempt 1 failed on purpose")),
            (Some(2), "guest_retry", Some("attempt 2 failed on purpose")),
            (Some(3), "completed", None),
        ]
    );

    // The guest logs each attempt with its clock: gaps follow 400 ms * 2^n.
    let times: Vec<u64> = admin
        .logs("flaky", &id)
        .await
        .iter()
        .filter_map(|l| l.strip_prefix("[info] attempt "))
        .filter_map(|l| l.rsplit(" at ").next()?.parse().ok())
        .collect();
    assert_eq!(times.len(), 3, "three attempts logged");
    let first_gap = times[1] - times[0];
    let second_gap = times[2] - times[1];
    assert!(first_gap >= 400, "first backoff {first_gap} ms < 400 ms");
    assert!(second_gap >= 800, "second backoff {second_gap} ms < 800 ms");
    // Loose upper bounds: a shared machine is slow, never early.
    assert!(
        first_gap < 5_000 && second_gap < 5_000,
        "{first_gap} {second_gap}"
    );

    // Out of attempts: the job fails with the guest's reason.
    let id = admin
        .enqueue(
            "flaky",
            "flaky",
            json!({}),
            json!({"attempts": 2, "backoff": {"type": "fixed", "delay": 100}}),
        )
        .await;
    let job = admin.wait_finished("flaky", &id, FINISH).await;
    assert_eq!(job.state, JobState::Failed);
    assert_eq!(job.attempts_made, 2);
    assert_eq!(
        job.failed_reason.as_deref(),
        Some("guest_retry: attempt 2 failed on purpose")
    );
    assert_eq!(job.failure_kind.as_deref(), Some("guest_retry"));
}

#[tokio::test]
async fn fatal_errors_and_sandbox_kills_fail_without_retry() {
    let redis = RedisServer::start();
    let admin = Admin::connect(&redis.url()).await;
    admin.deploy("payment-webhook", "payment-webhook").await;
    admin.deploy("spin", "hostile-infinite-loop").await;
    admin.deploy("bomb", "hostile-memory-bomb").await;
    admin.bind("payments", "payment-webhook", json!({})).await;
    admin
        .bind("spin", "spin", json!({"limits": {"fuel": 20_000_000}}))
        .await;
    admin
        .bind("bomb", "bomb", json!({"limits": {"memoryBytes": 8 << 20}}))
        .await;
    let _host = host(&redis, "h1");
    let retrying = json!({"attempts": 3, "backoff": {"type": "fixed", "delay": 50}});

    let id = admin
        .enqueue(
            "payments",
            "payment",
            json!({"transactionId": "t", "amount": -3}),
            retrying.clone(),
        )
        .await;
    let job = admin.wait_finished("payments", &id, FINISH).await;
    assert_eq!(job.state, JobState::Failed);
    assert_eq!(job.attempts_made, 1, "a fatal error is never retried");
    assert_eq!(
        job.failed_reason.as_deref(),
        Some("guest_fatal: Invalid transaction amount")
    );
    let logs = admin.logs("payments", &id).await;
    assert!(
        logs.iter()
            .any(|l| l.starts_with("[airlock] run failed (guest_fatal): fuel ")),
        "{logs:?}"
    );

    for (queue, kind) in [("spin", "fuel_exhausted"), ("bomb", "memory_limit")] {
        let id = admin.enqueue(queue, "x", json!({}), retrying.clone()).await;
        let job = admin.wait_finished(queue, &id, FINISH).await;
        assert_eq!(job.state, JobState::Failed, "{queue}");
        assert_eq!(job.attempts_made, 1, "{queue}: a sandbox kill is final");
        assert_eq!(job.failure_kind.as_deref(), Some(kind));
        assert!(
            job.failed_reason
                .as_deref()
                .unwrap()
                .starts_with(&format!("{kind}: ")),
            "{:?}",
            job.failed_reason
        );
    }

    // The host survived all of it.
    let id = admin
        .enqueue(
            "payments",
            "payment",
            json!({"transactionId": "ok", "amount": 1}),
            json!({}),
        )
        .await;
    let job = admin.wait_finished("payments", &id, FINISH).await;
    assert_eq!(job.state, JobState::Completed);
}

#[tokio::test]
async fn delayed_prioritized_and_lifo_jobs_run_in_bullmq_order() {
    let redis = RedisServer::start();
    let admin = Admin::connect(&redis.url()).await;
    admin.deploy("noop", "noop").await;
    admin
        .bind("ordered", "noop", json!({"concurrency": 1}))
        .await;

    // Jobs added while the queue is paused start in BullMQ's order on resume.
    admin.queues.pause("ordered").await.unwrap();
    let low = admin
        .enqueue("ordered", "low", json!({}), json!({"priority": 10}))
        .await;
    let high = admin
        .enqueue("ordered", "high", json!({}), json!({"priority": 1}))
        .await;
    let fifo_1 = admin
        .enqueue("ordered", "fifo-1", json!({}), json!({}))
        .await;
    let fifo_2 = admin
        .enqueue("ordered", "fifo-2", json!({}), json!({}))
        .await;
    let lifo = admin
        .enqueue("ordered", "lifo", json!({}), json!({"lifo": true}))
        .await;
    let delayed = admin
        .enqueue("ordered", "delayed", json!({}), json!({"delay": 1500}))
        .await;
    assert_eq!(
        admin.job("ordered", &delayed).await.unwrap().state,
        JobState::Delayed
    );

    let _host = host(&redis, "h1");
    admin.queues.resume("ordered").await.unwrap();
    let mut finished = Vec::new();
    for id in [&low, &high, &fifo_1, &fifo_2, &lifo, &delayed] {
        let job = admin.wait_finished("ordered", id, FINISH).await;
        assert_eq!(job.state, JobState::Completed);
        finished.push((
            job.processed_on.unwrap(),
            job.name.clone(),
            job.timestamp,
            job.delay,
        ));
    }
    finished.sort();
    let order: Vec<&str> = finished
        .iter()
        .map(|(_, name, _, _)| name.as_str())
        .collect();
    // BullMQ: the wait list (LIFO first, then FIFO) before prioritized jobs
    // (by priority), the delayed job once due.
    assert_eq!(
        order,
        ["lifo", "fifo-1", "fifo-2", "high", "low", "delayed"]
    );
    let (processed, _, enqueued, _) = finished.last().unwrap();
    assert!(processed - enqueued >= 1500, "the delayed job ran early");
}

#[tokio::test]
async fn a_custom_job_id_deduplicates() {
    let redis = RedisServer::start();
    let admin = Admin::connect(&redis.url()).await;
    admin.deploy("noop", "noop").await;
    admin.bind("dedup", "noop", json!({})).await;
    let first = admin
        .queues
        .add(
            "dedup",
            airlock::queue::NewJob {
                name: "n".into(),
                data: json!({"v": 1}),
                opts: serde_json::from_value(json!({"jobId": "order-7"})).unwrap(),
                producer: None,
                trace: None,
                parent: None,
            },
        )
        .await
        .unwrap();
    let second = admin
        .queues
        .add(
            "dedup",
            airlock::queue::NewJob {
                name: "n".into(),
                data: json!({"v": 2}),
                opts: serde_json::from_value(json!({"jobId": "order-7"})).unwrap(),
                producer: None,
                trace: None,
                parent: None,
            },
        )
        .await
        .unwrap();
    assert_eq!(first.id, "order-7");
    assert!(!first.duplicate);
    assert_eq!(second.id, "order-7");
    assert!(second.duplicate);
    let job = admin.job("dedup", "order-7").await.unwrap();
    assert_eq!(job.data, json!({"v": 1}), "the second add changed nothing");
    assert_eq!(admin.queues.counts("dedup").await.unwrap().waiting, 1);
}

/// Job hashes (and their sub-keys) of a queue: everything under
/// `bull:<queue>:` except BullMQ's per-queue structures.
fn job_keys(redis: &RedisServer, queue: &str) -> Vec<String> {
    let per_queue = [
        "wait",
        "active",
        "delayed",
        "prioritized",
        "completed",
        "failed",
        "paused",
        "meta",
        "events",
        "id",
        "marker",
        "stalled-check",
        "stalled",
        "pc",
        "limiter",
        "metrics",
        "waiting-children",
        "repeat",
        "de",
    ];
    redis
        .keys(&format!("bull:{queue}:*"))
        .into_iter()
        .filter(|k| {
            let rest = &k[format!("bull:{queue}:").len()..];
            // The queue's per-minute run tallies are the queue's, not a
            // job's, and expire by themselves (25 h).
            if rest.starts_with("airlock:stats:") {
                let ttl: i64 = redis.cli(&["PTTL", k]).trim().parse().unwrap();
                assert!(ttl > 0 && ttl <= 25 * 3600 * 1000, "{k} expires: {ttl} ms");
                return false;
            }
            !per_queue
                .iter()
                .any(|p| rest == *p || rest.starts_with(&format!("{p}:")))
        })
        .collect()
}

#[tokio::test]
async fn retention_removes_finished_jobs_and_leaves_no_orphan_keys() {
    let redis = RedisServer::start();
    let admin = Admin::connect(&redis.url()).await;
    admin.deploy("payment-webhook", "payment-webhook").await;
    admin.deploy("order-workflow", "order-workflow").await;
    admin.deploy("flaky", "flaky").await;
    admin
        .bind("kept", "payment-webhook", json!({"concurrency": 1}))
        .await;
    admin.bind("workflows", "order-workflow", json!({})).await;
    admin.bind("flaky", "flaky", json!({})).await;
    let _host = host(&redis, "h1");

    // Keep the newest two completed jobs.
    let mut ids = Vec::new();
    for i in 0..5 {
        let id = admin
            .enqueue(
                "kept",
                "p",
                json!({"transactionId": format!("t{i}"), "amount": 1}),
                json!({"removeOnComplete": 2}),
            )
            .await;
        admin
            .wait_for("kept", &id, FINISH, |j| j.state == JobState::Completed)
            .await;
        ids.push(id);
    }
    assert_eq!(admin.queues.counts("kept").await.unwrap().completed, 2);
    let mut remaining = job_keys(&redis, "kept");
    remaining.sort();
    let mut expected: Vec<String> = ids[3..]
        .iter()
        .flat_map(|id| [format!("bull:kept:{id}"), format!("bull:kept:{id}:logs")])
        .collect();
    expected.sort();
    assert_eq!(
        remaining, expected,
        "only the two kept jobs (and their logs) remain"
    );

    // A workflow records steps and a sleep in its job hash; removeOnComplete
    // takes all of it, with per-job limits parked at enqueue time.
    let id = admin
        .enqueue(
            "workflows",
            "order",
            json!({"orderId": "o1", "amount": 20, "reviewDelayMs": 300}),
            json!({"removeOnComplete": true, "limits": {"memoryBytes": 32 << 20}}),
        )
        .await;
    airlock_tests::eventually("the workflow to finish and be removed", || async {
        admin.job("workflows", &id).await.is_none()
    })
    .await;
    assert_eq!(admin.queues.counts("workflows").await.unwrap().completed, 0);
    assert_eq!(job_keys(&redis, "workflows"), Vec::<String>::new());

    // Age-based retention of failures: a failed job older than 1 s is
    // removed when the next one fails.
    let old = admin
        .enqueue("flaky", "f", json!({}), json!({"removeOnFail": {"age": 1}}))
        .await;
    let old_job = admin.wait_finished("flaky", &old, FINISH).await;
    // Time is the subject and BullMQ ages jobs by Redis's own clock, so
    // the test waits (once) until the failure is over a second old.
    let aged_at = old_job.finished_on.unwrap() + 1_100;
    let now = airlock_core::clock::now_ms();
    tokio::time::sleep(Duration::from_millis(aged_at.saturating_sub(now))).await;
    let new = admin
        .enqueue("flaky", "f", json!({}), json!({"removeOnFail": {"age": 1}}))
        .await;
    admin.wait_finished("flaky", &new, FINISH).await;
    assert!(
        admin.job("flaky", &old).await.is_none(),
        "aged failure was removed"
    );
    let left = job_keys(&redis, "flaky");
    assert!(
        left.iter()
            .all(|k| k.starts_with(&format!("bull:flaky:{new}"))),
        "{left:?}"
    );

    // Airlock's registry keys are the only other keys.
    let strays: Vec<String> = redis
        .keys("*")
        .into_iter()
        .filter(|k| {
            !k.starts_with("bull:kept:")
                && !k.starts_with("bull:workflows:")
                && !k.starts_with("bull:flaky:")
        })
        .filter(|k| !k.starts_with("bull:{airlock}:") && !k.starts_with("bull:airlock:kv:"))
        .collect();
    assert_eq!(strays, Vec::<String>::new());
}

#[tokio::test]
async fn a_job_killed_with_its_host_completes_on_another_host() {
    let redis = RedisServer::start();
    let admin = Admin::connect(&redis.url()).await;
    admin.deploy("probe", "cpu-bound").await;
    admin
        .bind(
            "slow",
            "probe",
            json!({"limits": {"fuel": 1_000_000_000_000u64, "timeoutMs": 120_000}}),
        )
        .await;
    let mut first = host(&redis, "first");
    let id = admin
        .enqueue(
            "slow",
            "probe",
            json!({"rounds": 20_000_000, "seed": "slow"}),
            json!({}),
        )
        .await;
    admin
        .wait_for("slow", &id, FINISH, |j| j.state == JobState::Active)
        .await;
    first.kill9();

    let _second = host(&redis, "second");
    let job = admin.wait_finished("slow", &id, FINISH).await;
    assert_eq!(job.state, JobState::Completed, "{job:#?}");
    assert_eq!(job.processed_by_host.as_deref(), Some("second"));
    assert!(
        job.stalled_count >= 1 || job.attempts_started >= 2,
        "{job:#?}"
    );
}

#[tokio::test]
async fn locks_are_renewed_while_guests_burn_every_core() {
    let redis = RedisServer::start();
    let admin = Admin::connect(&redis.url()).await;
    admin.deploy("cpu", "cpu-bound").await;
    admin
        .bind(
            "cpu",
            "cpu",
            json!({"concurrency": 4, "limits": {"fuel": 1_000_000_000_000u64, "timeoutMs": 120_000}}),
        )
        .await;
    // Locks of 1 s, checked every 500 ms: each job runs several lock
    // durations while 4 guests saturate both cores.
    let _host = HostProcess::start(
        &redis.url(),
        HostOptions {
            id: "busy".into(),
            lock_duration: Duration::from_secs(1),
            stalled_interval: Duration::from_millis(500),
            ..HostOptions::default()
        },
    );
    let mut ids = Vec::new();
    for i in 0..4 {
        ids.push(
            admin
                .enqueue(
                    "cpu",
                    "crunch",
                    json!({"rounds": 15_000_000, "seed": format!("s{i}")}),
                    json!({}),
                )
                .await,
        );
    }
    for id in &ids {
        let job = admin
            .wait_recorded("cpu", id, Duration::from_secs(180))
            .await;
        assert_eq!(job.state, JobState::Completed, "{job:#?}");
        assert!(
            job.metrics.wall_time_ms.unwrap() > 2_000.0,
            "the job must outlive its lock several times to prove renewal"
        );
        assert_eq!(job.stalled_count, 0, "job {id} stalled: {job:#?}");
        assert_eq!(job.attempts_started, 1, "job {id} ran twice");
    }
}

#[tokio::test]
async fn sigterm_drains_running_jobs_before_exit() {
    let redis = RedisServer::start();
    let admin = Admin::connect(&redis.url()).await;
    admin.deploy("probe", "cpu-bound").await;
    admin
        .bind(
            "drain",
            "probe",
            json!({"limits": {"fuel": 1_000_000_000_000u64, "timeoutMs": 120_000}}),
        )
        .await;
    let mut h = host(&redis, "draining");
    let id = admin
        .enqueue(
            "drain",
            "probe",
            json!({"rounds": 12_000_000, "seed": "drain"}),
            json!({}),
        )
        .await;
    admin
        .wait_for("drain", &id, FINISH, |j| j.state == JobState::Active)
        .await;
    let queued = admin
        .enqueue(
            "drain",
            "probe",
            json!({"rounds": 1}),
            json!({"delay": 500}),
        )
        .await;
    let code = h.terminate(Duration::from_secs(30));
    assert_eq!(code, Some(0), "{}", h.log());
    let job = admin.job("drain", &id).await.unwrap();
    assert_eq!(
        job.state,
        JobState::Completed,
        "the running job finished before exit"
    );
    let untouched = admin.job("drain", &queued).await.unwrap();
    assert!(
        matches!(untouched.state, JobState::Delayed | JobState::Waiting),
        "no new job was taken while draining: {:?}",
        untouched.state
    );
}

#[tokio::test]
async fn a_job_outliving_the_grace_period_is_recovered_not_lost() {
    let redis = RedisServer::start();
    let admin = Admin::connect(&redis.url()).await;
    admin.deploy("probe", "cpu-bound").await;
    admin
        .bind(
            "grace",
            "probe",
            json!({"limits": {"fuel": 1_000_000_000_000u64, "timeoutMs": 120_000}}),
        )
        .await;
    let mut h = HostProcess::start(
        &redis.url(),
        HostOptions {
            id: "impatient".into(),
            grace: Duration::from_millis(200),
            ..HostOptions::default()
        },
    );
    let id = admin
        .enqueue(
            "grace",
            "probe",
            json!({"rounds": 20_000_000, "seed": "slow"}),
            json!({}),
        )
        .await;
    admin
        .wait_for("grace", &id, FINISH, |j| j.state == JobState::Active)
        .await;
    h.terminate(Duration::from_secs(30));
    assert_eq!(
        admin.job("grace", &id).await.unwrap().state,
        JobState::Active
    );
    let _next = host(&redis, "next");
    let job = admin.wait_finished("grace", &id, FINISH).await;
    assert_eq!(job.state, JobState::Completed);
    assert_eq!(job.processed_by_host.as_deref(), Some("next"));
}

#[tokio::test]
async fn hosts_reconnect_after_redis_restarts() {
    let mut redis = RedisServer::start_with(RedisOptions {
        appendonly: true,
        appendfsync_always: true,
        ..RedisOptions::default()
    });
    let admin = Admin::connect(&redis.url()).await;
    admin.deploy("payment-webhook", "payment-webhook").await;
    admin.bind("payments", "payment-webhook", json!({})).await;
    let _host = host(&redis, "h1");
    let id = admin
        .enqueue(
            "payments",
            "p",
            json!({"transactionId": "before", "amount": 1}),
            json!({}),
        )
        .await;
    admin.wait_finished("payments", &id, FINISH).await;

    // Redis stays down long enough for the host's connection to notice
    // (time is the subject: an outage, not a signal to wait for).
    redis.kill9();
    tokio::time::sleep(Duration::from_secs(2)).await;
    redis.restart();

    // The admin's own connection reconnects too; its first command after
    // the restart may see the old socket break, so it retries.
    let after = NewJob {
        name: "p".into(),
        data: json!({"transactionId": "after", "amount": 1}),
        opts: Default::default(),
        producer: None,
        trace: None,
        parent: None,
    };
    let id = airlock_tests::eventually_some(
        "enqueueing to work again once Redis is back",
        Duration::from_secs(5),
        || async { admin.queues.add("payments", after.clone()).await.ok() },
    )
    .await
    .id;
    let job = admin.wait_finished("payments", &id, FINISH).await;
    assert_eq!(job.state, JobState::Completed, "{job:#?}");
    assert_eq!(job.returnvalue.unwrap()["ledgerRecordId"], "led_after");
}

#[tokio::test]
async fn new_handler_versions_go_live_while_started_jobs_stay_pinned() {
    let redis = RedisServer::start();
    let admin = Admin::connect(&redis.url()).await;
    let v1 = admin.deploy("shop", "order-workflow").await;
    admin.bind("shop", "shop", json!({})).await;
    let _host = host(&redis, "h1");

    // A workflow that sleeps for an hour, pinned to v1.
    let sleeper = admin
        .enqueue(
            "shop",
            "order",
            json!({"orderId": "o9", "amount": 5, "reviewDelayMs": 3_600_000}),
            json!({}),
        )
        .await;
    let job = admin
        .wait_for("shop", &sleeper, FINISH, |j| {
            j.state == JobState::Delayed && !j.steps.is_empty()
        })
        .await;
    assert_eq!(job.handler_digest.as_deref(), Some(v1.as_str()));
    assert_eq!(job.attempts_made, 0, "a durable sleep uses up no attempt");

    // v2 goes live without a restart (within the host's registry poll)...
    let v2 = admin.deploy("shop", "noop").await;
    let generation = admin.registry.generation().await.unwrap();
    let fleet = airlock::fleet::Fleet::new(admin.store.clone(), Duration::from_secs(5));
    airlock_tests::eventually_some(
        &format!("the host to apply generation {generation}"),
        FINISH,
        || async {
            let hosts = fleet.hosts().await.unwrap();
            hosts
                .iter()
                .any(|h| h.id == "h1" && h.generation >= Some(generation))
                .then_some(())
        },
    )
    .await;
    let fresh = admin.enqueue("shop", "order", json!({}), json!({})).await;
    let job = admin.wait_recorded("shop", &fresh, FINISH).await;
    assert_eq!(job.handler_digest.as_deref(), Some(v2.as_str()));
    assert_eq!(job.returnvalue, Some(serde_json::Value::Null));

    // ...while the sleeping job, woken early through Airlock, replays on v1.
    admin.queues.promote("shop", &sleeper).await.unwrap();
    let job = admin.wait_finished("shop", &sleeper, FINISH).await;
    assert_eq!(job.state, JobState::Completed, "{job:#?}");
    assert_eq!(job.handler_digest.as_deref(), Some(v1.as_str()));
    assert_eq!(job.returnvalue.unwrap()["chargeId"], "ch_o9");
}
