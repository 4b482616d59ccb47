//! Flow control's admission (`gate::admission`) on a paused clock: what a
//! job does before its guest starts — run, park until an exact time, fail
//! without running — decided against real Redis with time held still and
//! moved by hand, so every "until" is checked to the millisecond and no
//! test sleeps through a period.
//!
//! The jobs are stand-ins ([`Job`]): admission sees a job through the
//! `RunningJob` seam, and what it does to one is to park it, which the
//! stand-in records, and does as BullMQ's move does to the keys a key's
//! line reads: the job joins the queue's delayed set.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use airlock::gate::{Admission, Admit, Admitted, Tenants};
use airlock::queue::{QueueService, RunningJob};
use airlock::registry::{Binding, BindingSpec};
use airlock::sandbox::FailureKind;
use airlock::state::key_limits::{KeySlot, PARK_MS};
use airlock::store::Store;
use airlock_core::clock::{Clock, PausedClock};
use airlock_core::limits::HostMaxima;
use airlock_tests::redis_server::RedisServer;
use serde_json::{Value, json};

const QUEUE: &str = "imports";

/// A job as admission sees it: its id, which attempt this is, and the
/// times it was parked until.
#[derive(Clone)]
struct Job {
    redis: redis::Client,
    id: String,
    key: String,
    attempt: u32,
    fetched_at: u64,
    parked: Arc<Mutex<Vec<u64>>>,
}

impl Job {
    fn new(redis: &RedisServer, id: &str, fetched_at: u64) -> Job {
        Job {
            redis: redis::Client::open(redis.url()).unwrap(),
            id: id.into(),
            key: format!("bull:{QUEUE}:{id}"),
            attempt: 1,
            fetched_at,
            parked: Arc::default(),
        }
    }

    fn retry(mut self) -> Job {
        self.attempt += 1;
        self
    }

    fn parked(&self) -> Vec<u64> {
        self.parked.lock().unwrap().clone()
    }
}

#[async_trait::async_trait]
impl RunningJob for Job {
    fn id(&self) -> &str {
        &self.id
    }
    fn queue(&self) -> &str {
        QUEUE
    }
    fn job_key(&self) -> &str {
        &self.key
    }
    fn attempts_started(&self) -> u32 {
        self.attempt
    }
    fn attempt(&self) -> u32 {
        self.attempt
    }
    fn enqueued_at_ms(&self) -> u64 {
        self.fetched_at
    }
    fn ready_at_ms(&self) -> u64 {
        self.fetched_at
    }
    fn processed_on_ms(&self) -> Option<u64> {
        Some(self.fetched_at)
    }
    fn input(&self) -> airlock_core::run::JobInput {
        airlock_core::run::JobInput::default()
    }
    async fn update_progress(&self, _: Value) -> Result<(), airlock::error::QueueError> {
        Ok(())
    }
    async fn log(&self, _: &str) -> Result<(), airlock::error::QueueError> {
        Ok(())
    }
    async fn park_until(&self, wake_at_ms: u64) -> Result<(), airlock::error::QueueError> {
        self.parked.lock().unwrap().push(wake_at_ms);
        let mut conn = self.redis.get_multiplexed_async_connection().await?;
        let delayed = format!("bull:{QUEUE}:delayed");
        // BullMQ's delayed score: the time, shifted past a 12-bit counter.
        let score = wake_at_ms * 0x1000;
        redis::AsyncCommands::zadd::<_, _, _, ()>(&mut conn, delayed, &self.id, score).await?;
        Ok(())
    }
}

/// A queue's admission on a fresh Redis, its state on a paused clock.
struct Gate {
    redis: RedisServer,
    queues: Arc<QueueService>,
    clock: Arc<PausedClock>,
    admission: Admission,
    binding: Binding,
}

impl Gate {
    /// `rules`: the flow-control fields of a binding of `imports`. Leases
    /// are a minute: no renewal comes during a test.
    async fn with(rules: Value) -> Gate {
        let redis = RedisServer::start();
        let store = Store::connect(&redis.url(), "bull").await.unwrap();
        let clock = PausedClock::now();
        let queues = Arc::new(QueueService::with_clock(store, clock.clone()));
        let mut spec = json!({"handler": "noop"});
        spec.as_object_mut()
            .unwrap()
            .extend(rules.as_object().unwrap().clone());
        let spec: BindingSpec = serde_json::from_value(spec).unwrap();
        let binding = spec.resolve(QUEUE, &HostMaxima::default()).unwrap();
        let lease = Duration::from_secs(60);
        let tenants = Tenants::new(queues.clone(), QUEUE, lease, || None);
        Gate {
            redis,
            admission: Admission::new(queues.clone(), lease, tenants),
            queues,
            clock,
            binding,
        }
    }

    fn now(&self) -> u64 {
        self.clock.now_ms()
    }

    /// A job of the queue fetched at `fetched_at`: its hash exists with the
    /// `processedOn` a fetch writes, as a running job's does (a key's
    /// scripts drop holders whose job finished or is gone).
    fn job(&self, id: &str, fetched_at: u64) -> Job {
        let job = Job::new(&self.redis, id, fetched_at);
        let at = fetched_at.to_string();
        self.redis.cli(&["HSET", &job.key, "processedOn", &at]);
        job
    }

    async fn admit(&self, job: &Job, customer: &str) -> Admit {
        let data = json!({"customerId": customer});
        self.admission.admit(job, &self.binding, Some(&data)).await
    }

    async fn holders(&self, customer: &str) -> Vec<String> {
        let slot = KeySlot::of(QUEUE, &json!(customer));
        let key_limits = &self.queues.state().key_limits;
        key_limits.holders(&slot).await.unwrap()
    }
}

