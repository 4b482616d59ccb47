//! Run transcripts: everything a run received from outside its sandbox,
//! in the order it asked — each durable call and its answer (steps,
//! sleeps, waits, KV, children, secrets by name), each configuration read,
//! each outbound HTTP request with its response, each wall-clock reading
//! ([`RunClock`]; the monotonic clock is not recorded) — and how the run
//! ended.
//! A binding that records transcripts gets one per run
//! ([`crate::RunEnv::transcript`]); `airlock replay` answers a new handler
//! version's calls from them (the host crate's `replay`).
//!
//! What a transcript never holds: a secret's value (a secret read is its
//! name and whether it is set; an HTTP request is recorded as the guest
//! wrote it, with its placeholders named `[secret:NAME]`, before the host
//! fills them in), a wait token (a credential: wherever it appears, even
//! in a request body, it is `[wait-token:ID]`), or a revealed value (the
//! sandbox's redaction runs over every text recorded, as over logs). What
//! it holds is bounded: each HTTP body up to [`MAX_BODY_BYTES`] (with its
//! full length), each header list to [`MAX_HEADERS`], and the
//! whole transcript to about [`MAX_TRANSCRIPT_BYTES`] of JSON — past that
//! no further call is kept and `truncated` says so (a replay then stops
//! there).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::outcome::{Completion, ParkedOn};
use crate::services::{
    ChildResult, HostServices, Progress, ServiceError, WaitFor, WaitOutcome, WaitState,
};

/// Most JSON bytes of calls one transcript keeps.
pub const MAX_TRANSCRIPT_BYTES: usize = 256 << 10;
/// Most bytes of one HTTP body kept.
pub const MAX_BODY_BYTES: usize = 16 << 10;
/// Most headers of one request or response kept.
pub const MAX_HEADERS: usize = 64;
/// Most wall-clock readings one transcript keeps.
pub const MAX_CLOCK_READINGS: usize = 1000;
/// What a transcript keeps of a wait token.
pub const REDACTED: &str = "<redacted>";

/// One run's transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Transcript {
    /// The job as the run received it.
    pub job: RecordedJob,
    /// When the run started, ms since the epoch.
    pub started_at: u64,
    /// Every call, in order.
    pub calls: Vec<Call>,
    /// The wall-clock readings the guest took, in order, ns since the
    /// epoch (the first [`MAX_CLOCK_READINGS`]).
    #[serde(default)]
    pub clock: Vec<u64>,
    /// Whether calls past [`MAX_TRANSCRIPT_BYTES`] were left out.
    #[serde(default)]
    pub truncated: bool,
    /// How the run ended.
    pub outcome: RecordedOutcome,
}

/// The job a run received.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct RecordedJob {
    /// Job id.
    pub id: String,
    /// Queue.
    pub queue: String,
    /// Job name.
    pub name: String,
    /// Its data, JSON text.
    pub data: String,
    /// The attempt, from 1.
    pub attempt: u32,
    /// Attempts allowed.
    pub max_attempts: u32,
    /// Enqueued at, ms since the epoch.
    pub enqueued_at: u64,
    /// Flow parent as `(queue, id)`.
    #[serde(default)]
    pub parent: Option<(String, String)>,
}

impl From<&airlock_core::run::JobInput> for RecordedJob {
    fn from(job: &airlock_core::run::JobInput) -> Self {
        RecordedJob {
            id: job.id.clone(),
            queue: job.queue.clone(),
            name: job.name.clone(),
            data: job.data.clone(),
            attempt: job.attempt,
            max_attempts: job.max_attempts,
            enqueued_at: job.enqueued_at_ms,
            parent: job.parent.clone(),
        }
    }
}

impl RecordedJob {
    /// The job input it records.
    pub fn input(&self) -> airlock_core::run::JobInput {
        airlock_core::run::JobInput {
            id: self.id.clone(),
            queue: self.queue.clone(),
            name: self.name.clone(),
            data: self.data.clone(),
            attempt: self.attempt,
            max_attempts: self.max_attempts,
            enqueued_at_ms: self.enqueued_at,
            parent: self.parent.clone(),
        }
    }
}

