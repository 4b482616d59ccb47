//! What each run of a job leaves behind: its last-run measurements and
//! history entry in the job's hash, and the queue's per-minute tallies of
//! how runs ended and how long they took and waited, in latency buckets
//! (`P:QUEUE:airlock:stats:MINUTE`). The recorder (`worker::recorder`)
//! writes a run's record onto its job ([`Runs::write`]) around the time
//! BullMQ finishes the job (before or after it: the job does not wait for
//! its record), and sums the tallies on the host, flushed once a
//! second per queue ([`Runs::add_tallies`]); the dashboard's charts read
//! [`Runs::stats`].
//!
//! ## One field for the last run's measurements
//!
//! Fuel, peak memory, wall time and (for a run that tried a request) its
//! HTTP counts are one field, `airlock.lastRun` ([`LastRun`]): one short
//! value instead of up to seven fields, written in the same `HSET` as the
//! rest of the record. Jobs measured by hosts older than this one carry
//! the seven fields instead; [`LastRun::of`] reads either.
//!
//! ## A completed first run writes no `airlock.run:1`
//!
//! It is what almost every job is, and its entry (JSON of ~250 bytes) would
//! be the only value of the job hash longer than Redis's
//! `hash-max-listpack-value` (64 bytes): writing it converts the hash from
//! a listpack into a hash table, which made the recorder's `HSET` cost 4–5
//! µs instead of ~1 µs, and the hash bigger for every later command BullMQ
//! runs on it. The entry is read back instead from what the hash holds
//! anyway ([`completed_first_run`], for `queue::timeline`): the last-run
//! measurements, BullMQ's `processedOn` (when the run was taken) and `pb`
//! (the host that ran it). `QueueService::retry` writes the entry
//! ([`Meta::keep_first_run`](super::meta::Meta::keep_first_run)) before it
//! retries a completed job, so the rerun does not overwrite what it is read
//! from; a completed job retried by another BullMQ client
//! (`job.retry('completed')`) loses its first run's entry.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::LazyLock;
use std::time::Duration;

use airlock_core::clock::SharedClock;

use crate::error::QueueError;
use crate::state::fields;
use crate::store::Store;

/// One run of a job as its history keeps it (`airlock.run:<n>`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunEntry {
    /// Which run (1 for the first; retries, wake-ups and recoveries count).
    pub run: u32,
    /// When it started, ms since the epoch.
    pub started_at: u64,
    /// Its wall time, ms.
    pub wall_time_ms: f64,
    /// Fuel it used, when metered.
    pub fuel_used: Option<u64>,
    /// Its peak linear memory, bytes.
    pub peak_memory_bytes: u64,
    /// HTTP requests it sent.
    pub http_requests: u64,
    /// HTTP requests refused before sending.
    pub http_refused: u64,
    /// Request body bytes sent.
    pub http_bytes_out: u64,
    /// Response body bytes read.
    pub http_bytes_in: u64,
    /// The host that ran it.
    pub host: String,
    /// How it ended: `completed`, a failure kind, `slept` or `waited`.
    pub end: String,
    /// Why a failed run failed (the message of its failure; the kind is
    /// `end`), cut to 1,000 characters (`MAX_RUN_REASON`): a job that completed
    /// on a later attempt keeps each earlier attempt's reason here, where
    /// BullMQ's `failedReason` holds only the last one's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 1000)]
    pub reason: Option<String>,
    /// The id of the durable sleep or wait a run that `slept` or `waited`
    /// parked on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parked_on: Option<String>,
}

/// Most characters of a run's failure reason kept in its history entry
/// (and returned from one: entries are read from Redis, so any length can
/// be found there).
pub const MAX_RUN_REASON: usize = 1000;

/// `reason` cut to [`MAX_RUN_REASON`] characters, the last of them `…`
/// when it was longer.
pub fn bounded_reason(reason: &str) -> String {
    if reason.chars().count() <= MAX_RUN_REASON {
        return reason.to_string();
    }
    let cut = reason
        .char_indices()
        .nth(MAX_RUN_REASON - 1)
        .map_or(reason.len(), |(at, _)| at);
    format!("{}…", &reason[..cut])
}

