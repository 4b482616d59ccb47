//! A worker for one queue: BullMQ's worker loop (fetching, lock renewal,
//! stalled-job checks, retries and backoff) driving an Airlock processor.

use std::sync::Arc;
use std::time::Duration;

use airlock_core::job_ref::JobRef;

use super::{QueueError, QueueService};

/// How a queue's worker behaves on this host.
#[derive(Debug, Clone)]
pub struct WorkerSettings {
    /// Jobs run at once by this worker.
    pub concurrency: usize,
    /// How long a job's lock lasts; renewed every half of it while the job
    /// runs. A host that dies loses its locks after this long.
    pub lock_duration: Duration,
    /// How often this worker looks for jobs whose lock expired (stalled)
    /// and puts them back to waiting.
    pub stalled_interval: Duration,
    /// How many times a job may stall before it is failed.
    pub max_stalled_count: u32,
    /// A name for this worker in Redis `CLIENT LIST` (the host id).
    pub name: String,
}

impl Default for WorkerSettings {
    fn default() -> Self {
        WorkerSettings {
            concurrency: 10,
            lock_duration: Duration::from_secs(30),
            stalled_interval: Duration::from_secs(30),
            max_stalled_count: 1,
            name: "airlock".into(),
        }
    }
}

/// How a processor finished a job.
#[derive(Debug, Clone, PartialEq)]
pub enum JobResult {
    /// Success with this return value.
    Completed(serde_json::Value),
    /// Failure; retried per the job's attempts/backoff when `retry` is
    /// true, failed for good otherwise. `reason` becomes `failedReason`.
    Failed {
        /// The failure reason.
        reason: String,
        /// Whether another attempt may help.
        retry: bool,
    },
    /// The processor already parked the job (a durable sleep): BullMQ must
    /// leave it alone.
    Parked,
    /// The host could not run the job (Redis outage, full instance pool):
    /// put it back to waiting without counting an attempt.
    Requeue {
        /// Why, for the host's log.
        reason: String,
    },
    /// Run the job again from the wait list, no attempt counted: what it
    /// waited for came before it parked, or its handler paused the queue
    /// (`rate-limit`).
    Again,
    /// The processor parked the job in `waiting-children` (an invoke):
    /// BullMQ must leave it alone.
    WaitingChildren,
}

impl JobResult {
    /// Whether BullMQ records this result as the attempt's end (the
    /// worker's `moveToFinished`, or a failed attempt's retry move), which
    /// the worker then reports through [`JobProcessor::recorded`].
    pub fn ends_attempt(&self) -> bool {
        matches!(self, JobResult::Completed(_) | JobResult::Failed { .. })
    }
}

/// Runs jobs for a [`QueueWorker`].
#[async_trait::async_trait]
pub trait JobProcessor: Send + Sync + 'static {
    /// Processes one job. Must not panic and must not block the async
    /// runtime (CPU-heavy work goes to another thread).
    async fn process(&self, job: ActiveJob) -> JobResult;

    /// BullMQ recorded the end of job `id`, which [`JobProcessor::process`]
    /// answered completed or failed: the worker's `moveToFinished` (or a
    /// failed attempt's retry move) returned. Called from the worker's
    /// event loop; must not block.
    fn recorded(&self, _id: &str) {}
}

/// What the executor and its reporter need from a job a worker holds, and
/// nothing more: the seam that lets them be tested in-process against a
/// fake job. [`ActiveJob`] is the real one. Cheap to clone.
#[async_trait::async_trait]
pub trait RunningJob: Clone + Send + Sync + 'static {
    /// Job id.
    fn id(&self) -> &str;
    /// Queue name.
    fn queue(&self) -> &str;
    /// The Redis key of the job hash (where its Airlock fields live).
    fn job_key(&self) -> &str;
    /// How many times the job has been taken, this time included (BullMQ's
    /// `ats`): 1 on a job's first run, more on a retry, a wake-up after a
    /// durable sleep or a recovery after a crash.
    fn attempts_started(&self) -> u32;
    /// The attempt this run belongs to: BullMQ's attempts made before it
    /// (`atm`, the failures it counts) plus one. A retry is a new attempt;
    /// a wake-up after a durable sleep or a recovery after a crash is a
    /// new run of the same attempt.
    fn attempt(&self) -> u32;
    /// When the job was added, ms since the epoch (BullMQ's `timestamp`).
    fn enqueued_at_ms(&self) -> u64;
    /// When the job became ready to run, ms since the epoch: its enqueue
    /// time plus the delay it was added with (BullMQ keeps that in the
    /// job's options; a backoff's delay does not change it).
    fn ready_at_ms(&self) -> u64;
    /// When this take of the job began, ms since the epoch: the
    /// `processedOn` BullMQ's fetch wrote (and read back) — `None` when
    /// unknown. A take of a key slot moves it on (`state::key_limits`).
    fn processed_on_ms(&self) -> Option<u64>;
    /// The job as handed to the guest.
    fn input(&self) -> airlock_core::run::JobInput;
    /// Stores progress (BullMQ `progress` field and `progress` event).
    async fn update_progress(&self, value: serde_json::Value) -> Result<(), QueueError>;
    /// Appends a line to the job's log.
    async fn log(&self, line: &str) -> Result<(), QueueError>;
    /// Parks the job as delayed until `wake_at_ms` without counting an
    /// attempt (a durable sleep).
    async fn park_until(&self, wake_at_ms: u64) -> Result<(), QueueError>;
    /// Parks the job in BullMQ's `waiting-children` until every child it
    /// waits for has ended (an invoke); `false` when none is pending any
    /// more (it should run again at once).
    async fn park_for_children(&self) -> Result<bool, QueueError> {
        Err(QueueError::Internal(
            "this job cannot wait for children".into(),
        ))
    }
}

