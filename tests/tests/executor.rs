//! The executor and its reporter in-process: a fake job (the `RunningJob`
//! seam) instead of a BullMQ worker, real guests, a real sandbox and a
//! real Redis for the job's Airlock fields. What the executor tells BullMQ,
//! and what it streams into the job while the guest runs, seen exactly.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use airlock::fleet::Fleet;
use airlock::metrics::Metrics;
use airlock::queue::{JobResult, QueueError, QueueService, RunningJob, WorkerSettings};
use airlock::registry::{BindingSpec, Registry};
use airlock::sandbox::egress::OperatorEgress;
use airlock::sandbox::{ArtifactKey, HostServices, JobInput, Limits, Sandbox, SandboxConfig};
use airlock::state::runs::LastRun;
use airlock::store::Store;
use airlock::worker::HostContext;
use airlock::worker::capacity::Capacity;
use airlock::worker::executor::{Executor, ResolvedBinding};
use airlock::worker::loader::ComponentLoader;
use airlock::worker::reporter::Reporter;
use airlock::worker::services::{PendingPin, RedisServices};
use airlock_tests::guest_bytes;
use airlock_tests::host::TEST_FLEET_KEY;
use airlock_tests::redis_server::RedisServer;
use serde_json::{Value, json};

/// What the fake job was told, in order.
#[derive(Debug, Clone, PartialEq)]
enum Seen {
    Progress(Value),
    Log(String),
    Park(u64),
}

#[derive(Clone)]
struct FakeJob {
    input: JobInput,
    key: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    /// The job's `airlock.digest` field each time progress arrived (read
    /// from Redis then): what the job was pinned to while it ran.
    pin_at_progress: Arc<Mutex<Vec<Option<String>>>>,
    redis: redis::Client,
}

#[async_trait::async_trait]
impl RunningJob for FakeJob {
    fn id(&self) -> &str {
        &self.input.id
    }
    fn queue(&self) -> &str {
        &self.input.queue
    }
    fn job_key(&self) -> &str {
        &self.key
    }
    fn attempts_started(&self) -> u32 {
        self.input.attempt
    }
    fn attempt(&self) -> u32 {
        self.input.attempt
    }
    fn enqueued_at_ms(&self) -> u64 {
        self.input.enqueued_at_ms
    }
    fn ready_at_ms(&self) -> u64 {
        self.input.enqueued_at_ms
    }
    fn processed_on_ms(&self) -> Option<u64> {
        None
    }
    fn input(&self) -> JobInput {
        self.input.clone()
    }
    async fn update_progress(&self, value: Value) -> Result<(), QueueError> {
        // Seen before the first await, as the port's call is sent on its
        // first poll: the reporter's back-to-back calls keep their order
        // only up to there. (An await first, on a connection of its own,
        // let a later report overtake an earlier one.)
        let mut conn = self.redis.get_connection().unwrap();
        let pin: Option<String> =
            redis::Commands::hget(&mut conn, &self.key, "airlock.digest").unwrap();
        self.pin_at_progress.lock().unwrap().push(pin);
        self.seen.lock().unwrap().push(Seen::Progress(value));
        Ok(())
    }
    async fn log(&self, line: &str) -> Result<(), QueueError> {
        self.seen.lock().unwrap().push(Seen::Log(line.to_string()));
        Ok(())
    }
    async fn park_until(&self, wake_at_ms: u64) -> Result<(), QueueError> {
        self.seen.lock().unwrap().push(Seen::Park(wake_at_ms));
        Ok(())
    }
}

struct Rig {
    redis: RedisServer,
    host: Arc<HostContext>,
}

