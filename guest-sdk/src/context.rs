//! The handle a handler uses to talk to Airlock while it runs.

use std::cell::RefCell;
use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::bindings::airlock::job::config;
use crate::bindings::airlock::job::context as host;
use crate::bindings::airlock::job::types::{self as wit, LogLevel, Progress};
use crate::error::JobError;
use crate::kv::Kv;
use crate::wait::{Event, Match};

/// Log severity for [`Context::log`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Very detailed tracing.
    Trace,
    /// Debugging detail.
    Debug,
    /// Normal operation.
    Info,
    /// Something unexpected that the job survived.
    Warn,
    /// A failure.
    Error,
}

impl From<Level> for LogLevel {
    fn from(level: Level) -> Self {
        match level {
            Level::Trace => LogLevel::Trace,
            Level::Debug => LogLevel::Debug,
            Level::Info => LogLevel::Info,
            Level::Warn => LogLevel::Warn,
            Level::Error => LogLevel::Error,
        }
    }
}

/// Points at a job in some queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobRef {
    /// The queue holding the job.
    pub queue: String,
    /// The job id within that queue.
    pub id: String,
}

/// What the handler knows about the job it is running.
#[derive(Debug, Clone)]
pub struct JobInfo {
    /// The job id.
    pub id: String,
    /// The queue it came from.
    pub queue: String,
    /// The job name given at enqueue time.
    pub name: String,
    /// This attempt, starting at 1.
    pub attempt: u32,
    /// Attempts allowed in total.
    pub max_attempts: u32,
    /// When the job was enqueued.
    pub enqueued_at: SystemTime,
    /// When this run started.
    pub started_at: SystemTime,
    /// The flow parent, when this job is a child.
    pub parent: Option<JobRef>,
}

/// Outcome of one child of a flow parent.
#[derive(Debug, Clone, PartialEq)]
pub enum ChildOutcome {
    /// The child's return value.
    Completed(serde_json::Value),
    /// The child failed and the flow was told to go on regardless; the reason.
    Failed(String),
}

/// One child of a flow parent and its outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct ChildResult {
    /// The child job.
    pub child: JobRef,
    /// Its outcome.
    pub outcome: ChildOutcome,
}

/// The running job's link to Airlock: progress, logs, durable steps,
/// sleeps and waits, the key-value store and flow children.
///
/// Methods take `&self` so a step closure can still log or report progress.
pub struct Context {
    job: JobInfo,
    /// How often each step or sleep id has been used in this run, so a
    /// repeated id (a step inside a loop) gets a distinct, stable record.
    occurrences: RefCell<HashMap<String, u32>>,
}

impl Context {
    pub(crate) fn new(job: JobInfo) -> Self {
        Context {
            job,
            occurrences: RefCell::new(HashMap::new()),
        }
    }

    /// The job being run.
    pub fn job(&self) -> &JobInfo {
        &self.job
    }

    /// Report progress as a percentage (clamped to 100).
    pub fn progress(&self, percent: u8) {
        host::report_progress(&Progress::Percent(percent.min(100)));
    }

    /// Report progress as any JSON value (an object with counters, say).
    pub fn progress_json<T: Serialize>(&self, value: &T) {
        if let Ok(text) = serde_json::to_string(value) {
            host::report_progress(&Progress::Json(text));
        }
    }

    /// Write a line to the job's log.
    pub fn log(&self, level: Level, message: impl AsRef<str>) {
        host::log(level.into(), message.as_ref());
    }

    /// Log at debug level.
    pub fn debug(&self, message: impl AsRef<str>) {
        self.log(Level::Debug, message)
    }

    /// Log at info level.
    pub fn info(&self, message: impl AsRef<str>) {
        self.log(Level::Info, message)
    }

    /// Log at warn level.
    pub fn warn(&self, message: impl AsRef<str>) {
        self.log(Level::Warn, message)
    }

    /// Log at error level.
    pub fn error(&self, message: impl AsRef<str>) {
        self.log(Level::Error, message)
    }

