//! The stores behind a guest's durable imports (steps, sleeps, waits, KV,
//! children).
//!
//! The sandbox does not know where job state lives. It awaits these methods
//! from the guest's host calls — the guest is suspended meanwhile, holding
//! no thread — and the caller decides: [`LocalServices`] keeps everything
//! in memory for `airlock run`; the queue host backs them with Redis next
//! to the job.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Why a service call failed; mirrors the WIT `host-error` variant.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServiceError {
    /// This host has no store for the feature.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// The arguments were refused.
    #[error("invalid: {0}")]
    Invalid(String),
    /// A size or count limit was hit.
    #[error("limit exceeded: {0}")]
    LimitExceeded(String),
    /// The store is unreachable right now.
    #[error("unavailable: {0}")]
    Unavailable(String),
    /// The binding does not allow it (a queue or event outside its
    /// `starts`): the run fails as `guest_fatal` with this reason.
    #[error("refused: {0}")]
    Refused(String),
}

/// A progress report from the guest.
#[derive(Debug, Clone, PartialEq)]
pub enum Progress {
    /// 0 to 100.
    Percent(u8),
    /// Any JSON value.
    Json(serde_json::Value),
}

impl Progress {
    /// The JSON value stored as BullMQ's `progress` field.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Progress::Percent(p) => serde_json::Value::from(*p),
            Progress::Json(v) => v.clone(),
        }
    }
}

/// Outcome of one flow child, as handed to the parent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildResult {
    /// The child's queue.
    pub queue: String,
    /// The child's job id.
    pub id: String,
    /// `Ok(return value JSON)` or `Err(failure reason)`.
    pub outcome: Result<String, String>,
}

pub use airlock_core::wait::{WaitFor, WaitOutcome};

/// A job a handler starts (`enqueue`, `invoke`), its JSON parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct StartJob {
    /// The queue to add it to.
    pub queue: String,
    /// Its BullMQ name.
    pub name: String,
    /// Its data.
    pub data: serde_json::Value,
    /// BullMQ job options over the queue's defaults (a JSON object).
    pub options: Option<serde_json::Value>,
}

/// How an invoked child ended, for its parent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChildEnd {
    /// Completed with this return value (JSON text).
    Completed(String),
    /// Failed for good.
    Failed {
        /// Its failure kind (`guest_fatal`, ...).
        kind: String,
        /// Its reason, without the kind.
        reason: String,
        /// Attempts it made.
        attempts: u32,
    },
    /// The invoke's timeout ran out first.
    TimedOut,
}

/// An invoke as its children stand: its deadline, and each child's end
/// (`None`: not ended), in the order of the call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvokeState {
    /// When it times out, ms since the epoch; `None`: never.
    pub deadline_ms: Option<u64>,
    /// Each child's end so far.
    pub ends: Vec<Option<ChildEnd>>,
}

const NO_WORK: &str = "starting other work needs a queue host: `airlock run` has no queues";

/// A durable wait as recorded by the run that first reached it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitState {
    /// When it times out, ms since the epoch.
    pub deadline_ms: u64,
    /// Its outcome, once it has one.
    pub outcome: Option<WaitOutcome>,
}

const NO_WAITS: &str =
    "durable waits need a queue host: `airlock run` receives no events and no token completions";

/// What a running guest can reach outside its sandbox. Methods are awaited
/// on the guest runtime (they may wait on Redis, say); none may panic.
#[async_trait::async_trait]
pub trait HostServices: Send {
    /// Stores a progress report. Best effort, never waits.
    fn progress(&mut self, value: Progress);

    /// The recorded result of step `step_id`, if any.
    async fn step_lookup(&mut self, step_id: &str) -> Result<Option<String>, ServiceError>;

    /// Records the result of step `step_id`.
    async fn step_record(&mut self, step_id: &str, output: &str) -> Result<(), ServiceError>;

    /// The recorded wake-up time of sleep `sleep_id`, if it was reached before.
    async fn sleep_lookup(&mut self, sleep_id: &str) -> Result<Option<u64>, ServiceError>;

    /// Records the wake-up time of sleep `sleep_id`.
    async fn sleep_record(&mut self, sleep_id: &str, wake_at_ms: u64) -> Result<(), ServiceError>;

