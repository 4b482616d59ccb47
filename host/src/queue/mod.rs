//! Airlock's queues: BullMQ queues, through the BullMQ team's Rust port.
//!
//! Everything BullMQ-specific lives behind this module: the rest of the host
//! speaks Airlock types ([`JobOptions`], [`JobSnapshot`], [`JobState`]) and
//! never touches the `bullmq` crate. The port runs BullMQ's own Lua scripts
//! against BullMQ's own keys, so Node's `bullmq` (and tools such as
//! bull-board) see Airlock's queues and can add jobs to them.
//!
//! Airlock keeps a little per-job state of its own (the pinned handler
//! digest, step records, measurements) as extra fields of BullMQ's job hash,
//! prefixed `airlock.`. BullMQ ignores fields it does not know and deletes
//! the whole hash when it removes a job, so that state can never outlive its
//! job — retention needs no janitor and leaves no orphan keys.

mod events;
mod flows;
mod options;
mod schedules;
mod snapshot;
mod worker;

use std::collections::HashMap;
use std::sync::Mutex;

use bullmq::redis_connection::RedisConnection;
use redis::AsyncCommands;

pub use self::events::{QueueEventItem, Subscription};
pub use self::flows::{ChildFailure, FlowNode, FlowSpec};
pub use self::options::{Backoff, Deduplication, JobOptions, MAX_PRIORITY, OptionError, Retention};
pub use self::schedules::{ScheduleSpec, ScheduleView};
pub use self::snapshot::{JobSnapshot, JobState, QueueCounts};
pub use self::worker::{ActiveJob, JobProcessor, JobResult, QueueWorker, WorkerSettings};
use crate::store::Store;

/// Job-hash fields Airlock owns (all prefixed `airlock.`).
pub mod fields {
    /// sha256 of the handler the job first ran with; retries, resumptions
    /// and recoveries run the same code so durable steps replay against it.
    pub const DIGEST: &str = "airlock.digest";
    /// Per-job limits (JSON `LimitsOverride`).
    pub const LIMITS: &str = "airlock.limits";
    /// Fuel used by the last run.
    pub const FUEL: &str = "airlock.fuelUsed";
    /// Peak memory of the last run, bytes.
    pub const MEMORY: &str = "airlock.peakMemoryBytes";
    /// Wall time of the last run, ms.
    pub const WALL_MS: &str = "airlock.wallTimeMs";
    /// Failure kind of the last failed run.
    pub const KIND: &str = "airlock.failureKind";
    /// Id of the host that ran the job last.
    pub const HOST: &str = "airlock.host";
    /// Name of the API token that enqueued the job (producers read only
    /// their own jobs).
    pub const PRODUCER: &str = "airlock.producer";
    /// Prefix of a durable step record: `airlock.step:<step id>`.
    pub const STEP_PREFIX: &str = "airlock.step:";
    /// Prefix of a durable sleep record: `airlock.sleep:<sleep id>` (wake-up ms).
    pub const SLEEP_PREFIX: &str = "airlock.sleep:";
}

/// A queue name that BullMQ (and Redis Cluster hash tags) can live with.
pub fn validate_queue_name(name: &str) -> Result<(), OptionError> {
    let bad = |m: &str| OptionError {
        field: "queue".into(),
        message: m.into(),
    };
    if name.is_empty() || name.len() > 128 {
        return Err(bad("must be 1 to 128 characters"));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '{' | '}'))
    {
        return Err(bad(
            "may contain only letters, digits, `-`, `_`, `.` and a `{hash tag}`",
        ));
    }
    Ok(())
}

/// Result of an enqueue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Enqueued {
    /// The job's id.
    pub id: String,
    /// True when a job with this id (or deduplication id) already existed,
    /// so nothing new was added.
    pub duplicate: bool,
}

/// One job to enqueue.
#[derive(Debug, Clone)]
pub struct NewJob {
    /// BullMQ job name.
    pub name: String,
    /// Job data.
    pub data: serde_json::Value,
    /// Options, already merged with the binding's defaults.
    pub opts: JobOptions,
}

/// Access to the BullMQ queues of one Redis (and key prefix).
pub struct QueueService {
    conn: RedisConnection,
    connection: bullmq::options::RedisConnectionOptions,
    prefix: String,
    store: Store,
    queues: Mutex<HashMap<String, bullmq::Queue>>,
}

