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

mod entry;
mod last_run;
mod tallies;

use std::borrow::Cow;
use std::sync::LazyLock;

use airlock_core::clock::SharedClock;

pub use self::entry::{MAX_RUN_REASON, RunEntry, bounded_reason, completed_first_run};
pub use self::last_run::LastRun;
pub use self::tallies::{
    LATENCY_BOUNDS_MS, MinuteTallies, RUN_BUCKETS, STATS_TTL, VERSION_PREFIX, WAIT_BUCKETS, bucket,
    tally,
};
use crate::error::QueueError;
use crate::state::fields;
use crate::store::Store;

/// Records of finished runs of one queue in one call. `KEYS` are job
/// hashes; for each, `ARGV` holds a digest to pin (or `""`), the number of
/// field/value pairs, then the pairs. A job that no longer exists
/// (retention removed it when it finished) is skipped: its hash is not
/// written again.
static RECORD: LazyLock<redis::Script> =
    LazyLock::new(|| redis::Script::new(include_str!("../lua/record.lua")));

/// Airlock's run-recording script, with its SHA1 (for benchmarks).
pub fn script_hashes() -> Vec<(&'static str, String)> {
    vec![("record", RECORD.get_hash().to_string())]
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
    /// The attempt the run belongs to (BullMQ's attempts made before it,
    /// plus one: [`RunningJob::attempt`](crate::queue::RunningJob::attempt)).
    pub attempt: u32,
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
    /// The batch it ran in, for a queue bound with `batch`; its
    /// measurements are then the job's share of the batch's.
    pub batch: Option<BatchRef>,
}

/// A batch a run ran in (`airlock.batch`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchRef {
    /// The batch's id: the host's id, a random part and a number.
    pub id: String,
    /// Jobs in the batch.
    pub size: u32,
}

impl BatchRef {
    /// The field's value: `<id> <size>`.
    pub fn encode(&self) -> String {
        format!("{} {}", self.id, self.size)
    }

    /// Parses a field's value (read from Redis: strictly); `None` for
    /// anything [`BatchRef::encode`] does not write.
    pub fn parse(text: &str) -> Option<BatchRef> {
        // The id is the host's id and two numbers: the size follows the
        // last space.
        let (id, size) = text.rsplit_once(' ')?;
        if id.is_empty() || id.len() > 1024 {
            return None;
        }
        Some(BatchRef {
            id: id.to_string(),
            size: size.parse().ok().filter(|n| *n > 0)?,
        })
    }
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
        if let Some(batch) = &run.batch {
            pairs.push((Cow::Borrowed(fields::BATCH), batch.encode()));
        }
        // A first run that completed is the job's only run: its entry is
        // read back from the last-run fields and BullMQ's own
        // ([`completed_first_run`]), which keeps the job hash small for
        // BullMQ's scripts (see the module docs).
        let kept = (1..=MAX_RUNS_KEPT).contains(&run.run)
            && !(run.run == 1 && run.end == RunEnd::Completed);
        if kept {
            let entry = RunEntry {
                run: run.run,
                attempt: Some(run.attempt),
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
}
