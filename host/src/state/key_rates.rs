//! Per-key start rates: a binding's `keyThrottle` (over the rate, a job
//! waits for its turn) and `keyRateLimit` (over the rate, a job is dropped
//! with the reason recorded), as Inngest defines `throttle` and
//! `rateLimit`.
//!
//! Both are GCRA (the generic cell rate algorithm) over a Redis string per
//! key: its *theoretical arrival time* (TAT). With `limit` starts per
//! `period`, each start costs `T = period / limit`; a key may run `burst`
//! starts back to back (tolerance `(burst - 1) * T`). A start at `now` is
//! allowed when `now >= TAT - tolerance`, and moves the TAT to
//! `max(TAT, now) + T`. Checked before a job's guest starts (and before it
//! takes a `keyConcurrency` slot), on whichever host takes the job, so jobs
//! from every producer are governed.
//!
//! **Throttle** gives a job over the rate a start time of its own — the
//! next free one — recorded in the key's grants (`…:kt:<key hash>:grants`,
//! job id → start time) as it moves the TAT on, and parks the job
//! (BullMQ-delayed, no attempt counted) until then. A backlog of one key so
//! wakes one job per turn instead of all at once, and other keys never wait
//! for it.
//!
//! A grant is a turn, not yet a start: a woken job can be late for it (its
//! wake-up from the delayed set came late, its host was busy), and the next
//! turn, granted on the schedule, would then follow it by less than `T`.
//! So the throttle keeps a second GCRA over the starts it admitted
//! (`…:started`, the earliest the next start may come, less the tolerance),
//! and a job whose grant is due starts only once that allows it: at once,
//! after a short wait in-process ([`HOLD_MS`]), or parked again for the
//! moved turn. Admitted starts of one key are so at least `T` apart (by the
//! hosts' clocks; `burst` of them may come back to back), however late any
//! of them came, and the start writes the job's `processedOn` (BullMQ's
//! "when it was processed", set again by this admission), so what a user
//! reads is the spacing kept.
//!
//! **Rate limit** drops a job over the rate: it fails as `rate_limited`,
//! never retried, its `failedReason` saying which key and limit.
//!
//! One script per governed start; a throttled job adds BullMQ's
//! `moveToDelayed` and its second fetch. Crash windows (a crashed job
//! comes back through a live host's recovery, `worker::recovery`, within
//! seconds, else BullMQ's stalled check): a host that dies after a grant
//! and before parking leaves the job to come back so; taken again, it
//! finds its grant (due or not) and keeps it — a start is never granted
//! twice. A host that dies after admitting a start (also while it waits
//! out a moment of [`HOLD_MS`]) leaves the start counted; the job comes
//! back, and its next start is a new one, counted again: the key's next
//! turn comes `T` later than it had to, never sooner. A grant whose job is
//! gone (cancelled, removed) is dropped a day after its time, its turn
//! lost to nobody.

use std::sync::LazyLock;

use airlock_core::clock::SharedClock;

use super::key_limits::KeySlot;
use crate::error::QueueError;
use crate::store::Store;

/// Grants older than this (ms) are swept: their jobs are gone.
const GRANT_RETENTION_MS: u64 = 24 * 60 * 60 * 1000;

/// `keyRateLimit`: `KEYS` TAT; `ARGV` now, T (ms), tolerance (ms). Answers
/// `{0}` to start now, `{2, retry_in}` dropped.
static DROP: LazyLock<redis::Script> =
    LazyLock::new(|| redis::Script::new(include_str!("lua/key_rate_drop.lua")));

/// `keyThrottle`: `KEYS` TAT, grants, started, the job's hash; `ARGV` id,
/// now, T (ms), tolerance (ms), grant retention (ms), hold (ms). Answers
/// `{0}` to start now, `{1, at}` to park until `at`, `{3, at}` to start at
/// `at`, a moment from now (see [`HOLD_MS`]). An admitted start moves
/// `started` on and writes the job's `processedOn`; the TAT never falls
/// behind `started`, so a fresh job's grant never precedes the turn a late
/// start moved.
static THROTTLE: LazyLock<redis::Script> =
    LazyLock::new(|| redis::Script::new(include_str!("lua/key_throttle.lua")));

/// The longest a due turn waits in-process for a late start's spacing to
/// pass (ms). A start that came late (its job's wake-up from BullMQ's delayed
/// set was late, or its host busy) moves the next turn by as much; a job
/// woken for that turn waits out the difference here, holding one of its
/// worker's places, rather than being parked again: a second park costs a
/// `moveToDelayed` and a fetch, and its wake-up can be late in turn. A
/// difference longer than this parks the job again, for the moved turn. A
/// cancel asked during the wait stops the run as the wait ends.
pub const HOLD_MS: u64 = 250;

