//! What Airlock relies on from the BullMQ port (`bullmq-official`), pinned
//! against a real Redis, so the next port upgrade shows at once which
//! assumption broke. Each test names the Airlock code that depends on it.
//!
//! Workers here run a scripted processor instead of the sandbox: what is
//! under test is the port's handling of each `JobResult`, not a guest.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use airlock::queue::{
    ActiveJob, FlowSpec, JobOptions, JobProcessor, JobResult, JobState, NewJob, QueueWorker,
    RunningJob, WorkerSettings,
};
use airlock_tests::host::Admin;
use airlock_tests::redis_server::RedisServer;
use serde_json::{Value, json};

const FINISH: Duration = Duration::from_secs(30);

/// Answers each job it is given with the next scripted result (the last
/// one once the script runs out), after an optional action on the job.
struct Scripted {
    results: Mutex<VecDeque<JobResult>>,
    park_first_for_ms: Option<u64>,
    parked: Mutex<bool>,
}

impl Scripted {
    fn new(results: Vec<JobResult>) -> Arc<Scripted> {
        Arc::new(Scripted {
            results: Mutex::new(results.into()),
            park_first_for_ms: None,
            parked: Mutex::new(false),
        })
    }
}

#[async_trait::async_trait]
impl JobProcessor for Scripted {
    async fn process(&self, job: ActiveJob) -> JobResult {
        if let Some(ms) = self.park_first_for_ms {
            let first = !std::mem::replace(&mut *self.parked.lock().unwrap(), true);
            if first {
                let wake = airlock_core::clock::now_ms() + ms;
                job.park_until(wake).await.expect("park");
                return JobResult::Parked;
            }
        }
        let mut results = self.results.lock().unwrap();
        if results.len() > 1 {
            results.pop_front().unwrap()
        } else {
            results.front().cloned().unwrap()
        }
    }
}

async fn worker(admin: &Admin, queue: &str, processor: Arc<dyn JobProcessor>) -> QueueWorker {
    let settings = WorkerSettings {
        concurrency: 1,
        lock_duration: Duration::from_secs(5),
        stalled_interval: Duration::from_secs(5),
        name: "conformance".into(),
        ..WorkerSettings::default()
    };
    QueueWorker::start(&admin.queues, queue, &settings, processor)
        .await
        .expect("worker")
}

/// The port's own queue handle, on the test's Redis.
async fn port_queue(redis: &RedisServer, name: &str) -> bullmq::Queue {
    let conn = bullmq::redis_connection::RedisConnection::new(
        &bullmq::options::RedisConnectionOptions::new().url(redis.url()),
    )
    .await
    .unwrap();
    bullmq::Queue::with_connection(name, conn, bullmq::QueueOptions::new())
        .await
        .unwrap()
}

async fn enqueue(admin: &Admin, queue: &str, opts: Value) -> String {
    admin.enqueue(queue, "j", json!({"n": 1}), opts).await
}

/// `JobResult::Requeue` (the port's rate-limit path with no delay) puts the
/// job back to waiting without using up an attempt: the executor requeues
/// on a full pool or a Redis outage (`FailureKind::is_infrastructure`).
#[tokio::test]
async fn a_requeue_keeps_the_attempts() {
    let redis = RedisServer::start();
    let admin = Admin::connect(&redis.url()).await;
    let id = enqueue(&admin, "q", json!({"attempts": 1})).await;
    let requeue = JobResult::Requeue {
        reason: "pool full".into(),
    };
    let w = worker(
        &admin,
        "q",
        Scripted::new(vec![
            requeue.clone(),
            requeue,
            JobResult::Completed(json!(1)),
        ]),
    )
    .await;
    let job = admin.wait_finished("q", &id, FINISH).await;
    assert_eq!(job.state, JobState::Completed, "with 1 attempt: {job:#?}");
    assert_eq!(job.attempts_made, 1);
    w.close(Duration::from_secs(5)).await;
}

/// `move_to_delayed` (a durable sleep) counts no attempt and the job runs
/// again after the delay: `worker/executor/finish.rs` parks sleeping jobs this way.
#[tokio::test]
async fn parking_a_job_counts_no_attempt() {
    let redis = RedisServer::start();
    let admin = Admin::connect(&redis.url()).await;
    let id = enqueue(&admin, "q", json!({"attempts": 1})).await;
    let processor = Arc::new(Scripted {
        results: Mutex::new(vec![JobResult::Completed(json!("woke"))].into()),
        park_first_for_ms: Some(200),
        parked: Mutex::new(false),
    });
    let w = worker(&admin, "q", processor).await;
    let job = admin.wait_finished("q", &id, FINISH).await;
    assert_eq!(job.state, JobState::Completed, "{job:#?}");
    assert_eq!(job.returnvalue, Some(json!("woke")));
    assert_eq!(job.attempts_made, 1, "the sleep used no attempt");
    w.close(Duration::from_secs(5)).await;
}