    /// The recorded state of wait `wait_id`, if it was reached before.
    async fn wait_lookup(&mut self, wait_id: &str) -> Result<Option<WaitState>, ServiceError> {
        let _ = wait_id;
        Err(ServiceError::Unsupported(NO_WAITS.into()))
    }

    /// Records wait `wait_id` (it times out at `deadline_ms`) and starts
    /// listening for what it waits for. Answers the outcome when it came
    /// already: an event sent before the wait (the store says how long
    /// before counts), a token completed before the wait.
    async fn wait_begin(
        &mut self,
        wait_id: &str,
        what: &WaitFor,
        deadline_ms: u64,
    ) -> Result<Option<WaitOutcome>, ServiceError> {
        let _ = (wait_id, what, deadline_ms);
        Err(ServiceError::Unsupported(NO_WAITS.into()))
    }

    /// Past its deadline: records that wait `wait_id` timed out, unless an
    /// outcome came first, and stops listening. Answers the outcome that
    /// stands.
    async fn wait_expire(&mut self, wait_id: &str) -> Result<WaitOutcome, ServiceError> {
        let _ = wait_id;
        Err(ServiceError::Unsupported(NO_WAITS.into()))
    }

    /// The completion token of wait `wait_id`, created on the first call.
    async fn wait_token(&mut self, wait_id: &str) -> Result<String, ServiceError> {
        let _ = wait_id;
        Err(ServiceError::Unsupported(NO_WAITS.into()))
    }

    /// Adds the jobs at `indexes` of a call's `jobs` for step `step_id`,
    /// each under an id derived from this job, the step and its index, so
    /// adding them again adds nothing; as children of this job (an invoke)
    /// or not (an enqueue). Their refs, `(queue, id)`.
    /// [`ServiceError::Refused`] when the binding does not allow one of
    /// `jobs`' queues (checked for all of them, added or not).
    async fn start_jobs(
        &mut self,
        step_id: &str,
        jobs: &[StartJob],
        indexes: &[usize],
        as_children: bool,
    ) -> Result<Vec<(String, String)>, ServiceError> {
        let _ = (step_id, jobs, indexes, as_children);
        Err(ServiceError::Unsupported(NO_WORK.into()))
    }

    /// Invoke `step_id` of `jobs`: records its deadline (`timeout_ms` from
    /// now) the first time, and answers it with each child's end so far.
    async fn invoke_state(
        &mut self,
        step_id: &str,
        jobs: &[StartJob],
        timeout_ms: Option<u64>,
    ) -> Result<InvokeState, ServiceError> {
        let _ = (step_id, jobs, timeout_ms);
        Err(ServiceError::Unsupported(NO_WORK.into()))
    }

    /// Past the deadline of invoke `step_id`: records that the children
    /// at `pending` (indexes into `jobs`) timed out for this job, and
    /// detaches them from it.
    async fn invoke_expire(
        &mut self,
        step_id: &str,
        jobs: &[StartJob],
        pending: &[usize],
    ) -> Result<(), ServiceError> {
        let _ = (step_id, jobs, pending);
        Err(ServiceError::Unsupported(NO_WORK.into()))
    }

    /// Sends event `name` with `data` under an id derived from this job
    /// and `step_id` (sending it again sends nothing new); its id.
    /// [`ServiceError::Refused`] for a name the binding does not allow.
    async fn send_event(
        &mut self,
        step_id: &str,
        name: &str,
        data: &serde_json::Value,
    ) -> Result<String, ServiceError> {
        let _ = (step_id, name, data);
        Err(ServiceError::Unsupported(NO_WORK.into()))
    }

    /// How many times this job asked to run again later
    /// (`retry-after`), counting this one.
    async fn count_retry_after(&mut self) -> Result<u32, ServiceError> {
        Err(ServiceError::Unsupported(NO_WORK.into()))
    }

    /// Outcomes of this job's flow children.
    async fn children_results(&mut self) -> Result<Vec<ChildResult>, ServiceError>;

    /// Reads a KV key.
    async fn kv_get(&mut self, key: &str) -> Result<Option<String>, ServiceError>;

    /// Writes a KV key; `only_if_absent` makes it a first-writer-wins claim.
    /// Returns whether the value was written.
    async fn kv_set(
        &mut self,
        key: &str,
        value: &str,
        ttl: Option<Duration>,
        only_if_absent: bool,
    ) -> Result<bool, ServiceError>;

