//! The current contract's `context` import (and its `types`): progress,
//! logs, steps, durable sleeps and waits, flow children, KV and panics,
//! each checked against the run's limits before it reaches the services.

use std::time::Duration;

use super::{MAX_SLEEP_MS, RunState, Suspend};
use crate::bindings::airlock::job0_6_0::{context, types};
use crate::bindings::{
    ChildEnd, ChildOutcome, ChildResult, EventMatch, HostError, HttpRefusal, JobRef, LogLevel,
    NewJob, Progress,
};
use crate::logs::LogLevel as SinkLevel;
use crate::services::{self, WaitFor};
use airlock_core::clock::now_ms;

/// Largest progress JSON kept.
const MAX_PROGRESS_BYTES: usize = 64 << 10;
/// Longest panic message kept.
const MAX_PANIC_BYTES: usize = 4 << 10;

impl types::Host for RunState {}

impl context::Host for RunState {
    async fn report_progress(&mut self, value: Progress) {
        let progress = match value {
            Progress::Percent(p) => services::Progress::Percent(p.min(100)),
            Progress::Json(text) if text.len() <= MAX_PROGRESS_BYTES => {
                match serde_json::from_str(&self.redact(text)) {
                    Ok(v) => services::Progress::Json(v),
                    Err(e) => {
                        self.log_line(SinkLevel::Warn, &format!("ignored progress report: {e}"));
                        return;
                    }
                }
            }
            Progress::Json(text) => {
                self.log_line(
                    SinkLevel::Warn,
                    &format!(
                        "ignored progress report of {} bytes (max {MAX_PROGRESS_BYTES})",
                        text.len()
                    ),
                );
                return;
            }
        };
        self.services.progress(progress);
    }

    async fn log(&mut self, level: LogLevel, message: String) {
        let level = match level {
            LogLevel::Trace => SinkLevel::Trace,
            LogLevel::Debug => SinkLevel::Debug,
            LogLevel::Info => SinkLevel::Info,
            LogLevel::Warn => SinkLevel::Warn,
            LogLevel::Error => SinkLevel::Error,
        };
        self.log_line(level, &message);
    }

    async fn step_lookup(&mut self, step_id: String) -> Result<Option<String>, HostError> {
        self.one_job_only("step-lookup")?;
        Self::check_key("step id", &step_id)?;
        let found = self
            .services
            .step_lookup(&step_id)
            .await
            .map_err(|e| self.host_error(e))?;
        if found.is_none() && self.env.spans.is_some() {
            self.step_started = Some((step_id, std::time::SystemTime::now()));
        }
        Ok(found)
    }

    async fn step_record(&mut self, step_id: String, output: String) -> Result<(), HostError> {
        self.one_job_only("step-record")?;
        Self::check_key("step id", &step_id)?;
        let output = self.redact(output);
        self.check_value("step result", &output)?;
        if self.steps_recorded >= self.limits.max_steps {
            return Err(HostError::LimitExceeded(format!(
                "a run may record at most {} steps",
                self.limits.max_steps
            )));
        }
        if let Err(e) = serde_json::from_str::<serde::de::IgnoredAny>(&output) {
            return Err(HostError::Invalid(format!("step result is not JSON: {e}")));
        }
        self.services
            .step_record(&step_id, &output)
            .await
            .map_err(|e| self.host_error(e))?;
        self.steps_recorded += 1;
        if let Some(spans) = &self.env.spans {
            let end = std::time::SystemTime::now();
            let start = match self.step_started.take() {
                Some((id, at)) if id == step_id => at,
                _ => end,
            };
            spans.push(crate::trace::RunSpan {
                name: format!("step {step_id}"),
                kind: crate::trace::RunSpanKind::Step,
                start,
                end,
                attributes: vec![("airlock.step.id", crate::trace::SpanValue::Text(step_id))],
                error: None,
            });
        }
        Ok(())
    }

    async fn sleep_until(
        &mut self,
        step_id: String,
        wake_at_ms: u64,
    ) -> wasmtime::Result<Result<(), HostError>> {
        if let Some(stop) = self.batch_stop("sleep-until") {
            return Err(stop);
        }
        if let Err(e) = Self::check_key("sleep id", &step_id) {
            return Ok(Err(e));
        }
        let now = now_ms();
        if wake_at_ms > now.saturating_add(MAX_SLEEP_MS) {
            return Ok(Err(HostError::Invalid(format!(
                "a durable sleep may last at most a year ({MAX_SLEEP_MS} ms); this one asked for {} ms",
                wake_at_ms - now
            ))));
        }
        let wake_at = match self.services.sleep_lookup(&step_id).await {
            Err(e) => return Ok(Err(self.host_error(e))),
            // The first recorded wake-up time wins on every replay.
            Ok(Some(recorded)) => recorded,
            Ok(None) if wake_at_ms <= now => return Ok(Ok(())),
            Ok(None) => {
                if let Err(e) = self.services.sleep_record(&step_id, wake_at_ms).await {
                    return Ok(Err(self.host_error(e)));
                }
                wake_at_ms
            }
        };
        if wake_at <= now {
            return Ok(Ok(()));
        }
        self.suspended = Some((wake_at, crate::outcome::SuspendedOn::Sleep(step_id)));
        Err(wasmtime::Error::new(Suspend))
    }

