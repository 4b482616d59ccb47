//! The durable imports of a queued job, backed by Redis.
//!
//! Step and sleep records are fields of the job's own BullMQ hash
//! (`airlock.step:<id>`, `airlock.sleep:<id>`): they live exactly as long as
//! the job. The KV store is per handler; secrets are per queue (encrypted,
//! decrypted by the sandbox). Calls are awaited from the guest's host calls on
//! the sandbox's runtime: a guest waiting on Redis holds no thread.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use redis::AsyncCommands;

use super::reporter::ProgressSender;
use super::starts::{RunStarts, StartEnv, Starter};
use crate::queue::{QueueError, QueueService};
use crate::sandbox::services::ChildResult;
use crate::sandbox::services::{InvokeState, StartJob, WaitFor, WaitOutcome, WaitState};
use crate::sandbox::{HostServices, Progress, ServiceError};
use crate::state::meta::Meta;
use crate::state::waits::{Begun, WaitRecord, Waits};
use crate::store::Store;

/// [`HostServices`] for one run of one queued job.
pub struct RedisServices {
    store: Store,
    /// Where step and sleep records go (fields of the job hash).
    meta: Meta,
    /// The job's durable waits.
    waits: Waits,
    /// When the job became ready to run (its enqueue time plus delay): a
    /// wait accepts the events sent since.
    ready_at_ms: u64,
    /// The job hash.
    job_key: String,
    /// The handler name: the KV namespace.
    handler: String,
    /// The queue: whose secrets the job may ask for.
    queue: String,
    /// Where progress reports go, in order, to the job's reporter.
    progress: ProgressSender,
    /// The digest this run executes, pinned with the job's first durable
    /// write while `unpinned` is set (the recorder writes it at the finish
    /// when the run made none).
    digest: String,
    unpinned: Arc<AtomicBool>,
    /// What starting work needs, shared by the queue's runs.
    start_env: Arc<StartEnv>,
    /// The run's trace context, which started jobs continue.
    trace: Option<String>,
    /// Made by the run's first start.
    starter: Option<Starter>,
}

fn unavailable(e: impl std::fmt::Display) -> ServiceError {
    ServiceError::Unavailable(e.to_string())
}

/// A wait's store error for the guest: a record that does not parse is
/// refused as invalid (waiting will not fix it), anything else is an
/// outage.
fn wait_error(e: QueueError) -> ServiceError {
    match e {
        QueueError::Internal(m) => ServiceError::Invalid(m),
        e => unavailable(e),
    }
}

/// The pin a run still owes its job: `digest` is written with the job's
/// first durable write while `unpinned` is set, and the flag cleared; the
/// executor reads the flag at the finish.
#[derive(Clone, Debug)]
pub struct PendingPin {
    /// The digest this run executes.
    pub digest: String,
    /// Set while nothing pinned the job.
    pub unpinned: Arc<AtomicBool>,
}

impl RedisServices {
    /// Services for the job at `job_key` of `queues` (ready to run since
    /// `ready_at_ms`), run by `handler`.
    pub fn new(
        queues: &QueueService,
        job_key: String,
        ready_at_ms: u64,
        handler: String,
        progress: ProgressSender,
        pin: PendingPin,
        starts: RunStarts,
    ) -> Self {
        let (queue, id) = match queues.store().keys().split_job_key(&job_key) {
            Some((queue, id)) => (queue.to_string(), id.to_string()),
            None => (String::new(), job_key.clone()),
        };
        RedisServices {
            store: queues.store().clone(),
            meta: queues.state().meta.clone(),
            waits: Waits::new(queues.store().clone(), &queue, &id, &job_key),
            ready_at_ms,
            queue,
            job_key,
            handler,
            progress,
            digest: pin.digest,
            unpinned: pin.unpinned,
            start_env: starts.env,
            trace: starts.trace,
            starter: None,
        }
    }

    /// The run's starter, made on its first start; the job is pinned
    /// first, so a rerun after a start runs the version that started.
    async fn starter(&mut self) -> Result<&mut Starter, ServiceError> {
        self.pin_before_write().await?;
        if self.starter.is_none() {
            let (queue, id) = self.split_job_key(&self.job_key);
            self.starter = Some(Starter::new(
                self.start_env.clone(),
                &queue,
                &id,
                &self.job_key,
                self.trace.clone(),
            ));
        }
        Ok(self.starter.as_mut().expect("made above"))
    }

    async fn get_field(&self, field: String) -> Result<Option<String>, ServiceError> {
        self.meta
            .get(&self.job_key, &field)
            .await
            .map_err(unavailable)
    }

    /// Records a step or sleep field, pinning the job in the same script if
    /// nothing did yet.
    async fn set_field(&self, field: &str, value: &str) -> Result<(), ServiceError> {
        self.set_fields(&[(field, value)]).await
    }

