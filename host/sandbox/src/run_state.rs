//! Per-run store data: WASI and `wasi:http` contexts, limits bookkeeping,
//! captured logs, and the implementation of the `airlock:job` imports
//! (`context` and `config` in every contract version).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use wasmtime::ResourceLimiter;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use super::bindings::airlock::job0_4_0::{config, context, types};
use super::bindings::{
    ChildOutcome, ChildResult, EventMatch, HostError, HttpRefusal, JobRef, LogLevel, Progress,
};
use super::bindings::{v0_1, v0_2, v0_3};
use super::egress::EgressPolicy;
use super::http::{Grant, HttpLimits, HttpStats, RunHttp};
use super::limits::Limits;
use super::logs::{LogLevel as SinkLevel, LogSink};
use super::secrets::{self, SecretsKey};
use super::services::{self, HostServices, ServiceError, WaitFor, WaitState};
use airlock_core::clock::now_ms;

/// Longest secret or configuration name a guest may ask for.
const MAX_NAME_BYTES: usize = 128;

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
    pub events: Option<Arc<crate::trace::RunEvents>>,
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
}

/// Longest step id, sleep id or KV key a guest may use.
const MAX_KEY_BYTES: usize = 512;
/// Largest progress JSON kept.
const MAX_PROGRESS_BYTES: usize = 64 << 10;
/// Longest panic message kept.
const MAX_PANIC_BYTES: usize = 4 << 10;
/// Longest durable sleep: a year. Parking a job further out would overflow
/// the delayed set's scores (the job would wake at once, or never).
pub const MAX_SLEEP_MS: u64 = 365 * 24 * 60 * 60 * 1000;

/// Longest event name a wait may name (as `POST /v1/events` accepts).
const MAX_EVENT_NAME_BYTES: usize = 256;
/// Largest value a wait's event match may hold, as JSON text.
const MAX_MATCH_VALUE_BYTES: usize = 1024;

/// The error a durable sleep or wait raises to stop the guest; the sandbox
/// turns it into [`super::Completion::Suspended`].
#[derive(Debug, thiserror::Error)]
#[error("job suspended by a durable sleep or wait")]
pub struct Suspend;

/// Tracks linear-memory growth against the run's cap.
///
/// Wasmtime asks before every growth (including the initial allocation), so
/// the running total here is the guest's memory footprint and its maximum is
/// the run's peak.
pub struct MemoryLimiter {
    cap_bytes: u64,
    total_bytes: u64,
    peak_bytes: u64,
    /// Set when a growth was refused, so a trap that follows (Rust aborts
    /// on allocation failure) is reported as the memory limit it really is.
    pub limit_hit: bool,
    /// The last allowed growth, undone if the growth then fails.
    last_growth: u64,
}

impl MemoryLimiter {
    fn new(cap_bytes: u64) -> Self {
        MemoryLimiter {
            cap_bytes,
            total_bytes: 0,
            peak_bytes: 0,
            limit_hit: false,
            last_growth: 0,
        }
    }

    /// Highest total linear memory reached.
    pub fn peak_bytes(&self) -> u64 {
        self.peak_bytes
    }