    async fn wait_for_event(
        &mut self,
        step_id: String,
        event: String,
        matching: Option<EventMatch>,
        timeout_ms: u64,
    ) -> wasmtime::Result<Result<Option<String>, HostError>> {
        if let Some(stop) = self.batch_stop("wait-for-event") {
            return Err(stop);
        }
        match self.event_wait(event, matching) {
            Ok(what) => self.wait(step_id, what, timeout_ms).await,
            Err(e) => Ok(Err(e)),
        }
    }

    async fn http_refusals(&mut self) -> Vec<HttpRefusal> {
        self.http.refusals()
    }

    async fn enqueue(
        &mut self,
        step_id: String,
        job: NewJob,
    ) -> wasmtime::Result<Result<JobRef, HostError>> {
        if let Some(stop) = self.batch_stop("enqueue") {
            return Err(stop);
        }
        RunState::enqueue(self, step_id, job).await
    }

    async fn invoke(
        &mut self,
        step_id: String,
        jobs: Vec<NewJob>,
        max_running: Option<u32>,
        timeout_ms: Option<u64>,
    ) -> wasmtime::Result<Result<Vec<ChildEnd>, HostError>> {
        if let Some(stop) = self.batch_stop("invoke") {
            return Err(stop);
        }
        RunState::invoke(self, step_id, jobs, max_running, timeout_ms).await
    }

    async fn send_event(
        &mut self,
        step_id: String,
        name: String,
        data: String,
    ) -> wasmtime::Result<Result<String, HostError>> {
        if let Some(stop) = self.batch_stop("send-event") {
            return Err(stop);
        }
        RunState::send_event(self, step_id, name, data).await
    }

    async fn retry_after(&mut self, delay_ms: u64, reason: String) -> wasmtime::Result<()> {
        if let Some(stop) = self.batch_stop("retry-after") {
            return Err(stop);
        }
        Err(RunState::retry_after(self, delay_ms, reason).await)
    }

    async fn rate_limit(&mut self, duration_ms: u64, reason: String) -> wasmtime::Result<()> {
        if let Some(stop) = self.batch_stop("rate-limit") {
            return Err(stop);
        }
        Err(RunState::rate_limit(self, duration_ms, reason))
    }

    async fn wait_token(&mut self, step_id: String) -> Result<String, HostError> {
        self.one_job_only("wait-token")?;
        Self::check_key("wait id", &step_id)?;
        self.services
            .wait_token(&step_id)
            .await
            .map_err(|e| self.host_error(e))
    }

    async fn wait_for_token(
        &mut self,
        step_id: String,
        timeout_ms: u64,
    ) -> wasmtime::Result<Result<Option<String>, HostError>> {
        if let Some(stop) = self.batch_stop("wait-for-token") {
            return Err(stop);
        }
        self.wait(step_id, WaitFor::Token, timeout_ms).await
    }

    async fn children_results(&mut self) -> Result<Vec<ChildResult>, HostError> {
        self.one_job_only("children-results")?;
        let results = self
            .services
            .children_results()
            .await
            .map_err(|e| self.host_error(e))?;
        Ok(results
            .into_iter()
            .map(|r| ChildResult {
                child: JobRef {
                    queue: r.queue,
                    id: r.id,
                },
                outcome: match r.outcome {
                    Ok(value) => ChildOutcome::Completed(value),
                    Err(reason) => ChildOutcome::Failed(reason),
                },
            })
            .collect())
    }

    async fn kv_get(&mut self, key: String) -> Result<Option<String>, HostError> {
        Self::check_key("kv key", &key)?;
        self.services
            .kv_get(&key)
            .await
            .map_err(|e| self.host_error(e))
    }

    async fn kv_set(
        &mut self,
        key: String,
        value: String,
        ttl_ms: Option<u64>,
    ) -> Result<(), HostError> {
        Self::check_key("kv key", &key)?;
        let value = self.redact(value);
        self.check_value("kv value", &value)?;
        self.services
            .kv_set(&key, &value, ttl_ms.map(Duration::from_millis), false)
            .await
            .map(|_| ())
            .map_err(|e| self.host_error(e))
    }

    async fn kv_set_if_absent(
        &mut self,
        key: String,
        value: String,
        ttl_ms: Option<u64>,
    ) -> Result<bool, HostError> {
        Self::check_key("kv key", &key)?;
        let value = self.redact(value);
        self.check_value("kv value", &value)?;
        self.services
            .kv_set(&key, &value, ttl_ms.map(Duration::from_millis), true)
            .await
            .map_err(|e| self.host_error(e))
    }

    async fn kv_delete(&mut self, key: String) -> Result<bool, HostError> {
        Self::check_key("kv key", &key)?;
        self.services
            .kv_delete(&key)
            .await
            .map_err(|e| self.host_error(e))
    }

    async fn report_panic(&mut self, mut message: String) {
        if message.len() > MAX_PANIC_BYTES {
            let mut end = MAX_PANIC_BYTES;
            while !message.is_char_boundary(end) {
                end -= 1;
            }
            message.truncate(end);
        }
        self.log_line(SinkLevel::Error, &format!("panicked: {message}"));
        self.panic_message = Some(message);
    }
}
