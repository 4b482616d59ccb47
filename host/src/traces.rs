//! OpenTelemetry traces of jobs, exported over OTLP (HTTP/protobuf) to the
//! operator's own backend.
//!
//! ## Turning it on
//!
//! Off by default. A host exports traces when `OTEL_EXPORTER_OTLP_ENDPOINT`
//! (a base URL; `/v1/traces` is appended) or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as is) is set, unless
//! `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`. The rest is
//! the OpenTelemetry SDK's own reading of the standard variables:
//! `OTEL_SERVICE_NAME` (default here: `airlock`), `OTEL_RESOURCE_ATTRIBUTES`,
//! `OTEL_TRACES_SAMPLER` / `OTEL_TRACES_SAMPLER_ARG` (default: parent-based,
//! always on), `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_EXPORTER_OTLP_TIMEOUT`,
//! and the batch processor's `OTEL_BSP_*` (spans leave every 5 s by
//! default, on the processor's own thread, and at shutdown).
//!
//! ## The spans
//!
//! - `add QUEUE` (producer), for `POST /v1/queues/{queue}/jobs` and its
//!   bulk form, and for `POST /v1/flows` (the parent's queue; every job of
//!   the flow joins it); `send EVENT` for `POST /v1/events` (the jobs it
//!   creates join it): a child of the request's `traceparent` when it has
//!   one.
//! - `process QUEUE` (consumer), one per run of a job on a host, a child of
//!   the job's trace context (below): the job's id, the run's number
//!   (`airlock.run`), the handler's digest, the host, fuel, peak memory,
//!   how the run ended (`airlock.run.end`: `completed`, a failure kind,
//!   `slept`, `waited`), a flow child's parent job (`airlock.flow.parent`,
//!   `QUEUE:ID`) and, for a failure, its kind and reason as the span's
//!   error status. A sampled run writes the ids of its trace and
//!   span into the job's log first (`[airlock] trace T span S`), so a
//!   reader of the log finds the trace.
//! - `held QUEUE`: each time flow control parks a job for its turn instead
//!   of running it, with the rule that held it (`airlock.held.rule`:
//!   `keyConcurrency`, `keyThrottle`, `singleton`, `fairness`), a child of
//!   the job's trace context.
//! - What the job waited for before each run ([`Before`]): `delayed
//!   QUEUE` and `queued QUEUE` before its first run, `sleep ID`, `wait ID`
//!   or `backoff QUEUE` after the run before it, with the rule
//!   (`airlock.wait.rule`: `delay`, `capacity`, `sleep`, `wait`,
//!   `backoff`); a child of the job's trace context, ending as the run
//!   starts.
//! - Under each run: `instantiate` (the guest's instantiation, when the
//!   run took a fresh instance), a client span per outbound HTTP request (method,
//!   destination host, port and path, status, request body bytes, the
//!   host's refusal reason) and an internal span per durable step the run
//!   executed (a replayed step ran in an earlier run and has its span
//!   there). The sandbox notes them ([`crate::sandbox::trace`]); a guest
//!   can neither skip nor forge one, and none holds a header value, a
//!   query, a body or a secret.
//!
//! ## How a job carries its trace
//!
//! As BullMQ's own telemetry (`bullmq-otel`) does: a JSON object of W3C
//! `traceparent`/`tracestate` headers. A Node producer writes it into the
//! job's options (`tm`); the API writes it into the job hash as
//! `airlock.trace` (the `add` span's context when this host exports
//! traces, else the request's own `traceparent`, so a host that does
//! export continues it). A run reads both with one `HMGET` — only on hosts
//! that export traces — and prefers `airlock.trace`.
//!
//! Both live in Redis, which every BullMQ producer can write: the context
//! is parsed by the W3C propagator (anything malformed is no parent) and
//! only decides which trace a run's span joins. A forged one can attach a
//! run's spans to another trace in the operator's backend; it cannot read
//! anything, and nothing else here trusts it.
//!
//! With a sampler that drops a trace, its run spans record nothing, and
//! the events the sandbox noted for them are not exported either.
//!
//! A binding with `propagateTrace` has the host put a `traceparent` on
//! its handler's outbound requests (the run's span as the parent), so the
//! service called joins the trace.
//!
//! A later run reads the history entry of the run before it (with the
//! trace context, in the same `HMGET`), also untrusted: a forged one can
//! only shape that run's wait span. The recorder writes an entry just
//! after its run; a run that starts before then (a retry without backoff
//! taken at once), or after a flow-control hold or a crash (no entry), has
//! no wait span.
//!
//! Not traced yet: the waits an event resumes are not linked to the
//! event's trace, and the trace ids are not on each guest log line (OTLP
//! logs); export is OTLP/HTTP only.

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use axum::http::HeaderMap;
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry::trace::{Span as _, SpanKind, Status, TraceContextExt, Tracer as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};

