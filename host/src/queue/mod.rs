//! Airlock's queues: BullMQ queues, through the BullMQ team's Rust port.
//!
//! Everything BullMQ-specific lives behind this module: the rest of the host
//! speaks Airlock types ([`JobOptions`], [`JobSnapshot`], [`JobState`]) and
//! drives no part of the `bullmq` crate (`store/`, `error.rs` and
//! `state/meta/` name it only for its connection and error types; where
//! Airlock writes a BullMQ key itself is listed in docs/ARCHITECTURE.md,
//! "Redis keys"). The port runs BullMQ's own Lua scripts
//! against BullMQ's own keys, so Node's `bullmq` (and tools such as
//! bull-board) see Airlock's queues and can add jobs to them.
//!
//! Airlock keeps a little per-job state of its own (the producer, per-job
//! limits, the pinned handler digest, step records, measurements) as extra
//! fields of BullMQ's job hash, prefixed `airlock.`; `crate::state` owns
//! them and every other key of Airlock's, and this module adds jobs with
//! them ([`crate::state::meta`] says how). BullMQ ignores fields it does not know
//! and deletes the whole hash when it removes a job, so that state can never
//! outlive its job — retention needs no janitor and leaves no orphan keys.
//!
//! Every operation returns a typed [`QueueError`]; the HTTP API maps it to a
//! status in one place.

mod add;
pub mod cancel;
mod events;
mod flows;
mod options;
mod recovery;
mod schedules;
mod snapshot;
pub mod timeline;
mod wait_order;
mod wake;
mod worker;

use std::collections::HashMap;
use std::sync::Mutex;

use bullmq::redis_connection::RedisConnection;
use redis::AsyncCommands;

pub use self::add::{Enqueued, NewJob, new_job_id};
pub use self::cancel::CancelOutcome;
pub use self::events::{QueueEventItem, Subscription};
pub use self::flows::{ChildFailure, FlowNode, FlowSpec, MAX_FLOW_DEPTH};
pub use self::options::{
    BACKOFF_TIER, Backoff, Deduplication, DefaultJobOptions, FlowNodeOptions, HELD_BACK_PRIORITY,
    JobOptions, KeepJobs, MAX_ATTEMPTS, MAX_DELAY_MS, MAX_ID_LEN, MAX_PRIORITY, MAX_RETENTION,
    Retention, ScheduleJobOptions, exponential_wait, max_exponential_delay,
};
pub use self::recovery::{Stalled, StalledJob};
pub use self::schedules::{ScheduleSpec, ScheduleView};
pub use self::snapshot::{JobSnapshot, JobState, QueueCounts};
pub use self::wait_order::WaitEnds;
pub use self::worker::{
    ActiveJob, JobProcessor, JobResult, QueueWorker, RunningJob, WorkerSettings,
};
pub use crate::error::{FieldError, QueueError};
use crate::names;
use crate::state::State;
use crate::store::Store;

/// Access to the BullMQ queues of one Redis (and key prefix).
pub struct QueueService {
    conn: RedisConnection,
    connection: bullmq::options::RedisConnectionOptions,
    store: Store,
    /// Airlock's own keys beside the queues.
    state: State,
    queues: Mutex<HashMap<String, bullmq::Queue>>,
}

/// The most failed jobs a bulk retry looks at ([`QueueService::retry_failed`]),
/// newest first: each costs a read of its hash.
pub const RETRY_SCAN: usize = 100_000;

impl QueueService {
    /// With the fleet's secrets key, the producers of the jobs this service
    /// adds are sealed (see [`crate::state::meta::Meta::seal`]).
    pub fn with_seal_key(
        mut self,
        key: Option<std::sync::Arc<dyn airlock_core::seal::ProducerSeal>>,
    ) -> Self {
        self.state.meta = self.state.meta.with_seal_key(key);
        self
    }

    /// Queues on the Redis of `store`, sharing its connection; queue keys
    /// start with the store's prefix (`bull` by default).
    pub fn new(store: Store) -> Self {
        Self::with_clock(store, airlock_core::clock::SystemClock::shared())
    }