/// Records of finished runs of one queue in one call. `KEYS` are job
/// hashes; for each, `ARGV` holds a digest to pin (or `""`), the number of
/// field/value pairs, then the pairs. A job that no longer exists
/// (retention removed it when it finished) is skipped: its hash is not
/// written again.
static RECORD: LazyLock<redis::Script> =
    LazyLock::new(|| redis::Script::new(include_str!("lua/record.lua")));

/// Airlock's run-recording script, with its SHA1 (for benchmarks).
pub fn script_hashes() -> Vec<(&'static str, String)> {
    vec![("record", RECORD.get_hash().to_string())]
}

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

/// What a finished run leaves on its job.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRecord {
    /// The job hash.
    pub job_key: String,
    /// The digest to pin, when nothing pinned the job yet (a first run
    /// without durable writes is pinned when it finishes).
    pub pin: Option<String>,
    /// Peak linear memory, bytes.
    pub peak_memory_bytes: u64,
    /// Wall time, ms.
    pub wall_time_ms: f64,
    /// Fuel used, when metered.
    pub fuel_used: Option<u64>,
    /// Outbound HTTP of the run.
    pub http: airlock_core::run::HttpSummary,
    /// Which run of the job this was (BullMQ's attempts started, `ats`:
    /// it counts retries, wake-ups and recoveries): the history field
    /// `airlock.run:<n>` it is kept under, for the first [`MAX_RUNS_KEPT`].
    pub run: u32,
    /// When it started, ms since the epoch.
    pub started_at_ms: u64,
    /// When the job became ready to run (its add plus its delay), for a
    /// first run: its enqueue→start time goes into the minute's latency
    /// tally. `None` for later runs (their wait is a backoff, a sleep or a
    /// wait of the job's own).
    pub ready_at_ms: Option<u64>,
    /// The host that ran it.
    pub host: String,
    /// How it ended: [`RunEnd`].
    pub end: RunEnd,
    /// Why it failed (the failure's message), for a failed run.
    pub reason: Option<String>,
    /// The durable sleep or wait it parked on, for a run that did.
    pub parked_on: Option<String>,
    /// Its transcript (JSON), for a binding that records them and a run
    /// among the first [`MAX_TRANSCRIPT_RUNS`].
    pub transcript: Option<String>,
    /// The handler digest it ran, for a binding with a canary: its run is
    /// also tallied per version (`v:<digest>:<end>`, `v:<digest>:wallMs`,
    /// `v:<digest>:fuel`), so both versions show side by side.
    pub canary_digest: Option<String>,
}

/// How a run ended, as its history and the queue's per-minute tallies say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunEnd {
    /// The job completed.
    Completed,
    /// The run failed with this kind (the job may be retried).
    Failed(airlock_core::failure::FailureKind),
    /// A durable sleep parked the job.
    Slept,
    /// A durable wait parked the job.
    Waited,
}

impl RunEnd {
    /// `completed`, the failure kind, `slept` or `waited`.
    pub fn as_str(&self) -> &'static str {
        match self {
            RunEnd::Completed => "completed",
            RunEnd::Failed(kind) => kind.as_str(),
            RunEnd::Slept => "slept",
            RunEnd::Waited => "waited",
        }
    }
}

/// Most runs of one job whose measurements are kept in its history
/// (`airlock.run:1` ...); later runs update only the last-run fields.
pub const MAX_RUNS_KEPT: u32 = 100;

/// Most runs of a job whose transcripts are kept (each at most about 256
/// KiB): a job retried or woken more often keeps its first ones.
pub const MAX_TRANSCRIPT_RUNS: u32 = 25;

/// How long a queue's per-minute tallies are kept.
pub const STATS_TTL: Duration = Duration::from_secs(25 * 60 * 60);