fn runs(admit: Admit, what: &str) -> Admitted {
    match admit {
        Admit::Run(admitted) => admitted,
        Admit::Parked(rule) => panic!("{what}: parked under {rule}, expected to run"),
        Admit::Fail(f) => panic!("{what}: failed ({}), expected to run", f.message),
    }
}

fn parked(admit: Admit, what: &str) -> &'static str {
    match admit {
        Admit::Parked(rule) => rule,
        Admit::Run(_) => panic!("{what}: ran, expected to be parked"),
        Admit::Fail(f) => panic!("{what}: failed ({}), expected to be parked", f.message),
    }
}

fn fails(admit: Admit, what: &str) -> (FailureKind, String) {
    match admit {
        Admit::Fail(f) => (f.kind, f.message),
        Admit::Run(_) => panic!("{what}: ran, expected to fail"),
        Admit::Parked(rule) => panic!("{what}: parked under {rule}, expected to fail"),
    }
}

/// A throttle of one start a second: the key's second job is parked until
/// its turn, to the millisecond, and starts when the clock gets there; the
/// third's turn is a period after the second's; another key is untouched.
#[tokio::test]
async fn a_throttled_job_is_parked_until_its_turn_to_the_millisecond() {
    let gate = Gate::with(json!({
        "keyThrottle": {"key": "$.customerId", "limit": 1, "periodMs": 1000}
    }))
    .await;
    let t0 = gate.now();
    let (a, b, c) = (gate.job("a", t0), gate.job("b", t0), gate.job("c", t0));

    runs(gate.admit(&a, "acme").await, "a, the key's first start");
    assert_eq!(parked(gate.admit(&b, "acme").await, "b"), "keyThrottle");
    assert_eq!(b.parked(), [t0 + 1000], "b's turn is a period after a's");
    runs(gate.admit(&gate.job("q", t0), "quiet").await, "another key");

    gate.clock.advance(999);
    assert_eq!(parked(gate.admit(&c, "acme").await, "c"), "keyThrottle");
    assert_eq!(c.parked(), [t0 + 2000], "c's turn is after b's");
    gate.clock.advance(1);
    runs(gate.admit(&b, "acme").await, "b at its turn");
}

/// A rate limit of one start a second: the key's second job fails without
/// running as rate-limited, saying when the key has room; a retry of a job
/// that started is not counted again; at the period's end the key starts
/// a job again.
#[tokio::test]
async fn a_job_over_a_keys_rate_limit_fails_without_running_until_the_period_ends() {
    let gate = Gate::with(json!({
        "keyRateLimit": {"key": "$.customerId", "limit": 1, "periodMs": 1000}
    }))
    .await;
    let t0 = gate.now();
    let a = gate.job("a", t0);

    runs(gate.admit(&a, "acme").await, "a, the key's first start");
    gate.clock.advance(250);
    let (kind, message) = fails(gate.admit(&gate.job("b", t0), "acme").await, "b");
    assert_eq!(kind, FailureKind::RateLimited);
    assert_eq!(
        message,
        r#"key "acme" ($.customerId) is over its rate limit of 1 per 1s; dropped without running (room again in 750ms)"#
    );
    runs(gate.admit(&a.retry(), "acme").await, "a's retry");
    gate.clock.advance(750);
    runs(
        gate.admit(&gate.job("c", t0), "acme").await,
        "c, a period on",
    );
}

/// One job per key at a time: the second is parked for [`PARK_MS`] from
/// now on the state's clock (its line wakes it sooner) and joins the key's line; when the
/// first finishes its slot is the second's, not a newcomer's.
#[tokio::test]
async fn a_job_whose_key_is_full_waits_in_line_and_gets_the_freed_slot() {
    let gate = Gate::with(json!({
        "keyConcurrency": {"key": "$.customerId", "limit": 1}
    }))
    .await;
    let t0 = gate.now();
    let (a, b) = (gate.job("a", t0), gate.job("b", t0));

    let running = runs(gate.admit(&a, "acme").await, "a, the key's first job");
    gate.clock.advance(5_000);
    assert_eq!(parked(gate.admit(&b, "acme").await, "b"), "keyConcurrency");
    assert_eq!(b.parked(), [t0 + 5_000 + PARK_MS]);
    assert_eq!(gate.holders("acme").await, ["a"]);

    running.finish_ended().await;
    let newcomer = gate.job("c", t0);
    assert_eq!(
        parked(gate.admit(&newcomer, "acme").await, "c"),
        "keyConcurrency",
        "the freed slot is b's"
    );
    runs(gate.admit(&b, "acme").await, "b, first in line");
    assert_eq!(gate.holders("acme").await, ["b"]);
}

/// A singleton in skip mode: a second job of a running key fails without
/// running as skipped; once the first finished, the key runs again.
#[tokio::test]
async fn a_singleton_skips_a_second_job_of_a_running_key() {
    let gate = Gate::with(json!({
        "singleton": {"key": "$.customerId", "mode": "skip"}
    }))
    .await;
    let t0 = gate.now();

    let running = runs(gate.admit(&gate.job("a", t0), "acme").await, "a");
    let (kind, message) = fails(gate.admit(&gate.job("b", t0), "acme").await, "b");
    assert_eq!(kind, FailureKind::Skipped);
    assert_eq!(
        message,
        r#"singleton: key "acme" ($.customerId) already has a running job; skipped without running"#
    );
    running.finish_ended().await;
    runs(gate.admit(&gate.job("c", t0), "acme").await, "c, after a");
}