/// A retryable failure is retried per attempts and backoff; an
/// unrecoverable one fails at once, whatever attempts are left.
#[tokio::test]
async fn retryable_and_unrecoverable_failures() {
    let redis = RedisServer::start();
    let admin = Admin::connect(&redis.url()).await;
    let retried = enqueue(&admin, "r", json!({"attempts": 3})).await;
    let w = worker(
        &admin,
        "r",
        Scripted::new(vec![
            JobResult::Failed {
                reason: "guest_retry: flaky".into(),
                retry: true,
            },
            JobResult::Completed(json!(2)),
        ]),
    )
    .await;
    let job = admin.wait_finished("r", &retried, FINISH).await;
    assert_eq!(job.state, JobState::Completed, "{job:#?}");
    assert_eq!(job.attempts_made, 2);
    w.close(Duration::from_secs(5)).await;

    let fatal = enqueue(&admin, "f", json!({"attempts": 5})).await;
    let w = worker(
        &admin,
        "f",
        Scripted::new(vec![JobResult::Failed {
            reason: "fuel_exhausted: fuel budget of 1 exhausted".into(),
            retry: false,
        }]),
    )
    .await;
    let job = admin.wait_finished("f", &fatal, FINISH).await;
    assert_eq!(job.state, JobState::Failed);
    assert_eq!(job.attempts_made, 1, "not retried");
    assert_eq!(
        job.failed_reason.as_deref(),
        Some("fuel_exhausted: fuel budget of 1 exhausted")
    );
    w.close(Duration::from_secs(5)).await;
}

/// A deduplicated add answers with the job that holds the deduplication
/// id — also after that job is gone, while a TTL keeps the id alive — and
/// an add with an existing custom id changes nothing. Event delivery
/// (`delivery.rs`) and idempotency keys (`api/jobs.rs`) rely on both.
#[tokio::test]
async fn deduplication_and_existing_ids_answer_with_the_existing_job() {
    let redis = RedisServer::start();
    let admin = Admin::connect(&redis.url()).await;
    let first = admin
        .enqueue(
            "d",
            "j",
            json!({"v": 1}),
            json!({"deduplication": {"id": "x"}}),
        )
        .await;
    let second = admin
        .enqueue(
            "d",
            "j",
            json!({"v": 2}),
            json!({"deduplication": {"id": "x"}}),
        )
        .await;
    assert_eq!(first, second);
    assert_eq!(admin.job("d", &first).await.unwrap().data, json!({"v": 1}));

    // The event-delivery case: the job ran and retention removed it, its
    // deduplication id lives on for its TTL.
    let opts = json!({"jobId": "evt-1", "removeOnComplete": true,
                      "deduplication": {"id": "evt:1", "ttl": 60000}});
    let a = admin.enqueue("e", "j", json!({"v": 1}), opts.clone()).await;
    assert_eq!(a, "evt-1");
    let w = worker(
        &admin,
        "e",
        Scripted::new(vec![JobResult::Completed(json!(1))]),
    )
    .await;
    airlock_tests::eventually("evt-1 to be removed on completion", || async {
        admin.job("e", "evt-1").await.is_none()
    })
    .await;
    let again = admin
        .queues
        .add(
            "e",
            NewJob {
                name: "j".into(),
                data: json!({"v": 2}),
                opts: serde_json::from_value::<JobOptions>(opts).unwrap(),
                producer: None,
                trace: None,
                parent: None,
            },
        )
        .await
        .unwrap();
    assert_eq!(again.id, "evt-1");
    assert!(again.duplicate, "the live deduplication id answered");
    assert!(admin.job("e", "evt-1").await.is_none(), "and added nothing");
    w.close(Duration::from_secs(5)).await;

    let custom = enqueue(&admin, "c", json!({"jobId": "order-9"})).await;
    let dup = admin
        .enqueue(
            "c",
            "other-name",
            json!({"v": 99}),
            json!({"jobId": "order-9"}),
        )
        .await;
    assert_eq!((custom.as_str(), dup.as_str()), ("order-9", "order-9"));
    let job = admin.job("c", "order-9").await.unwrap();
    assert_eq!(
        (job.name.as_str(), job.data.clone()),
        ("j", json!({"n": 1}))
    );
}

