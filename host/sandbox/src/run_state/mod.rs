//! Per-run store data: WASI and `wasi:http` contexts, limits bookkeeping,
//! captured logs, and the implementation of the `airlock:job` imports
//! (`context` and `config` in every contract version).

mod batch;
mod config_import;
mod context_import;
mod limiter;
mod older_contracts;
mod wait;
mod work;

pub use self::work::{MAX_INVOKE_JOBS, MAX_LATER_MS, MAX_RETRY_AFTERS};

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

pub use self::limiter::MemoryLimiter;
use super::bindings::HostError;
use super::egress::EgressPolicy;
use super::http::{Grant, HttpLimits, HttpStats, RunHttp};
use super::limits::Limits;
use super::logs::{LogLevel as SinkLevel, LogSink};
use super::secrets::{self, SecretsKey};
use super::services::{self, HostServices, ServiceError};

/// What a run may reach beyond its durable imports: the binding's
/// configuration, its egress policy and the key its secrets open with.
#[derive(Debug, Clone, Default)]
pub struct RunEnv {
    /// The binding's `config` map.
    pub config: Arc<BTreeMap<String, String>>,
    /// Where the run may send HTTP requests; `None`: nowhere.
    pub egress: Option<EgressPolicy>,
    /// The fleet's secrets key; `None`: secrets cannot be opened here.
    pub secrets_key: Option<SecretsKey>,
    /// Stops the run from outside (a cancellation, the job's time to
    /// finish); `None`: only the run's own limits stop it.
    pub stop: Option<crate::stop::StopSignal>,
    /// Whether and with whom the run may share its instance with later
    /// jobs (see `crate::warm`); `None`: a fresh instance, dropped after.
    pub reuse: Option<crate::warm::Reuse>,
    /// The keep-alive connections the runs of this binding share (one pool
    /// per queue and binding version, so no other queue's runs ever use
    /// them; see `crate::http`); `None`: a connection per request.
    pub http_pool: Option<Arc<crate::http::HttpPool>>,
    /// The newest setting of each secret this binding's runs used, to
    /// refuse an older one written back (`secrets::SecretsSeen`); `None`:
    /// not checked.
    pub secrets_seen: Option<Arc<secrets::SecretsSeen>>,
    /// Where the run notes its outbound requests and the steps it runs,
    /// for the host's trace of it (`crate::trace`); `None`: not noted.
    pub spans: Option<Arc<crate::trace::RunSpans>>,
    /// The W3C `traceparent` the host puts on the run's outbound requests
    /// (a binding's `propagateTrace`), replacing the guest's own and
    /// dropping its `tracestate`; `None`: requests go as the guest wrote
    /// them.
    pub traceparent: Option<String>,
    /// Where the run's transcript is written (a binding that records
    /// them; `crate::transcript`); `None`: not recorded.
    pub transcript: Option<Arc<crate::transcript::TranscriptRecorder>>,
    /// Answers the run's outbound requests instead of the network (a
    /// replay: no request leaves the host); `None`: requests go out under
    /// the egress policy.
    pub http_answers: Option<Arc<dyn crate::transcript::HttpAnswers>>,
    /// The wall-clock readings the run's guest gets, in order, ns since
    /// the epoch, before the real clock (a replay); `None`: the real clock.
    pub clock_readings: Option<Vec<u64>>,
    /// The run is a batch (`run-batch`): the calls that belong to one job
    /// end it as `guest_fatal` (see `run_state::batch`).
    pub batch: bool,
}

/// Longest step id, sleep id or KV key a guest may use.
const MAX_KEY_BYTES: usize = 512;
/// Longest durable sleep: a year. Parking a job further out would overflow
/// the delayed set's scores (the job would wake at once, or never).
pub const MAX_SLEEP_MS: u64 = 365 * 24 * 60 * 60 * 1000;

/// The error a durable sleep, wait or invoke raises to stop the guest; the
/// sandbox turns it into [`super::Completion::Suspended`] — or, when a
/// call ended the run ([`RunState::ended`]: `retry-after`, `rate-limit`, a
/// refused start), into that.
#[derive(Debug, thiserror::Error)]
#[error("job suspended by a durable sleep or wait")]
pub struct Suspend;

/// A store's WASI context and the wall clock it was built with (whose
/// mode each job sets: see [`crate::transcript::RunClock`]).
pub struct Wasi {
    /// The context.
    pub ctx: WasiCtx,
    /// Its wall clock.
    pub clock: crate::transcript::RunClock,
}