    /// Runs `f` until its result is recorded, then never again for this
    /// job: durably, at least once.
    ///
    /// The first time the job gets here, `f` runs and its result is recorded
    /// in Airlock. Any later run of the same job (a retry, the resumption
    /// after a [`sleep`](Self::sleep), the recovery after a host crash) gets
    /// the recorded result back without running `f`. If `f` fails, nothing is
    /// recorded and the error fails this attempt; the next attempt runs the
    /// steps before it from their records and tries `f` again. A host that
    /// dies after `f` ran but before its result was recorded runs it again:
    /// give a side effect that must not repeat an idempotency key (the job
    /// id and the step id).
    ///
    /// Calling the same id several times in one run is fine (a step in a
    /// loop): each occurrence is recorded separately, in order.
    pub fn step<T, E, F>(&self, id: &str, f: F) -> Result<T, JobError>
    where
        T: Serialize + DeserializeOwned,
        E: Into<JobError>,
        F: FnOnce() -> Result<T, E>,
    {
        let key = self.occurrence_key("step", id);
        let recorded =
            host::step_lookup(&key).map_err(|e| JobError::from_host("step lookup", e))?;
        if let Some(text) = recorded {
            return serde_json::from_str(&text).map_err(|e| {
                JobError::fatal(format!(
                    "recorded result of step `{id}` no longer fits its type: {e}"
                ))
            });
        }
        let value = f().map_err(Into::into)?;
        let text = serde_json::to_string(&value).map_err(|e| {
            JobError::fatal(format!("result of step `{id}` is not serialisable: {e}"))
        })?;
        host::step_record(&key, &text).map_err(|e| JobError::from_host("step record", e))?;
        Ok(value)
    }

    /// Durable sleep for `duration`.
    ///
    /// The job is parked as delayed until the wake-up time, without holding
    /// a worker slot and without using up an attempt; then it runs again from
    /// the start, replaying finished [`step`](Self::step)s, and continues
    /// after this call. Code before a sleep that is not inside a step runs
    /// again on wake-up, so keep side effects in steps.
    pub fn sleep(&self, id: &str, duration: Duration) -> Result<(), JobError> {
        let wake_at = SystemTime::now() + duration;
        self.sleep_until(id, wake_at)
    }

    /// Durable sleep until `wake_at`; see [`sleep`](Self::sleep).
    pub fn sleep_until(&self, id: &str, wake_at: SystemTime) -> Result<(), JobError> {
        let key = self.occurrence_key("sleep", id);
        let wake_at_ms = wake_at
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        host::sleep_until(&key, wake_at_ms).map_err(|e| JobError::from_host("sleep", e))
    }

    /// Durable wait for an event (Inngest's `waitForEvent`): the first event
    /// named `event` — and holding `matching`'s value, with one — sent to
    /// `POST /v1/events` since the job became ready to run that no other
    /// wait of this job received. `None` when `timeout` passes first.
    ///
    /// Like [`sleep`](Self::sleep), the job is parked meanwhile, holding no
    /// worker slot and using up no attempt, and runs again from the start
    /// when the event comes; this call then returns it. An event sent
    /// before the wait (while the job still runs, say) is not lost: the
    /// fleet keeps its last ~10,000 events (of at most 64 KiB), and a wait
    /// looks back at the newest 1,000 sent since its job became ready. The
    /// outcome is recorded: every later run gets the same
    /// one. An event sent with a producer token reaches only jobs that
    /// token enqueued.
    pub fn wait_for_event(
        &self,
        id: &str,
        event: &str,
        matching: Option<Match>,
        timeout: Duration,
    ) -> Result<Option<Event>, JobError> {
        let key = self.occurrence_key("wait", id);
        let matching = matching.map(|m| wit::EventMatch {
            path: m.path,
            value: m.value,
        });
        let got = host::wait_for_event(&key, event, matching.as_ref(), millis(timeout))
            .map_err(|e| JobError::from_host("wait for event", e))?;
        got.map(|text| {
            serde_json::from_str(&text).map_err(|e| {
                JobError::fatal(format!("the event of wait `{id}` does not parse: {e}"))
            })
        })
        .transpose()
    }

    /// The completion token of the next [`wait_for_token`](Self::wait_for_token)
    /// with this id, the same on every run: hand it out (in an approval
    /// link, as a callback URL) before waiting. Whoever holds it completes
    /// the wait once with `POST /v1/tokens/{token}/complete` and a JSON
    /// body; a completion that comes before the wait is kept for it.
    pub fn wait_token(&self, id: &str) -> Result<String, JobError> {
        let key = self.next_occurrence_key("wait", id);
        host::wait_token(&key).map_err(|e| JobError::from_host("wait token", e))
    }

    /// Durable wait for the completion of this wait's token (see
    /// [`wait_token`](Self::wait_token)): parks the job like
    /// [`wait_for_event`](Self::wait_for_event) and returns the JSON body
    /// the token was completed with, decoded, or `None` once `timeout` has
    /// passed since the job first got here. The token is used up either way.
    pub fn wait_for_token<T: DeserializeOwned>(
        &self,
        id: &str,
        timeout: Duration,
    ) -> Result<Option<T>, JobError> {
        let key = self.occurrence_key("wait", id);
        let got = host::wait_for_token(&key, millis(timeout))
            .map_err(|e| JobError::from_host("wait for token", e))?;
        got.map(|text| {
            serde_json::from_str(&text).map_err(|e| {
                JobError::fatal(format!(
                    "the result of wait `{id}` does not fit its type: {e}"
                ))
            })
        })
        .transpose()
    }

