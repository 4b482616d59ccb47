//! Streams a running job's progress and log lines into BullMQ while the
//! guest runs, on the async runtime (the guest's thread never waits on it).
//!
//! Every progress report becomes a BullMQ `progress` event, in order, like
//! `job.updateProgress` in Node — up to [`MAX_PROGRESS_EVENTS`] per run;
//! past that only the latest is kept and written last, so a guest
//! reporting in a tight loop cannot flood Redis. Log lines are already
//! capped by the sandbox (bytes and lines), so their unbounded channel
//! holds at most the cap. A run that ends within [`STREAM_AFTER`] has its
//! reports written at its end; one that goes on has them written as they
//! come, by a task of their own. The reports waiting when the writer wakes
//! (up to [`BATCH`]) are written together in one round trip: the log lines as
//! BullMQ `addLog` calls sent back to back on the worker's connection, the
//! progress reports as `updateProgress` calls sent back to back on the
//! queue's, both at once. Each stream keeps the guest's order (calls on one
//! multiplexed connection run in the order they were sent); a log line and
//! a progress report written together may land in either order. A payment
//! handler's three reports and two lines cost one round trip, not five.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::queue::RunningJob;
use crate::sandbox::{LogLine, LogListener};

/// Progress reports stored one by one per run; later ones coalesce.
pub const MAX_PROGRESS_EVENTS: usize = 1000;

/// Most reports written in one round trip.
pub const BATCH: usize = 128;

/// How long a run goes on before its reports are written as they come
/// ([`Reporter::stream`]); a run that ends sooner has its reports written
/// at its end, together. So progress shows at most this late.
pub const STREAM_AFTER: std::time::Duration = std::time::Duration::from_millis(10);

/// One item for the reporter, in the order the guest produced them.
enum Report {
    Progress(serde_json::Value),
    Log(String),
}

/// Where the reporter's writer is. It starts streaming only for a run
/// still going after a moment ([`Reporter::stream`], which the executor
/// calls then): most runs end within it, and their reports are written at
/// their end, together, with no task spawned and joined per job.
enum Task<J> {
    /// Not streaming: what the writer will need.
    Idle {
        job: Box<J>,
        rx: mpsc::UnboundedReceiver<Report>,
    },
    /// Streaming; [`Reporter::finish`] waits for it.
    Streaming(JoinHandle<()>),
}

/// The channel every producer of reports shares.
struct Channel {
    tx: mpsc::UnboundedSender<Report>,
    /// The newest report past the per-run cap, written when the run ends.
    overflow: Arc<Mutex<Option<serde_json::Value>>>,
}

/// The guest side of a job's progress stream.
#[derive(Clone)]
pub struct ProgressSender {
    channel: Arc<Channel>,
    sent: Arc<AtomicUsize>,
}

impl ProgressSender {
    /// Queues a progress report (never blocks the guest).
    pub fn send(&self, value: serde_json::Value) {
        if self.sent.fetch_add(1, Ordering::Relaxed) < MAX_PROGRESS_EVENTS {
            let _ = self.channel.tx.send(Report::Progress(value));
        } else if let Ok(mut slot) = self.channel.overflow.lock() {
            *slot = Some(value);
        }
    }
}

/// The reporter of one job.
pub struct Reporter<J> {
    channel: Arc<Channel>,
    progress: ProgressSender,
    /// `None` once [`Reporter::finish`] took it.
    task: Mutex<Option<Task<J>>>,
}

impl<J: RunningJob> Reporter<J> {
    /// Prepares reporting for `job`: reports queue up until the run ends
    /// or [`Reporter::stream`] starts writing them as they come.
    pub fn start(job: J) -> Reporter<J> {
        let (tx, rx) = mpsc::unbounded_channel();
        let channel = Arc::new(Channel {
            tx,
            overflow: Arc::new(Mutex::new(None)),
        });
        let progress = ProgressSender {
            channel: channel.clone(),
            sent: Arc::new(AtomicUsize::new(0)),
        };
        Reporter {
            channel,
            progress,
            task: Mutex::new(Some(Task::Idle {
                job: Box::new(job),
                rx,
            })),
        }
    }