/// A job locked by this worker, with what a processor may do to it.
#[derive(Clone)]
pub struct ActiveJob {
    /// The job as the port fetched it; shared, so a clone copies no data.
    job: Arc<bullmq::Job>,
    /// The port's handle on the job's queue (progress updates by id).
    handle: bullmq::Queue,
    queue: Arc<str>,
    job_key: Arc<str>,
}

#[async_trait::async_trait]
impl RunningJob for ActiveJob {
    fn id(&self) -> &str {
        self.job.id()
    }

    fn queue(&self) -> &str {
        &self.queue
    }

    fn job_key(&self) -> &str {
        &self.job_key
    }

    fn attempts_started(&self) -> u32 {
        self.job.attempts_started()
    }

    fn attempt(&self) -> u32 {
        self.job.attempts_made() + 1
    }

    fn enqueued_at_ms(&self) -> u64 {
        self.job.timestamp()
    }

    fn ready_at_ms(&self) -> u64 {
        self.job
            .timestamp()
            .saturating_add(self.job.opts().delay.unwrap_or(0))
    }

    fn processed_on_ms(&self) -> Option<u64> {
        self.job.processed_on()
    }

    fn input(&self) -> airlock_core::run::JobInput {
        airlock_core::run::JobInput {
            id: self.id().to_string(),
            queue: self.queue.to_string(),
            name: self.job.name().to_string(),
            // The port parsed the data; this is its one re-encoding.
            data: serde_json::to_string(self.job.data()).unwrap_or_else(|_| "null".into()),
            attempt: self.attempt(),
            max_attempts: self.job.opts().attempts.unwrap_or(1).max(1),
            enqueued_at_ms: self.job.timestamp(),
            parent: self.parent(),
        }
    }

    async fn update_progress(&self, value: serde_json::Value) -> Result<(), QueueError> {
        // The untagged `Object` variant stores any JSON as is: `100`, not
        // the `100.0` the `Number(f64)` variant would write.
        Ok(self
            .handle
            .update_job_progress(self.id(), bullmq::JobProgress::Object(value))
            .await?)
    }

    async fn log(&self, line: &str) -> Result<(), QueueError> {
        self.job.log(line).await?;
        Ok(())
    }

    async fn park_until(&self, wake_at_ms: u64) -> Result<(), QueueError> {
        Ok(self.job.move_to_delayed(wake_at_ms).await?)
    }

    async fn park_for_children(&self) -> Result<bool, QueueError> {
        Ok(self.job.move_to_waiting_children(None).await?)
    }
}

impl ActiveJob {
    /// The flow parent as `(queue, id)`, from BullMQ's `parentKey`
    /// (`PREFIX:QUEUE:ID`, read by `airlock_core::job_ref`'s rule; `None`
    /// for a parent under another prefix). The port's `parent()` stays
    /// `None` for BullMQ's own `parent` field (it expects `queue_key` where
    /// BullMQ writes `queueKey`), so the key is read instead.
    fn parent(&self) -> Option<(String, String)> {
        if let Some(p) = self.job.parent() {
            // `PREFIX:QUEUE`: a queue name holds no `:`.
            let queue = p
                .queue_key
                .rsplit_once(':')
                .map_or(p.queue_key.as_str(), |(_, q)| q);
            return Some((queue.to_string(), p.id.clone()));
        }
        let parent = JobRef::from_key(self.prefix(), self.job.parent_key()?)?;
        Some((parent.queue, parent.id))
    }

    /// The key prefix of this job's queue: its key without `:QUEUE:ID`.
    fn prefix(&self) -> &str {
        let end = self.job_key.len() - self.queue.len() - self.job.id().len() - 2;
        &self.job_key[..end]
    }
}

/// A running BullMQ worker for one queue.
pub struct QueueWorker {
    inner: Arc<bullmq::Worker>,
    queue: String,
    /// Reads the port's worker events as they come (see
    /// [`drain_events`]); stopped with the worker.
    _events: crate::tasks::AbortOnDrop,
}

