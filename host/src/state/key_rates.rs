//! Per-key start rates: a binding's `keyThrottle` (over the rate, a job
//! waits for its turn) and `keyRateLimit` (over the rate, a job is dropped
//! with the reason recorded), as Inngest defines `throttle` and
//! `rateLimit`.
//!
//! Both are GCRA (the generic cell rate algorithm) over one Redis string
//! per key: its *theoretical arrival time* (TAT). With `limit` starts per
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
//! (BullMQ-delayed, no attempt counted) until then. When the job is taken
//! again it finds its grant, due, and starts without asking again. A backlog
//! of one key so wakes one job per turn instead of all at once, and other
//! keys never wait for it.
//!
//! **Rate limit** drops a job over the rate: it fails as `rate_limited`,
//! never retried, its `failedReason` saying which key and limit.
//!
//! One script per governed start; a throttled job adds BullMQ's
//! `moveToDelayed` and its second fetch. Crash windows: a host that dies
//! after a grant and before parking leaves the job to the stalled check;
//! taken again, it finds its grant (due or not) and keeps it — a start is
//! never granted twice. A grant whose job is gone (cancelled, removed) is
//! dropped a day after its time, its turn lost to nobody.

use std::sync::LazyLock;

use airlock_core::clock::SharedClock;

use super::key_limits::KeySlot;
use crate::error::QueueError;
use crate::store::Store;

/// Grants older than this (ms) are swept: their jobs are gone.
const GRANT_RETENTION_MS: u64 = 24 * 60 * 60 * 1000;

/// `KEYS` TAT, grants; `ARGV` id, now, T (ms), tolerance (ms), mode
/// (`throttle` | `drop`). Answers `{0}` to start now, `{1, at}` to wait
/// until `at` (throttle), `{2, retry_in}` dropped (rate limit).
static GCRA: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(
        "local now, t, tol = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]) \
         redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - tonumber(ARGV[6])) \
         local granted = redis.call('ZSCORE', KEYS[2], ARGV[1]) \
         if granted then \
           granted = tonumber(granted) \
           if granted <= now then redis.call('ZREM', KEYS[2], ARGV[1]) return {0} end \
           return {1, granted} \
         end \
         local tat = tonumber(redis.call('GET', KEYS[1]) or '0') \
         if tat < now then tat = now end \
         local allow_at = tat - tol \
         if allow_at <= now or ARGV[5] == 'throttle' then \
           redis.call('SET', KEYS[1], tat + t, 'PX', math.ceil(tat + t - now + tol + 1000)) \
           if allow_at <= now then return {0} end \
           redis.call('ZADD', KEYS[2], allow_at, ARGV[1]) \
           redis.call('PEXPIRE', KEYS[2], math.ceil(allow_at - now + tonumber(ARGV[6]))) \
           return {1, allow_at} \
         end \
         return {2, math.ceil(allow_at - now)}",
    )
});

/// Airlock's per-key rate script, with its SHA1 (for benchmarks).
pub fn script_hashes() -> Vec<(&'static str, String)> {
    vec![("key_rate", GCRA.get_hash().to_string())]
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

    fn rate_keys(&self, slot: &KeySlot, mode: RateMode) -> [String; 2] {
        let kind = match mode {
            RateMode::Throttle => "kt",
            RateMode::Drop => "kr",
        };
        let keys = self.store.keys();
        [
            keys.key_rate_tat(&slot.queue, kind, &slot.hash),
            keys.key_rate_grants(&slot.queue, kind, &slot.hash),
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
        let [tat, grants] = self.rate_keys(slot, mode);
        let t = rate.interval();
        let tolerance = t * (rate.burst.max(1) - 1) as f64;
        let mut conn = self.store.conn();
        let answer: Vec<i64> = GCRA
            .key(tat)
            .key(grants)
            .arg(id)
            .arg(self.clock.now_ms())
            .arg(t)
            .arg(tolerance)
            .arg(match mode {
                RateMode::Throttle => "throttle",
                RateMode::Drop => "drop",
            })
            .arg(GRANT_RETENTION_MS)
            .invoke_async(&mut conn)
            .await?;
        Ok(match answer.as_slice() {
            [1, at] => RateDecision::WaitUntil(*at as u64),
            [2, retry_in] => RateDecision::Dropped(*retry_in as u64),
            _ => RateDecision::Start,
        })
    }

    /// When job `id` is granted to start under its key's throttle, if it
    /// waits for a grant.
    pub async fn grant(&self, slot: &KeySlot, id: &str) -> Result<Option<u64>, QueueError> {
        let [_, grants] = self.rate_keys(slot, RateMode::Throttle);
        let mut conn = self.store.conn();
        let at: Option<f64> = redis::AsyncCommands::zscore(&mut conn, grants, id).await?;
        Ok(at.map(|a| a as u64))
    }
}