/// How a recorded run ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "end", rename_all = "camelCase")]
pub enum RecordedOutcome {
    /// It returned this JSON text.
    Completed {
        /// The output.
        output: String,
    },
    /// It failed.
    Failed {
        /// The failure kind (`guest_retry`, `fuel_exhausted`...).
        kind: String,
        /// Why.
        reason: String,
    },
    /// A durable sleep parked it.
    Slept {
        /// The sleep's id.
        id: String,
    },
    /// A durable wait parked it.
    Waited {
        /// The wait's id.
        id: String,
    },
}

impl From<&Completion> for RecordedOutcome {
    fn from(completion: &Completion) -> Self {
        match completion {
            Completion::Completed(output) => RecordedOutcome::Completed {
                output: output.to_string(),
            },
            Completion::Failed(f) => RecordedOutcome::Failed {
                kind: f.kind.as_str().to_string(),
                reason: f.message.clone(),
            },
            Completion::Suspended {
                on: ParkedOn::Sleep(id),
                ..
            } => RecordedOutcome::Slept { id: id.clone() },
            Completion::Suspended {
                on: ParkedOn::Wait(id),
                ..
            } => RecordedOutcome::Waited { id: id.clone() },
        }
    }
}

/// A service's answer: a value or an error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub enum Answer<T> {
    /// The value.
    Ok(T),
    /// The error, as the guest saw it.
    Error(RecordedError),
}

/// A [`ServiceError`] as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct RecordedError {
    /// `unsupported`, `invalid`, `limitExceeded`, `unavailable`.
    pub kind: String,
    /// Its message.
    pub message: String,
}

impl<T> Answer<T> {
    /// The answer of a service call.
    pub fn of<U, F: FnOnce(&U) -> T>(result: &Result<U, ServiceError>, f: F) -> Answer<T> {
        match result {
            Ok(value) => Answer::Ok(f(value)),
            Err(e) => Answer::Error(RecordedError::of(e)),
        }
    }

    /// The result it records.
    pub fn result(self) -> Result<T, ServiceError> {
        match self {
            Answer::Ok(v) => Ok(v),
            Answer::Error(e) => Err(e.error()),
        }
    }
}

impl RecordedError {
    /// Records `e`.
    pub fn of(e: &ServiceError) -> RecordedError {
        let (kind, message) = match e {
            ServiceError::Unsupported(m) => ("unsupported", m),
            ServiceError::Invalid(m) => ("invalid", m),
            ServiceError::LimitExceeded(m) => ("limitExceeded", m),
            ServiceError::Unavailable(m) => ("unavailable", m),
        };
        RecordedError {
            kind: kind.into(),
            message: message.clone(),
        }
    }

    /// The error it records.
    pub fn error(&self) -> ServiceError {
        let m = self.message.clone();
        match self.kind.as_str() {
            "unsupported" => ServiceError::Unsupported(m),
            "invalid" => ServiceError::Invalid(m),
            "limitExceeded" => ServiceError::LimitExceeded(m),
            _ => ServiceError::Unavailable(m),
        }
    }
}

/// What a wait waits for, as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "for", rename_all = "camelCase")]
pub enum RecordedWaitFor {
    /// An event.
    Event {
        /// Its name.
        name: String,
        /// The JSON path its data must hold `value` at.
        #[serde(default)]
        path: Option<String>,
        /// That value.
        #[serde(default)]
        value: Option<serde_json::Value>,
    },
    /// The wait's token.
    Token,
}

impl From<&WaitFor> for RecordedWaitFor {
    fn from(what: &WaitFor) -> Self {
        match what {
            WaitFor::Event { name, matching } => RecordedWaitFor::Event {
                name: name.clone(),
                path: matching.as_ref().map(|(p, _)| p.clone()),
                value: matching.as_ref().map(|(_, v)| v.clone()),
            },
            WaitFor::Token => RecordedWaitFor::Token,
        }
    }
}

/// A wait's outcome as recorded: what came (JSON text), or `None` for a
/// timeout.
pub type RecordedWaitOutcome = Option<String>;

/// Converts a wait outcome for a transcript.
pub fn recorded_outcome(outcome: &WaitOutcome) -> RecordedWaitOutcome {
    match outcome {
        WaitOutcome::Came(value) => Some(value.clone()),
        WaitOutcome::TimedOut => None,
    }
}

/// The wait outcome a transcript records.
pub fn wait_outcome(recorded: RecordedWaitOutcome) -> WaitOutcome {
    match recorded {
        Some(value) => WaitOutcome::Came(value),
        None => WaitOutcome::TimedOut,
    }
}