/// Retention deletes the whole job hash, Airlock's `airlock.*` fields with
/// it: per-job state needs no janitor (`state::meta`).
#[tokio::test]
async fn retention_removes_the_airlock_fields_with_the_job() {
    let redis = RedisServer::start();
    let admin = Admin::connect(&redis.url()).await;
    let id = enqueue(&admin, "q", json!({"removeOnComplete": true})).await;
    let key = format!("bull:q:{id}");
    redis.cli(&["HSET", &key, "airlock.step:charge", "\"ok\""]);
    let w = worker(
        &admin,
        "q",
        Scripted::new(vec![JobResult::Completed(json!(1))]),
    )
    .await;
    airlock_tests::eventually("the job hash to be removed on completion", || async {
        redis.cli(&["EXISTS", &key]).trim() != "1"
    })
    .await;
    assert!(redis.keys(&format!("bull:q:{id}*")).is_empty());
    w.close(Duration::from_secs(5)).await;
}

/// A flow parent finds its children's results in `<parent>:processed`
/// (child key → return value JSON) and ignored failures in
/// `<parent>:failed` (child key → reason): `RedisServices::children_results`
/// reads exactly these.
#[tokio::test]
async fn children_results_live_where_the_services_read_them() {
    let redis = RedisServer::start();
    let admin = Admin::connect(&redis.url()).await;
    let spec: FlowSpec = serde_json::from_value(json!({
        "name": "parent", "queue": "p", "data": {},
        "children": [
            {"name": "ok", "queue": "c", "data": {}, "opts": {"jobId": "good"}},
            {"name": "bad", "queue": "c", "data": {}, "opts": {"jobId": "broken"}, "onFailure": "ignore"},
        ],
    }))
    .unwrap();
    let node = admin.queues.add_flow(&spec, None).await.unwrap();
    struct Children;
    #[async_trait::async_trait]
    impl JobProcessor for Children {
        async fn process(&self, job: ActiveJob) -> JobResult {
            if job.id() == "good" {
                JobResult::Completed(json!({"rows": 3}))
            } else {
                JobResult::Failed {
                    reason: "guest_fatal: no".into(),
                    retry: false,
                }
            }
        }
    }
    let w = worker(&admin, "c", Arc::new(Children)).await;
    let parent_key = format!("bull:p:{}", node.id);
    admin
        .wait_for("p", &node.id, FINISH, |j| j.state == JobState::Waiting)
        .await;
    let processed = redis.cli(&["HGET", &format!("{parent_key}:processed"), "bull:c:good"]);
    assert_eq!(processed.trim(), r#"{"rows":3}"#);
    let failed = redis.cli(&["HGET", &format!("{parent_key}:failed"), "bull:c:broken"]);
    assert_eq!(failed.trim(), "guest_fatal: no");
    w.close(Duration::from_secs(5)).await;
}

/// A scheduler's tick job has the id `repeat:<scheduler>:<tick ms>`: the
/// trigger endpoint recognises a schedule's running jobs by it
/// (`QueueService::schedule_running`).
#[tokio::test]
async fn scheduler_ticks_have_derived_ids() {
    let redis = RedisServer::start();
    let admin = Admin::connect(&redis.url()).await;
    let spec = serde_json::from_value(json!({"every": 60000, "data": {"x": 1}})).unwrap();
    let view = admin
        .queues
        .upsert_schedule("s", "hourly", &spec)
        .await
        .unwrap();
    assert!(view.next_run_at.is_some());
    let mut ids = Vec::new();
    for state in [JobState::Waiting, JobState::Delayed] {
        for job in admin.queues.list("s", state, 0, 10).await.unwrap() {
            ids.push(job.id);
        }
    }
    assert_eq!(ids.len(), 1, "one tick job: {ids:?}");
    let tick = ids[0].strip_prefix("repeat:hourly:").expect("a derived id");
    assert!(tick.parse::<u64>().is_ok(), "{}", ids[0]);
}

/// The port's `obliterate(force = false)` does not refuse a queue with
/// active jobs (it passes `"0"` where BullMQ's script reads only `""` as
/// "not forced"), so `QueueService::obliterate` checks for active jobs
/// itself. When this test fails, the port was fixed: the check may go.
#[tokio::test]
async fn the_ports_obliterate_ignores_force_false() {
    let redis = RedisServer::start();
    let admin = Admin::connect(&redis.url()).await;
    let id = enqueue(&admin, "o", json!({})).await;
    let q = port_queue(&redis, "o").await;
    // Make the job active without finishing it: a worker that never ends.
    struct Forever;
    #[async_trait::async_trait]
    impl JobProcessor for Forever {
        async fn process(&self, _job: ActiveJob) -> JobResult {
            std::future::pending().await
        }
    }
    let _w = worker(&admin, "o", Arc::new(Forever)).await;
    admin
        .wait_for("o", &id, FINISH, |j| j.state == JobState::Active)
        .await;
    q.pause().await.unwrap();
    q.obliterate(false, 1000)
        .await
        .expect("the port obliterates without force");
    assert!(
        admin.job("o", &id).await.is_none(),
        "the active job is gone"
    );
}

/// The port's add does not store `keepLogs` in the job's options (its
/// msgpack options omit it), so a job's log is never trimmed by it: Airlock
/// offers no `keepLogs` option and caps logs per run instead. When this
/// fails, the port stores it: Airlock could offer the option again.
#[tokio::test]
async fn the_ports_add_drops_keep_logs() {
    let redis = RedisServer::start();
    let q = port_queue(&redis, "k").await;
    let job = q.add("j", json!({})).keep_logs(2).await.unwrap();
    let opts = redis.cli(&["HGET", &format!("bull:k:{}", job.id()), "opts"]);
    let opts: Value = serde_json::from_str(opts.trim()).unwrap();
    assert!(opts.get("keepLogs").is_none(), "stored opts: {opts}");
}

/// Records the ids of the jobs it is given, in order, and completes them.
struct Taken(Mutex<Vec<String>>);

#[async_trait::async_trait]
impl JobProcessor for Taken {
    async fn process(&self, job: ActiveJob) -> JobResult {
        self.0.lock().unwrap().push(job.id().to_string());
        JobResult::Completed(json!(null))
    }
}

/// The port's worker takes the job at the wait list's right end next, and
/// nothing but the list's order decides which: `queue/wait_order.rs`
/// moves a job to the front by pushing it onto that end (for
/// `gate::fairness`' scan and a tenant's released jobs).
#[tokio::test]
async fn the_port_takes_next_the_job_at_the_wait_lists_right_end() {
    let redis = RedisServer::start();
    let admin = Admin::connect(&redis.url()).await;
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(enqueue(&admin, "q", json!({})).await);
    }
    let moved = admin.queues.to_front("q", &[ids[2].clone()]).await.unwrap();
    assert_eq!(moved, 1);
    let taken = Arc::new(Taken(Mutex::new(Vec::new())));
    let w = worker(&admin, "q", taken.clone()).await;
    for id in &ids {
        admin.wait_finished("q", id, FINISH).await;
    }
    w.close(Duration::from_secs(5)).await;
    let order = taken.0.lock().unwrap().clone();
    assert_eq!(
        order,
        [ids[2].clone(), ids[0].clone(), ids[1].clone()],
        "the moved job first, then the others first in, first out"
    );
}