impl Rig {
    async fn new(max_instances: u32) -> Rig {
        let redis = RedisServer::start();
        let store = Store::connect(&redis.url(), "bull").await.unwrap();
        let sandbox = Arc::new(
            Sandbox::new(SandboxConfig {
                max_instances,
                cache_dir: Some(airlock_tests::shared_cache_dir()),
                fleet_key: Some(ArtifactKey::fleet(TEST_FLEET_KEY.as_bytes()).unwrap()),
                ..SandboxConfig::default()
            })
            .unwrap(),
        );
        let registry = Registry::new(store.clone(), sandbox.clone());
        let host = Arc::new(HostContext {
            host_id: "in-process".into(),
            sandbox: sandbox.clone(),
            registry: registry.clone(),
            queues: Arc::new(QueueService::new(store.clone())),
            loader: ComponentLoader::new(sandbox, registry),
            metrics: Arc::new(Metrics::new()),
            worker_settings: WorkerSettings::default(),
            capacity: Capacity::new(8, 1 << 30),
            running: AtomicUsize::new(0),
            applied_generation: AtomicU64::new(airlock::worker::NO_GENERATION),
            fleet: Fleet::new(store, Duration::from_secs(5)),
            egress: Arc::new(OperatorEgress::default()),
            runs_jobs: true,
            secrets_key: None,
            cancels: Default::default(),
            traces: None,
        });
        Rig { redis, host }
    }

    /// An executor for `queue`, bound to the built guest `guest`.
    async fn executor(&self, queue: &str, guest: &str, limits: Value) -> Executor {
        let digest = self
            .host
            .registry
            .deploy(guest, guest_bytes(guest), None)
            .await
            .unwrap()
            .digest;
        let spec: BindingSpec =
            serde_json::from_value(json!({"handler": guest, "limits": limits})).unwrap();
        let binding = spec
            .resolve(queue, &self.host.sandbox.config().maxima)
            .unwrap();
        Executor::new(
            self.host.clone(),
            Arc::new(RwLock::new(Arc::new(ResolvedBinding::new(
                binding, digest, &self.host,
            )))),
        )
    }

    /// A job of `queue` whose hash exists in Redis (as a fetched job's
    /// does), on its first run.
    fn job(&self, queue: &str, id: &str, data: Value) -> FakeJob {
        self.job_on_attempt(queue, id, data, 1)
    }

    /// A job started for the `attempt`th time (BullMQ's `ats`).
    fn job_on_attempt(&self, queue: &str, id: &str, data: Value, attempt: u32) -> FakeJob {
        let key = format!("bull:{queue}:{id}");
        self.redis.cli(&["HSET", &key, "name", "fake"]);
        FakeJob {
            input: JobInput {
                id: id.into(),
                queue: queue.into(),
                name: "fake".into(),
                data: data.to_string(),
                attempt,
                max_attempts: attempt,
                enqueued_at_ms: 0,
                parent: None,
            },
            key,
            seen: Arc::default(),
            pin_at_progress: Arc::default(),
            redis: redis::Client::open(self.redis.url()).unwrap(),
        }
    }

    fn field(&self, job: &FakeJob, field: &str) -> String {
        self.redis
            .cli(&["HGET", &job.key, field])
            .trim()
            .to_string()
    }
}