use crate::sandbox::trace::{EventKind, EventValue, RunEvent};
use crate::state::runs::RunEntry;

/// Longest failure reason a span's status keeps.
const MAX_REASON_CHARS: usize = 1024;

/// Largest trace context (or options text holding one) read from a job.
const MAX_CONTEXT_BYTES: usize = 64 << 10;

/// A host's trace exporter.
pub struct Traces {
    provider: SdkTracerProvider,
    tracer: SdkTracer,
}

impl std::fmt::Debug for Traces {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Traces")
    }
}

/// Whether the environment asks for traces (see the module docs).
fn enabled_by(var: impl Fn(&str) -> Option<String>) -> bool {
    let set = |name: &str| var(name).is_some_and(|v| !v.trim().is_empty());
    let disabled = var("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
    let no_exporter = var("OTEL_TRACES_EXPORTER").is_some_and(|v| v.trim() == "none");
    (set("OTEL_EXPORTER_OTLP_ENDPOINT") || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
        && !disabled
        && !no_exporter
}

impl Traces {
    /// The exporter the environment configures, or `None` when it asks
    /// for no traces.
    pub fn from_env() -> anyhow::Result<Option<Traces>> {
        if !enabled_by(|name| std::env::var(name).ok()) {
            return Ok(None);
        }
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .build()
            .map_err(|e| anyhow::anyhow!("OTLP trace exporter: {e}"))?;
        let named = std::env::var("OTEL_SERVICE_NAME").is_ok_and(|v| !v.is_empty())
            || std::env::var("OTEL_RESOURCE_ATTRIBUTES").is_ok_and(|v| {
                v.split(',')
                    .any(|kv| kv.trim().starts_with("service.name="))
            });
        let mut resource = opentelemetry_sdk::Resource::builder();
        if !named {
            resource = resource.with_service_name("airlock");
        }
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource.build())
            .build();
        let tracer = provider.tracer("airlock");
        Ok(Some(Traces { provider, tracer }))
    }

    /// Sends the spans still queued and stops the exporter.
    pub fn shutdown(&self) {
        if let Err(e) = self.provider.shutdown() {
            tracing::warn!(error = %e, "flush the trace exporter");
        }
    }

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

    /// Ends a run's span with what the run was, and a child per event the
    /// sandbox noted.
    pub fn end_run(&self, run: RunTrace, ended: RunEnded<'_>) {
        let span = run.cx.span();
        let mut attributes = vec![
            KeyValue::new("airlock.job.name", ended.name.to_string()),
            KeyValue::new("airlock.run", i64::from(ended.run)),
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
        if ended.events_dropped > 0 {
            attributes.push(KeyValue::new(
                "airlock.trace.events_dropped",
                ended.events_dropped as i64,
            ));
        }
        span.set_attributes(attributes);
        if let Some(reason) = ended.reason {
            span.set_status(Status::error(clip(reason)));
        }
        if span.is_recording() {
            for event in ended.events {
                self.record_event(event, &run.cx);
            }
        }
        span.end();
    }

    fn record_event(&self, event: RunEvent, parent: &Context) {
        let kind = match event.kind {
            EventKind::Http => SpanKind::Client,
            EventKind::Step | EventKind::Instantiate => SpanKind::Internal,
        };
        let attributes: Vec<KeyValue> = event
            .attributes
            .into_iter()
            .map(|(key, value)| match value {
                EventValue::Text(text) => KeyValue::new(key, text),
                EventValue::Int(n) => KeyValue::new(key, n),
            })
            .collect();
        let mut span = self
            .tracer
            .span_builder(event.name)
            .with_kind(kind)
            .with_start_time(event.start)
            .with_attributes(attributes)
            .start_with_context(&self.tracer, parent);
        if let Some(error) = event.error {
            span.set_status(Status::error(clip(&error)));
        }
        span.end_with_timestamp(event.end);
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

/// The span of a run under way.
pub struct RunTrace {
    cx: Context,
}

impl RunTrace {
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

/// What a run was, for its span's end.
pub struct RunEnded<'a> {
    /// The job's name.
    pub name: &'a str,
    /// The job's flow parent, as `QUEUE:ID`, when it is a flow's child.
    pub flow_parent: Option<&'a str>,
    /// The run's number (BullMQ's `ats`).
    pub run: u32,
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
    pub events: Vec<RunEvent>,
    /// Events over the sandbox's cap, not kept.
    pub events_dropped: u64,
}

/// The trace context of an API request: its `traceparent` and
/// `tracestate` headers; `None` without a valid `traceparent`.
pub fn context_of_headers(headers: &HeaderMap) -> Option<Context> {
    let mut carrier = HashMap::new();
    for name in ["traceparent", "tracestate"] {
        if let Some(value) = headers.get(name).and_then(|v| v.to_str().ok()) {
            carrier.insert(name.to_string(), value.to_string());
        }
    }
    valid(TraceContextPropagator::new().extract(&carrier))
}

/// The trace context in BullMQ's telemetry metadata (a JSON object of
/// W3C headers); `None` when it is malformed or holds no valid context.
pub fn context_of_metadata(text: &str) -> Option<Context> {
    if text.len() > MAX_CONTEXT_BYTES {
        return None;
    }
    let carrier: HashMap<String, String> = serde_json::from_str(text).ok()?;
    valid(TraceContextPropagator::new().extract(&carrier))
}

/// The trace context of a job's options as BullMQ stores them (`tm`, the
/// metadata its telemetry wrote at the add).
pub fn context_in_opts(opts: &str) -> Option<String> {
    if opts.len() > MAX_CONTEXT_BYTES {
        return None;
    }
    let opts: serde_json::Value = serde_json::from_str(opts).ok()?;
    let metadata = opts.get("tm")?.as_str()?;
    context_of_metadata(metadata).and_then(|cx| metadata_of(&cx))
}

/// `cx` as BullMQ's telemetry metadata; `None` without a valid span.
pub fn metadata_of(cx: &Context) -> Option<String> {
    let cx = valid(cx.clone())?;
    let mut carrier: HashMap<String, String> = HashMap::new();
    TraceContextPropagator::new().inject_context(&cx, &mut carrier);
    // An empty `tracestate` says nothing.
    carrier.retain(|_, value| !value.is_empty());
    serde_json::to_string(&carrier).ok()
}

fn valid(cx: Context) -> Option<Context> {
    cx.span().span_context().is_valid().then_some(cx)
}

fn clip(text: &str) -> String {
    text.chars().take(MAX_REASON_CHARS).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

    #[test]
    fn traces_are_on_only_with_an_endpoint_and_not_disabled() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert!(!enabled_by(env(&[])));
        assert!(enabled_by(env(&[(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "http://c:4318"
        )])));
        assert!(enabled_by(env(&[(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "http://c:4318/v1/traces"
        )])));
        assert!(!enabled_by(env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_SDK_DISABLED", "TRUE")
        ])));
        assert!(!enabled_by(env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_TRACES_EXPORTER", "none")
        ])));
        assert!(!enabled_by(env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", " ")])));
    }

    #[test]
    fn a_context_goes_through_headers_metadata_and_bullmq_options() {
        let mut headers = HeaderMap::new();
        headers.insert("traceparent", PARENT.parse().unwrap());
        let cx = context_of_headers(&headers).expect("a valid traceparent");
        let metadata = metadata_of(&cx).unwrap();
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&metadata).unwrap(),
            serde_json::json!({"traceparent": PARENT})
        );
        let opts = serde_json::json!({"attempts": 3, "tm": metadata}).to_string();
        assert_eq!(context_in_opts(&opts).as_deref(), Some(metadata.as_str()));
    }

    #[test]
    fn anything_malformed_is_no_context() {
        let mut headers = HeaderMap::new();
        headers.insert("traceparent", "00-zz-b7ad6b7169203331-01".parse().unwrap());
        assert!(context_of_headers(&headers).is_none());
        assert!(context_of_headers(&HeaderMap::new()).is_none());
        for text in [
            "",
            "[]",
            "{\"traceparent\": 7}",
            "{\"traceparent\": \"00-00000000000000000000000000000000-b7ad6b7169203331-01\"}",
        ] {
            assert!(context_of_metadata(text).is_none(), "{text}");
        }
        assert!(context_in_opts("{\"tm\": {\"traceparent\": \"x\"}}").is_none());
        assert!(context_in_opts("not json").is_none());
        let huge = format!("{{\"tm\": \"{}\"}}", "x".repeat(MAX_CONTEXT_BYTES));
        assert!(context_in_opts(&huge).is_none());
    }
}
