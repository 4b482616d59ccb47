//! A queue's per-minute tallies of how runs ended and how long they took
//! and waited, in latency buckets (`P:QUEUE:airlock:stats:MINUTE`): the
//! fields, the sums a host makes of its runs ([`tally`]), and their writes
//! and reads on Redis.

use std::borrow::Cow;
use std::collections::HashMap;
use std::time::Duration;

use super::{RunRecord, Runs};
use crate::error::QueueError;

/// Prefix of a minute's per-version tallies (a binding with a canary):
/// `v:<digest>:<end>` runs, `v:<digest>:wallMs` and `v:<digest>:fuel` sums.
pub const VERSION_PREFIX: &str = "v:";

/// Upper bounds (ms) of the latency buckets a minute's tally counts runs
/// in: a run of `d` ms counts in the first bucket whose bound is at least
/// `d`, and past the last in `inf`. Percentiles read from them are "at
/// most" the bucket's bound.
pub const LATENCY_BOUNDS_MS: [u64; 17] = [
    1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 30_000, 60_000, 300_000,
    3_600_000,
];

/// The tally fields of run times: `run:<bound>`, and `run:inf`.
pub const RUN_BUCKETS: [&str; 18] = [
    "run:1",
    "run:2",
    "run:5",
    "run:10",
    "run:20",
    "run:50",
    "run:100",
    "run:200",
    "run:500",
    "run:1000",
    "run:2000",
    "run:5000",
    "run:10000",
    "run:30000",
    "run:60000",
    "run:300000",
    "run:3600000",
    "run:inf",
];

/// The tally fields of first runs' enqueue→start times: `wait:<bound>`,
/// and `wait:inf`.
pub const WAIT_BUCKETS: [&str; 18] = [
    "wait:1",
    "wait:2",
    "wait:5",
    "wait:10",
    "wait:20",
    "wait:50",
    "wait:100",
    "wait:200",
    "wait:500",
    "wait:1000",
    "wait:2000",
    "wait:5000",
    "wait:10000",
    "wait:30000",
    "wait:60000",
    "wait:300000",
    "wait:3600000",
    "wait:inf",
];

/// The bucket of a latency of `ms`.
pub fn bucket(ms: u64) -> usize {
    LATENCY_BOUNDS_MS
        .iter()
        .position(|&bound| ms <= bound)
        .unwrap_or(LATENCY_BOUNDS_MS.len())
}

/// How long a queue's per-minute tallies are kept.
pub const STATS_TTL: Duration = Duration::from_secs(25 * 60 * 60);

/// A queue's tallies of one minute: field (`completed`, `run:<bound>`,
/// `v:<digest>:fuel`, ...) → count or sum.
pub type MinuteTallies = std::collections::BTreeMap<Cow<'static, str>, u64>;

/// Adds `run` to a minute's tallies: how it ended, its run-time bucket, a
/// first run's enqueue→start bucket, and for a binding with a canary the
/// same by version.
pub fn tally(tallies: &mut MinuteTallies, run: &RunRecord) {
    let mut add = |field: Cow<'static, str>, n: u64| *tallies.entry(field).or_default() += n;
    add(Cow::Borrowed(run.end.as_str()), 1);
    add(
        Cow::Borrowed(RUN_BUCKETS[bucket(run.wall_time_ms.max(0.0) as u64)]),
        1,
    );
    if let Some(ready) = run.ready_at_ms {
        let waited = run.started_at_ms.saturating_sub(ready);
        add(Cow::Borrowed(WAIT_BUCKETS[bucket(waited)]), 1);
    }
    if let Some(digest) = &run.canary_digest {
        let mut by_version =
            |what: &str, n: u64| add(Cow::Owned(format!("{VERSION_PREFIX}{digest}:{what}")), n);
        by_version(run.end.as_str(), 1);
        by_version("wallMs", run.wall_time_ms.max(0.0).round() as u64);
        by_version("fuel", run.fuel_used.unwrap_or(0));
    }
}

impl Runs {
    /// Adds a queue's summed tallies of `minute` to its Redis hash (one
    /// `HINCRBY` per field, and the hash's expiry), in one round trip.
    pub async fn add_tallies(
        &self,
        queue: &str,
        minute: u64,
        tallies: &MinuteTallies,
    ) -> Result<(), QueueError> {
        if tallies.is_empty() {
            return Ok(());
        }
        let key = self.store.keys().run_stats(queue, minute);
        let mut pipe = redis::pipe();
        for (field, count) in tallies {
            pipe.hincr(&key, field.as_ref(), *count).ignore();
        }
        pipe.pexpire(&key, STATS_TTL.as_millis() as i64).ignore();
        let mut conn = self.store.conn();
        let () = pipe.query_async(&mut conn).await?;
        Ok(())
    }

    /// The per-minute tallies of `queue` for the `minutes` minutes up to
    /// now, oldest first: `(minute, outcome → runs)`.
    pub async fn stats(
        &self,
        queue: &str,
        minutes: u64,
    ) -> Result<Vec<(u64, HashMap<String, u64>)>, QueueError> {
        let now = self.clock.now_ms() / 60_000;
        let first = now.saturating_sub(minutes.saturating_sub(1));
        let mut pipe = redis::pipe();
        for minute in first..=now {
            pipe.hgetall(self.store.keys().run_stats(queue, minute));
        }
        let mut conn = self.store.conn();
        let counts: Vec<HashMap<String, u64>> = pipe.query_async(&mut conn).await?;
        Ok((first..=now).zip(counts).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::{LATENCY_BOUNDS_MS, RUN_BUCKETS, WAIT_BUCKETS, bucket};

    #[test]
    fn a_latency_counts_in_the_first_bucket_that_holds_it() {
        assert_eq!(bucket(0), 0);
        assert_eq!(bucket(1), 0);
        assert_eq!(bucket(2), 1);
        assert_eq!(bucket(3), 2);
        assert_eq!(bucket(1_000), 9);
        assert_eq!(bucket(3_600_001), LATENCY_BOUNDS_MS.len());
        for (i, bound) in LATENCY_BOUNDS_MS.iter().enumerate() {
            assert_eq!(RUN_BUCKETS[i], format!("run:{bound}"));
            assert_eq!(WAIT_BUCKETS[i], format!("wait:{bound}"));
        }
        assert_eq!(RUN_BUCKETS[LATENCY_BOUNDS_MS.len()], "run:inf");
    }
}
