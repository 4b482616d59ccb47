//! The span of a run (`process QUEUE`) from its start to its end, with
//! what the run was and a child span per span the sandbox noted.

use opentelemetry::trace::{Span as _, SpanKind, Status, TraceContextExt, Tracer as _};
use opentelemetry::{Context, KeyValue};

use super::{Traces, clip, context_of_metadata};
use crate::sandbox::trace::{RunSpan, RunSpanKind, SpanValue};

impl Traces {
    /// Starts the span of a run of job `job_id` of `queue` (a child of
    /// its trace context `parent`, BullMQ telemetry metadata), now.
    pub fn start_run(&self, queue: &str, job_id: &str, parent: Option<&str>) -> RunTrace {
        let parent = parent.and_then(context_of_metadata).unwrap_or_default();
        let span = self
            .tracer
            .span_builder(format!("process {queue}"))
            .with_kind(SpanKind::Consumer)
            .with_attributes([
                KeyValue::new("messaging.system", "bullmq"),
                KeyValue::new("messaging.operation.type", "process"),
                KeyValue::new("messaging.destination.name", queue.to_string()),
                KeyValue::new("messaging.message.id", job_id.to_string()),
            ])
            .start_with_context(&self.tracer, &parent);
        RunTrace {
            cx: Context::new().with_span(span),
        }
    }

    /// Ends a run's span with what the run was, and a child per span the
    /// sandbox noted.
    pub fn end_run(&self, run: RunTrace, ended: RunEnded<'_>) {
        let span = run.cx.span();
        let mut attributes = vec![
            KeyValue::new("airlock.job.name", ended.name.to_string()),
            KeyValue::new("airlock.run", i64::from(ended.run)),
            KeyValue::new("messaging.bullmq.attempt", i64::from(ended.attempt)),
            KeyValue::new("airlock.handler.digest", ended.digest.to_string()),
            KeyValue::new("airlock.host.id", ended.host.to_string()),
            KeyValue::new("airlock.peak_memory_bytes", ended.peak_memory_bytes as i64),
            KeyValue::new("airlock.run.end", ended.end.to_string()),
        ];
        if let Some(fuel) = ended.fuel_used {
            attributes.push(KeyValue::new("airlock.fuel_used", fuel as i64));
        }
        if let Some(kind) = ended.failure_kind {
            attributes.push(KeyValue::new("airlock.failure.kind", kind.to_string()));
        }
        if let Some(parent) = ended.flow_parent {
            attributes.push(KeyValue::new("airlock.flow.parent", parent.to_string()));
        }
        if ended.spans_dropped > 0 {
            attributes.push(KeyValue::new(
                "airlock.trace.events_dropped",
                ended.spans_dropped as i64,
            ));
        }
        span.set_attributes(attributes);
        if let Some(reason) = ended.reason {
            span.set_status(Status::error(clip(reason)));
        }
        if span.is_recording() {
            for noted in ended.spans {
                self.record_span(noted, &run.cx);
            }
        }
        span.end();
    }

    pub(super) fn record_span(&self, noted: RunSpan, parent: &Context) {
        let kind = match noted.kind {
            RunSpanKind::Http => SpanKind::Client,
            RunSpanKind::Step | RunSpanKind::Instantiate => SpanKind::Internal,
        };
        let attributes: Vec<KeyValue> = noted
            .attributes
            .into_iter()
            .map(|(key, value)| match value {
                SpanValue::Text(text) => KeyValue::new(key, text),
                SpanValue::Int(n) => KeyValue::new(key, n),
            })
            .collect();
        let mut span = self
            .tracer
            .span_builder(noted.name)
            .with_kind(kind)
            .with_start_time(noted.start)
            .with_attributes(attributes)
            .start_with_context(&self.tracer, parent);
        if let Some(error) = noted.error {
            span.set_status(Status::error(clip(&error)));
        }
        span.end_with_timestamp(noted.end);
    }
}

/// The span of a run under way.
pub struct RunTrace {
    pub(super) cx: Context,
}

impl RunTrace {
    /// The run's span as BullMQ's telemetry metadata: the trace the jobs
    /// it starts continue.
    pub fn metadata(&self) -> Option<String> {
        super::context::metadata_of(&self.cx)
    }

    /// The W3C `traceparent` naming the run's span, for the outbound
    /// requests of a binding with `propagateTrace`, when the span is
    /// sampled.
    pub fn traceparent(&self) -> Option<String> {
        let span = self.cx.span();
        let ids = span.span_context();
        ids.is_sampled().then(|| {
            format!(
                "00-{}-{}-{:02x}",
                ids.trace_id(),
                ids.span_id(),
                ids.trace_flags().to_u8()
            )
        })
    }

    /// The job-log line that names the run's trace and span (so a reader
    /// of the log finds the trace), when the span is sampled.
    pub fn log_line(&self) -> Option<String> {
        let span = self.cx.span();
        let ids = span.span_context();
        ids.is_sampled()
            .then(|| format!("[airlock] trace {} span {}", ids.trace_id(), ids.span_id()))
    }
}

/// What a run was, for its span's end.
pub struct RunEnded<'a> {
    /// The job's name.
    pub name: &'a str,
    /// The job's flow parent, as `QUEUE:ID`, when it is a flow's child.
    pub flow_parent: Option<&'a str>,
    /// The run's number (BullMQ's `ats`).
    pub run: u32,
    /// The attempt it belongs to (BullMQ's `atm` before it, plus one).
    pub attempt: u32,
    /// The handler digest it ran.
    pub digest: &'a str,
    /// The host that ran it.
    pub host: &'a str,
    /// Fuel used, when metered.
    pub fuel_used: Option<u64>,
    /// Peak memory, bytes.
    pub peak_memory_bytes: u64,
    /// How it ended (`completed`, a failure kind, `slept`, `waited`).
    pub end: &'a str,
    /// The failure's kind, when it failed.
    pub failure_kind: Option<&'a str>,
    /// Why it failed, when it did.
    pub reason: Option<&'a str>,
    /// What the sandbox noted during the run.
    pub spans: Vec<RunSpan>,
    /// Spans over the sandbox's cap, not kept (the trace names the count
    /// `airlock.trace.events_dropped`, as it always has).
    pub spans_dropped: u64,
}
