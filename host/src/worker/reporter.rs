//! Streams a running job's progress and log lines into BullMQ while the
//! guest runs, on the async runtime (the guest's thread never waits on it).
//!
//! Every progress report becomes a BullMQ `progress` event, in order, like
//! `job.updateProgress` in Node — up to [`MAX_PROGRESS_EVENTS`] per run;
//! past that only the latest is kept and written last, so a guest
//! reporting in a tight loop cannot flood Redis. Log lines are already
//! capped by the sandbox, so their unbounded channel holds at most the cap.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::queue::ActiveJob;
use crate::sandbox::{LogLine, LogListener};

/// Progress reports stored one by one per run; later ones coalesce.
pub const MAX_PROGRESS_EVENTS: usize = 1000;

/// One item for the reporter task, in the order the guest produced them.
enum Report {
    Progress(serde_json::Value),
    Log(String),
}

/// The guest side of a job's progress stream.
#[derive(Clone)]
pub struct ProgressSender {
    tx: mpsc::UnboundedSender<Report>,
    sent: Arc<AtomicUsize>,
    /// The newest report past the per-run cap, written when the run ends.
    overflow: Arc<Mutex<Option<serde_json::Value>>>,
}

impl ProgressSender {
    /// Queues a progress report (never blocks the guest).
    pub fn send(&self, value: serde_json::Value) {
        if self.sent.fetch_add(1, Ordering::Relaxed) < MAX_PROGRESS_EVENTS {
            let _ = self.tx.send(Report::Progress(value));
        } else if let Ok(mut slot) = self.overflow.lock() {
            *slot = Some(value);
        }
    }
}

/// The running reporter of one job.
pub struct Reporter {
    tx: mpsc::UnboundedSender<Report>,
    progress: ProgressSender,
    task: JoinHandle<()>,
}

impl Reporter {
    /// Starts reporting for `job`.
    pub fn start(job: ActiveJob) -> Reporter {
        let (tx, rx) = mpsc::unbounded_channel();
        let progress = ProgressSender {
            tx: tx.clone(),
            sent: Arc::new(AtomicUsize::new(0)),
            overflow: Arc::new(Mutex::new(None)),
        };
        let task = tokio::spawn(run(job, rx, progress.overflow.clone()));
        Reporter { tx, progress, task }
    }

    /// Where the guest's services send progress.
    pub fn progress_sender(&self) -> ProgressSender {
        self.progress.clone()
    }

    /// A log listener for the sandbox.
    pub fn log_listener(&self) -> LogListener {
        let tx = self.tx.clone();
        Arc::new(move |line: &LogLine| {
            let _ = tx.send(Report::Log(line.render()));
        })
    }

    /// Adds a line of the host's own (the run summary).
    pub fn log(&self, line: String) {
        let _ = self.tx.send(Report::Log(line));
    }

    /// Flushes everything reported so far into Redis and stops. Called
    /// before the job is finished, so its logs and last progress are in
    /// place when `completed`/`failed` is announced.
    pub async fn finish(self) {
        let Reporter { tx, progress, task } = self;
        drop(progress);
        drop(tx);
        let _ = task.await;
    }
}

async fn run(
    mut job: ActiveJob,
    mut rx: mpsc::UnboundedReceiver<Report>,
    overflow: Arc<Mutex<Option<serde_json::Value>>>,
) {
    // Ends when every sender is gone: the run is over and the sandbox has
    // dropped the guest's services and log listener.
    while let Some(report) = rx.recv().await {
        let result = match report {
            Report::Progress(value) => job.update_progress(value).await,
            Report::Log(line) => job.log(&line).await,
        };
        if let Err(e) = result {
            tracing::debug!(job = job.id(), error = %e, "progress or log not stored");
        }
    }
    let last = overflow.lock().ok().and_then(|mut slot| slot.take());
    if let Some(value) = last
        && let Err(e) = job.update_progress(value).await
    {
        tracing::debug!(job = job.id(), error = %e, "progress not stored");
    }
}