#[tokio::test]
async fn a_run_streams_progress_and_logs_in_order_then_completes() {
    let rig = Rig::new(4).await;
    let executor = rig.executor("payments", "payment-webhook", json!({})).await;
    let job = rig.job(
        "payments",
        "p1",
        json!({"transactionId": "tx_5", "amount": 3, "currency": "EUR"}),
    );
    let result = executor.run_job(job.clone()).await;
    assert_eq!(
        result,
        JobResult::Completed(json!({"processed": true, "ledgerRecordId": "led_tx_5"}))
    );
    // Each stream in the guest's order (the two are written at once, in
    // one round trip, so a line and a report may land in either order).
    let seen = job.seen.lock().unwrap().clone();
    let progress: Vec<&Seen> = seen
        .iter()
        .filter(|s| matches!(s, Seen::Progress(_)))
        .collect();
    let logs: Vec<&Seen> = seen.iter().filter(|s| matches!(s, Seen::Log(_))).collect();
    assert_eq!(seen.len(), 5, "{seen:?}");
    assert_eq!(
        progress,
        [
            &Seen::Progress(json!(10)),
            &Seen::Progress(json!(50)),
            &Seen::Progress(json!(100))
        ]
    );
    assert_eq!(
        logs,
        [
            &Seen::Log("[info] processing transaction tx_5 for 3 EUR".into()),
            &Seen::Log("[info] recorded ledger entry led_tx_5".into()),
        ]
    );
    // Pinned (a job with a chosen id may carry state: read before the run)
    // and, once the recorder has written, measured on the job's hash.
    assert_eq!(rig.field(&job, "airlock.digest").len(), 64);
    executor.close().await;
    let measured = rig.field(&job, "airlock.lastRun");
    let last = LastRun::parse(&measured).unwrap_or_else(|| panic!("{measured:?}"));
    assert!(last.fuel_used.unwrap() > 0, "{last:?}");
    assert!(last.peak_memory_bytes > 0, "{last:?}");
    assert!(last.wall_time_ms > 0.0, "{last:?}");
    assert_eq!(last.http, None, "no request tried: {measured}");
    // The only measurement field: the hash stays small for BullMQ.
    for legacy in [
        "airlock.fuelUsed",
        "airlock.peakMemoryBytes",
        "airlock.wallTimeMs",
    ] {
        assert_eq!(rig.field(&job, legacy), "", "{legacy}");
    }
}

/// BullMQ's integer ids are how plain producers add jobs: their first run
/// reads nothing of Airlock's before it starts, and is pinned by its first
/// durable write (here a step record) or, without one, when it finishes.
#[tokio::test]
async fn a_first_run_is_pinned_by_its_first_record_or_at_its_finish() {
    let rig = Rig::new(4).await;

    // No step: unpinned while it runs, pinned once recorded.
    let payments = rig.executor("payments", "payment-webhook", json!({})).await;
    let job = rig.job("payments", "17", json!({"transactionId": "t", "amount": 1}));
    assert!(matches!(
        payments.run_job(job.clone()).await,
        JobResult::Completed(_)
    ));
    assert_eq!(*job.pin_at_progress.lock().unwrap(), [None, None, None]);
    payments.close().await;
    let current = rig
        .host
        .registry
        .current_digest("payment-webhook")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(rig.field(&job, "airlock.digest"), current);

    // Steps: the progress report after the first two steps already sees
    // the pin their records wrote.
    let orders = rig.executor("orders", "order-workflow", json!({})).await;
    let job = rig.job(
        "orders",
        "18",
        json!({"orderId": "o-18", "amount": 10, "reviewDelayMs": 60000}),
    );
    assert_eq!(orders.run_job(job.clone()).await, JobResult::Parked);
    let order_digest = rig
        .host
        .registry
        .current_digest("order-workflow")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        *job.pin_at_progress.lock().unwrap(),
        [Some(order_digest)],
        "pinned before the run's first progress report"
    );
}