/// The history entry of a job's first run when that run completed the job:
/// the recorder writes no `airlock.run:1` for it (see the module docs), so it
/// is read back from the job's last-run measurements and BullMQ's own
/// fields — `processedOn` (when the run was taken), `pb` (the host). Only
/// for a job BullMQ finished as completed after exactly one run (`ats` 1)
/// that has no `airlock.run:1` and whose measurements were recorded.
pub fn completed_first_run(fields: &HashMap<String, String>) -> Option<RunEntry> {
    let get = |name: &str| fields.get(name).map(String::as_str);
    if fields.contains_key(&format!("{}1", fields::RUN_PREFIX))
        || get("ats") != Some("1")
        || !fields.contains_key("returnvalue")
        || !fields.contains_key("finishedOn")
    {
        return None;
    }
    let last = LastRun::of(fields)?;
    let http = last.http.unwrap_or_default();
    Some(RunEntry {
        run: 1,
        started_at: get("processedOn")?.parse().ok()?,
        wall_time_ms: last.wall_time_ms,
        fuel_used: last.fuel_used,
        peak_memory_bytes: last.peak_memory_bytes,
        http_requests: http.requests,
        http_refused: http.refused,
        http_bytes_out: http.bytes_out,
        http_bytes_in: http.bytes_in,
        host: get("pb").unwrap_or_default().to_string(),
        end: RunEnd::Completed.as_str().to_string(),
        reason: None,
        parked_on: None,
    })
}

/// A job's last run, measured: what `airlock.lastRun` holds, as
/// `<wall time ms> <peak memory bytes> <fuel used, or - unmetered>`, and
/// for a run that tried a request ` <requests> <refused> <bytes out>
/// <bytes in>`: 20 to 40 bytes, so the job hash stays a listpack (see the
/// module docs). Read from Redis, so parsed strictly: anything else reads
/// as no measurement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LastRun {
    /// Wall time, ms, to the microsecond.
    pub wall_time_ms: f64,
    /// Peak linear memory, bytes.
    pub peak_memory_bytes: u64,
    /// Fuel used, when metered.
    pub fuel_used: Option<u64>,
    /// Outbound HTTP, for a run that tried a request.
    pub http: Option<airlock_core::run::HttpSummary>,
}

impl LastRun {
    /// The measurements of `run`.
    pub fn of_record(run: &RunRecord) -> LastRun {
        LastRun {
            wall_time_ms: run.wall_time_ms,
            peak_memory_bytes: run.peak_memory_bytes,
            fuel_used: run.fuel_used,
            http: (run.http.requests + run.http.refused > 0).then_some(run.http),
        }
    }

    /// The field's value.
    pub fn encode(&self) -> String {
        let mut text = format!(
            "{:.3} {} ",
            self.wall_time_ms.max(0.0),
            self.peak_memory_bytes
        );
        match self.fuel_used {
            Some(fuel) => text.push_str(&fuel.to_string()),
            None => text.push('-'),
        }
        if let Some(http) = &self.http {
            text.push_str(&format!(
                " {} {} {} {}",
                http.requests, http.refused, http.bytes_out, http.bytes_in
            ));
        }
        text
    }

    /// Parses a field's value; `None` for anything [`LastRun::encode`]
    /// does not write.
    pub fn parse(text: &str) -> Option<LastRun> {
        let parts: Vec<&str> = text.split(' ').collect();
        if parts.len() != 3 && parts.len() != 7 {
            return None;
        }
        let wall_time_ms: f64 = parts[0].parse().ok()?;
        if !wall_time_ms.is_finite() || wall_time_ms < 0.0 {
            return None;
        }
        let number = |i: usize| parts[i].parse::<u64>().ok();
        let fuel_used = match parts[2] {
            "-" => None,
            _ => Some(number(2)?),
        };
        let http = match parts.len() {
            7 => Some(airlock_core::run::HttpSummary {
                requests: number(3)?,
                refused: number(4)?,
                bytes_out: number(5)?,
                bytes_in: number(6)?,
            }),
            _ => None,
        };
        Some(LastRun {
            wall_time_ms,
            peak_memory_bytes: number(1)?,
            fuel_used,
            http,
        })
    }