    /// [`QueueService::new`] with its state and flow control's decisions
    /// timed by `clock` (a test's [`PausedClock`](airlock_core::clock::PausedClock)).
    /// BullMQ's own scripts still stamp the wall clock.
    pub fn with_clock(store: Store, clock: airlock_core::clock::SharedClock) -> Self {
        QueueService {
            conn: store.bullmq_connection().clone(),
            connection: store.options().clone(),
            state: State::new(store.clone(), clock),
            store,
            queues: Mutex::new(HashMap::new()),
        }
    }

    /// Refuses a queue whose keys would spread over several slots of a
    /// Redis Cluster: BullMQ's scripts touch many keys of a queue at once,
    /// so either the prefix or the queue name must carry a `{hash tag}`.
    pub(crate) fn check_cluster_slot(&self, name: &str) -> Result<(), FieldError> {
        if self.store.is_cluster()
            && !names::hash_tagged(self.prefix())
            && !names::hash_tagged(name)
        {
            return Err(FieldError::new(
                "queue",
                format!(
                    "on a Redis Cluster a queue needs a hash tag: name it `{{{name}}}` (or run with a `{{bull}}` prefix)"
                ),
            ));
        }
        Ok(())
    }

    /// The key prefix.
    pub fn prefix(&self) -> &str {
        self.store.keys().prefix()
    }

    /// Airlock's own Redis handle.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Airlock's own state on the same Redis (per-job fields, waits, key
    /// limits and rates, debounces, cancels, run tallies).
    pub fn state(&self) -> &State {
        &self.state
    }

    /// The Redis key of a job's hash.
    pub fn job_key(&self, queue: &str, id: &str) -> String {
        self.state.meta.job_key(queue, id)
    }

    /// The Redis key of a queue's events stream.
    pub fn events_key(&self, queue: &str) -> String {
        self.store.keys().bullmq(queue, "events")
    }

    /// The port's handle on a queue. Creating one writes BullMQ's version
    /// into the queue's meta hash, so only call this for queues that are
    /// meant to exist (bound ones, or ones being written to).
    pub(crate) async fn queue(&self, name: &str) -> Result<bullmq::Queue, QueueError> {
        names::queue("queue", name)?;
        self.check_cluster_slot(name)?;
        if let Some(q) = self.queues.lock().unwrap().get(name) {
            return Ok(q.clone());
        }
        let opts = bullmq::QueueOptions::new().prefix(self.prefix().to_string());
        let queue = bullmq::Queue::with_connection(name, self.conn.clone(), opts).await?;
        self.queues
            .lock()
            .unwrap()
            .insert(name.to_string(), queue.clone());
        Ok(queue)
    }

    /// A job's full state, or `None` when it does not exist.
    pub async fn get_job(&self, queue: &str, id: &str) -> Result<Option<JobSnapshot>, QueueError> {
        let q = self.queue(queue).await?;
        // State first, fields second: a job finishing in between then shows
        // as still running with its result, never as finished without it.
        let state = q.get_job_state(id).await?;
        let fields = self.store.hgetall(&self.job_key(queue, id)).await?;
        if fields.is_empty() {
            return Ok(None);
        }
        Ok(Some(JobSnapshot::from_hash(
            queue,
            id,
            &fields,
            state.into(),
        )))
    }

    /// A job that must exist.
    async fn existing_job(&self, queue: &str, id: &str) -> Result<JobSnapshot, QueueError> {
        self.get_job(queue, id)
            .await?
            .ok_or_else(|| QueueError::NotFound(format!("job `{queue}:{id}`")))
    }

    /// A page of a job's log lines (oldest first) and the total count.
    pub async fn job_logs(
        &self,
        queue: &str,
        id: &str,
        start: usize,
        end: usize,
    ) -> Result<(Vec<String>, usize), QueueError> {
        let q = self.queue(queue).await?;
        Ok(q.get_job_logs(id, start as isize, end as isize, true)
            .await?)
    }

    /// How many jobs are in each state.
    pub async fn counts(&self, queue: &str) -> Result<QueueCounts, QueueError> {
        let q = self.queue(queue).await?;
        let counts = q.get_job_counts().await?;
        Ok(QueueCounts {
            waiting: counts.waiting + counts.paused,
            active: counts.active,
            delayed: counts.delayed,
            prioritized: counts.prioritized,
            waiting_children: counts.waiting_children,
            completed: counts.completed,
            failed: counts.failed,
            paused: q.is_paused().await?,
        })
    }