    /// [`Self::set_field`] for several fields, in one script.
    async fn set_fields(&self, pairs: &[(&str, &str)]) -> Result<(), ServiceError> {
        let unpinned = self.unpinned.load(Ordering::Relaxed);
        let pin = unpinned.then_some(self.digest.as_str());
        let written = self
            .meta
            .set_and_pin(&self.job_key, pin, pairs)
            .await
            .map_err(unavailable)?;
        if written {
            if unpinned {
                self.unpinned.store(false, Ordering::Relaxed);
            }
            Ok(())
        } else {
            Err(ServiceError::Unavailable(
                "the job no longer exists (removed while running)".into(),
            ))
        }
    }

    /// Before a KV write of a job not pinned yet: pins it, so that a rerun
    /// after the write runs the version that wrote (the KV key lives in
    /// another slot than the job, so this is a round trip of its own, once
    /// per run at most). A crash between the pin and the write leaves a pin
    /// and no write: harmless.
    async fn pin_before_write(&self) -> Result<(), ServiceError> {
        if !self.unpinned.load(Ordering::Relaxed) {
            return Ok(());
        }
        let exists = self
            .meta
            .set_and_pin(&self.job_key, Some(&self.digest), &[])
            .await
            .map_err(unavailable)?;
        if !exists {
            return Err(ServiceError::Unavailable(
                "the job no longer exists (removed while running)".into(),
            ));
        }
        self.unpinned.store(false, Ordering::Relaxed);
        Ok(())
    }

    fn kv_key(&self, key: &str) -> String {
        self.store.keys().kv(&self.handler, key)
    }

    /// `prefix:queue:id` → `(queue, id)` (see [`crate::store::Keys::split_job_key`]).
    fn split_job_key(&self, key: &str) -> (String, String) {
        match self.store.keys().split_job_key(key) {
            Some((queue, id)) => (queue.to_string(), id.to_string()),
            None => (String::new(), key.to_string()),
        }
    }
}

#[async_trait::async_trait]
impl HostServices for RedisServices {
    fn progress(&mut self, value: Progress) {
        self.progress.send(value.to_json());
    }

    async fn step_lookup(&mut self, step_id: &str) -> Result<Option<String>, ServiceError> {
        self.get_field(Meta::step_field(step_id)).await
    }

    async fn step_record(&mut self, step_id: &str, output: &str) -> Result<(), ServiceError> {
        // With when it was recorded: the job's timeline shows it.
        let at = airlock_core::clock::now_ms().to_string();
        let at_field = format!("{}{step_id}", crate::state::fields::STEP_AT_PREFIX);
        self.set_fields(&[(&Meta::step_field(step_id), output), (&at_field, &at)])
            .await
    }

    async fn wait_lookup(&mut self, wait_id: &str) -> Result<Option<WaitState>, ServiceError> {
        let state = self.waits.state(wait_id).await.map_err(wait_error)?;
        Ok(state.map(|(record, outcome)| WaitState {
            deadline_ms: record.deadline(),
            outcome,
        }))
    }

    async fn wait_begin(
        &mut self,
        wait_id: &str,
        what: &WaitFor,
        deadline_ms: u64,
    ) -> Result<Option<WaitOutcome>, ServiceError> {
        let record = WaitRecord::new(what, deadline_ms);
        let text = serde_json::to_string(&record).map_err(unavailable)?;
        self.set_field(&Meta::wait_field(wait_id), &text).await?;
        match self.waits.begin(wait_id, &record, self.ready_at_ms).await {
            Ok(Begun::Listening) => Ok(None),
            Ok(Begun::Came(outcome)) => Ok(Some(outcome)),
            Ok(Begun::TooManyPaths(message)) => Err(ServiceError::LimitExceeded(message)),
            Err(e) => Err(wait_error(e)),
        }
    }

    async fn wait_expire(&mut self, wait_id: &str) -> Result<WaitOutcome, ServiceError> {
        let Some((record, _)) = self.waits.state(wait_id).await.map_err(wait_error)? else {
            return Err(ServiceError::Invalid(format!(
                "no wait `{wait_id}` is recorded"
            )));
        };
        self.waits
            .expire(wait_id, &record)
            .await
            .map_err(wait_error)
    }

    async fn wait_token(&mut self, wait_id: &str) -> Result<String, ServiceError> {
        // A token handed out before its wait is reached is kept for the
        // longest wait; the wait's own deadline shortens it.
        let deadline = match self.waits.state(wait_id).await.map_err(wait_error)? {
            Some((record, _)) => record.deadline(),
            None => airlock_core::clock::now_ms().saturating_add(crate::sandbox::MAX_SLEEP_MS),
        };
        self.pin_before_write().await?;
        self.waits
            .token(wait_id, deadline)
            .await
            .map_err(wait_error)
    }