/// A wait's state as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct RecordedWaitState {
    /// Its deadline, ms since the epoch.
    pub deadline: u64,
    /// Whether it has an outcome, and which.
    pub outcome: Option<RecordedWaitOutcome>,
}

impl From<&WaitState> for RecordedWaitState {
    fn from(state: &WaitState) -> Self {
        RecordedWaitState {
            deadline: state.deadline_ms,
            outcome: state.outcome.as_ref().map(recorded_outcome),
        }
    }
}

impl RecordedWaitState {
    /// The wait state it records.
    pub fn state(self) -> WaitState {
        WaitState {
            deadline_ms: self.deadline,
            outcome: self.outcome.map(wait_outcome),
        }
    }
}

/// A flow child's outcome as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct RecordedChild {
    /// Its queue.
    pub queue: String,
    /// Its id.
    pub id: String,
    /// Its output (JSON text), when it completed.
    #[serde(default)]
    pub output: Option<String>,
    /// Why it failed, when it did.
    #[serde(default)]
    pub failed: Option<String>,
}

impl From<&ChildResult> for RecordedChild {
    fn from(child: &ChildResult) -> Self {
        RecordedChild {
            queue: child.queue.clone(),
            id: child.id.clone(),
            output: child.outcome.as_ref().ok().cloned(),
            failed: child.outcome.as_ref().err().cloned(),
        }
    }
}

impl RecordedChild {
    /// The child result it records.
    pub fn result(self) -> ChildResult {
        ChildResult {
            queue: self.queue,
            id: self.id,
            outcome: match (self.output, self.failed) {
                (Some(output), _) => Ok(output),
                (None, failed) => Err(failed.unwrap_or_default()),
            },
        }
    }
}

/// An HTTP body as recorded: its first [`MAX_BODY_BYTES`] as UTF-8 text
/// (lossy: bytes that are not UTF-8 become U+FFFD) and its full length.
/// No hash of the whole body is kept: one over a body holding a weak
/// secret would let a reader guess it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct RecordedBody {
    /// The body's first bytes as UTF-8 text (lossy when not text).
    pub text: String,
    /// Its full length, bytes.
    pub len: u64,
    /// Whether `text` holds less than the whole body.
    #[serde(default)]
    pub cut: bool,
}

impl RecordedBody {
    /// Records `bytes` (the whole body).
    pub fn of(bytes: &[u8]) -> RecordedBody {
        let mut tee = BodyTee::default();
        tee.push(bytes);
        tee.body()
    }
}

/// A body read chunk by chunk: its first [`MAX_BODY_BYTES`] and its
/// length (nothing more is held, whatever its size).
#[derive(Debug, Default)]
struct BodyTee {
    kept: Vec<u8>,
    len: u64,
}

impl BodyTee {
    fn push(&mut self, chunk: &[u8]) {
        let room = MAX_BODY_BYTES.saturating_sub(self.kept.len());
        self.kept.extend_from_slice(&chunk[..chunk.len().min(room)]);
        self.len += chunk.len() as u64;
    }

    fn body(&self) -> RecordedBody {
        RecordedBody {
            text: String::from_utf8_lossy(&self.kept).into_owned(),
            len: self.len,
            cut: (self.kept.len() as u64) < self.len,
        }
    }
}

/// An HTTP response as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct RecordedResponse {
    /// Its status.
    pub status: u16,
    /// Its headers (the first [`MAX_HEADERS`]).
    pub headers: Vec<(String, String)>,
    /// Its body as the guest read it (up to where it stopped reading).
    pub body: RecordedBody,
}