    /// Starts the next job of a warm instance under `cap_bytes`: its peak
    /// starts at the memory the instance already has (earlier jobs' growth
    /// stays: linear memory never shrinks), and counts from there.
    fn begin_job(&mut self, cap_bytes: u64) {
        self.cap_bytes = cap_bytes;
        self.peak_bytes = self.total_bytes;
        self.limit_hit = false;
        self.last_growth = 0;
    }
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let growth = (desired - current) as u64;
        if self.total_bytes + growth > self.cap_bytes {
            self.limit_hit = true;
            return Ok(false);
        }
        self.total_bytes += growth;
        self.peak_bytes = self.peak_bytes.max(self.total_bytes);
        self.last_growth = growth;
        Ok(true)
    }

    fn memory_grow_failed(&mut self, _error: wasmtime::Error) -> wasmtime::Result<()> {
        self.total_bytes -= self.last_growth;
        self.limit_hit = true;
        Ok(())
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        // Tables hold function references; a million is far past any real
        // handler and keeps a hostile one from using host memory this way.
        Ok(desired <= 1_000_000)
    }

    fn instances(&self) -> usize {
        64
    }

    fn tables(&self) -> usize {
        64
    }

    fn memories(&self) -> usize {
        16
    }
}

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
    /// notes events.
    step_started: Option<(String, std::time::SystemTime)>,
    /// The guest's last words before aborting, from the SDK's panic hook.
    pub panic_message: Option<String>,
    /// Set by a durable sleep or wait that stopped the guest: when it
    /// ends, and which it was.
    pub suspended: Option<(u64, crate::outcome::ParkedOn)>,
    /// A store outage seen during the run; a retry error that follows is
    /// reported as `host_unavailable`.
    pub service_outage: Option<String>,
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
                events: None,
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
            events: env.events.clone(),
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
    }

    /// Notes the run's instantiation, begun at `began` and ended now, for
    /// its trace (`crate::trace`), when the run notes events.
    pub fn note_instantiation(&self, began: std::time::SystemTime, failed: Option<String>) {
        if let Some(events) = &self.env.events {
            events.push(crate::trace::RunEvent {
                name: "instantiate".into(),
                kind: crate::trace::EventKind::Instantiate,
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

    /// Opens the job's secret `name` (fetched through the services).
    async fn open_secret(&mut self, name: &str) -> Result<secrets::Secret, HostError> {
        if name.is_empty()
            || name.len() > MAX_NAME_BYTES
            || !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b))
        {
            return Err(HostError::Invalid(format!(
                "`{name}` is not a secret name (letters, digits, `_`, `.`, `-`; at most {MAX_NAME_BYTES} bytes)"
            )));
        }
        let stored = match self.services.secret(name).await {
            Ok(Some(stored)) => stored,
            Ok(None) => {
                return Err(HostError::Invalid(format!(
                    "no secret `{name}` is set for queue `{}`",
                    self.queue
                )));
            }
            Err(e) => return Err(self.host_error(e)),
        };
        let Some(key) = &self.env.secrets_key else {
            let message =
                "this host has no secrets key (--secrets-key-file), so it cannot open secrets"
                    .to_string();
            self.service_outage = Some(message.clone());
            return Err(HostError::Unavailable(message));
        };
        // An envelope that does not open (another key, altered) stays that
        // way: refused, not an outage to wait out.
        let secret = secrets::open(key, &self.queue, name, &stored)
            .map_err(|e| HostError::Invalid(format!("secret `{name}`: {e}")))?;
        if let Some(recorder) = &self.env.transcript {
            recorder.note_secret(name, &secret.value);
        }
        if let Some(seen) = &self.env.secrets_seen
            && !seen.admit(name, &secret)
        {
            tracing::warn!(queue = %self.queue, secret = name, "an older setting of a secret was written back; refused");
            return Err(HostError::Invalid(format!(
                "secret `{name}`: the stored value was set before one this host already used (an older one written back); set it again"
            )));
        }
        Ok(secret)
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
        }
    }

    /// The durable wait `wait_id` for `what`, up to `timeout_ms`: its
    /// recorded outcome, or one that already came, or (stopping the guest)
    /// a park until the deadline. The first run that reaches the wait
    /// records it and its deadline; replays keep both.
    async fn wait(
        &mut self,
        wait_id: String,
        what: WaitFor,
        timeout_ms: u64,
    ) -> wasmtime::Result<Result<Option<String>, HostError>> {
        if let Err(e) = Self::check_key("wait id", &wait_id) {
            return Ok(Err(e));
        }
        if timeout_ms > MAX_SLEEP_MS {
            return Ok(Err(HostError::Invalid(format!(
                "a durable wait may last at most a year ({MAX_SLEEP_MS} ms); this one asked for {timeout_ms} ms"
            ))));
        }
        let deadline = match self.services.wait_lookup(&wait_id).await {
            Err(e) => return Ok(Err(self.host_error(e))),
            Ok(Some(WaitState {
                outcome: Some(outcome),
                ..
            })) => return Ok(Ok(outcome.into_option())),
            Ok(Some(WaitState { deadline_ms, .. })) => deadline_ms,
            Ok(None) => {
                let deadline = now_ms().saturating_add(timeout_ms);
                match self.services.wait_begin(&wait_id, &what, deadline).await {
                    Err(e) => return Ok(Err(self.host_error(e))),
                    Ok(Some(outcome)) => return Ok(Ok(outcome.into_option())),
                    Ok(None) => deadline,
                }
            }
        };
        if deadline <= now_ms() {
            return Ok(match self.services.wait_expire(&wait_id).await {
                Ok(outcome) => Ok(outcome.into_option()),
                Err(e) => Err(self.host_error(e)),
            });
        }
        self.suspended = Some((deadline, crate::outcome::ParkedOn::Wait(wait_id)));
        Err(wasmtime::Error::new(Suspend))
    }

    /// An event wait's name and match, checked.
    fn event_wait(
        &self,
        event: String,
        matching: Option<EventMatch>,
    ) -> Result<WaitFor, HostError> {
        if event.is_empty() || event.len() > MAX_EVENT_NAME_BYTES {
            return Err(HostError::Invalid(format!(
                "an event name is 1 to {MAX_EVENT_NAME_BYTES} bytes; this one is {}",
                event.len()
            )));
        }
        let matching = match matching {
            None => None,
            Some(EventMatch { path, value }) => {
                if let Err(e) = airlock_core::json_path::JsonPath::parse(&path) {
                    return Err(HostError::Invalid(format!("match path `{path}`: {e}")));
                }
                if value.len() > MAX_MATCH_VALUE_BYTES {
                    return Err(HostError::Invalid(format!(
                        "the match value is {} bytes, the maximum is {MAX_MATCH_VALUE_BYTES}",
                        value.len()
                    )));
                }
                match serde_json::from_str(&value) {
                    Ok(value) => Some((path, value)),
                    Err(e) => {
                        return Err(HostError::Invalid(format!(
                            "the match value is not JSON text: {e}"
                        )));
                    }
                }
            }
        };
        Ok(WaitFor::Event {
            name: event,
            matching,
        })
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
        Self::check_key("step id", &step_id)?;
        let found = self
            .services
            .step_lookup(&step_id)
            .await
            .map_err(|e| self.host_error(e))?;
        if found.is_none() && self.env.events.is_some() {
            self.step_started = Some((step_id, std::time::SystemTime::now()));
        }
        Ok(found)
    }

    async fn step_record(&mut self, step_id: String, output: String) -> Result<(), HostError> {
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
        if let Some(events) = &self.env.events {
            let end = std::time::SystemTime::now();
            let start = match self.step_started.take() {
                Some((id, at)) if id == step_id => at,
                _ => end,
            };
            events.push(crate::trace::RunEvent {
                name: format!("step {step_id}"),
                kind: crate::trace::EventKind::Step,
                start,
                end,
                attributes: vec![("airlock.step.id", crate::trace::EventValue::Text(step_id))],
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
        self.suspended = Some((wake_at, crate::outcome::ParkedOn::Sleep(step_id)));
        Err(wasmtime::Error::new(Suspend))
    }

    async fn wait_for_event(
        &mut self,
        step_id: String,
        event: String,
        matching: Option<EventMatch>,
        timeout_ms: u64,
    ) -> wasmtime::Result<Result<Option<String>, HostError>> {
        match self.event_wait(event, matching) {
            Ok(what) => self.wait(step_id, what, timeout_ms).await,
            Err(e) => Ok(Err(e)),
        }
    }

    async fn http_refusals(&mut self) -> Vec<HttpRefusal> {
        self.http.refusals()
    }

    async fn wait_token(&mut self, step_id: String) -> Result<String, HostError> {
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
        self.wait(step_id, WaitFor::Token, timeout_ms).await
    }

    async fn children_results(&mut self) -> Result<Vec<ChildResult>, HostError> {
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

impl config::Host for RunState {
    async fn get(&mut self, key: String) -> Option<String> {
        let value = self.env.config.get(&key).cloned();
        if let Some(recorder) = &self.env.transcript {
            recorder.push(crate::transcript::Call::Config {
                key,
                value: value.clone(),
            });
        }
        value
    }

    async fn keys(&mut self) -> Vec<String> {
        self.env.config.keys().cloned().collect()
    }

    async fn secret(&mut self, name: String) -> Result<String, HostError> {
        if let Some(held) = self.grants.lock().ok().and_then(|g| {
            g.iter()
                .find(|g| g.name == name)
                .map(|g| g.placeholder.clone())
        }) {
            return Ok(held);
        }
        let secret = self.open_secret(&name).await?;
        let placeholder = secrets::placeholder();
        if let Some(recorder) = &self.env.transcript {
            recorder.note_secret(&name, &placeholder);
        }
        if let Ok(mut grants) = self.grants.lock() {
            grants.push(Grant {
                name,
                placeholder: placeholder.clone(),
                secret,
            });
        }
        Ok(placeholder)
    }

    async fn reveal_secret(&mut self, name: String) -> Result<String, HostError> {
        let secret = self.open_secret(&name).await?;
        if !secret.policy.reveal {
            return Err(HostError::Invalid(format!(
                "secret `{name}` is not set with `reveal`: a handler gets its placeholder (config.secret), not its value"
            )));
        }
        if let Ok(mut sink) = self.logs.lock() {
            sink.add_redaction(&name, &secret.value);
        }
        Ok(secret.value.to_string())
    }
}

/// Implements an older contract's `context` by forwarding every function
/// to the current one: its functions are a subset of today's (`$more`: the
/// ones a later version added, beyond 0.1.0's).
macro_rules! forward_context {
    ([$($host:tt)+] { $($more:tt)* }) => {
        impl $($host)+ for RunState {
            $($more)*

            async fn report_progress(&mut self, value: Progress) {
                context::Host::report_progress(self, value).await
            }

            async fn log(&mut self, level: LogLevel, message: String) {
                context::Host::log(self, level, message).await
            }

            async fn step_lookup(&mut self, step_id: String) -> Result<Option<String>, HostError> {
                context::Host::step_lookup(self, step_id).await
            }

            async fn step_record(&mut self, step_id: String, output: String) -> Result<(), HostError> {
                context::Host::step_record(self, step_id, output).await
            }

            async fn sleep_until(
                &mut self,
                step_id: String,
                wake_at_ms: u64,
            ) -> wasmtime::Result<Result<(), HostError>> {
                context::Host::sleep_until(self, step_id, wake_at_ms).await
            }

            async fn children_results(&mut self) -> Result<Vec<ChildResult>, HostError> {
                context::Host::children_results(self).await
            }

            async fn kv_get(&mut self, key: String) -> Result<Option<String>, HostError> {
                context::Host::kv_get(self, key).await
            }

            async fn kv_set(
                &mut self,
                key: String,
                value: String,
                ttl_ms: Option<u64>,
            ) -> Result<(), HostError> {
                context::Host::kv_set(self, key, value, ttl_ms).await
            }

            async fn kv_set_if_absent(
                &mut self,
                key: String,
                value: String,
                ttl_ms: Option<u64>,
            ) -> Result<bool, HostError> {
                context::Host::kv_set_if_absent(self, key, value, ttl_ms).await
            }

            async fn kv_delete(&mut self, key: String) -> Result<bool, HostError> {
                context::Host::kv_delete(self, key).await
            }

            async fn report_panic(&mut self, message: String) {
                context::Host::report_panic(self, message).await
            }
        }
    };
}

// Handlers built against `airlock:job@0.1.0` import `context` under its
// old name; its functions are the current ones.
forward_context!([v0_1::airlock::job0_1_0::context::Host] {});

// Handlers built against `airlock:job@0.2.0` import `context` (without
// the waits) and `config` under their old names; their functions are the
// current ones.
forward_context!([v0_2::airlock::job0_2_0::context::Host] {});

// Handlers built against `airlock:job@0.3.0` import `context` (without
// `http-refusals`) and `config` under their old names.
forward_context!([v0_3::airlock::job0_3_0::context::Host] {
    async fn wait_for_event(
        &mut self,
        step_id: String,
        event: String,
        matching: Option<EventMatch>,
        timeout_ms: u64,
    ) -> wasmtime::Result<Result<Option<String>, HostError>> {
        context::Host::wait_for_event(self, step_id, event, matching, timeout_ms).await
    }

    async fn wait_token(&mut self, step_id: String) -> Result<String, HostError> {
        context::Host::wait_token(self, step_id).await
    }

    async fn wait_for_token(
        &mut self,
        step_id: String,
        timeout_ms: u64,
    ) -> wasmtime::Result<Result<Option<String>, HostError>> {
        context::Host::wait_for_token(self, step_id, timeout_ms).await
    }
});

/// Implements an older contract's `config` (the same functions since
/// 0.2.0) by forwarding to the current one.
macro_rules! forward_config {
    ($($host:tt)+) => {
        impl $($host)+ for RunState {
            async fn get(&mut self, key: String) -> Option<String> {
                config::Host::get(self, key).await
            }

            async fn keys(&mut self) -> Vec<String> {
                config::Host::keys(self).await
            }

            async fn secret(&mut self, name: String) -> Result<String, HostError> {
                config::Host::secret(self, name).await
            }

            async fn reveal_secret(&mut self, name: String) -> Result<String, HostError> {
                config::Host::reveal_secret(self, name).await
            }
        }
    };
}

forward_config!(v0_3::airlock::job0_3_0::config::Host);

forward_config!(v0_2::airlock::job0_2_0::config::Host);