    /// Deletes a KV key; whether it existed.
    async fn kv_delete(&mut self, key: &str) -> Result<bool, ServiceError>;

    /// The sealed envelope of the job's secret `name` (see
    /// [`crate::secrets`]), if one is set. The sandbox opens it; the store
    /// never sees a value.
    async fn secret(&mut self, name: &str) -> Result<Option<String>, ServiceError>;
}

/// In-memory state for [`LocalServices`], shared across runs of one job so
/// the local runner can replay steps after a sleep and show idempotency.
#[derive(Default)]
pub struct LocalStore {
    steps: HashMap<String, String>,
    sleeps: HashMap<String, u64>,
    kv: HashMap<String, (String, Option<Instant>)>,
    /// Sealed secret envelopes by name (the local runner seals what it is
    /// given with a key of its own).
    pub secrets: HashMap<String, String>,
    /// Progress reports in order, for the runner to print.
    pub progress: Vec<Progress>,
}

/// [`HostServices`] without Redis: what `airlock run` and the sandbox tests
/// use. Steps, sleeps and KV live in a [`LocalStore`]; there are no flows.
#[derive(Clone, Default)]
pub struct LocalServices {
    store: Arc<Mutex<LocalStore>>,
}

impl LocalServices {
    /// Services over a fresh, empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// The shared store, to inspect after a run.
    pub fn store(&self) -> Arc<Mutex<LocalStore>> {
        self.store.clone()
    }

    fn with<T>(&self, f: impl FnOnce(&mut LocalStore) -> T) -> T {
        let mut guard = self.store.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut guard)
    }
}

#[async_trait::async_trait]
impl HostServices for LocalServices {
    fn progress(&mut self, value: Progress) {
        self.with(|s| s.progress.push(value));
    }

    async fn step_lookup(&mut self, step_id: &str) -> Result<Option<String>, ServiceError> {
        Ok(self.with(|s| s.steps.get(step_id).cloned()))
    }

    async fn step_record(&mut self, step_id: &str, output: &str) -> Result<(), ServiceError> {
        self.with(|s| s.steps.insert(step_id.to_string(), output.to_string()));
        Ok(())
    }

    async fn sleep_lookup(&mut self, sleep_id: &str) -> Result<Option<u64>, ServiceError> {
        Ok(self.with(|s| s.sleeps.get(sleep_id).copied()))
    }

    async fn sleep_record(&mut self, sleep_id: &str, wake_at_ms: u64) -> Result<(), ServiceError> {
        self.with(|s| s.sleeps.insert(sleep_id.to_string(), wake_at_ms));
        Ok(())
    }

    async fn children_results(&mut self) -> Result<Vec<ChildResult>, ServiceError> {
        Ok(Vec::new())
    }

    async fn kv_get(&mut self, key: &str) -> Result<Option<String>, ServiceError> {
        Ok(self.with(|s| match s.kv.get(key) {
            Some((_, Some(expiry))) if *expiry <= Instant::now() => None,
            Some((v, _)) => Some(v.clone()),
            None => None,
        }))
    }

    async fn kv_set(
        &mut self,
        key: &str,
        value: &str,
        ttl: Option<Duration>,
        only_if_absent: bool,
    ) -> Result<bool, ServiceError> {
        let present = self.kv_get(key).await?.is_some();
        if only_if_absent && present {
            return Ok(false);
        }
        let expiry = ttl.map(|t| Instant::now() + t);
        self.with(|s| s.kv.insert(key.to_string(), (value.to_string(), expiry)));
        Ok(true)
    }

    async fn kv_delete(&mut self, key: &str) -> Result<bool, ServiceError> {
        let present = self.kv_get(key).await?.is_some();
        self.with(|s| s.kv.remove(key));
        Ok(present)
    }

    async fn secret(&mut self, name: &str) -> Result<Option<String>, ServiceError> {
        Ok(self.with(|s| s.secrets.get(name).cloned()))
    }
}

impl LocalServices {
    /// Moves every recorded sleep's wake-up time to now, as promoting a
    /// sleeping job through Airlock does.
    pub fn wake_sleeps_now(&self) {
        let now = airlock_core::clock::now_ms();
        self.with(|s| {
            for wake_at in s.sleeps.values_mut() {
                *wake_at = (*wake_at).min(now);
            }
        });
    }
}