/// One call a run made, with its answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "call", rename_all = "camelCase")]
pub enum Call {
    /// `step-lookup`.
    StepLookup {
        /// The step.
        id: String,
        /// Its recorded result, if any.
        answer: Answer<Option<String>>,
    },
    /// `step-record`.
    StepRecord {
        /// The step.
        id: String,
        /// The result the guest recorded (redacted).
        output: String,
        /// The store's error, if it failed.
        #[serde(default)]
        error: Option<RecordedError>,
    },
    /// A sleep's lookup.
    SleepLookup {
        /// The sleep.
        id: String,
        /// Its recorded wake-up time, if any.
        answer: Answer<Option<u64>>,
    },
    /// A sleep's record.
    SleepRecord {
        /// The sleep.
        id: String,
        /// Its wake-up time.
        #[serde(rename = "wakeAt")]
        wake_at: u64,
        /// The store's error, if it failed.
        #[serde(default)]
        error: Option<RecordedError>,
    },
    /// A wait's lookup.
    WaitLookup {
        /// The wait.
        id: String,
        /// Its state, if it was reached before.
        answer: Answer<Option<RecordedWaitState>>,
    },
    /// A wait's start.
    WaitBegin {
        /// The wait.
        id: String,
        /// What it waits for.
        what: RecordedWaitFor,
        /// Its deadline.
        deadline: u64,
        /// An outcome that came already.
        answer: Answer<Option<RecordedWaitOutcome>>,
    },
    /// A wait past its deadline.
    WaitExpire {
        /// The wait.
        id: String,
        /// The outcome that stands.
        answer: Answer<RecordedWaitOutcome>,
    },
    /// A wait's token (never recorded: [`REDACTED`]; elsewhere in the
    /// transcript it is `[wait-token:ID]`).
    WaitToken {
        /// The wait.
        id: String,
        /// `<redacted>`, or the error.
        answer: Answer<String>,
    },
    /// The flow children's outcomes.
    ChildrenResults {
        /// Them.
        answer: Answer<Vec<RecordedChild>>,
    },
    /// A KV read.
    KvGet {
        /// The key.
        key: String,
        /// Its value.
        answer: Answer<Option<String>>,
    },
    /// A KV write.
    KvSet {
        /// The key.
        key: String,
        /// The value written (redacted).
        value: String,
        /// Its time to live, ms.
        #[serde(rename = "ttlMs")]
        ttl_ms: Option<u64>,
        /// Whether only if absent.
        #[serde(rename = "onlyIfAbsent")]
        only_if_absent: bool,
        /// Whether it was written.
        answer: Answer<bool>,
    },
    /// A KV delete.
    KvDelete {
        /// The key.
        key: String,
        /// Whether it existed.
        answer: Answer<bool>,
    },
    /// A secret's lookup: its name and whether it is set, never its value.
    Secret {
        /// The secret.
        name: String,
        /// Whether it is set.
        answer: Answer<bool>,
    },
    /// A configuration read.
    Config {
        /// The key.
        key: String,
        /// Its value.
        value: Option<String>,
    },
    /// A progress report.
    Progress {
        /// The value.
        value: serde_json::Value,
    },
    /// An outbound HTTP request, as the guest wrote it.
    Http {
        /// Its method.
        method: String,
        /// Its URL.
        url: String,
        /// Its headers (the first [`MAX_HEADERS`]; placeholders unfilled).
        headers: Vec<(String, String)>,
        /// Its body.
        body: RecordedBody,
        /// The response, when one came.
        #[serde(default)]
        response: Option<RecordedResponse>,
        /// Why there was none (a refusal, a transport error).
        #[serde(default)]
        error: Option<String>,
    },
}

impl Call {
    /// The call's name and what it names (a step's, sleep's or wait's id,
    /// a KV key, a URL), for reports.
    pub fn label(&self) -> String {
        match self {
            Call::StepLookup { id, .. } => format!("step lookup `{id}`"),
            Call::StepRecord { id, .. } => format!("step `{id}`"),
            Call::SleepLookup { id, .. } => format!("sleep lookup `{id}`"),
            Call::SleepRecord { id, .. } => format!("sleep `{id}`"),
            Call::WaitLookup { id, .. } => format!("wait lookup `{id}`"),
            Call::WaitBegin { id, .. } => format!("wait `{id}`"),
            Call::WaitExpire { id, .. } => format!("wait expiry `{id}`"),
            Call::WaitToken { id, .. } => format!("wait token `{id}`"),
            Call::ChildrenResults { .. } => "children results".into(),
            Call::KvGet { key, .. } => format!("kv get `{key}`"),
            Call::KvSet { key, .. } => format!("kv set `{key}`"),
            Call::KvDelete { key, .. } => format!("kv delete `{key}`"),
            Call::Secret { name, .. } => format!("secret `{name}`"),
            Call::Config { key, .. } => format!("config `{key}`"),
            Call::Progress { .. } => "progress".into(),
            Call::Http { method, url, .. } => format!("{method} {url}"),
        }
    }
}