    /// A configuration value of the queue binding (`config` in the
    /// binding): URLs and settings a handler should not hard-code.
    pub fn config(&self, key: &str) -> Option<String> {
        config::get(key)
    }

    /// A configuration value that must be set: a fatal error naming the
    /// key when the binding does not set it.
    pub fn require_config(&self, key: &str) -> Result<String, JobError> {
        self.config(key).ok_or_else(|| {
            JobError::fatal(format!(
                "configuration `{key}` is not set in this queue's binding (config.{key})"
            ))
        })
    }

    /// The keys the binding's `config` sets, sorted.
    pub fn config_keys(&self) -> Vec<String> {
        config::keys()
    }

    /// A placeholder for the queue's secret `name`: put it in a request
    /// header (or body, when the secret allows) and the host sends the
    /// value instead, to the secret's destinations only. The handler never
    /// holds the value.
    pub fn secret(&self, name: &str) -> Result<String, JobError> {
        config::secret(name).map_err(|e| JobError::from_host(&format!("secret `{name}`"), e))
    }

    /// The value of secret `name` itself, for computing with it (signing a
    /// payload). Only secrets set with `reveal` give it; the value is then
    /// redacted from the job's logs, output and step records.
    pub fn reveal_secret(&self, name: &str) -> Result<String, JobError> {
        config::reveal_secret(name).map_err(|e| JobError::from_host(&format!("secret `{name}`"), e))
    }

    /// The HTTP client (`wasi:http`), under the binding's egress rules.
    pub fn http(&self) -> crate::Http {
        crate::Http
    }

    /// The handler's key-value store (namespaced per handler, with TTL).
    pub fn kv(&self) -> Kv<'_> {
        Kv::new(self)
    }

    /// Outcomes of this job's flow children (empty for a job without any).
    pub fn children(&self) -> Result<Vec<ChildResult>, JobError> {
        let results =
            host::children_results().map_err(|e| JobError::from_host("children results", e))?;
        results
            .into_iter()
            .map(|r| {
                let outcome = match r.outcome {
                    wit::ChildOutcome::Completed(text) => ChildOutcome::Completed(
                        serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text)),
                    ),
                    wit::ChildOutcome::Failed(reason) => ChildOutcome::Failed(reason),
                };
                Ok(ChildResult {
                    child: JobRef {
                        queue: r.child.queue,
                        id: r.child.id,
                    },
                    outcome,
                })
            })
            .collect()
    }

    /// The return values of the children that completed, deserialised as `T`.
    pub fn children_values<T: DeserializeOwned>(&self) -> Result<Vec<T>, JobError> {
        self.children()?
            .into_iter()
            .filter_map(|c| match c.outcome {
                ChildOutcome::Completed(v) => Some(v),
                ChildOutcome::Failed(_) => None,
            })
            .map(|v| {
                serde_json::from_value(v)
                    .map_err(|e| JobError::fatal(format!("a child's result does not fit: {e}")))
            })
            .collect()
    }

    /// `id` for its first use in this run, `id#2`, `id#3`, ... afterwards.
    pub(crate) fn occurrence_key(&self, kind: &str, id: &str) -> String {
        let mut occurrences = self.occurrences.borrow_mut();
        let n = occurrences.entry(format!("{kind}:{id}")).or_insert(0);
        *n += 1;
        occurrence(id, *n)
    }

    /// The key the next [`occurrence_key`](Self::occurrence_key) call will
    /// give, without counting it.
    fn next_occurrence_key(&self, kind: &str, id: &str) -> String {
        let occurrences = self.occurrences.borrow();
        let n = occurrences
            .get(&format!("{kind}:{id}"))
            .copied()
            .unwrap_or(0);
        occurrence(id, n + 1)
    }
}

/// The record key of occurrence `n` (from 1) of `id` in one run.
fn occurrence(id: &str, n: u32) -> String {
    if n == 1 {
        id.to_string()
    } else {
        format!("{id}#{n}")
    }
}

/// A duration in whole milliseconds, saturating.
pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl From<wit::JobRef> for JobRef {
    fn from(r: wit::JobRef) -> Self {
        JobRef {
            queue: r.queue,
            id: r.id,
        }
    }
}
