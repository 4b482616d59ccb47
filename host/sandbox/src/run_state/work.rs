//! Starting other work from a handler — `enqueue`, `invoke` (one child or
//! a fan-out, awaited), `send-event` — and ending a run to run again later
//! (`retry-after`, `rate-limit`). Each call is checked here, then answered
//! by the services; a start the binding does not allow ends the run as
//! `guest_fatal`, saying why, as an egress refusal is logged.
//!
//! `enqueue` and `send-event` are steps: their answer is recorded under
//! the step id, so a replay starts nothing new (and the services derive
//! the job or event id from the job and the step, so a crash between the
//! start and its record adds no second job while the first one exists).
//! An invoke needs no record of its own beyond its deadline and, past it,
//! which children timed out: BullMQ keeps each child's end in this job's
//! `processed` and `failed` hashes, where every replay reads it.

use super::{MAX_SLEEP_MS, RunState, Suspend};
use crate::bindings::{ChildEnd, ChildFailure, HostError, JobRef, NewJob};
use crate::logs::LogLevel as SinkLevel;
use crate::outcome::{Completion, Failure, FailureKind, Later, SuspendedOn};
use crate::services::{self, ServiceError, StartJob};
use airlock_core::clock::now_ms;

/// Most jobs one `invoke` starts.
pub const MAX_INVOKE_JOBS: usize = 10_000;
/// Longest `retry-after` delay or `rate-limit` pause: a day.
pub const MAX_LATER_MS: u64 = 24 * 60 * 60 * 1000;
/// Most `retry-after`s of one job that use up no attempt.
pub const MAX_RETRY_AFTERS: u32 = 100;

impl RunState {
    /// Ends the run as `guest_fatal` for a start the binding refused.
    fn refuse(&mut self, reason: String) -> wasmtime::Error {
        let message = format!("refused: {reason}");
        self.log_line(SinkLevel::Error, &message);
        self.end(Completion::Failed(Failure::new(
            FailureKind::GuestFatal,
            message,
        )))
    }

    /// Ends the run as `how`, stopping the guest.
    fn end(&mut self, how: Completion) -> wasmtime::Error {
        self.ended = Some(how);
        wasmtime::Error::new(Suspend)
    }

    /// A guest's job, its JSON parsed and sized.
    fn start_job(&self, job: NewJob) -> Result<StartJob, HostError> {
        if job.queue.is_empty() || job.name.is_empty() {
            return Err(HostError::Invalid(
                "a job needs a queue and a name".to_string(),
            ));
        }
        self.check_value("a job's data", &job.data)?;
        let data = serde_json::from_str(&job.data)
            .map_err(|e| HostError::Invalid(format!("the job's data is not JSON: {e}")))?;
        let options = match job.options {
            None => None,
            Some(text) => match serde_json::from_str::<serde_json::Value>(&text) {
                Ok(value @ serde_json::Value::Object(_)) => Some(value),
                Ok(_) => {
                    return Err(HostError::Invalid(
                        "the job's options are not a JSON object".to_string(),
                    ));
                }
                Err(e) => {
                    return Err(HostError::Invalid(format!(
                        "the job's options are not JSON: {e}"
                    )));
                }
            },
        };
        Ok(StartJob {
            queue: job.queue,
            name: job.name,
            data,
            options,
        })
    }

    /// A service error of a start: a refusal ends the run, anything else
    /// is the guest's to handle.
    fn start_error(&mut self, e: ServiceError) -> wasmtime::Result<HostError> {
        match e {
            ServiceError::Refused(reason) => Err(self.refuse(reason)),
            e => Ok(self.host_error(e)),
        }
    }