/// A run's transcript while it runs, written from the guest's calls and
/// the HTTP hooks (any thread).
#[derive(Debug, Default)]
pub struct TranscriptRecorder {
    inner: Mutex<Recording>,
}

#[derive(Debug, Default)]
struct Recording {
    calls: Vec<Slot>,
    bytes: usize,
    truncated: bool,
    /// The wait tokens handed out, by wait id: replaced everywhere by
    /// `[wait-token:ID]` (a token is a credential: whoever holds it
    /// decides the wait).
    tokens: Vec<(String, String)>,
    /// The secrets the run opened, by name: their values are replaced
    /// everywhere by `[secret:NAME]` (a service may echo one back).
    secrets: Vec<(String, zeroize::Zeroizing<String>)>,
    /// The wall-clock readings so far.
    clock: Vec<u64>,
}

/// A call, or an HTTP request whose response body is still being read.
#[derive(Debug)]
enum Slot {
    Done(Call),
    Http(Arc<Mutex<Call>>, Arc<Mutex<BodyTee>>),
}

impl TranscriptRecorder {
    /// Keeps `call`, unless the transcript is full.
    pub fn push(&self, call: Call) {
        let size = serde_json::to_string(&call).map_or(0, |t| t.len());
        let mut r = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if !r.admit(size) {
            return;
        }
        r.calls.push(Slot::Done(call));
    }

    /// Notes a wall-clock reading the guest took (ns since the epoch).
    pub fn note_clock(&self, ns: u64) {
        let mut r = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if r.clock.len() < MAX_CLOCK_READINGS {
            r.clock.push(ns);
        }
    }

    /// Notes the token handed out for wait `id`, so no part of the
    /// transcript keeps it (see [`Self::finish`]).
    pub fn note_token(&self, id: &str, token: &str) {
        let mut r = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        r.tokens.push((id.to_string(), token.to_string()));
    }

    /// Notes the value of secret `name`, which the run opened, or the
    /// placeholder it got for it, so no part of the transcript keeps
    /// either (see [`Self::finish`]): both become `[secret:NAME]`.
    pub fn note_secret(&self, name: &str, value: &str) {
        if value.is_empty() {
            return;
        }
        let mut r = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        r.secrets
            .push((name.to_string(), zeroize::Zeroizing::new(value.to_string())));
    }

    /// Keeps an HTTP request (`Call::Http`); the returned handles fill in
    /// its response and collect the body the guest reads. `None` when the
    /// transcript is full.
    pub fn push_http(&self, call: Call) -> Option<HttpSlot> {
        let size = serde_json::to_string(&call).map_or(0, |t| t.len()) + MAX_BODY_BYTES;
        let mut r = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if !r.admit(size) {
            return None;
        }
        let call = Arc::new(Mutex::new(call));
        let body = Arc::new(Mutex::new(BodyTee::default()));
        r.calls.push(Slot::Http(call.clone(), body.clone()));
        Some(HttpSlot { call, body })
    }

    /// The transcript of the run: its calls so far (each HTTP response
    /// body as read until now), then `outcome`. `redact` runs over every
    /// text recorded, after each wait token handed out is replaced by
    /// `[wait-token:ID]`, and each secret value the run opened and each
    /// placeholder it got by `[secret:NAME]`.
    pub fn finish(
        &self,
        job: RecordedJob,
        started_at: u64,
        outcome: RecordedOutcome,
        redact: &dyn Fn(String) -> String,
    ) -> Transcript {
        let r = std::mem::take(&mut *self.inner.lock().unwrap_or_else(|p| p.into_inner()));
        let calls = r
            .calls
            .into_iter()
            .map(|slot| match slot {
                Slot::Done(call) => call,
                Slot::Http(call, body) => {
                    let mut call = call.lock().unwrap_or_else(|p| p.into_inner()).clone();
                    if let Call::Http {
                        response: Some(response),
                        ..
                    } = &mut call
                    {
                        response.body = body.lock().unwrap_or_else(|p| p.into_inner()).body();
                    }
                    call
                }
            })
            .collect();
        let transcript = Transcript {
            job,
            started_at,
            clock: r.clock,
            calls,
            truncated: r.truncated,
            outcome,
        };
        // Every text through the run's redaction: a value the guest
        // revealed never stays in what a reader can fetch. Each string is
        // redacted as itself, not as escaped JSON.
        let (tokens, secrets) = (r.tokens, r.secrets);
        let redact = |text: String| {
            let mut text = text;
            for (id, token) in &tokens {
                if text.contains(token.as_str()) {
                    text = text.replace(token.as_str(), &format!("[wait-token:{id}]"));
                }
            }
            for (name, value) in &secrets {
                if text.contains(value.as_str()) {
                    text = text.replace(value.as_str(), &format!("[secret:{name}]"));
                }
            }
            redact(text)
        };
        match serde_json::to_value(&transcript) {
            Ok(mut value) => {
                redact_strings(&mut value, &redact);
                serde_json::from_value(value).unwrap_or(transcript)
            }
            Err(_) => transcript,
        }
    }
}