impl QueueService {
    /// Queues on the Redis of `store`, sharing its connection; queue keys
    /// start with `prefix` (`bull` by default).
    pub fn new(prefix: &str, store: Store) -> Self {
        QueueService {
            conn: store.bullmq_connection().clone(),
            connection: store.options().clone(),
            prefix: prefix.to_string(),
            store,
            queues: Mutex::new(HashMap::new()),
        }
    }

    /// Refuses a queue whose keys would spread over several slots of a
    /// Redis Cluster: BullMQ's scripts touch many keys of a queue at once,
    /// so either the prefix or the queue name must carry a `{hash tag}`.
    pub(crate) fn check_cluster_slot(&self, name: &str) -> anyhow::Result<()> {
        use crate::registry::hash_tagged;
        if self.store.is_cluster() && !hash_tagged(&self.prefix) && !hash_tagged(name) {
            return Err(OptionError {
                field: "queue".into(),
                message: format!(
                    "on a Redis Cluster a queue needs a hash tag: name it `{{{name}}}` (or run with a `{{bull}}` prefix)"
                ),
            }
            .into());
        }
        Ok(())
    }

    /// The key prefix.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Airlock's own Redis handle.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The Redis key of a job's hash.
    pub fn job_key(&self, queue: &str, id: &str) -> String {
        format!("{}:{}:{}", self.prefix, queue, id)
    }

    /// The Redis key of a queue's events stream.
    pub fn events_key(&self, queue: &str) -> String {
        format!("{}:{}:events", self.prefix, queue)
    }

    async fn queue(&self, name: &str) -> anyhow::Result<bullmq::Queue> {
        validate_queue_name(name)?;
        self.check_cluster_slot(name)?;
        if let Some(q) = self.queues.lock().unwrap().get(name) {
            return Ok(q.clone());
        }
        let opts = bullmq::QueueOptions::new().prefix(self.prefix.clone());
        let queue = bullmq::Queue::with_connection(name, self.conn.clone(), opts).await?;
        self.queues
            .lock()
            .unwrap()
            .insert(name.to_string(), queue.clone());
        Ok(queue)
    }

    /// Enqueues one job.
    pub async fn add(&self, queue: &str, job: NewJob) -> anyhow::Result<Enqueued> {
        Ok(self.add_bulk(queue, vec![job]).await?.remove(0))
    }

    /// Enqueues several jobs. Every job is validated before any is added,
    /// so a bad request adds nothing.
    pub async fn add_bulk(&self, queue: &str, jobs: Vec<NewJob>) -> anyhow::Result<Vec<Enqueued>> {
        for job in &jobs {
            job.opts.validate()?;
        }
        let q = self.queue(queue).await?;
        let mut prepared = Vec::with_capacity(jobs.len());
        let mut prepared_ids = Vec::with_capacity(jobs.len());
        let mut known_before = Vec::with_capacity(jobs.len());
        for mut job in jobs {
            // Per-job limits must be in place before any worker can see the
            // job, so such a job gets its id here and its limits are parked
            // under a key the first run moves into the job hash.
            if let Some(limits) = &job.opts.limits {
                let id = job
                    .opts
                    .job_id
                    .get_or_insert_with(|| format!("j-{}", uuid::Uuid::new_v4().simple()))
                    .clone();
                let text = serde_json::to_string(limits)?;
                self.store.set_pending_limits(queue, &id, &text).await?;
            }
            let existed = match (&job.opts.job_id, &job.opts.deduplication) {
                (Some(id), _) => self.store.exists(&self.job_key(queue, id)).await?,
                // A live deduplication id makes BullMQ answer with the job
                // that holds it instead of adding one.
                (None, Some(dedup)) => q.get_deduplication_job_id(&dedup.id).await?.is_some(),
                (None, None) => false,
            };
            known_before.push(existed);
            prepared_ids.push(job.opts.job_id.clone());
            let opts = job.opts.to_bullmq();
            prepared.push(bullmq::BulkJob::with_options(job.name, job.data, opts));
        }
        let requested: Vec<Option<String>> = prepared_ids;
        let added = q.add_bulk(prepared).await?;
        Ok(added
            .into_iter()
            .zip(known_before)
            .zip(requested)
            .map(|((job, existed), requested)| {
                // A deduplicated add answers with the existing job's id.
                let replaced = requested.is_some_and(|r| r != job.id());
                Enqueued {
                    id: job.id().to_string(),
                    duplicate: existed || replaced,
                }
            })
            .collect())
    }