    async fn sleep_lookup(&mut self, sleep_id: &str) -> Result<Option<u64>, ServiceError> {
        Ok(self
            .get_field(Meta::sleep_field(sleep_id))
            .await?
            .and_then(|v| v.parse().ok()))
    }

    async fn sleep_record(&mut self, sleep_id: &str, wake_at_ms: u64) -> Result<(), ServiceError> {
        self.set_field(&Meta::sleep_field(sleep_id), &wake_at_ms.to_string())
            .await
    }

    async fn start_jobs(
        &mut self,
        step_id: &str,
        jobs: &[StartJob],
        indexes: &[usize],
        as_children: bool,
    ) -> Result<Vec<(String, String)>, ServiceError> {
        self.starter()
            .await?
            .start_jobs(step_id, jobs, indexes, as_children)
            .await
    }

    async fn invoke_state(
        &mut self,
        step_id: &str,
        jobs: &[StartJob],
        timeout_ms: Option<u64>,
    ) -> Result<InvokeState, ServiceError> {
        let (state, record) = self
            .starter()
            .await?
            .invoke_state(step_id, jobs, timeout_ms)
            .await?;
        if let Some((field, value)) = record {
            self.set_field(&field, &value).await?;
        }
        Ok(state)
    }

    async fn invoke_expire(
        &mut self,
        step_id: &str,
        jobs: &[StartJob],
        pending: &[usize],
    ) -> Result<(), ServiceError> {
        let record = self
            .starter()
            .await?
            .invoke_expire(step_id, jobs, pending)
            .await?;
        if let Some((field, value)) = record {
            self.set_field(&field, &value).await?;
        }
        Ok(())
    }

    async fn send_event(
        &mut self,
        step_id: &str,
        name: &str,
        data: &serde_json::Value,
    ) -> Result<String, ServiceError> {
        self.starter().await?.send_event(step_id, name, data).await
    }

    async fn count_retry_after(&mut self) -> Result<u32, ServiceError> {
        self.pin_before_write().await?;
        let counted = self
            .meta
            .count_if_exists(&self.job_key, crate::state::fields::RETRY_AFTERS)
            .await
            .map_err(unavailable)?;
        counted.ok_or_else(|| ServiceError::Invalid("the job was removed while it ran".into()))
    }

    async fn children_results(&mut self) -> Result<Vec<ChildResult>, ServiceError> {
        // BullMQ keeps a parent's finished children in `<job>:processed`
        // (child key → return value) and ignored failures in `<job>:failed`
        // (child key → reason).
        let mut conn = self.store.conn();
        let processed_key = format!("{}:processed", self.job_key);
        let failed_key = format!("{}:failed", self.job_key);
        let (processed, failed): (
            std::collections::HashMap<String, String>,
            std::collections::HashMap<String, String>,
        ) = redis::pipe()
            .hgetall(processed_key)
            .hgetall(failed_key)
            .query_async(&mut conn)
            .await
            .map_err(unavailable)?;
        let mut results: Vec<ChildResult> = processed
            .into_iter()
            .map(|(key, value)| (key, Ok(value)))
            .chain(failed.into_iter().map(|(key, reason)| (key, Err(reason))))
            .map(|(key, outcome)| {
                let (queue, id) = self.split_job_key(&key);
                ChildResult { queue, id, outcome }
            })
            .collect();
        results.sort_by(|a, b| (&a.queue, &a.id).cmp(&(&b.queue, &b.id)));
        Ok(results)
    }

    async fn kv_get(&mut self, key: &str) -> Result<Option<String>, ServiceError> {
        let mut conn = self.store.conn();
        let key = self.kv_key(key);
        conn.get(key).await.map_err(unavailable)
    }

    async fn kv_set(
        &mut self,
        key: &str,
        value: &str,
        ttl: Option<Duration>,
        only_if_absent: bool,
    ) -> Result<bool, ServiceError> {
        self.pin_before_write().await?;
        let mut conn = self.store.conn();
        let mut cmd = redis::cmd("SET");
        cmd.arg(self.kv_key(key)).arg(value);
        if let Some(ttl) = ttl {
            cmd.arg("PX").arg(ttl.as_millis().max(1) as u64);
        }
        if only_if_absent {
            cmd.arg("NX");
        }
        let reply: Option<String> = cmd.query_async(&mut conn).await.map_err(unavailable)?;
        Ok(reply.is_some())
    }

    async fn kv_delete(&mut self, key: &str) -> Result<bool, ServiceError> {
        self.pin_before_write().await?;
        let mut conn = self.store.conn();
        let key = self.kv_key(key);
        let removed: i64 = conn.del(key).await.map_err(unavailable)?;
        Ok(removed > 0)
    }

    async fn secret(&mut self, name: &str) -> Result<Option<String>, ServiceError> {
        let mut conn = self.store.conn();
        conn.hget(self.store.keys().secrets(&self.queue), name)
            .await
            .map_err(unavailable)
    }
}