fn redact_strings(value: &mut serde_json::Value, redact: &dyn Fn(String) -> String) {
    match value {
        serde_json::Value::String(text) => *text = redact(std::mem::take(text)),
        serde_json::Value::Array(items) => {
            for item in items {
                redact_strings(item, redact);
            }
        }
        serde_json::Value::Object(fields) => {
            for item in fields.values_mut() {
                redact_strings(item, redact);
            }
        }
        _ => {}
    }
}

impl Recording {
    fn admit(&mut self, size: usize) -> bool {
        if self.truncated || self.bytes + size > MAX_TRANSCRIPT_BYTES {
            self.truncated = true;
            return false;
        }
        self.bytes += size;
        true
    }
}

/// Where an HTTP request's response goes once it comes.
#[derive(Debug, Clone)]
pub struct HttpSlot {
    call: Arc<Mutex<Call>>,
    body: Arc<Mutex<BodyTee>>,
}

impl HttpSlot {
    /// The request's body, once the host read it.
    pub fn request_body(&self, recorded: RecordedBody) {
        if let Call::Http { body, .. } = &mut *self.call.lock().unwrap_or_else(|p| p.into_inner()) {
            *body = recorded;
        }
    }

    /// The response's status and headers came.
    pub fn response(&self, status: u16, headers: Vec<(String, String)>) {
        if let Call::Http { response, .. } =
            &mut *self.call.lock().unwrap_or_else(|p| p.into_inner())
        {
            *response = Some(RecordedResponse {
                status,
                headers,
                body: RecordedBody::of(&[]),
            });
        }
    }

    /// No response: why.
    pub fn failed(&self, why: String) {
        if let Call::Http { error, .. } = &mut *self.call.lock().unwrap_or_else(|p| p.into_inner())
        {
            *error = Some(why);
        }
    }

    /// A chunk of the response body reached the guest.
    pub fn body_chunk(&self, chunk: &[u8]) {
        self.body
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(chunk);
    }
}

/// [`HostServices`] that records every call and its answer into a
/// transcript, then answers as `inner` did.
pub struct RecordingServices {
    /// The services answering.
    pub inner: Box<dyn HostServices>,
    /// Where the calls go.
    pub recorder: Arc<TranscriptRecorder>,
}

#[async_trait::async_trait]
impl HostServices for RecordingServices {
    fn progress(&mut self, value: Progress) {
        self.recorder.push(Call::Progress {
            value: value.to_json(),
        });
        self.inner.progress(value);
    }

    async fn step_lookup(&mut self, step_id: &str) -> Result<Option<String>, ServiceError> {
        let result = self.inner.step_lookup(step_id).await;
        self.recorder.push(Call::StepLookup {
            id: step_id.into(),
            answer: Answer::of(&result, Clone::clone),
        });
        result
    }

    async fn step_record(&mut self, step_id: &str, output: &str) -> Result<(), ServiceError> {
        let result = self.inner.step_record(step_id, output).await;
        self.recorder.push(Call::StepRecord {
            id: step_id.into(),
            output: output.into(),
            error: result.as_ref().err().map(RecordedError::of),
        });
        result
    }

    async fn sleep_lookup(&mut self, sleep_id: &str) -> Result<Option<u64>, ServiceError> {
        let result = self.inner.sleep_lookup(sleep_id).await;
        self.recorder.push(Call::SleepLookup {
            id: sleep_id.into(),
            answer: Answer::of(&result, Clone::clone),
        });
        result
    }

    async fn sleep_record(&mut self, sleep_id: &str, wake_at_ms: u64) -> Result<(), ServiceError> {
        let result = self.inner.sleep_record(sleep_id, wake_at_ms).await;
        self.recorder.push(Call::SleepRecord {
            id: sleep_id.into(),
            wake_at: wake_at_ms,
            error: result.as_ref().err().map(RecordedError::of),
        });
        result
    }

