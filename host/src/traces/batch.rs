//! The span of a batch run (`process QUEUE batch`): one per batch that
//! got room on its host to run (one that failed before, for want of room,
//! has none), the root of a trace of its own, with a link to each job's run span; each
//! job's run span gets a link back to it and the batch's id, so a job's
//! trace leads to its batch and the batch to every job.

use opentelemetry::trace::{SpanContext, SpanKind, Status, TraceContextExt, Tracer as _};
use opentelemetry::{Context, KeyValue};

use super::run::RunTrace;
use super::{Traces, clip};
use crate::sandbox::trace::RunSpan;

/// What a batch run was, for its span's end.
pub struct BatchEnded<'a> {
    /// The batch's id.
    pub id: &'a str,
    /// Jobs in it.
    pub size: usize,
    /// The handler digest it ran.
    pub digest: &'a str,
    /// The host that ran it.
    pub host: &'a str,
    /// Fuel used by the whole batch, when metered.
    pub fuel_used: Option<u64>,
    /// The instance's peak memory, bytes.
    pub peak_memory_bytes: u64,
    /// How it ended as a whole: `completed` (each job has its own outcome)
    /// or the failure kind every job ended with.
    pub end: &'a str,
    /// Why it failed as a whole, when it did.
    pub reason: Option<&'a str>,
    /// What the sandbox noted during the run (its instantiation, its
    /// requests).
    pub spans: Vec<RunSpan>,
}

impl Traces {
    /// Starts the span of a batch run of `queue`, now, linked to the run
    /// spans of its jobs (`runs`).
    pub fn start_batch(&self, queue: &str, runs: Vec<SpanContext>) -> RunTrace {
        let links = runs
            .into_iter()
            .filter(SpanContext::is_valid)
            .map(|cx| opentelemetry::trace::Link::new(cx, Vec::new(), 0))
            .collect();
        let span = self
            .tracer
            .span_builder(format!("process {queue} batch"))
            .with_kind(SpanKind::Consumer)
            .with_links(links)
            .with_attributes([
                KeyValue::new("messaging.system", "bullmq"),
                KeyValue::new("messaging.operation.type", "process"),
                KeyValue::new("messaging.destination.name", queue.to_string()),
            ])
            .start_with_context(&self.tracer, &Context::new());
        RunTrace {
            cx: Context::new().with_span(span),
        }
    }

    /// Ends a batch run's span with what the run was, and a child per span
    /// the sandbox noted.
    pub fn end_batch(&self, batch: RunTrace, ended: BatchEnded<'_>) {
        let span = batch.cx.span();
        let mut attributes = vec![
            KeyValue::new("airlock.batch.id", ended.id.to_string()),
            KeyValue::new("airlock.batch.size", ended.size as i64),
            KeyValue::new("airlock.handler.digest", ended.digest.to_string()),
            KeyValue::new("airlock.host.id", ended.host.to_string()),
            KeyValue::new("airlock.peak_memory_bytes", ended.peak_memory_bytes as i64),
            KeyValue::new("airlock.run.end", ended.end.to_string()),
        ];
        if let Some(fuel) = ended.fuel_used {
            attributes.push(KeyValue::new("airlock.fuel_used", fuel as i64));
        }
        span.set_attributes(attributes);
        if let Some(reason) = ended.reason {
            span.set_status(Status::error(clip(reason)));
        }
        if span.is_recording() {
            for noted in ended.spans {
                self.record_span(noted, &batch.cx);
            }
        }
        span.end();
    }
}

impl RunTrace {
    /// The span's ids, for a link to it.
    pub fn span_context(&self) -> SpanContext {
        self.cx.span().span_context().clone()
    }

    /// Marks a job's run span as run in batch `id`, whose span is
    /// `batch`: its id as an attribute, a link to the batch's span.
    pub fn ran_in_batch(&self, id: &str, batch: Option<SpanContext>) {
        let span = self.cx.span();
        span.set_attribute(KeyValue::new("airlock.batch.id", id.to_string()));
        if let Some(batch) = batch.filter(SpanContext::is_valid) {
            span.add_link(batch, Vec::new());
        }
    }
}
