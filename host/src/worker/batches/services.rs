//! [`HostServices`] for a batch run: its progress goes to every job of the
//! batch; KV and secrets are the queue's and handler's, as for one job.
//! The calls that belong to one job never get here (the sandbox refuses
//! them in a batch run, `run_state::batch`); were one to, it is refused
//! (steps, sleeps, children) or answered `unsupported` (the trait's
//! defaults: waits, starts, retry-afters).

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use super::super::reporter::ProgressSender;
use super::super::services::{PendingPin, RedisServices};
use super::super::starts::{RunStarts, StartEnv};
use crate::queue::QueueService;
use crate::sandbox::services::ChildResult;
use crate::sandbox::{HostServices, Progress, ServiceError};

/// The services of one batch run.
pub struct BatchServices {
    /// KV and secrets, through the batch's first job (a KV write pins
    /// nothing through it: a batch records no state of a job's own).
    inner: RedisServices,
    /// Every job's progress stream.
    progress: Vec<ProgressSender>,
}

impl BatchServices {
    /// Services for a batch whose first job is `job_key`, of `handler`,
    /// reporting progress to `progress`.
    pub fn new(
        queues: &QueueService,
        job_key: String,
        ready_at_ms: u64,
        handler: String,
        starts: Arc<StartEnv>,
        progress: Vec<ProgressSender>,
    ) -> BatchServices {
        let inner = RedisServices::new(
            queues,
            job_key,
            ready_at_ms,
            handler,
            progress[0].clone(),
            PendingPin {
                digest: String::new(),
                unpinned: Arc::new(AtomicBool::new(false)),
            },
            RunStarts {
                env: starts,
                trace: None,
            },
        );
        BatchServices { inner, progress }
    }
}

fn one_job_only() -> ServiceError {
    ServiceError::Refused("not available in a batch run".into())
}

#[async_trait::async_trait]
impl HostServices for BatchServices {
    fn progress(&mut self, value: Progress) {
        let value = value.to_json();
        for sender in &self.progress {
            sender.send(value.clone());
        }
    }

    async fn step_lookup(&mut self, _: &str) -> Result<Option<String>, ServiceError> {
        Err(one_job_only())
    }

    async fn step_record(&mut self, _: &str, _: &str) -> Result<(), ServiceError> {
        Err(one_job_only())
    }

    async fn sleep_lookup(&mut self, _: &str) -> Result<Option<u64>, ServiceError> {
        Err(one_job_only())
    }

    async fn sleep_record(&mut self, _: &str, _: u64) -> Result<(), ServiceError> {
        Err(one_job_only())
    }

    async fn children_results(&mut self) -> Result<Vec<ChildResult>, ServiceError> {
        Err(one_job_only())
    }

    async fn kv_get(&mut self, key: &str) -> Result<Option<String>, ServiceError> {
        self.inner.kv_get(key).await
    }

    async fn kv_set(
        &mut self,
        key: &str,
        value: &str,
        ttl: Option<Duration>,
        only_if_absent: bool,
    ) -> Result<bool, ServiceError> {
        self.inner.kv_set(key, value, ttl, only_if_absent).await
    }

    async fn kv_delete(&mut self, key: &str) -> Result<bool, ServiceError> {
        self.inner.kv_delete(key).await
    }

    async fn secret(&mut self, name: &str) -> Result<Option<String>, ServiceError> {
        self.inner.secret(name).await
    }
}