    async fn wait_lookup(&mut self, wait_id: &str) -> Result<Option<WaitState>, ServiceError> {
        let result = self.inner.wait_lookup(wait_id).await;
        self.recorder.push(Call::WaitLookup {
            id: wait_id.into(),
            answer: Answer::of(&result, |s| s.as_ref().map(RecordedWaitState::from)),
        });
        result
    }

    async fn wait_begin(
        &mut self,
        wait_id: &str,
        what: &WaitFor,
        deadline_ms: u64,
    ) -> Result<Option<WaitOutcome>, ServiceError> {
        let result = self.inner.wait_begin(wait_id, what, deadline_ms).await;
        self.recorder.push(Call::WaitBegin {
            id: wait_id.into(),
            what: what.into(),
            deadline: deadline_ms,
            answer: Answer::of(&result, |o| o.as_ref().map(recorded_outcome)),
        });
        result
    }

    async fn wait_expire(&mut self, wait_id: &str) -> Result<WaitOutcome, ServiceError> {
        let result = self.inner.wait_expire(wait_id).await;
        self.recorder.push(Call::WaitExpire {
            id: wait_id.into(),
            answer: Answer::of(&result, recorded_outcome),
        });
        result
    }

    async fn wait_token(&mut self, wait_id: &str) -> Result<String, ServiceError> {
        let result = self.inner.wait_token(wait_id).await;
        if let Ok(token) = &result {
            self.recorder.note_token(wait_id, token);
        }
        self.recorder.push(Call::WaitToken {
            id: wait_id.into(),
            answer: Answer::of(&result, |_| REDACTED.to_string()),
        });
        result
    }

    async fn children_results(&mut self) -> Result<Vec<ChildResult>, ServiceError> {
        let result = self.inner.children_results().await;
        self.recorder.push(Call::ChildrenResults {
            answer: Answer::of(&result, |c| c.iter().map(RecordedChild::from).collect()),
        });
        result
    }

    async fn kv_get(&mut self, key: &str) -> Result<Option<String>, ServiceError> {
        let result = self.inner.kv_get(key).await;
        self.recorder.push(Call::KvGet {
            key: key.into(),
            answer: Answer::of(&result, Clone::clone),
        });
        result
    }

    async fn kv_set(
        &mut self,
        key: &str,
        value: &str,
        ttl: Option<Duration>,
        only_if_absent: bool,
    ) -> Result<bool, ServiceError> {
        let result = self.inner.kv_set(key, value, ttl, only_if_absent).await;
        self.recorder.push(Call::KvSet {
            key: key.into(),
            value: value.into(),
            ttl_ms: ttl.map(|t| t.as_millis() as u64),
            only_if_absent,
            answer: Answer::of(&result, |w| *w),
        });
        result
    }

    async fn kv_delete(&mut self, key: &str) -> Result<bool, ServiceError> {
        let result = self.inner.kv_delete(key).await;
        self.recorder.push(Call::KvDelete {
            key: key.into(),
            answer: Answer::of(&result, |d| *d),
        });
        result
    }

    async fn secret(&mut self, name: &str) -> Result<Option<String>, ServiceError> {
        let result = self.inner.secret(name).await;
        self.recorder.push(Call::Secret {
            name: name.into(),
            answer: Answer::of(&result, Option::is_some),
        });
        result
    }
}

/// Answers a run's outbound requests instead of the network: a replay
/// (`RunEnv::http_answers`). Each request comes as the guest wrote it —
/// method, URL, headers and body with secret placeholders named
/// (`[secret:NAME]`) — and gets a response, or the reason it has none
/// (the guest sees a transport error).
pub trait HttpAnswers: Send + Sync + std::fmt::Debug {
    /// The response to one request.
    fn answer(
        &self,
        method: &str,
        url: &str,
        headers: &[(String, String)],
        body: &RecordedBody,
    ) -> Result<RecordedResponse, String>;
}

/// A run's wall clock (`wasi:clocks/wall-clock`), as the sandbox gives it
/// to a guest: the real one, noted into the run's transcript when it
/// records one, or — in a replay — the recorded run's readings in order,
/// then the real clock once they run out. One per instance; the mode is
/// set per job ([`ClockMode`]).
#[derive(Clone, Default)]
pub struct RunClock {
    mode: Arc<Mutex<ClockMode>>,
}