    /// The last run's measurements in a job hash: `airlock.lastRun`, or
    /// the separate fields hosts before it wrote (`airlock.wallTimeMs`,
    /// `airlock.peakMemoryBytes`, `airlock.fuelUsed`, `airlock.http*`);
    /// `None` when the job has neither.
    pub fn of(fields: &HashMap<String, String>) -> Option<LastRun> {
        if let Some(text) = fields.get(fields::LAST_RUN) {
            return LastRun::parse(text);
        }
        let number = |name: &str| fields.get(name).and_then(|v| v.parse::<u64>().ok());
        let wall_time_ms: f64 = fields.get(fields::legacy::WALL_MS)?.parse().ok()?;
        let requests = number(fields::legacy::HTTP_REQUESTS);
        Some(LastRun {
            wall_time_ms,
            peak_memory_bytes: number(fields::legacy::MEMORY)?,
            fuel_used: number(fields::legacy::FUEL),
            http: requests.map(|requests| airlock_core::run::HttpSummary {
                requests,
                refused: number(fields::legacy::HTTP_REFUSED).unwrap_or(0),
                bytes_out: number(fields::legacy::HTTP_BYTES_OUT).unwrap_or(0),
                bytes_in: number(fields::legacy::HTTP_BYTES_IN).unwrap_or(0),
            }),
        })
    }
}

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

/// Runs' records and tallies on one Redis.
#[derive(Clone)]
pub struct Runs {
    store: Store,
    /// Which minute a run's tally goes to, and which minutes a read covers.
    clock: SharedClock,
}

impl Runs {
    /// The run records on `store`'s Redis; tallies by `clock`'s minute.
    pub fn new(store: Store, clock: SharedClock) -> Self {
        Runs { store, clock }
    }

    /// The minute (ms since the epoch / 60,000) a run ending now is
    /// tallied in.
    pub fn minute_now(&self) -> u64 {
        self.clock.now_ms() / 60_000
    }

    /// Writes each run's record onto its job, in one script call (the
    /// jobs of one queue share its slot): the last run's measurements, its
    /// history entry (but for a completed first run: see the module docs),
    /// its transcript, and the pin of a job nothing pinned yet (`HSETNX`,
    /// so a repin made meanwhile stands). A record may land after BullMQ
    /// finished its job, and retention may have removed the job by then:
    /// each write is guarded (`EXISTS`), so a removed job's hash is never
    /// resurrected with a stray record.
    pub async fn write(&self, runs: &[RunRecord]) -> Result<(), QueueError> {
        if runs.is_empty() {
            return Ok(());
        }
        let mut invocation = RECORD.prepare_invoke();
        for run in runs {
            invocation.key(&run.job_key);
            invocation.arg(run.pin.as_deref().unwrap_or(""));
            let pairs = Self::fields_of(run)?;
            invocation.arg(pairs.len());
            for (field, value) in &pairs {
                invocation.arg(field.as_ref()).arg(value);
            }
        }
        let mut conn = self.store.conn();
        let _: i64 = invocation.invoke_async(&mut conn).await?;
        Ok(())
    }

    /// The fields `run`'s record sets on its job.
    fn fields_of(run: &RunRecord) -> Result<Vec<(Cow<'static, str>, String)>, QueueError> {
        let mut pairs = vec![(
            Cow::Borrowed(fields::LAST_RUN),
            LastRun::of_record(run).encode(),
        )];
        // A first run that completed is the job's only run: its entry is
        // read back from the last-run fields and BullMQ's own
        // ([`completed_first_run`]), which keeps the job hash small for
        // BullMQ's scripts (see the module docs).
        let kept = (1..=MAX_RUNS_KEPT).contains(&run.run)
            && !(run.run == 1 && run.end == RunEnd::Completed);
        if kept {
            let entry = RunEntry {
                run: run.run,
                started_at: run.started_at_ms,
                wall_time_ms: (run.wall_time_ms * 1000.0).round() / 1000.0,
                fuel_used: run.fuel_used,
                peak_memory_bytes: run.peak_memory_bytes,
                http_requests: run.http.requests,
                http_refused: run.http.refused,
                http_bytes_out: run.http.bytes_out,
                http_bytes_in: run.http.bytes_in,
                host: run.host.clone(),
                end: run.end.as_str().to_string(),
                reason: run.reason.as_deref().map(bounded_reason),
                parked_on: run.parked_on.clone(),
            };
            pairs.push((
                Cow::Owned(format!("{}{}", fields::RUN_PREFIX, run.run)),
                serde_json::to_string(&entry)?,
            ));
        }
        if let Some(transcript) = &run.transcript {
            pairs.push((
                Cow::Owned(format!("{}{}", fields::TRANSCRIPT_PREFIX, run.run)),
                transcript.clone(),
            ));
        }
        Ok(pairs)
    }

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
    use super::{LastRun, MAX_RUN_REASON, bounded_reason};
    use crate::state::fields;
    use airlock_core::run::HttpSummary;
    use std::collections::HashMap;