/// Moves a job's `processedOn` on, as a key slot's acquire does, before
/// completing it.
struct MovesProcessedOn {
    redis_url: String,
    to: u64,
}

#[async_trait::async_trait]
impl JobProcessor for MovesProcessedOn {
    async fn process(&self, job: ActiveJob) -> JobResult {
        let client = redis::Client::open(self.redis_url.as_str()).unwrap();
        let mut conn = client.get_multiplexed_async_connection().await.unwrap();
        let _: () = redis::AsyncCommands::hset(&mut conn, job.job_key(), "processedOn", self.to)
            .await
            .unwrap();
        JobResult::Completed(json!(null))
    }
}

/// The port's finish keeps the `processedOn` a run's job hash holds: it
/// neither rewrites it from the fetch nor clears it, so the time a key
/// slot's acquire (`state/key_limits/`) or a throttle's admission
/// (`state/key_rates.rs`) moved it to is what BullMQ's tools show.
#[tokio::test]
async fn the_ports_finish_keeps_a_moved_processed_on() {
    let redis = RedisServer::start();
    let admin = Admin::connect(&redis.url()).await;
    let id = enqueue(&admin, "q", json!({})).await;
    let to = airlock_core::clock::now_ms() + 60_000;
    let processor = Arc::new(MovesProcessedOn {
        redis_url: redis.url(),
        to,
    });
    let w = worker(&admin, "q", processor).await;
    let job = admin.wait_finished("q", &id, FINISH).await;
    w.close(Duration::from_secs(5)).await;
    assert_eq!(job.state, JobState::Completed, "{job:#?}");
    assert_eq!(job.processed_on, Some(to), "{job:#?}");
}