/// What a [`RunClock`] answers with.
#[derive(Default)]
pub enum ClockMode {
    /// The real clock.
    #[default]
    Real,
    /// The real clock, each reading noted in the transcript.
    Recording(Arc<TranscriptRecorder>),
    /// A recorded run's readings (ns), in order, then the real clock.
    Replaying(std::collections::VecDeque<u64>),
}

impl RunClock {
    /// Sets what the clock answers with for the job starting now.
    pub fn set(&self, mode: ClockMode) {
        *self.mode.lock().unwrap_or_else(|p| p.into_inner()) = mode;
    }
}

fn real_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

impl wasmtime_wasi::HostWallClock for RunClock {
    fn resolution(&self) -> Duration {
        Duration::from_nanos(1)
    }

    fn now(&self) -> Duration {
        let mut mode = self.mode.lock().unwrap_or_else(|p| p.into_inner());
        let ns = match &mut *mode {
            ClockMode::Real => real_ns(),
            ClockMode::Recording(recorder) => {
                let ns = real_ns();
                recorder.note_clock(ns);
                ns
            }
            ClockMode::Replaying(readings) => readings.pop_front().unwrap_or_else(real_ns),
        };
        Duration::from_nanos(ns)
    }
}

/// Headers as recorded: the first [`MAX_HEADERS`], values as text.
pub fn recorded_headers(headers: &http::HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .take(MAX_HEADERS)
        .map(|(name, value)| {
            (
                name.as_str().to_string(),
                String::from_utf8_lossy(value.as_bytes()).into_owned(),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job() -> RecordedJob {
        RecordedJob {
            id: "1".into(),
            queue: "q".into(),
            name: "n".into(),
            data: "{}".into(),
            attempt: 1,
            max_attempts: 1,
            enqueued_at: 0,
            parent: None,
        }
    }

    #[test]
    fn a_transcript_stops_keeping_calls_at_its_cap_and_says_so() {
        let recorder = TranscriptRecorder::default();
        let big = "x".repeat(10_000);
        for n in 0..100 {
            recorder.push(Call::StepRecord {
                id: format!("s{n}"),
                output: big.clone(),
                error: None,
            });
        }
        let t = recorder.finish(
            job(),
            0,
            RecordedOutcome::Completed { output: "1".into() },
            &|t| t,
        );
        assert!(t.truncated);
        assert!(
            t.calls.len() < 100 && t.calls.len() > 20,
            "{}",
            t.calls.len()
        );
        assert!(serde_json::to_string(&t).unwrap().len() < MAX_TRANSCRIPT_BYTES + 4096);
    }

    #[test]
    fn a_response_body_is_kept_up_to_its_cap_with_its_length() {
        let recorder = TranscriptRecorder::default();
        let slot = recorder
            .push_http(Call::Http {
                method: "GET".into(),
                url: "http://x/".into(),
                headers: vec![],
                body: RecordedBody::of(b""),
                response: None,
                error: None,
            })
            .unwrap();
        slot.response(200, vec![("a".into(), "b".into())]);
        slot.body_chunk(&vec![b'y'; MAX_BODY_BYTES + 10]);
        let t = recorder.finish(
            job(),
            0,
            RecordedOutcome::Completed { output: "1".into() },
            &|t| t.replace("secret-value", "<secret>"),
        );
        let Call::Http {
            response: Some(r), ..
        } = &t.calls[0]
        else {
            panic!("{t:?}")
        };
        assert_eq!(
            (r.status, r.body.len, r.body.cut),
            (200, MAX_BODY_BYTES as u64 + 10, true)
        );
        assert_eq!(r.body.text.len(), MAX_BODY_BYTES);
    }

    #[test]
    fn every_text_goes_through_the_redaction() {
        let recorder = TranscriptRecorder::default();
        recorder.push(Call::KvGet {
            key: "k".into(),
            answer: Answer::Ok(Some("the secret-value here".into())),
        });
        let t = recorder.finish(
            job(),
            0,
            RecordedOutcome::Completed {
                output: "\"secret-value\"".into(),
            },
            &|t| t.replace("secret-value", "<secret>"),
        );
        let text = serde_json::to_string(&t).unwrap();
        assert!(!text.contains("secret-value"), "{text}");
    }
}
