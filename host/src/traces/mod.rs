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
//! - `process QUEUE batch` (consumer), one per batch run of a queue bound
//!   with `batch`, the root of a trace of its own, linked to the run span
//!   of each of its jobs: the batch's id and size, the handler's digest,
//!   the host, the whole batch's fuel and peak memory, how it ended as a
//!   whole (`completed` when each job got its own outcome); the sandbox's
//!   spans of the run (`instantiate`, requests) sit under it. Each job of
//!   the batch still has its `process QUEUE` span in its own trace, with
//!   `airlock.batch.id` and a link to the batch's span.
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
//!
//! ## Crash windows
//!
//! A run's span leaves the host only after the run, in the exporter's
//! next batch. A host that dies during a run loses that run's span and the
//! events under it, and the spans of finished runs still in that batch.
//! The job's log keeps a sampled run's trace ids once its reporter wrote
//! them (`worker::reporter`, soon after the run starts), and the
//! rerun's span joins the same trace when the job carries a trace context.

mod batch;
mod context;
mod run;
mod send;
mod wait;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};

pub use self::batch::BatchEnded;
pub use self::context::{context_in_opts, context_of_headers, context_of_metadata, metadata_of};
pub use self::run::{RunEnded, RunTrace};
pub use self::send::Send;
pub use self::wait::Before;

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
}

fn clip(text: &str) -> String {
    text.chars().take(MAX_REASON_CHARS).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