    /// Where the guest's services send progress.
    pub fn progress_sender(&self) -> ProgressSender {
        self.progress.clone()
    }

    /// A log listener for the sandbox.
    pub fn log_listener(&self) -> LogListener {
        let channel = self.channel.clone();
        Arc::new(move |line: &LogLine| {
            let _ = channel.tx.send(Report::Log(line.render()));
        })
    }

    /// Adds a line of the host's own (the run summary, a trace's ids).
    pub fn log(&self, line: String) {
        let _ = self.channel.tx.send(Report::Log(line));
    }

    /// From now on, writes reports as they come, on a task of its own on
    /// the current runtime (a run that goes on: its progress must show
    /// while it runs). Once is enough; later calls do nothing.
    pub fn stream(&self) {
        let mut task = self.task.lock().unwrap_or_else(|p| p.into_inner());
        if matches!(*task, Some(Task::Idle { .. }))
            && let Some(Task::Idle { job, rx }) = task.take()
        {
            let overflow = self.channel.overflow.clone();
            *task = Some(Task::Streaming(tokio::spawn(run(*job, rx, overflow))));
        }
    }

    /// Writes everything reported and not written yet into Redis, and
    /// stops. Called after the run (the sandbox has dropped the guest's
    /// services and log listener) and before the job is finished, so its
    /// logs and last progress are in place when `completed`/`failed` is
    /// announced.
    pub async fn finish(self) {
        let Reporter {
            channel,
            progress,
            task,
        } = self;
        let overflow = channel.overflow.clone();
        // The writer ends once every sender is gone: these were the last.
        drop(progress);
        drop(channel);
        match task.into_inner().unwrap_or_else(|p| p.into_inner()) {
            Some(Task::Streaming(handle)) => {
                let _ = handle.await;
            }
            // The run is over: what is queued is all there is. Closing
            // first means a sender the run left behind (there should be
            // none) cannot hold the job's finish.
            Some(Task::Idle { job, mut rx }) => {
                rx.close();
                run(*job, rx, overflow).await
            }
            None => {}
        }
    }
}

async fn run<J: RunningJob>(
    job: J,
    mut rx: mpsc::UnboundedReceiver<Report>,
    overflow: Arc<Mutex<Option<serde_json::Value>>>,
) {
    // Ends when every sender is gone: the run is over and the sandbox has
    // dropped the guest's services and log listener.
    let mut reports: Vec<Report> = Vec::with_capacity(BATCH);
    while let Some(first) = rx.recv().await {
        crate::tasks::take_queued(&mut rx, first, BATCH, &mut reports);
        write(&job, &mut reports).await;
    }
    let last = overflow.lock().ok().and_then(|mut slot| slot.take());
    if let Some(value) = last
        && let Err(e) = job.update_progress(value).await
    {
        tracing::debug!(job = job.id(), error = %e, "progress not stored");
    }
}

/// Writes `reports` in one round trip (see the module docs) and empties
/// it.
async fn write<J: RunningJob>(job: &J, reports: &mut Vec<Report>) {
    let mut lines = Vec::new();
    let mut progress = Vec::new();
    for report in reports.drain(..) {
        match report {
            Report::Log(line) => lines.push(line),
            Report::Progress(value) => progress.push(value),
        }
    }
    let logged = futures::future::join_all(lines.iter().map(|line| job.log(line)));
    let updated = futures::future::join_all(progress.into_iter().map(|v| job.update_progress(v)));
    let (logged, updated) = futures::future::join(logged, updated).await;
    if let Some(e) = logged.into_iter().find_map(Result::err) {
        tracing::debug!(job = job.id(), error = %e, "log lines not stored");
    }
    if let Some(e) = updated.into_iter().find_map(Result::err) {
        tracing::debug!(job = job.id(), error = %e, "progress not stored");
    }
}