impl Wasi {
    /// A context with a [`crate::transcript::RunClock`] as its wall clock,
    /// and what `configure` adds.
    pub fn new(configure: impl FnOnce(&mut wasmtime_wasi::WasiCtxBuilder)) -> Wasi {
        let clock = crate::transcript::RunClock::default();
        let mut builder = wasmtime_wasi::WasiCtxBuilder::new();
        builder.wall_clock(clock.clone());
        configure(&mut builder);
        Wasi {
            ctx: builder.build(),
            clock,
        }
    }
}

/// Everything one store (one run) owns.
pub struct RunState {
    wasi: WasiCtx,
    table: ResourceTable,
    http_ctx: WasiHttpCtx,
    /// The `wasi:http` hooks: policy, limits, secrets substitution.
    pub http: RunHttp,
    /// The guest's wall clock (the WASI context's): real, recorded or
    /// replayed, per job.
    clock: crate::transcript::RunClock,
    /// The queue (secrets are sealed for it).
    queue: String,
    env: RunEnv,
    /// Secrets handed out as placeholders, shared with the HTTP hooks.
    grants: Arc<Mutex<Vec<Grant>>>,
    /// Memory accounting and the memory cap.
    pub limiter: MemoryLimiter,
    /// The run's capped log, shared with the captured stdout/stderr.
    pub logs: Arc<Mutex<LogSink>>,
    services: Box<dyn HostServices>,
    limits: Limits,
    steps_recorded: u32,
    /// When the guest last looked up a step it had no result for: the
    /// step's span begins there (`crate::trace`). Only kept when the run
    /// notes spans.
    step_started: Option<(String, std::time::SystemTime)>,
    /// The guest's last words before aborting, from the SDK's panic hook.
    pub panic_message: Option<String>,
    /// Set by a durable sleep or wait that stopped the guest: when it
    /// ends, and which it was.
    pub suspended: Option<(u64, crate::outcome::SuspendedOn)>,
    /// A store outage seen during the run; a retry error that follows is
    /// reported as `host_unavailable`.
    pub service_outage: Option<String>,
    /// How the run ended when a call ended it (`retry-after`,
    /// `rate-limit`, a start the binding refused), stopping the guest.
    pub ended: Option<crate::outcome::Completion>,
}

impl RunState {
    /// State for one run of a job of `queue` under `limits`, ending by
    /// `deadline`.
    pub fn new(
        wasi: Wasi,
        logs: Arc<Mutex<LogSink>>,
        services: Box<dyn HostServices>,
        limits: Limits,
        queue: String,
        env: RunEnv,
        deadline: Instant,
    ) -> Self {
        let mut state = RunState {
            wasi: wasi.ctx,
            clock: wasi.clock,
            table: ResourceTable::new(),
            http_ctx: WasiHttpCtx::new(),
            http: RunHttp {
                policy: None,
                pool: None,
                limits: HttpLimits {
                    max_requests: 0,
                    max_request_bytes: 0,
                    max_response_bytes: 0,
                    timeout: Duration::ZERO,
                    run_deadline: deadline,
                },
                stats: Arc::default(),
                grants: Arc::default(),
                logs: logs.clone(),
                refusals: Arc::default(),
                spans: None,
                traceparent: None,
                transcript: None,
                answers: None,
            },
            queue,
            env: RunEnv::default(),
            grants: Arc::default(),
            limiter: MemoryLimiter::new(limits.memory_bytes),
            logs,
            services: Box::new(services::LocalServices::new()),
            limits: limits.clone(),
            steps_recorded: 0,
            step_started: None,
            panic_message: None,
            suspended: None,
            service_outage: None,
            ended: None,
        };
        state.begin_job(services, limits, env, deadline);
        state
    }

