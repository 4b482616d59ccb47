//! The spans of a job's time not running: `held QUEUE` when flow control
//! parks it for its turn, and what it waited for before a run ([`Before`]:
//! its delay and the queue, a durable sleep or wait, a backoff).

use std::time::{Duration, SystemTime};

use opentelemetry::KeyValue;
use opentelemetry::trace::{Span as _, SpanKind, Tracer as _};

use super::{MAX_CONTEXT_BYTES, Traces, clip, context_of_metadata};
use crate::state::runs::RunEntry;

impl Traces {
    /// Emits `held QUEUE`: flow control parked job `job_id` for its turn
    /// under the binding's `rule` (`keyConcurrency`, `keyThrottle`,
    /// `singleton`, `fairness`) instead of running it; from `start` (the
    /// decision's start) to now, a child of the job's trace context.
    pub fn held(
        &self,
        queue: &str,
        job_id: &str,
        parent: Option<&str>,
        rule: &str,
        start: SystemTime,
    ) {
        let parent = parent.and_then(context_of_metadata).unwrap_or_default();
        self.tracer
            .span_builder(format!("held {queue}"))
            .with_kind(SpanKind::Internal)
            .with_start_time(start)
            .with_attributes([
                KeyValue::new("messaging.destination.name", queue.to_string()),
                KeyValue::new("messaging.message.id", job_id.to_string()),
                KeyValue::new("airlock.held.rule", rule.to_string()),
            ])
            .start_with_context(&self.tracer, &parent)
            .end();
    }

    /// Emits the span of what job `job_id` waited for before the run that
    /// starts now (see [`Before`]), children of its trace context
    /// `parent`.
    pub fn before_run(&self, queue: &str, job_id: &str, parent: Option<&str>, before: &Before) {
        let parent = parent.and_then(context_of_metadata).unwrap_or_default();
        let now = SystemTime::now();
        let at = |ms: u64| {
            SystemTime::UNIX_EPOCH
                .checked_add(Duration::from_millis(ms))
                .map_or(now, |t| t.min(now))
        };
        let emit = |name: String, rule: &str, start: u64, end: SystemTime, extra: Vec<KeyValue>| {
            let mut attributes = vec![
                KeyValue::new("messaging.destination.name", queue.to_string()),
                KeyValue::new("messaging.message.id", job_id.to_string()),
                KeyValue::new("airlock.wait.rule", rule.to_string()),
            ];
            attributes.extend(extra);
            self.tracer
                .span_builder(name)
                .with_kind(SpanKind::Internal)
                .with_start_time(at(start))
                .with_attributes(attributes)
                .start_with_context(&self.tracer, &parent)
                .end_with_timestamp(end);
        };
        match before {
            Before::FirstRun { added_ms, ready_ms } => {
                if ready_ms > added_ms {
                    emit(
                        format!("delayed {queue}"),
                        "delay",
                        *added_ms,
                        at(*ready_ms),
                        vec![],
                    );
                }
                emit(
                    format!("queued {queue}"),
                    "capacity",
                    *ready_ms,
                    now,
                    vec![],
                );
            }
            Before::After(entry) => {
                let ended = entry
                    .started_at
                    .saturating_add(entry.wall_time_ms.max(0.0) as u64);
                let step = || {
                    let id = clip(entry.parked_on.as_deref().unwrap_or_default());
                    (id.clone(), vec![KeyValue::new("airlock.step.id", id)])
                };
                match entry.end.as_str() {
                    "slept" => {
                        let (id, extra) = step();
                        emit(format!("sleep {id}"), "sleep", ended, now, extra);
                    }
                    "waited" => {
                        let (id, extra) = step();
                        emit(format!("wait {id}"), "wait", ended, now, extra);
                    }
                    // A completed job that is run again was retried by hand.
                    "completed" => {}
                    kind => {
                        let extra = vec![KeyValue::new("airlock.failure.kind", clip(kind))];
                        emit(format!("backoff {queue}"), "backoff", ended, now, extra);
                    }
                }
            }
        }
    }
}

/// What a job waited for before a run, for [`Traces::before_run`]'s span:
/// from its add to its first run (`delayed QUEUE` while its delay lasted,
/// then `queued QUEUE`), or from the end of the run before (its history
/// entry) to this one — `sleep STEP` or `wait STEP` after a park,
/// `backoff QUEUE` after a failure. The span ends as the run starts, so it
/// holds the time the job then spent in BullMQ's wait list too.
pub enum Before {
    /// The job's first run.
    FirstRun {
        /// When it was added, ms since the epoch.
        added_ms: u64,
        /// When it became ready: its add plus its delay.
        ready_ms: u64,
    },
    /// A later run, after the run this entry records (read from Redis:
    /// untrusted; its times and texts only shape this span).
    After(RunEntry),
}

impl Before {
    /// The previous run's entry from its JSON text, when it is the run
    /// `run` - 1's.
    pub fn after(text: &str, run: u32) -> Option<Before> {
        if text.len() > MAX_CONTEXT_BYTES {
            return None;
        }
        let entry: RunEntry = serde_json::from_str(text).ok()?;
        (entry.run.checked_add(1) == Some(run)).then_some(Before::After(entry))
    }
}