/// The guest's durable imports pin an unpinned job with its first write,
/// and only then: a read pins nothing, a KV write pins (before it writes),
/// a later write finds the job pinned.
#[tokio::test]
async fn the_first_durable_write_pins_and_reads_do_not() {
    let rig = Rig::new(1).await;
    let job = rig.job("mail", "21", json!({}));
    let reporter = Reporter::start(job.clone());
    let digest = "d".repeat(64);
    let unpinned = Arc::new(AtomicBool::new(true));
    let mut services = RedisServices::new(
        &rig.host.queues,
        job.key.clone(),
        0,
        "mail".into(),
        reporter.progress_sender(),
        PendingPin {
            digest: digest.clone(),
            unpinned: unpinned.clone(),
        },
        airlock::worker::starts::RunStarts {
            env: Arc::new(airlock::worker::starts::StartEnv {
                queues: rig.host.queues.clone(),
                registry: rig.host.registry.clone(),
                rules: None,
                lease_ms: 30_000,
            }),
            trace: None,
        },
    );
    let pin = {
        let (redis, key) = (
            redis::Client::open(rig.redis.url()).unwrap(),
            job.key.clone(),
        );
        move || -> Option<String> {
            let mut conn = redis.get_connection().unwrap();
            redis::Commands::hget(&mut conn, &key, "airlock.digest").unwrap()
        }
    };
    assert_eq!(services.kv_get("k").await.unwrap(), None);
    assert_eq!(services.step_lookup("s").await.unwrap(), None);
    assert_eq!(pin(), None, "reads pin nothing");
    assert!(services.kv_set("k", "v", None, false).await.unwrap());
    assert_eq!(pin(), Some(digest.clone()), "a KV write pins");
    services.step_record("s", "1").await.unwrap();
    assert_eq!(
        services.step_lookup("s").await.unwrap().as_deref(),
        Some("1")
    );
    assert!(
        !unpinned.load(Ordering::Relaxed),
        "the executor's flag is cleared"
    );
    reporter.finish().await;
}

/// A rerun (a retry, a wake-up, a recovery) runs the version its job is
/// pinned to, even after a deploy; a first run of an integer id runs the
/// handler's current version.
#[tokio::test]
async fn a_rerun_runs_its_pinned_version_and_a_first_run_the_current_one() {
    let rig = Rig::new(4).await;
    let old = rig
        .host
        .registry
        .deploy("versioned", guest_bytes("payment-webhook"), None)
        .await
        .unwrap()
        .digest;
    let new = rig
        .host
        .registry
        .deploy("versioned", guest_bytes("noop"), None)
        .await
        .unwrap()
        .digest;
    let spec: BindingSpec = serde_json::from_value(json!({"handler": "versioned"})).unwrap();
    let binding = spec
        .resolve("versioned", &rig.host.sandbox.config().maxima)
        .unwrap();
    let executor = Executor::new(
        rig.host.clone(),
        Arc::new(RwLock::new(Arc::new(ResolvedBinding::new(
            binding,
            new.clone(),
            &rig.host,
        )))),
    );
    let data = json!({"transactionId": "t", "amount": 1});

    let rerun = rig.job_on_attempt("versioned", "5", data.clone(), 2);
    rig.redis.cli(&["HSET", &rerun.key, "airlock.digest", &old]);
    match executor.run_job(rerun.clone()).await {
        JobResult::Completed(v) => assert_eq!(v["processed"], json!(true), "{v}"),
        other => panic!("{other:?}"),
    }

    let first = rig.job("versioned", "6", data);
    match executor.run_job(first.clone()).await {
        JobResult::Completed(v) => assert_eq!(v, Value::Null, "the current version: noop"),
        other => panic!("{other:?}"),
    }
    executor.close().await;
    assert_eq!(rig.field(&rerun, "airlock.digest"), old);
    assert_eq!(rig.field(&first, "airlock.digest"), new);
}