    /// Sets everything that belongs to one job — its services, limits,
    /// binding environment, deadline, HTTP counts, refusals and secret grants — and
    /// clears what the last job left (steps counted, a panic message, a
    /// suspension, an outage). A warm instance calls it before each job;
    /// what stays is the guest's own memory, the WASI context (its streams
    /// write into the same, renewed, log sink) and revealed values'
    /// redactions (see [`LogSink::renew`]).
    pub fn begin_job(
        &mut self,
        services: Box<dyn HostServices>,
        limits: Limits,
        env: RunEnv,
        deadline: Instant,
    ) {
        let grants: Arc<Mutex<Vec<Grant>>> = Arc::default();
        self.http = RunHttp {
            policy: env.egress.clone(),
            pool: env.http_pool.clone(),
            limits: HttpLimits {
                max_requests: limits.max_http_requests,
                max_request_bytes: limits.max_http_request_bytes,
                max_response_bytes: limits.max_http_response_bytes,
                timeout: limits.http_timeout,
                run_deadline: deadline,
            },
            stats: Arc::new(HttpStats::default()),
            grants: grants.clone(),
            logs: self.logs.clone(),
            refusals: Arc::default(),
            spans: env.spans.clone(),
            traceparent: env
                .traceparent
                .as_deref()
                .and_then(|t| ::http::HeaderValue::from_str(t).ok()),
            transcript: env.transcript.clone(),
            answers: env.http_answers.clone(),
        };
        self.grants = grants;
        self.clock
            .set(match (&env.clock_readings, &env.transcript) {
                (Some(readings), _) => {
                    crate::transcript::ClockMode::Replaying(readings.iter().copied().collect())
                }
                (None, Some(recorder)) => crate::transcript::ClockMode::Recording(recorder.clone()),
                (None, None) => crate::transcript::ClockMode::Real,
            });
        self.env = env;
        self.limiter.begin_job(limits.memory_bytes);
        self.services = match &self.env.transcript {
            Some(recorder) => Box::new(crate::transcript::RecordingServices {
                inner: services,
                recorder: recorder.clone(),
            }),
            None => services,
        };
        self.limits = limits;
        self.steps_recorded = 0;
        self.step_started = None;
        self.panic_message = None;
        self.suspended = None;
        self.service_outage = None;
        self.ended = None;
    }

    /// Notes the run's instantiation, begun at `began` and ended now, for
    /// its trace (`crate::trace`), when the run notes spans.
    pub fn note_instantiation(&self, began: std::time::SystemTime, failed: Option<String>) {
        if let Some(spans) = &self.env.spans {
            spans.push(crate::trace::RunSpan {
                name: "instantiate".into(),
                kind: crate::trace::RunSpanKind::Instantiate,
                start: began,
                end: std::time::SystemTime::now(),
                attributes: Vec::new(),
                error: failed,
            });
        }
    }

    /// Whether the guest still holds an outgoing HTTP request, response or
    /// body (a request of the last job could go on into the next): a warm
    /// instance holding one is not reused.
    pub fn holds_http_resources(&mut self) -> bool {
        use wasmtime_wasi_http::p2::{body, types as http};
        self.table.iter_mut().any(|(_, entry)| {
            let entry: &dyn std::any::Any = entry;
            entry.is::<http::HostFutureIncomingResponse>()
                || entry.is::<http::HostIncomingResponse>()
                || entry.is::<http::HostOutgoingRequest>()
                || entry.is::<body::HostIncomingBody>()
                || entry.is::<body::HostIncomingBodyStream>()
                || entry.is::<body::HostOutgoingBody>()
                || entry.is::<body::HostFutureTrailers>()
        })
    }

    fn log_line(&self, level: SinkLevel, message: &str) {
        if let Ok(mut sink) = self.logs.lock() {
            sink.push(level, message);
        }
    }

    /// `text` with revealed secret values redacted (see [`LogSink::redact`]).
    pub fn redact(&self, text: String) -> String {
        match self.logs.lock() {
            Ok(sink) => sink.redact(&text).unwrap_or(text),
            Err(_) => text,
        }
    }

    /// Converts a service error for the guest, remembering outages.
    fn host_error(&mut self, err: ServiceError) -> HostError {
        match err {
            ServiceError::Unsupported(m) => HostError::Unsupported(m),
            ServiceError::Invalid(m) => HostError::Invalid(m),
            ServiceError::LimitExceeded(m) => HostError::LimitExceeded(m),
            ServiceError::Unavailable(m) => {
                self.service_outage = Some(m.clone());
                HostError::Unavailable(m)
            }
            // Only the calls that start work are refused, and they end the
            // run instead (`RunState::refuse`); any other is a bad call.
            ServiceError::Refused(m) => HostError::Invalid(m),
        }
    }

    fn check_key(what: &str, key: &str) -> Result<(), HostError> {
        if key.is_empty() {
            return Err(HostError::Invalid(format!("{what} must not be empty")));
        }
        if key.len() > MAX_KEY_BYTES {
            return Err(HostError::Invalid(format!(
                "{what} is {} bytes, the maximum is {MAX_KEY_BYTES}",
                key.len()
            )));
        }
        Ok(())
    }

    fn check_value(&self, what: &str, value: &str) -> Result<(), HostError> {
        if value.len() as u64 > self.limits.max_step_bytes {
            return Err(HostError::LimitExceeded(format!(
                "{what} is {} bytes, the maximum is {}",
                value.len(),
                self.limits.max_step_bytes
            )));
        }
        Ok(())
    }
}

impl WasiView for RunState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl WasiHttpView for RunState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http_ctx,
            table: &mut self.table,
            hooks: &mut self.http,
        }
    }
}