    /// Jobs in `state`, newest first, `start..=end` (0-based).
    pub async fn list(
        &self,
        queue: &str,
        state: JobState,
        start: usize,
        end: usize,
    ) -> Result<Vec<JobSnapshot>, QueueError> {
        let q = self.queue(queue).await?;
        let jobs = q
            .get_jobs(&[state.bullmq_name()], start as i64, end as i64, false)
            .await?;
        let mut out = Vec::with_capacity(jobs.len());
        for job in jobs {
            let fields = self.store.hgetall(&self.job_key(queue, job.id())).await?;
            if !fields.is_empty() {
                out.push(JobSnapshot::from_hash(queue, job.id(), &fields, state));
            }
        }
        Ok(out)
    }

    /// Retries the failed jobs of `queue`, newest first, at most `limit`
    /// of them — only those whose last failure was `kind`, if given. The
    /// ids are read first, 500 at a time, so the retries do not shift the
    /// pages being read; at most the newest [`RETRY_SCAN`] failed jobs are
    /// looked at. A job that left the failed set meanwhile is skipped.
    /// Answers the ids retried.
    pub async fn retry_failed(
        &self,
        queue: &str,
        kind: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>, QueueError> {
        const PAGE: usize = 500;
        let mut ids = Vec::new();
        let mut start = 0;
        while ids.len() < limit && start < RETRY_SCAN {
            let page = self
                .list(queue, JobState::Failed, start, start + PAGE - 1)
                .await?;
            if page.is_empty() {
                break;
            }
            ids.extend(
                page.into_iter()
                    .filter(|j| kind.is_none() || j.failure_kind.as_deref() == kind)
                    .map(|j| j.id),
            );
            start += PAGE;
        }
        ids.truncate(limit);
        let mut retried = Vec::with_capacity(ids.len());
        for id in ids {
            match self.retry(queue, &id).await {
                Ok(()) => retried.push(id),
                Err(QueueError::NotFound(_) | QueueError::WrongState(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(retried)
    }

    /// Moves a failed or completed job back to waiting. Its recorded steps
    /// stay, so a workflow resumes where it failed.
    pub async fn retry(&self, queue: &str, id: &str) -> Result<(), QueueError> {
        let q = self.queue(queue).await?;
        let mut job = q
            .get_job(id)
            .await?
            .ok_or_else(|| QueueError::NotFound(format!("job `{queue}:{id}`")))?;
        let state = match q.get_job_state(id).await? {
            bullmq::JobState::Failed => "failed",
            bullmq::JobState::Completed => "completed",
            other => {
                return Err(QueueError::WrongState(format!(
                    "job `{queue}:{id}` is {}; only failed or completed jobs can be retried",
                    JobState::from(other).as_str()
                )));
            }
        };
        // A cancelled job carries BullMQ's deferred failure: without
        // clearing it, the retried job would fail again at once.
        let mut conn = self.store().conn();
        let _: i64 = conn
            .hdel(self.job_key(queue, id), cancel::MARK_FIELD)
            .await?;
        // The rerun overwrites the fields a completed first run's history
        // entry is read from: write it down first (see `state::runs`).
        if state == "completed" {
            self.state
                .meta
                .keep_first_run(&self.job_key(queue, id))
                .await?;
        }
        job.retry(state, None).await?;
        Ok(())
    }

    /// Removes a job (refused while a worker holds its lock).
    pub async fn remove(&self, queue: &str, id: &str) -> Result<(), QueueError> {
        self.existing_job(queue, id).await?;
        let q = self.queue(queue).await?;
        if !q.remove(id).await? {
            return Err(QueueError::WrongState(format!(
                "job `{queue}:{id}` is locked by a running worker"
            )));
        }
        Ok(())
    }

    /// Moves a delayed job to waiting now. A job in a durable sleep wakes
    /// up: its pending sleeps are marked as over, so on replay it goes on
    /// past them instead of parking again (BullMQ's own `promote` only
    /// reruns it, and the replay parks it again until the recorded time).
    pub async fn promote(&self, queue: &str, id: &str) -> Result<(), QueueError> {
        let snapshot = self.existing_job(queue, id).await?;
        if snapshot.state != JobState::Delayed {
            return Err(QueueError::WrongState(format!(
                "job `{queue}:{id}` is {}, not delayed",
                snapshot.state.as_str()
            )));
        }
        let q = self.queue(queue).await?;
        let job = q
            .get_job(id)
            .await?
            .ok_or_else(|| QueueError::NotFound(format!("job `{queue}:{id}`")))?;
        self.state
            .meta
            .wake_sleeps(&self.job_key(queue, id), airlock_core::clock::now_ms())
            .await?;
        job.promote().await?;
        Ok(())
    }

    /// Moves the job to another handler digest: its next run uses it.
    pub async fn repin(&self, queue: &str, id: &str, digest: &str) -> Result<(), QueueError> {
        if !self.state.meta.repin(queue, id, digest).await? {
            return Err(QueueError::NotFound(format!("job `{queue}:{id}`")));
        }
        Ok(())
    }

    /// Whether the queue is paused.
    pub async fn is_paused(&self, queue: &str) -> Result<bool, QueueError> {
        Ok(self.queue(queue).await?.is_paused().await?)
    }

    /// Stops workers of every host from taking jobs of this queue.
    pub async fn pause(&self, queue: &str) -> Result<(), QueueError> {
        Ok(self.queue(queue).await?.pause().await?)
    }

    /// Undoes [`QueueService::pause`].
    pub async fn resume(&self, queue: &str) -> Result<(), QueueError> {
        Ok(self.queue(queue).await?.resume().await?)
    }

    /// Sets (or, with `None`, removes) the queue's fleet-wide limits: at
    /// most `concurrency` jobs active across all hosts, and at most `max`
    /// jobs started per `duration_ms` (BullMQ global concurrency and rate
    /// limit, enforced by its fetch script).
    pub async fn set_global_limits(
        &self,
        queue: &str,
        concurrency: Option<u64>,
        rate: Option<(u64, u64)>,
    ) -> Result<(), QueueError> {
        let q = self.queue(queue).await?;
        match concurrency {
            Some(n) => q.set_global_concurrency(n).await?,
            None => q.remove_global_concurrency().await?,
        }
        match rate {
            Some((max, duration)) => q.set_global_rate_limit(max, duration).await?,
            None => q.remove_global_rate_limit().await?,
        }
        Ok(())
    }

    /// Removes waiting (and, with `delayed`, delayed) jobs.
    pub async fn drain(&self, queue: &str, delayed: bool) -> Result<(), QueueError> {
        Ok(self.queue(queue).await?.drain(delayed).await?)
    }

    /// Removes up to `limit` jobs in `state` finished more than `grace_ms`
    /// ago; returns their ids.
    pub async fn clean(
        &self,
        queue: &str,
        state: JobState,
        grace_ms: u64,
        limit: u32,
    ) -> Result<Vec<String>, QueueError> {
        let q = self.queue(queue).await?;
        Ok(q.clean(grace_ms, limit, state.bullmq_name()).await?)
    }

    /// Deletes the queue and all its jobs. BullMQ obliterates only paused
    /// queues (no worker may take a job while its keys go), so the queue is
    /// paused first — and resumed again if the obliterate is then refused
    /// or fails and the queue was running before. Without `force`, a queue
    /// with active jobs is refused: checked here, because the port passes
    /// its `force = false` to the script in a form the script reads as
    /// "force" (see tests/tests/bullmq_conformance.rs).
    pub async fn obliterate(&self, queue: &str, force: bool) -> Result<(), QueueError> {
        let q = self.queue(queue).await?;
        let was_paused = q.is_paused().await?;
        q.pause().await?;
        let result = async {
            if !force {
                let active = q.get_active_count().await?;
                if active > 0 {
                    return Err(QueueError::WrongState(format!(
                        "queue `{queue}` has {active} active job(s); obliterate with `force` to remove them too"
                    )));
                }
            }
            Ok(q.obliterate(force, 1000).await?)
        }
        .await;
        if let Err(e) = result {
            if !was_paused && let Err(resume) = q.resume().await {
                tracing::warn!(queue, error = %resume, "could not resume the queue after a failed obliterate");
            }
            return Err(e);
        }
        self.queues.lock().unwrap().remove(queue);
        Ok(())
    }

    /// Connection options for workers of these queues.
    pub(crate) fn connection(&self) -> &bullmq::options::RedisConnectionOptions {
        &self.connection
    }

    /// Whether Redis answers.
    pub async fn ping(&self) -> bool {
        self.store.ping().await.is_ok()
    }
}