    /// A job's full state, or `None` when it does not exist.
    pub async fn get_job(&self, queue: &str, id: &str) -> anyhow::Result<Option<JobSnapshot>> {
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

    /// A page of a job's log lines (oldest first) and the total count.
    pub async fn job_logs(
        &self,
        queue: &str,
        id: &str,
        start: usize,
        end: usize,
    ) -> anyhow::Result<(Vec<String>, usize)> {
        let q = self.queue(queue).await?;
        Ok(q.get_job_logs(id, start as isize, end as isize, true)
            .await?)
    }

    /// How many jobs are in each state.
    pub async fn counts(&self, queue: &str) -> anyhow::Result<QueueCounts> {
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
    ) -> anyhow::Result<Vec<JobSnapshot>> {
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

    /// Moves a failed or completed job back to waiting. Its recorded steps
    /// stay, so a workflow resumes where it failed.
    pub async fn retry(&self, queue: &str, id: &str) -> anyhow::Result<bool> {
        let q = self.queue(queue).await?;
        let Some(mut job) = q.get_job(id).await? else {
            return Ok(false);
        };
        let state = q.get_job_state(id).await?;
        let state = match state {
            bullmq::JobState::Failed => "failed",
            bullmq::JobState::Completed => "completed",
            other => {
                anyhow::bail!("job {id} is {other}; only failed or completed jobs can be retried")
            }
        };
        job.retry(state, None).await?;
        Ok(true)
    }

    /// Removes a job (refused while it is locked by a worker).
    pub async fn remove(&self, queue: &str, id: &str) -> anyhow::Result<bool> {
        let q = self.queue(queue).await?;
        Ok(q.remove(id).await?)
    }

    /// Moves a delayed job to waiting now. A job in a durable sleep wakes
    /// up: its pending sleeps are marked as over, so on replay it goes on
    /// past them instead of parking again (BullMQ's own `promote` only
    /// reruns it, and the replay parks it again until the recorded time).
    pub async fn promote(&self, queue: &str, id: &str) -> anyhow::Result<bool> {
        let q = self.queue(queue).await?;
        let Some(job) = q.get_job(id).await? else {
            return Ok(false);
        };
        let key = self.job_key(queue, id);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)?
            .as_millis() as u64;
        for (field, value) in self.store.hgetall(&key).await? {
            let pending = value.parse::<u64>().is_ok_and(|wake| wake > now);
            if field.starts_with(fields::SLEEP_PREFIX) && pending {
                self.store
                    .hset_if_exists(&key, &field, &now.to_string())
                    .await?;
            }
        }
        job.promote().await?;
        Ok(true)
    }

    /// Stops workers of every host from taking jobs of this queue.
    pub async fn pause(&self, queue: &str) -> anyhow::Result<()> {
        Ok(self.queue(queue).await?.pause().await?)
    }

    /// Undoes [`QueueService::pause`].
    pub async fn resume(&self, queue: &str) -> anyhow::Result<()> {
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
    ) -> anyhow::Result<()> {
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
    pub async fn drain(&self, queue: &str, delayed: bool) -> anyhow::Result<()> {
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
    ) -> anyhow::Result<Vec<String>> {
        let q = self.queue(queue).await?;
        Ok(q.clean(grace_ms, limit, state.bullmq_name()).await?)
    }

    /// Deletes the queue and all its jobs.
    pub async fn obliterate(&self, queue: &str, force: bool) -> anyhow::Result<()> {
        let q = self.queue(queue).await?;
        q.obliterate(force, 1000).await?;
        self.queues.lock().unwrap().remove(queue);
        Ok(())
    }

    /// Connection options for workers of these queues.
    pub(crate) fn connection(&self) -> &bullmq::options::RedisConnectionOptions {
        &self.connection
    }

    /// Whether Redis answers.
    pub async fn ping(&self) -> bool {
        self.store.ping().await
    }

    /// Sets an Airlock field on a job hash, only if the job exists.
    pub async fn set_job_field(
        &self,
        queue: &str,
        id: &str,
        field: &str,
        value: &str,
    ) -> anyhow::Result<bool> {
        let key = self.job_key(queue, id);
        self.store.hset_if_exists(&key, field, value).await
    }

    /// A raw command on Airlock's connection (tests and maintenance).
    pub async fn raw_hget(&self, key: &str, field: &str) -> anyhow::Result<Option<String>> {
        let mut conn = self.store.conn();
        Ok(conn.hget(key, field).await?)
    }
}
