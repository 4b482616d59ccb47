//! Starting other work from a handler: a job on another queue, fire and
//! forget ([`Context::enqueue`]) or awaited ([`Context::invoke`],
//! [`Context::invoke_many`]); an event ([`Context::send_event`]); and
//! ending the run to run again later ([`Context::retry_after`],
//! [`Context::rate_limit`]). What a handler may start is its binding's
//! `starts`: anything else fails the job at once, saying why.

use std::fmt;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::bindings::airlock::job::context as host;
use crate::bindings::airlock::job::types as wit;
use crate::context::{Context, JobRef, millis};
use crate::error::JobError;

/// A job to start on another queue.
#[derive(Debug, Clone, PartialEq)]
pub struct NewJob {
    queue: String,
    name: String,
    data: serde_json::Value,
    options: serde_json::Map<String, serde_json::Value>,
}

impl NewJob {
    /// A job named `name` on `queue` with `data`.
    pub fn new(queue: impl Into<String>, name: impl Into<String>, data: impl Serialize) -> NewJob {
        NewJob {
            queue: queue.into(),
            name: name.into(),
            data: serde_json::to_value(data).unwrap_or(serde_json::Value::Null),
            options: serde_json::Map::new(),
        }
    }

    /// Sets a BullMQ job option (`delay`, `priority`, `attempts`,
    /// `backoff`, `lifo`, `removeOnComplete`, `removeOnFail`) over the
    /// target queue's defaults.
    pub fn option(mut self, name: &str, value: impl Serialize) -> NewJob {
        if let Ok(value) = serde_json::to_value(value) {
            self.options.insert(name.to_string(), value);
        }
        self
    }

    /// Attempts in total (BullMQ's `attempts`).
    pub fn attempts(self, attempts: u32) -> NewJob {
        self.option("attempts", attempts)
    }

    /// Runs no sooner than `delay` from its add (BullMQ's `delay`).
    pub fn delay(self, delay: Duration) -> NewJob {
        self.option("delay", millis(delay))
    }

    fn wit(&self) -> wit::NewJob {
        wit::NewJob {
            queue: self.queue.clone(),
            name: self.name.clone(),
            data: self.data.to_string(),
            options: (!self.options.is_empty())
                .then(|| serde_json::Value::Object(self.options.clone()).to_string()),
        }
    }
}

/// Why an invoked child failed for good, or why its end could not be
/// handed over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildFailure {
    /// Its failure kind (`guest_fatal`, `guest_retry`, `timeout`, ...;
    /// `failed` for another worker's reason; `output_too_large` for a
    /// value over 8 MiB, or past 64 MiB for the invoke's ends in all).
    pub kind: String,
    /// Its failure reason.
    pub reason: String,
    /// Attempts it made (1 when that is not known any more).
    pub attempts: u32,
}

/// How an invoked child ended.
#[derive(Debug, Clone, PartialEq)]
pub enum ChildEnd<T> {
    /// It completed with this return value.
    Completed(T),
    /// It failed for good (after its retries), or its value was too
    /// large to hand over.
    Failed(ChildFailure),
    /// The invoke's timeout ran out first (a child that started is left
    /// to run; one of a group not started yet never runs).
    TimedOut,
}

impl<T> ChildEnd<T> {
    /// The return value, or why there is none.
    pub fn into_result(self) -> Result<T, InvokeError> {
        match self {
            ChildEnd::Completed(value) => Ok(value),
            ChildEnd::Failed(failure) => Err(InvokeError::Failed(failure)),
            ChildEnd::TimedOut => Err(InvokeError::TimedOut),
        }
    }
}

/// Why [`Context::invoke`] has no value: the child failed for good, the
/// invoke's timeout ran out, or the call itself failed. `?` turns it into
/// a [`JobError`]: a child's failure and a time-out are fatal (the ends
/// are recorded, so a retry would meet the same), a failed call keeps its
/// own kind.
#[derive(Debug, Clone, PartialEq)]
pub enum InvokeError {
    /// The child failed for good.
    Failed(ChildFailure),
    /// The timeout ran out before the child ended.
    TimedOut,
    /// The invoke could not be made.
    Job(JobError),
}

impl fmt::Display for InvokeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InvokeError::Failed(c) => write!(
                f,
                "the invoked job failed for good after {} attempt(s): {}: {}",
                c.attempts, c.kind, c.reason
            ),
            InvokeError::TimedOut => write!(f, "the invoked job did not end in time"),
            InvokeError::Job(e) => write!(f, "{e}"),
        }
    }
}

impl From<InvokeError> for JobError {
    fn from(e: InvokeError) -> Self {
        match e {
            InvokeError::Job(e) => e,
            other => JobError::Fatal(other.to_string()),
        }
    }
}