#[tokio::test]
async fn failures_become_retries_final_failures_or_requeues() {
    let rig = Rig::new(1).await;
    let panics = rig.executor("p", "hostile-panic", json!({})).await;
    match panics.run_job(rig.job("p", "j1", json!({}))).await {
        JobResult::Failed { reason, retry } => {
            assert!(retry, "a panic is retryable");
            assert!(reason.starts_with("guest_retry: panicked"), "{reason}");
        }
        other => panic!("{other:?}"),
    }

    let spins = rig
        .executor("spin", "hostile-infinite-loop", json!({"fuel": 5_000_000}))
        .await;
    match spins.run_job(rig.job("spin", "j2", json!({}))).await {
        JobResult::Failed { reason, retry } => {
            assert!(!retry, "a sandbox kill is final");
            assert!(reason.starts_with("fuel_exhausted"), "{reason}");
        }
        other => panic!("{other:?}"),
    }

    // The only pool slot is taken: the host's own trouble puts the job
    // back without using up an attempt.
    let payments = rig.executor("pay", "payment-webhook", json!({})).await;
    let component = rig
        .host
        .loader
        .get(
            &rig.host
                .registry
                .current_digest("payment-webhook")
                .await
                .unwrap()
                .unwrap(),
        )
        .await
        .unwrap();
    let held = rig
        .host
        .sandbox
        .instantiate_idle(&component, &Limits::default())
        .unwrap();
    match payments
        .run_job(rig.job("pay", "j3", json!({"transactionId": "t", "amount": 1})))
        .await
    {
        JobResult::Requeue { reason } => assert!(reason.starts_with("capacity"), "{reason}"),
        other => panic!("{other:?}"),
    }
    drop(held);
}

#[tokio::test]
async fn a_durable_sleep_parks_the_job_until_its_wake_up_time() {
    let rig = Rig::new(4).await;
    let workflow = rig.executor("orders", "order-workflow", json!({})).await;
    let job = rig.job(
        "orders",
        "o1",
        json!({"orderId": "o-1", "amount": 10, "reviewDelayMs": 60000}),
    );
    let before = airlock_core::clock::now_ms();
    assert_eq!(workflow.run_job(job.clone()).await, JobResult::Parked);
    let parked: Vec<u64> = job
        .seen
        .lock()
        .unwrap()
        .iter()
        .filter_map(|s| match s {
            Seen::Park(at) => Some(*at),
            _ => None,
        })
        .collect();
    assert_eq!(parked.len(), 1, "{:?}", job.seen.lock().unwrap());
    assert!(parked[0] >= before + 60_000, "parked until {}", parked[0]);
    // The job's log says why it stopped.
    assert!(
        job.seen
            .lock()
            .unwrap()
            .iter()
            .any(|s| matches!(s, Seen::Log(l) if l.starts_with("[airlock] run suspended until")))
    );
}

#[tokio::test]
async fn a_job_removed_before_its_run_is_not_run_or_resurrected() {
    let rig = Rig::new(4).await;
    let executor = rig.executor("payments", "payment-webhook", json!({})).await;
    let job = rig.job(
        "payments",
        "gone",
        json!({"transactionId": "t", "amount": 1}),
    );
    rig.redis.cli(&["DEL", &job.key]);
    match executor.run_job(job.clone()).await {
        JobResult::Failed { retry, .. } => assert!(!retry),
        other => panic!("{other:?}"),
    }
    assert!(job.seen.lock().unwrap().is_empty(), "the guest never ran");
    assert_eq!(rig.redis.cli(&["EXISTS", &job.key]).trim(), "0");
}

#[tokio::test]
async fn a_log_flood_reaches_the_job_capped_and_in_order() {
    let rig = Rig::new(4).await;
    let executor = rig
        .executor(
            "flood",
            "hostile-log-flood",
            json!({"fuel": 50_000_000_000u64}),
        )
        .await;
    let job = rig.job("flood", "f1", json!({"lines": 5000}));
    assert_eq!(
        executor.run_job(job.clone()).await,
        JobResult::Completed(json!(5000))
    );
    let lines: Vec<String> = job
        .seen
        .lock()
        .unwrap()
        .iter()
        .filter_map(|s| match s {
            Seen::Log(l) => Some(l.clone()),
            _ => None,
        })
        .collect();
    let cap = Limits::default().max_log_lines as usize;
    assert_eq!(lines.len(), cap, "the line cap");
    // Guest lines in the order written (log import and stdout interleave).
    assert_eq!(
        lines[0],
        "[info] log line 0 with some padding to make it longer"
    );
    assert_eq!(lines[1], "[stdout] stdout line 0");
    assert_eq!(
        lines[2],
        "[info] log line 1 with some padding to make it longer"
    );
}