    #[test]
    fn the_last_run_reads_back_as_it_was_written_and_stays_a_listpack_value() {
        let metered = LastRun {
            wall_time_ms: 12.3456,
            peak_memory_bytes: 1_114_112,
            fuel_used: Some(2_000_000_000),
            http: None,
        };
        let text = metered.encode();
        assert_eq!(text, "12.346 1114112 2000000000");
        let back = LastRun::parse(&text).unwrap();
        assert_eq!(back.fuel_used, Some(2_000_000_000));
        assert_eq!(back.wall_time_ms, 12.346);
        // The largest a run without requests writes: an hour, the largest
        // memory and fuel a host allows; under Redis's 64-byte listpack bound.
        let largest = LastRun {
            wall_time_ms: 3_600_000.0,
            peak_memory_bytes: 4 << 30,
            fuel_used: Some(u64::MAX),
            http: None,
        };
        assert!(largest.encode().len() <= 64, "{}", largest.encode());
        let http = LastRun {
            fuel_used: None,
            http: Some(HttpSummary {
                requests: 2,
                refused: 1,
                bytes_out: 10,
                bytes_in: 2048,
            }),
            ..metered
        };
        assert_eq!(http.encode(), "12.346 1114112 - 2 1 10 2048");
        assert_eq!(
            LastRun::parse(&http.encode()),
            Some(LastRun {
                wall_time_ms: 12.346,
                ..http
            })
        );
    }

    #[test]
    fn a_last_run_field_redis_holds_is_parsed_strictly() {
        for junk in [
            "",
            "1 2",
            "1 2 3 4",
            "NaN 1 2",
            "inf 1 2",
            "-1 1 2",
            "1 -2 3",
            "1 2 x",
            "1  2 3",
            "1 2 3 4 5 6 x",
        ] {
            assert_eq!(LastRun::parse(junk), None, "{junk:?}");
        }
    }

    #[test]
    fn jobs_measured_by_older_hosts_keep_their_measurements() {
        let old: HashMap<String, String> = [
            (fields::legacy::WALL_MS, "3.5"),
            (fields::legacy::MEMORY, "65536"),
            (fields::legacy::FUEL, "42"),
            (fields::legacy::HTTP_REQUESTS, "1"),
            (fields::legacy::HTTP_BYTES_IN, "9"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let last = LastRun::of(&old).unwrap();
        assert_eq!(last.wall_time_ms, 3.5);
        assert_eq!(last.peak_memory_bytes, 65536);
        assert_eq!(last.fuel_used, Some(42));
        assert_eq!(last.http.unwrap().bytes_in, 9);
        // A newer record wins over leftovers of an older host's.
        let mut both = old.clone();
        both.insert(fields::LAST_RUN.into(), "1.000 2 -".into());
        assert_eq!(LastRun::of(&both).unwrap().fuel_used, None);
        assert_eq!(LastRun::of(&HashMap::new()), None);
    }

    #[test]
    fn a_latency_counts_in_the_first_bucket_that_holds_it() {
        use super::{LATENCY_BOUNDS_MS, RUN_BUCKETS, WAIT_BUCKETS, bucket};
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

    #[test]
    fn a_reason_is_kept_whole_up_to_its_bound_and_cut_past_it() {
        let exact = "é".repeat(MAX_RUN_REASON);
        assert_eq!(bounded_reason(&exact), exact);
        let cut = bounded_reason(&"é".repeat(MAX_RUN_REASON + 5));
        assert_eq!(cut.chars().count(), MAX_RUN_REASON);
        assert!(cut.ends_with("é…"), "{cut}");
        assert_eq!(bounded_reason("boom"), "boom");
    }
}