/// Airlock's per-key rate script, with its SHA1 (for benchmarks).
pub fn script_hashes() -> Vec<(&'static str, String)> {
    vec![
        ("key_throttle", THROTTLE.get_hash().to_string()),
        ("key_rate_limit", DROP.get_hash().to_string()),
    ]
}

/// A start rate: `limit` starts per `period_ms`, `burst` back to back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// Starts per period.
    pub limit: u64,
    /// The period, ms.
    pub period_ms: u64,
    /// Starts allowed back to back (at least 1).
    pub burst: u64,
}

impl Rate {
    /// `T`: what one start costs, in ms (fractional).
    fn interval(&self) -> f64 {
        self.period_ms as f64 / self.limit.max(1) as f64
    }
}

/// What a rate check decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateDecision {
    /// Start now.
    Start,
    /// Throttled, a moment (at most [`HOLD_MS`]) from now: start at this
    /// time (ms since the epoch); the start is already counted.
    StartAt(u64),
    /// Throttled: wait until this time (ms since the epoch), then start.
    WaitUntil(u64),
    /// Rate-limited: dropped; the key has room again in this many ms.
    Dropped(u64),
}

/// Which rule a check is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateMode {
    /// `keyThrottle`: over the rate, wait.
    Throttle,
    /// `keyRateLimit`: over the rate, drop.
    Drop,
}

/// The per-key rates (throttles and rate limits) of every queue on one
/// Redis.
#[derive(Clone)]
pub struct KeyRates {
    store: Store,
    /// Where "now" comes from: GCRA is arithmetic on it, so a paused clock
    /// makes a test of spacing exact.
    clock: SharedClock,
}

impl KeyRates {
    /// The key rates on `store`'s Redis, timed by `clock`.
    pub fn new(store: Store, clock: SharedClock) -> Self {
        KeyRates { store, clock }
    }

    fn throttle_keys(&self, slot: &KeySlot) -> [String; 2] {
        let keys = self.store.keys();
        [
            keys.key_rate_tat(&slot.queue, "kt", &slot.hash),
            keys.key_rate_grants(&slot.queue, "kt", &slot.hash),
        ]
    }

    /// Checks job `id`'s start against its key's `rate` (see the module
    /// docs).
    pub async fn check(
        &self,
        slot: &KeySlot,
        id: &str,
        rate: Rate,
        mode: RateMode,
    ) -> Result<RateDecision, QueueError> {
        let t = rate.interval();
        let tolerance = t * (rate.burst.max(1) - 1) as f64;
        let now = self.clock.now_ms();
        let keys = self.store.keys();
        let mut conn = self.store.conn();
        let answer: Vec<i64> = match mode {
            RateMode::Drop => {
                DROP.key(keys.key_rate_tat(&slot.queue, "kr", &slot.hash))
                    .arg(now)
                    .arg(t)
                    .arg(tolerance)
                    .invoke_async(&mut conn)
                    .await?
            }
            RateMode::Throttle => {
                let [tat, grants] = self.throttle_keys(slot);
                THROTTLE
                    .key(tat)
                    .key(grants)
                    .key(keys.key_rate_started(&slot.queue, &slot.hash))
                    .key(keys.job(&slot.queue, id))
                    .arg(id)
                    .arg(now)
                    .arg(t)
                    .arg(tolerance)
                    .arg(GRANT_RETENTION_MS)
                    .arg(HOLD_MS)
                    .invoke_async(&mut conn)
                    .await?
            }
        };
        Ok(match answer.as_slice() {
            [1, at] => RateDecision::WaitUntil(*at as u64),
            [3, at] => RateDecision::StartAt(*at as u64),
            [2, retry_in] => RateDecision::Dropped(*retry_in as u64),
            _ => RateDecision::Start,
        })
    }

    /// When job `id` is granted to start under its key's throttle, if it
    /// waits for a grant.
    pub async fn grant(&self, slot: &KeySlot, id: &str) -> Result<Option<u64>, QueueError> {
        let [_, grants] = self.throttle_keys(slot);
        let mut conn = self.store.conn();
        let at: Option<f64> = redis::AsyncCommands::zscore(&mut conn, grants, id).await?;
        Ok(at.map(|a| a as u64))
    }
}