    /// `enqueue`: the recorded job of step `step_id`, or the job added and
    /// recorded.
    pub(super) async fn enqueue(
        &mut self,
        step_id: String,
        job: NewJob,
    ) -> wasmtime::Result<Result<JobRef, HostError>> {
        if let Err(e) = Self::check_key("step id", &step_id) {
            return Ok(Err(e));
        }
        let job = match self.start_job(job) {
            Ok(job) => job,
            Err(e) => return Ok(Err(e)),
        };
        match self.services.step_lookup(&step_id).await {
            Err(e) => return Ok(Err(self.host_error(e))),
            Ok(Some(recorded)) => {
                if let Ok((queue, id)) = serde_json::from_str::<(String, String)>(&recorded) {
                    return Ok(Ok(JobRef { queue, id }));
                }
            }
            Ok(None) => {}
        }
        let (queue, id) = match self
            .services
            .start_jobs(&step_id, &[job], &[0], false)
            .await
        {
            Ok(mut refs) if refs.len() == 1 => refs.remove(0),
            Ok(_) => return Ok(Err(HostError::Unavailable("no job was added".into()))),
            Err(e) => return self.start_error(e).map(Err),
        };
        let record = serde_json::json!([queue, id]).to_string();
        if let Err(e) = self.services.step_record(&step_id, &record).await {
            return Ok(Err(self.host_error(e)));
        }
        Ok(Ok(JobRef { queue, id }))
    }

    /// `invoke`: the children's ends once all have ended (or timed out);
    /// until then, the next group started and the job parked.
    pub(super) async fn invoke(
        &mut self,
        step_id: String,
        jobs: Vec<NewJob>,
        max_running: Option<u32>,
        timeout_ms: Option<u64>,
    ) -> wasmtime::Result<Result<Vec<ChildEnd>, HostError>> {
        if let Err(e) = Self::check_key("step id", &step_id) {
            return Ok(Err(e));
        }
        if jobs.len() > MAX_INVOKE_JOBS {
            return Ok(Err(HostError::Invalid(format!(
                "an invoke starts at most {MAX_INVOKE_JOBS} jobs; this one asked for {}",
                jobs.len()
            ))));
        }
        if max_running == Some(0) {
            return Ok(Err(HostError::Invalid(
                "max-running must be at least 1".into(),
            )));
        }
        if timeout_ms.is_some_and(|t| t > MAX_SLEEP_MS) {
            return Ok(Err(HostError::Invalid(format!(
                "an invoke may wait at most a year ({MAX_SLEEP_MS} ms)"
            ))));
        }
        if jobs.is_empty() {
            return Ok(Ok(Vec::new()));
        }
        let mut parsed = Vec::with_capacity(jobs.len());
        for job in jobs {
            match self.start_job(job) {
                Ok(job) => parsed.push(job),
                Err(e) => return Ok(Err(e)),
            }
        }
        let state = match self
            .services
            .invoke_state(&step_id, &parsed, timeout_ms)
            .await
        {
            Ok(state) => state,
            Err(e) => return Ok(Err(self.host_error(e))),
        };
        let pending: Vec<usize> = (0..state.ends.len())
            .filter(|&i| state.ends[i].is_none())
            .collect();
        if pending.is_empty() {
            return Ok(Ok(state
                .ends
                .into_iter()
                .flatten()
                .map(child_end)
                .collect()));
        }
        if state.deadline_ms.is_some_and(|d| d <= now_ms()) {
            if let Err(e) = self
                .services
                .invoke_expire(&step_id, &parsed, &pending)
                .await
            {
                return Ok(Err(self.host_error(e)));
            }
            let ends = state
                .ends
                .into_iter()
                .map(|end| child_end(end.unwrap_or(services::ChildEnd::TimedOut)))
                .collect();
            return Ok(Ok(ends));
        }
        // Children start in order: the next group is the first pending
        // ones (BullMQ wakes this job only when every started child has
        // ended, so none of them runs now).
        let group = match max_running {
            Some(n) => &pending[..pending.len().min(n as usize)],
            None => &pending[..],
        };
        if let Err(e) = self
            .services
            .start_jobs(&step_id, &parsed, group, true)
            .await
        {
            return self.start_error(e).map(Err);
        }
        let wake_at = state.deadline_ms.unwrap_or(u64::MAX);
        self.suspended = Some((wake_at, SuspendedOn::Children(step_id)));
        Err(wasmtime::Error::new(Suspend))
    }