impl From<JobError> for InvokeError {
    fn from(e: JobError) -> Self {
        InvokeError::Job(e)
    }
}

/// How [`Context::invoke_many`] runs its children.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FanOut {
    /// At most this many children at once (they start in groups of this
    /// size); `None`: all at once.
    pub max_running: Option<u32>,
    /// Children not ended after this long — running, or in a group not
    /// started yet, which then never runs — end as
    /// [`ChildEnd::TimedOut`]; `None`: no limit.
    pub timeout: Option<Duration>,
}

impl Context {
    /// Adds `job` to its queue, once (a step: a replay adds nothing new),
    /// as this job's producer and in its trace. Returns where it went.
    pub fn enqueue(&self, id: &str, job: NewJob) -> Result<JobRef, JobError> {
        let key = self.occurrence_key("step", id);
        host::enqueue(&key, &job.wit())
            .map(JobRef::from)
            .map_err(|e| JobError::from_host("enqueue", e))
    }

    /// Starts `job` as a child of this one and waits until it ends (its
    /// retries first): its return value, decoded, or why there is none.
    /// The job is parked meanwhile, holding no worker slot and no instance,
    /// and runs again from the start when the child has ended: keep side
    /// effects before this call in steps.
    pub fn invoke<T: DeserializeOwned>(
        &self,
        id: &str,
        job: NewJob,
        timeout: Option<Duration>,
    ) -> Result<T, InvokeError> {
        let fan_out = FanOut {
            max_running: None,
            timeout,
        };
        let mut ends = self.invoke_many::<T>(id, vec![job], fan_out)?;
        match ends.pop() {
            Some(end) => end.into_result(),
            None => Err(InvokeError::Job(JobError::retry(
                "the invoke answered no end",
            ))),
        }
    }

    /// Starts `jobs` as children of this one (a fan-out) and waits until
    /// all have ended: their ends in the order of `jobs`. A failed child
    /// does not hide the others' values.
    pub fn invoke_many<T: DeserializeOwned>(
        &self,
        id: &str,
        jobs: Vec<NewJob>,
        fan_out: FanOut,
    ) -> Result<Vec<ChildEnd<T>>, JobError> {
        let key = self.occurrence_key("invoke", id);
        let wit_jobs: Vec<wit::NewJob> = jobs.iter().map(NewJob::wit).collect();
        let ends = host::invoke(
            &key,
            &wit_jobs,
            fan_out.max_running,
            fan_out.timeout.map(millis),
        )
        .map_err(|e| JobError::from_host("invoke", e))?;
        ends.into_iter()
            .map(|end| {
                Ok(match end {
                    wit::ChildEnd::Completed(text) => {
                        ChildEnd::Completed(serde_json::from_str(&text).map_err(|e| {
                            JobError::fatal(format!(
                                "a child's return value of invoke `{id}` does not fit its type: {e}"
                            ))
                        })?)
                    }
                    wit::ChildEnd::Failed(f) => ChildEnd::Failed(ChildFailure {
                        kind: f.kind,
                        reason: f.reason,
                        attempts: f.attempts,
                    }),
                    wit::ChildEnd::TimedOut => ChildEnd::TimedOut,
                })
            })
            .collect()
    }

    /// Sends event `name` with `data`, once (a step), as this job's
    /// producer: it reaches subscribed queues and waiting jobs as `POST
    /// /v1/events` does. Returns the event's id.
    pub fn send_event(
        &self,
        id: &str,
        name: &str,
        data: impl Serialize,
    ) -> Result<String, JobError> {
        let key = self.occurrence_key("step", id);
        let data = serde_json::to_string(&data)
            .map_err(|e| JobError::fatal(format!("the event's data: {e}")))?;
        host::send_event(&key, name, &data).map_err(|e| JobError::from_host("send event", e))
    }

    /// Ends this run; the job runs again in `delay` (at most a day), using
    /// up no attempt — 100 times at most, then as an ordinary retry. For a
    /// rate-limited API's `Retry-After`.
    pub fn retry_after(&self, delay: Duration, reason: &str) -> ! {
        host::retry_after(millis(delay), reason);
        unreachable!("the host ends the run at retry-after")
    }

    /// Ends this run, pauses the whole queue for `duration` across the
    /// fleet (where its binding has a `rateLimit`; elsewhere this job alone
    /// waits), and puts the job back, using up no attempt: BullMQ's
    /// `worker.rateLimit`.
    pub fn rate_limit(&self, duration: Duration, reason: &str) -> ! {
        host::rate_limit(millis(duration), reason);
        unreachable!("the host ends the run at rate-limit")
    }
}
