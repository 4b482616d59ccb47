//! Streams a running job's progress and log lines into BullMQ while the
//! guest runs, on the async runtime (the guest's thread never waits on it).
//!
//! Every progress report becomes a BullMQ `progress` event, in order, like
//! `job.updateProgress` in Node — up to [`MAX_PROGRESS_EVENTS`] per run;
//! past that only the latest is kept and written last, so a guest
//! reporting in a tight loop cannot flood Redis. Log lines are already
//! capped by the sandbox (bytes and lines), so their unbounded channel
//! holds at most the cap; the lines waiting when the task wakes are written
//! together, up to [`LOG_BATCH`] BullMQ `addLog` calls sent back to back on
//! the multiplexed connection (one round trip, in order) instead of one
//! round trip per line.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::runtime::Handle;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::queue::RunningJob;
use crate::sandbox::{LogLine, LogListener};

/// Progress reports stored one by one per run; later ones coalesce.
pub const MAX_PROGRESS_EVENTS: usize = 1000;

/// Most log lines written in one round trip.
pub const LOG_BATCH: usize = 128;

/// One item for the reporter task, in the order the guest produced them.
enum Report {
    Progress(serde_json::Value),
    Log(String),
}

/// Where the reporter task is. It starts with the first report: most jobs
/// report nothing, and a task spawned and joined per job costs two
/// cross-thread wake-ups on a busy host.
enum Task<J> {
    /// No report yet: what the task will need.
    Idle {
        job: Box<J>,
        rx: mpsc::UnboundedReceiver<Report>,
    },
    /// Started; [`Reporter::finish`] waits for it.
    Running(JoinHandle<()>),
}

/// The channel every producer of reports shares.
struct Channel<J> {
    tx: mpsc::UnboundedSender<Report>,
    /// `None` once [`Reporter::finish`] took it.
    task: Mutex<Option<Task<J>>>,
    /// Where to start the task: reports come from the guest's thread,
    /// which is not a runtime thread.
    runtime: Handle,
    /// The newest report past the per-run cap, written when the run ends.
    overflow: Arc<Mutex<Option<serde_json::Value>>>,
}

impl<J: RunningJob> Channel<J> {
    fn send(&self, report: Report) {
        let _ = self.tx.send(report);
        let mut task = self.task.lock().unwrap_or_else(|p| p.into_inner());
        if matches!(*task, Some(Task::Idle { .. }))
            && let Some(Task::Idle { job, rx }) = task.take()
        {
            let handle = self.runtime.spawn(run(*job, rx, self.overflow.clone()));
            *task = Some(Task::Running(handle));
        }
    }
}

/// The guest side of a job's progress stream.
pub struct ProgressSender<J> {
    channel: Arc<Channel<J>>,
    sent: Arc<AtomicUsize>,
}

impl<J> Clone for ProgressSender<J> {
    fn clone(&self) -> Self {
        ProgressSender {
            channel: self.channel.clone(),
            sent: self.sent.clone(),
        }
    }
}

impl<J: RunningJob> ProgressSender<J> {
    /// Queues a progress report (never blocks the guest).
    pub fn send(&self, value: serde_json::Value) {
        if self.sent.fetch_add(1, Ordering::Relaxed) < MAX_PROGRESS_EVENTS {
            self.channel.send(Report::Progress(value));
        } else if let Ok(mut slot) = self.channel.overflow.lock() {
            *slot = Some(value);
        }
    }
}

/// The reporter of one job.
pub struct Reporter<J> {
    channel: Arc<Channel<J>>,
    progress: ProgressSender<J>,
}

impl<J: RunningJob> Reporter<J> {
    /// Prepares reporting for `job`; the task that writes to Redis starts
    /// with the first report. Must be called on the runtime.
    pub fn start(job: J) -> Reporter<J> {
        let (tx, rx) = mpsc::unbounded_channel();
        let channel = Arc::new(Channel {
            tx,
            task: Mutex::new(Some(Task::Idle {
                job: Box::new(job),
                rx,
            })),
            runtime: Handle::current(),
            overflow: Arc::new(Mutex::new(None)),
        });
        let progress = ProgressSender {
            channel: channel.clone(),
            sent: Arc::new(AtomicUsize::new(0)),
        };
        Reporter { channel, progress }
    }

    /// Where the guest's services send progress.
    pub fn progress_sender(&self) -> ProgressSender<J> {
        self.progress.clone()
    }

    /// A log listener for the sandbox.
    pub fn log_listener(&self) -> LogListener {
        let channel = self.channel.clone();
        Arc::new(move |line: &LogLine| channel.send(Report::Log(line.render())))
    }

    /// Adds a line of the host's own (the run summary).
    pub fn log(&self, line: String) {
        self.channel.send(Report::Log(line));
    }

    /// Flushes everything reported so far into Redis and stops. Called
    /// after the run (the sandbox has dropped the guest's services and log
    /// listener) and before the job is finished, so its logs and last
    /// progress are in place when `completed`/`failed` is announced.
    pub async fn finish(self) {
        let Reporter { channel, progress } = self;
        drop(progress);
        let task = channel
            .task
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        // The task ends once every sender is gone: this was the last
        // handle on the channel.
        drop(channel);
        if let Some(Task::Running(handle)) = task {
            let _ = handle.await;
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
    let mut logs: Vec<String> = Vec::with_capacity(LOG_BATCH);
    while let Some(first) = rx.recv().await {
        let mut next = Some(first);
        while let Some(report) = next.take() {
            match report {
                Report::Log(line) => {
                    logs.push(line);
                    if logs.len() >= LOG_BATCH {
                        write_logs(&job, &mut logs).await;
                    }
                }
                Report::Progress(value) => {
                    // Logs first: the order the guest produced them in.
                    write_logs(&job, &mut logs).await;
                    if let Err(e) = job.update_progress(value).await {
                        tracing::debug!(job = job.id(), error = %e, "progress not stored");
                    }
                }
            }
            next = rx.try_recv().ok();
        }
        write_logs(&job, &mut logs).await;
    }
    let last = overflow.lock().ok().and_then(|mut slot| slot.take());
    if let Some(value) = last
        && let Err(e) = job.update_progress(value).await
    {
        tracing::debug!(job = job.id(), error = %e, "progress not stored");
    }
}

/// Writes `lines` to the job's BullMQ log in one round trip (the calls go
/// out back to back, in order, on the multiplexed connection) and empties it.
async fn write_logs<J: RunningJob>(job: &J, lines: &mut Vec<String>) {
    if lines.is_empty() {
        return;
    }
    let results = futures::future::join_all(lines.iter().map(|line| job.log(line))).await;
    if let Some(e) = results.into_iter().find_map(Result::err) {
        tracing::debug!(job = job.id(), error = %e, "log lines not stored");
    }
    lines.clear();
}