    /// `send-event`: the recorded event id of step `step_id`, or the event
    /// sent and recorded.
    pub(super) async fn send_event(
        &mut self,
        step_id: String,
        name: String,
        data: String,
    ) -> wasmtime::Result<Result<String, HostError>> {
        if let Err(e) = Self::check_key("step id", &step_id) {
            return Ok(Err(e));
        }
        if let Err(e) = self.check_value("an event's data", &data) {
            return Ok(Err(e));
        }
        let data: serde_json::Value = match serde_json::from_str(&data) {
            Ok(data) => data,
            Err(e) => {
                return Ok(Err(HostError::Invalid(format!(
                    "the event's data is not JSON: {e}"
                ))));
            }
        };
        match self.services.step_lookup(&step_id).await {
            Err(e) => return Ok(Err(self.host_error(e))),
            Ok(Some(recorded)) => {
                if let Ok(id) = serde_json::from_str::<String>(&recorded) {
                    return Ok(Ok(id));
                }
            }
            Ok(None) => {}
        }
        let id = match self.services.send_event(&step_id, &name, &data).await {
            Ok(id) => id,
            Err(e) => return self.start_error(e).map(Err),
        };
        let record = serde_json::Value::String(id.clone()).to_string();
        if let Err(e) = self.services.step_record(&step_id, &record).await {
            return Ok(Err(self.host_error(e)));
        }
        Ok(Ok(id))
    }

    /// `retry-after`: ends the run to run again in `delay_ms`, no attempt
    /// used — up to [`MAX_RETRY_AFTERS`] times, then as a retryable
    /// failure.
    pub(super) async fn retry_after(&mut self, delay_ms: u64, reason: String) -> wasmtime::Error {
        let reason = self.redact(reason);
        let delay_ms = delay_ms.min(MAX_LATER_MS);
        let asked = match self.services.count_retry_after().await {
            Ok(n) => n,
            // `airlock run` keeps no count: nothing to bound there.
            Err(ServiceError::Unsupported(_)) => 1,
            Err(e) => {
                let message = format!("could not count the job's retry-afters: {e}");
                return self.end(Completion::Failed(Failure::new(
                    FailureKind::HostUnavailable,
                    message,
                )));
            }
        };
        if asked > MAX_RETRY_AFTERS {
            return self.end(Completion::Failed(Failure::new(
                FailureKind::GuestRetry,
                format!(
                    "asked to retry after {delay_ms} ms more than {MAX_RETRY_AFTERS} times: {reason}"
                ),
            )));
        }
        self.log_line(
            SinkLevel::Info,
            &format!("retry after {delay_ms} ms: {reason}"),
        );
        self.end(Completion::Later(Later::RetryAfter { delay_ms, reason }))
    }

    /// `rate-limit`: ends the run, pausing its queue for `duration_ms`
    /// where its binding has a `rateLimit` (else delaying the job alone:
    /// `worker::executor`'s finish).
    pub(super) fn rate_limit(&mut self, duration_ms: u64, reason: String) -> wasmtime::Error {
        let reason = self.redact(reason);
        let duration_ms = duration_ms.min(MAX_LATER_MS);
        self.log_line(
            SinkLevel::Info,
            &format!("rate limit for {duration_ms} ms: {reason}"),
        );
        self.end(Completion::Later(Later::RateLimit {
            duration_ms,
            reason,
        }))
    }
}

/// A child's end in the contract's terms.
fn child_end(end: services::ChildEnd) -> ChildEnd {
    match end {
        services::ChildEnd::Completed(value) => ChildEnd::Completed(value),
        services::ChildEnd::Failed {
            kind,
            reason,
            attempts,
        } => ChildEnd::Failed(ChildFailure {
            kind,
            reason,
            attempts,
        }),
        services::ChildEnd::TimedOut => ChildEnd::TimedOut,
    }
}