/// Reads the events the port's worker sends for every job it takes,
/// finishes or reports progress on (`active`, `completed`, `failed`,
/// `progress`, ...): a job's recorded end goes to the processor
/// ([`JobProcessor::recorded`]), the rest are dropped. The port queues
/// them on an unbounded channel until someone reads them; unread, they
/// held a host's memory growing with every job it ran. Errors are logged
/// at debug: the port logs them as well, with the job.
async fn drain_events(
    worker: Arc<bullmq::Worker>,
    queue: String,
    processor: Arc<dyn JobProcessor>,
) {
    use bullmq::worker::WorkerEvent;
    while let Some(event) = worker.next_event().await {
        match event {
            WorkerEvent::Completed { job_id, .. } | WorkerEvent::Failed { job_id, .. } => {
                processor.recorded(&job_id)
            }
            WorkerEvent::Error(error) => {
                tracing::debug!(queue, error, "the worker reported an error")
            }
            _ => {}
        }
    }
}

impl QueueWorker {
    /// Starts fetching and processing jobs of `queue`.
    pub async fn start(
        service: &QueueService,
        queue: &str,
        settings: &WorkerSettings,
        processor: Arc<dyn JobProcessor>,
    ) -> Result<QueueWorker, QueueError> {
        crate::names::queue("queue", queue)?;
        service.check_cluster_slot(queue)?;
        let mut opts = bullmq::WorkerOptions::new()
            .connection(service.connection().clone())
            .prefix(service.prefix().to_string())
            .name(settings.name.clone())
            .concurrency(settings.concurrency.max(1))
            .lock_duration(settings.lock_duration)
            .stalled_interval(settings.stalled_interval)
            .max_stalled_count(settings.max_stalled_count)
            // Poll the queue at least every second when idle, so a closing
            // worker notices quickly.
            .drain_delay(Duration::from_secs(1));
        opts.skip_version_check = true;
        let events_to = processor.clone();
        let queue_name: Arc<str> = Arc::from(queue);
        let handle = service.queue(queue).await?;
        let keys = service.store().keys().clone();
        let callback = move |job: bullmq::Job, _cancel: bullmq::worker::CancellationToken| {
            let processor = processor.clone();
            let job_key: Arc<str> = Arc::from(keys.job(&queue_name, job.id()));
            let active = ActiveJob {
                job: Arc::new(job),
                handle: handle.clone(),
                queue: queue_name.clone(),
                job_key,
            };
            async move {
                match processor.process(active).await {
                    JobResult::Completed(value) => Ok(value),
                    JobResult::Failed {
                        reason,
                        retry: true,
                    } => Err(bullmq::Error::ProcessingError(reason)),
                    JobResult::Failed {
                        reason,
                        retry: false,
                    } => Err(bullmq::Error::Unrecoverable(reason)),
                    JobResult::Parked => Err(bullmq::Error::Delayed),
                    JobResult::WaitingChildren => Err(bullmq::Error::WaitingChildren),
                    JobResult::Again => Err(bullmq::Error::RateLimited { delay_ms: 0 }),
                    // BullMQ's rate-limit path moves the job from active
                    // back to wait, keeping its attempt count: exactly a
                    // requeue.
                    JobResult::Requeue { reason } => {
                        tracing::warn!(reason, "job put back to waiting");
                        Err(bullmq::Error::RateLimited { delay_ms: 0 })
                    }
                }
            }
        };
        let inner = Arc::new(bullmq::Worker::with_options(queue, callback, opts).await?);
        let events = crate::tasks::AbortOnDrop(tokio::spawn(drain_events(
            inner.clone(),
            queue.to_string(),
            events_to,
        )));
        Ok(QueueWorker {
            inner,
            queue: queue.to_string(),
            _events: events,
        })
    }

    /// The port's id for this worker: the first part of every lock token it
    /// takes a job with (`<id>:<n>`), what recovery knows its jobs by.
    pub fn worker_id(&self) -> &str {
        self.inner.id()
    }

    /// The queue this worker serves.
    pub fn queue(&self) -> &str {
        &self.queue
    }

    /// Changes how many jobs run at once.
    pub fn set_concurrency(&self, concurrency: usize) {
        self.inner.set_concurrency(concurrency.max(1));
    }

    /// Stops fetching jobs (running ones go on): draining.
    pub fn pause(&self) {
        self.inner.pause();
    }

    /// Fetches jobs again after [`QueueWorker::pause`].
    pub fn resume(&self) {
        self.inner.resume();
    }

    /// Jobs running now.
    pub async fn active_count(&self) -> usize {
        self.inner.active_count().await
    }

    /// Stops fetching and waits up to `grace` for running jobs. Jobs still
    /// running afterwards keep their locks until they expire and are then
    /// recovered by another worker's stalled check: never lost.
    pub async fn close(&self, grace: Duration) {
        if let Err(e) = self.inner.close(grace.as_millis() as u64).await {
            tracing::warn!(queue = %self.queue, error = %e, "closing worker");
        }
    }
}
