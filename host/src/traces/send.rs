//! The producer span of an API request that adds jobs (`add QUEUE`, `send
//! EVENT`), and the trace context the added jobs carry.

use axum::http::HeaderMap;
use opentelemetry::trace::Status;
use opentelemetry::trace::{SpanKind, TraceContextExt, Tracer as _};
use opentelemetry::{Context, KeyValue};

use super::{Traces, clip, context_of_headers, metadata_of};

impl Traces {
    /// Starts a producer span named `OPERATION DESTINATION` (`add
    /// payments`, `send order.placed`), a child of `parent` (the request's
    /// `traceparent`, if any).
    fn start_send(&self, operation: &str, destination: &str, parent: Option<&Context>) -> Context {
        let root = Context::new();
        let span = self
            .tracer
            .span_builder(format!("{operation} {destination}"))
            .with_kind(SpanKind::Producer)
            .with_attributes([
                KeyValue::new("messaging.system", "bullmq"),
                KeyValue::new("messaging.operation.type", "send"),
                KeyValue::new("messaging.destination.name", destination.to_string()),
            ])
            .start_with_context(&self.tracer, parent.unwrap_or(&root));
        Context::new().with_span(span)
    }
}

/// What an API request that adds jobs (an enqueue, a flow, an event)
/// traces: its producer span while the jobs are added, when the host
/// exports traces, and the trace context the jobs carry — that span's, or
/// else the request's own `traceparent`, so a host that exports continues
/// it.
pub struct Send {
    span: Option<Context>,
    metadata: Option<String>,
}

impl Send {
    /// Begins `OPERATION DESTINATION` under the request's `traceparent`.
    pub fn start(
        traces: &Option<std::sync::Arc<Traces>>,
        headers: &HeaderMap,
        operation: &str,
        destination: &str,
    ) -> Send {
        let parent = context_of_headers(headers);
        let span = traces
            .as_ref()
            .map(|t| t.start_send(operation, destination, parent.as_ref()));
        let metadata = match &span {
            Some(cx) => metadata_of(cx),
            None => parent.as_ref().and_then(metadata_of),
        };
        Send { span, metadata }
    }

    /// The trace context the added jobs carry (`airlock.trace`).
    pub fn metadata(&self) -> Option<String> {
        self.metadata.clone()
    }

    /// Ends the span with what the request's add gave: the ids `ids` reads
    /// from it (of the jobs added), or its error.
    pub fn end_with<T, E: std::fmt::Display>(
        self,
        added: &Result<T, E>,
        ids: impl FnOnce(&T) -> Vec<String>,
    ) {
        self.end(added.as_ref().map(ids).map_err(|e| e.to_string()));
    }

    /// Ends the span: with the ids of the jobs added, or the error that
    /// failed the request.
    fn end(self, outcome: Result<Vec<String>, String>) {
        let Some(cx) = self.span else { return };
        let span = cx.span();
        match outcome {
            Ok(ids) if ids.len() == 1 => {
                span.set_attribute(KeyValue::new("messaging.message.id", ids[0].clone()))
            }
            Ok(ids) => span.set_attribute(KeyValue::new(
                "messaging.batch.message_count",
                ids.len() as i64,
            )),
            Err(error) => span.set_status(Status::error(clip(&error))),
        }
        span.end();
    }
}
