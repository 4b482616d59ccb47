//! Records what a finished run leaves: its record on its job — the last
//! run's measurements (`airlock.lastRun`), the run's entry in the job's run
//! history (`airlock.run:<n>`), its transcript, and the digest pin of a job
//! nothing pinned yet — and the queue's per-minute tallies of how runs
//! ended (`P:QUEUE:airlock:stats:M`).
//!
//! **Records** are queued as runs end and written by the queue's writer
//! task, around the time BullMQ finishes the jobs (before or after): the
//! records of the runs that ended while its previous write was under way
//! go in one script call (group commit) — at idle one call per run, one
//! round trip after the finish; under load one call for many, so a run
//! costs Redis its record's own commands (`EXISTS`, `HSET`, and `HSETNX`
//! for a pin), not a call of its own. A job's run never waits for its
//! record: awaiting it before BullMQ's finish put a second round trip on
//! every job's path and cost a third of the no-op drain's throughput at
//! concurrency 10 (docs/BENCHMARKS.md). Because a record may land after the
//! finish, each write checks the job still exists ([`Runs::write`]): a job
//! that retention removed keeps no stray hash.
//!
//! **Tallies** are summed by the same task and added to Redis once a
//! second ([`FLUSH_EVERY`]): one `HINCRBY` per field that moved in that
//! second, whatever the number of runs.
//!
//! Crash windows: a host that dies loses the records still queued — the
//! channel is unbounded: usually the runs that ended during its last
//! write, more while a write is retried through a Redis outage (five tries
//! over [`WRITE_PATIENCE`]) — those jobs keep no measurements, and
//! a completed first run no pin, which matters only to a later manual
//! retry, which then runs the handler's current version (the case the
//! lazy-pinning decision accepts: no recorded state to diverge from) — and
//! the tallies of its last second. A closing host writes both before it
//! exits ([`Recorder::close`]). A Redis outage gets a few tries per write;
//! then the records are logged and dropped, the tallies kept for the next
//! second.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::state::runs::{MinuteTallies, RunRecord, Runs, STATS_TTL, tally};
use crate::tasks::retrying_for;

/// How often a queue's summed tallies go to Redis.
pub const FLUSH_EVERY: Duration = Duration::from_secs(1);

/// Most records written in one script call.
pub const MAX_BATCH: usize = 512;

/// One queue's recorder: a channel into its writer task.
pub struct Recorder {
    /// `None` once closed.
    tx: Mutex<Option<mpsc::UnboundedSender<RunRecord>>>,
    task: Mutex<Option<JoinHandle<()>>>,
}

impl Recorder {
    /// Starts the writer for the runs of `queue`'s jobs (their keys share
    /// a slot).
    pub fn start(runs: Runs, queue: &str) -> Recorder {
        let (tx, rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(write(runs, queue.to_string(), rx));
        Recorder {
            tx: Mutex::new(Some(tx)),
            task: Mutex::new(Some(task)),
        }
    }

    /// Queues a finished run's record (never waits).
    pub fn record(&self, run: RunRecord) {
        if let Some(tx) = &*self.tx.lock().unwrap_or_else(|p| p.into_inner()) {
            let _ = tx.send(run);
        }
    }

    /// Writes what is queued, adds the tallies not added yet, and stops;
    /// later records are dropped. Call once the queue's worker has closed.
    pub async fn close(&self) {
        self.tx.lock().unwrap_or_else(|p| p.into_inner()).take();
        let task = self.task.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(task) = task {
            let _ = task.await;
        }
    }
}

/// Tallies not added to Redis yet, by minute.
type Pending = BTreeMap<u64, MinuteTallies>;

/// The writer: the records that came meanwhile in one call, and the
/// tallies every [`FLUSH_EVERY`]; ends when the channel closes, after a
/// last flush.
async fn write(runs: Runs, queue: String, mut rx: mpsc::UnboundedReceiver<RunRecord>) {
    let mut pending = Pending::new();
    let mut batch: Vec<RunRecord> = Vec::with_capacity(MAX_BATCH);
    let mut tick = tokio::time::interval(FLUSH_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            first = rx.recv() => {
                let Some(first) = first else { break };
                crate::tasks::take_queued(&mut rx, first, MAX_BATCH, &mut batch);
                write_batch(&runs, &queue, &batch).await;
                let tallies = pending.entry(runs.minute_now()).or_default();
                for run in batch.drain(..) {
                    tally(tallies, &run);
                }
            }
            _ = tick.tick() => flush(&runs, &queue, &mut pending).await,
        }
    }
    flush(&runs, &queue, &mut pending).await;
}

/// How long a write is retried through a Redis outage (five tries):
/// measurements are worth a little patience, not a growing backlog.
const WRITE_PATIENCE: Duration = Duration::from_millis(750);

/// Writes `batch`, retrying for [`WRITE_PATIENCE`].
async fn write_batch(runs: &Runs, queue: &str, batch: &[RunRecord]) {
    let write = || runs.write(batch);
    if let Err(e) = retrying_for("record runs", WRITE_PATIENCE, write).await {
        tracing::warn!(queue, error = %e, runs = batch.len(), "could not record run measurements");
    }
}

/// Adds `pending`'s tallies to Redis. Minutes that fail (Redis
/// unreachable) stay to be added by the next flush, unless they are
/// older than the tallies' retention.
async fn flush(runs: &Runs, queue: &str, pending: &mut Pending) {
    let oldest = runs.minute_now().saturating_sub(STATS_TTL.as_secs() / 60);
    let mut failed = Pending::new();
    for (minute, tallies) in std::mem::take(pending) {
        if let Err(e) = runs.add_tallies(queue, minute, &tallies).await {
            tracing::debug!(queue, error = %e, "could not add the runs' tallies; retrying in a second");
            if minute >= oldest {
                failed.insert(minute, tallies);
            }
        }
    }
    *pending = failed;
}
