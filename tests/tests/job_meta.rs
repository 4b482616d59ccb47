//! A job's own state (`state::meta`) through its crash windows, against
//! real Redis: the claim → add → commit of a job that brings a producer
//! and limits, stopped after each step as a dying API would leave it, and
//! what the next run or a retried add finds; the pin a run reads; the
//! durable sleeps a promote ends, at a time passed in.
//!
//! BullMQ's add is stood in for by writing the job's hash: every script
//! here asks only whether the hash exists (the port's add is pinned by
//! `bullmq_conformance.rs`).

use airlock::state::meta::{Claim, Meta, Pending};
use airlock::store::Store;
use airlock_core::limits::LimitsOverride;
use airlock_tests::redis_server::RedisServer;

const QUEUE: &str = "orders";

struct Jobs {
    redis: RedisServer,
    meta: Meta,
}

impl Jobs {
    async fn start() -> Jobs {
        let redis = RedisServer::start();
        let store = Store::connect(&redis.url(), "bull").await.unwrap();
        Jobs {
            meta: Meta::new(store),
            redis,
        }
    }

    /// BullMQ's add, as far as Airlock's scripts see it.
    fn add(&self, id: &str) {
        let key = format!("bull:{QUEUE}:{id}");
        self.redis.cli(&[
            "HSET",
            &key,
            "name",
            "charge",
            "data",
            "{}",
            "timestamp",
            "1",
        ]);
    }

    fn field(&self, id: &str, field: &str) -> String {
        let key = format!("bull:{QUEUE}:{id}");
        self.redis.cli(&["HGET", &key, field]).trim().to_string()
    }

    /// The timeout of the limits the job carries.
    fn timeout_ms(&self, id: &str) -> Option<u64> {
        let text = self.field(id, "airlock.limits");
        let limits: LimitsOverride = serde_json::from_str(&text).unwrap();
        limits.timeout_ms
    }

    fn pending_ttl_ms(&self, id: &str) -> i64 {
        let key = format!("bull:{QUEUE}:airlock-pending:{id}");
        self.redis.cli(&["PTTL", &key]).trim().parse().unwrap()
    }
}

fn pending(producer: &str, timeout_ms: u64) -> Pending {
    Pending {
        producer: Some(producer.into()),
        seal: None,
        limits: Some(LimitsOverride {
            timeout_ms: Some(timeout_ms),
            ..LimitsOverride::default()
        }),
        trace: None,
    }
}

/// Died after the claim, before BullMQ's add: the claim holds the id
/// against other producers for 7 days; the same producer's retry takes it
/// over with its own limits; no job exists, so nothing else is written.
#[tokio::test]
async fn a_claim_without_its_add_holds_the_id_for_its_producer_only() {
    let jobs = Jobs::start().await;
    let web = pending("web", 5_000);
    assert_eq!(
        jobs.meta.claim(QUEUE, &[("o-1", &web)]).await.unwrap(),
        [Claim::Mine]
    );
    let week = 7 * 24 * 3_600 * 1_000;
    let ttl = jobs.pending_ttl_ms("o-1");
    assert!(
        ttl > week - 60_000 && ttl <= week,
        "pending expires in 7 days: {ttl}"
    );

    let other = pending("billing", 1_000);
    assert_eq!(
        jobs.meta.claim(QUEUE, &[("o-1", &other)]).await.unwrap(),
        [Claim::Taken],
        "another producer cannot add the id while the claim stands"
    );
    let retried = pending("web", 7_000);
    assert_eq!(
        jobs.meta.claim(QUEUE, &[("o-1", &retried)]).await.unwrap(),
        [Claim::Mine],
        "the same producer's retry takes its claim over"
    );
    jobs.add("o-1");
    jobs.meta.commit(QUEUE, &["o-1"]).await.unwrap();
    assert_eq!(jobs.field("o-1", "airlock.producer"), "web");
    assert_eq!(
        jobs.timeout_ms("o-1"),
        Some(7_000),
        "the retry's limits, not the first claim's"
    );
    assert_eq!(jobs.pending_ttl_ms("o-1"), -2, "the pending hash is gone");
}

/// Died after BullMQ's add, before the commit: the job's first run reads
/// its producer and limits from the pending hash and moves them into the
/// job; a later retried add finds the job and changes nothing.
#[tokio::test]
async fn a_job_added_but_not_committed_runs_with_its_pending_state() {
    let jobs = Jobs::start().await;
    let web = pending("web", 5_000);
    jobs.meta.claim(QUEUE, &[("o-2", &web)]).await.unwrap();
    jobs.add("o-2");

    let pinned = jobs.meta.pin(QUEUE, "o-2", "sha256:aa").await.unwrap();
    let pinned = pinned.expect("the job exists");
    assert!(pinned.first_run);
    assert_eq!(pinned.digest, "sha256:aa");
    assert_eq!(pinned.producer.name.as_deref(), Some("web"));
    assert_eq!(pinned.limits.and_then(|l| l.timeout_ms), Some(5_000));
    assert_eq!(jobs.pending_ttl_ms("o-2"), -2, "moved, not copied");

    let again = jobs.meta.pin(QUEUE, "o-2", "sha256:bb").await.unwrap();
    let again = again.expect("the job exists");
    assert!(!again.first_run, "a second run is not a first");
    assert_eq!(again.digest, "sha256:aa", "a job keeps the digest it ran");

    let other = pending("billing", 1_000);
    assert_eq!(
        jobs.meta.claim(QUEUE, &[("o-2", &other)]).await.unwrap(),
        [Claim::Exists],
        "a retried or duplicate add finds the job"
    );
    jobs.meta.commit(QUEUE, &["o-2"]).await.unwrap();
    assert_eq!(jobs.field("o-2", "airlock.producer"), "web");
    assert_eq!(jobs.timeout_ms("o-2"), Some(5_000));
}

/// A job removed while it was being fetched: the pin writes nothing (no
/// hash is created for it) and says so.
#[tokio::test]
async fn a_pin_of_a_removed_job_writes_nothing() {
    let jobs = Jobs::start().await;
    let pinned = jobs.meta.pin(QUEUE, "gone", "sha256:aa").await.unwrap();
    assert!(pinned.is_none());
    let key = format!("bull:{QUEUE}:gone");
    assert_eq!(jobs.redis.cli(&["EXISTS", &key]).trim(), "0");
}

/// Promoting a sleeping job ends its pending sleeps at the time passed in:
/// a sleep due later is moved to now, one already over keeps its time,
/// other fields are untouched, and a removed job gets no hash.
#[tokio::test]
async fn a_promote_ends_the_pending_sleeps_at_the_time_passed_in() {
    let jobs = Jobs::start().await;
    jobs.add("o-3");
    let key = format!("bull:{QUEUE}:o-3");
    let (nap, done) = (Meta::sleep_field("nap"), Meta::sleep_field("done"));
    let step = Meta::step_field("charge");
    jobs.redis
        .cli(&["HSET", &key, &nap, "5000", &done, "900", &step, "\"ok\""]);

    jobs.meta.wake_sleeps(&key, 1_000).await.unwrap();
    assert_eq!(jobs.field("o-3", &nap), "1000", "due later: ends now");
    assert_eq!(jobs.field("o-3", &done), "900", "already over");
    assert_eq!(jobs.field("o-3", &step), "\"ok\"");

    let gone = format!("bull:{QUEUE}:gone");
    jobs.meta.wake_sleeps(&gone, 1_000).await.unwrap();
    assert_eq!(jobs.redis.cli(&["EXISTS", &gone]).trim(), "0");
}
