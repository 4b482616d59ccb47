//! Debounce (a binding's `debounce`): of the jobs of one key added within
//! `period` of each other, only the last runs, once, `period` after it was
//! added — or at the latest `maxWait` after the first of them.
//!
//! BullMQ does the coalescing itself: each job is added delayed, with the
//! deduplication id `debounce:<key hash>` in BullMQ's debounce mode
//! (`extend` and `replace`), so a job added while the previous one is still
//! delayed replaces it — new data, new delay — inside BullMQ's add script.
//! Airlock adds only `maxWait`: the first job of a burst records when the
//! burst began (`P:QUEUE:airlock:db:<key hash>:first`), and each later job's
//! delay is cut so the burst's job runs by `first + maxWait`. The job's
//! start deletes the record, so the next burst starts a window of its own.
//!
//! Applied where Airlock adds jobs (the API, events), because debouncing
//! decides whether a job is added at all: a job a BullMQ producer adds on
//! its own is not debounced, unless it passes the same deduplication
//! options itself. Cost: one script per added job, one `DEL` per start.
//! A crash between the two leaves a record that expires after
//! `maxWait + period`.

use std::sync::LazyLock;

use airlock_core::clock::SharedClock;

use super::key_limits::KeySlot;
use crate::error::QueueError;
use crate::store::Store;

/// `KEYS[1]` burst start; `ARGV` now, period, max wait (0: none). Answers
/// the delay for the job being added.
static DELAY: LazyLock<redis::Script> =
    LazyLock::new(|| redis::Script::new(include_str!("lua/debounce_delay.lua")));

/// Airlock's debounce script, with its SHA1 (for benchmarks).
pub fn script_hashes() -> Vec<(&'static str, String)> {
    vec![("debounce_delay", DELAY.get_hash().to_string())]
}

/// What a job added into a burst gets: BullMQ's delay and the
/// deduplication id (`debounce:<key hash>`, in BullMQ's debounce mode: TTL
/// the delay, `extend` and `replace`) that makes it replace the burst's
/// delayed job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Burst {
    /// The job's delay, ms.
    pub delay_ms: u64,
    /// Its deduplication id.
    pub dedup_id: String,
}

/// The debounce bursts of every queue on one Redis.
#[derive(Clone)]
pub struct Debounces {
    store: Store,
    /// When a burst began and how much of `maxWait` is left.
    clock: SharedClock,
}

impl Debounces {
    /// The bursts on `store`'s Redis, timed by `clock`.
    pub fn new(store: Store, clock: SharedClock) -> Self {
        Debounces { store, clock }
    }

    fn burst_key(&self, slot: &KeySlot) -> String {
        self.store.keys().debounce_first(&slot.queue, &slot.hash)
    }

    /// The delay and deduplication id of a job of `slot`'s key being added
    /// under a debounce of `period_ms` (and `max_wait_ms`).
    pub async fn join(
        &self,
        slot: &KeySlot,
        period_ms: u64,
        max_wait_ms: Option<u64>,
    ) -> Result<Burst, QueueError> {
        let mut conn = self.store.conn();
        let delay_ms: u64 = DELAY
            .key(self.burst_key(slot))
            .arg(self.clock.now_ms())
            .arg(period_ms)
            .arg(max_wait_ms.unwrap_or(0))
            .invoke_async(&mut conn)
            .await?;
        Ok(Burst {
            delay_ms,
            dedup_id: format!("debounce:{}", slot.hash),
        })
    }

    /// Ends the burst of `slot`'s key: its job has started.
    pub async fn end(&self, slot: &KeySlot) -> Result<(), QueueError> {
        let mut conn = self.store.conn();
        let _: i64 = redis::AsyncCommands::del(&mut conn, self.burst_key(slot)).await?;
        Ok(())
    }
}
