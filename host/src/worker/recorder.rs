//! Writes what finished runs leave on their jobs — fuel, peak memory, wall
//! time, the run's entry in the job's run history (`airlock.run:<n>`), and
//! the digest pin of a first run that made no durable write — and the
//! queue's per-minute tallies of how runs ended (`P:QUEUE:airlock:stats:M`),
//! queued as the run ends and written around the time BullMQ finishes the
//! job (before or after it), in batches: one script call for the
//! runs that finished while the previous call was under way (group
//! commit). At idle that is one call per run, one round trip after the
//! finish; under load it is one call for many, so the per-job cost on Redis
//! is the script's own loop, not a command of its own.
//!
//! Writes are "only if the job still exists": a job that retention removed
//! when it finished loses its measurements, nothing else does. The failure
//! kind is not among them: it is in `failedReason` at once (`kind:
//! message`), written by BullMQ's own finish.
//!
//! Crash window: a host that dies between a job's finish and the batch that
//! records it loses that job's measurements and tally (at most one batch:
//! the runs of one round trip), and a completed first run its pin. Nothing replays a
//! completed job, so the pin matters only to a later manual retry, which
//! then runs the handler's current version — the case the lazy-pinning
//! decision accepts (no recorded state to diverge from). A closing host
//! writes what it holds before it exits ([`Recorder::close`]).

use std::sync::Mutex;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::state::runs::RunRecord;
use crate::state::runs::Runs;

/// Most runs written in one script call.
pub const MAX_BATCH: usize = 512;

/// A queue's recorder: a channel into a writer task.
pub struct Recorder {
    /// `None` once closed.
    tx: Mutex<Option<mpsc::UnboundedSender<RunRecord>>>,
    task: Mutex<Option<JoinHandle<()>>>,
}

impl Recorder {
    /// Starts the writer for one queue's jobs (their keys share a slot).
    pub fn start(runs: Runs) -> Recorder {
        let (tx, rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(write(runs, rx));
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

    /// Writes everything queued so far and stops; later records are
    /// dropped.
    pub async fn close(&self) {
        self.tx.lock().unwrap_or_else(|p| p.into_inner()).take();
        let task = self.task.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(task) = task {
            let _ = task.await;
        }
    }
}

async fn write(runs: Runs, mut rx: mpsc::UnboundedReceiver<RunRecord>) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while let Some(first) = rx.recv().await {
        batch.push(first);
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(run) => batch.push(run),
                Err(_) => break,
            }
        }
        // A Redis outage gets a few tries; measurements are worth a little
        // patience, not a growing backlog.
        let mut delay = std::time::Duration::from_millis(50);
        for attempt in 1..=5 {
            match runs.record(&batch).await {
                Ok(()) => break,
                Err(e) if attempt < 5 => {
                    tracing::debug!(error = %e, runs = batch.len(), "recording runs failed; retrying");
                    tokio::time::sleep(delay).await;
                    delay *= 2;
                }
                Err(e) => {
                    tracing::warn!(error = %e, runs = batch.len(), "could not record run measurements");
                }
            }
        }
        batch.clear();
    }
}
