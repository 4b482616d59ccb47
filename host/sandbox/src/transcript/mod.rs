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
//!
//! A batch run (`run-batch`) has one transcript for all its jobs: `job` is
//! its first job, `outcome` the batch's own end (`completed` with `null`
//! when each job got an outcome), and `batch` lists every job it ran with
//! that job's end.

mod answers;
mod clock;
mod http_exchange;
mod recorder;
mod recording_services;

use serde::{Deserialize, Serialize};

pub use self::answers::{
    Answer, RecordedChild, RecordedError, RecordedWaitFor, RecordedWaitOutcome, RecordedWaitState,
    recorded_outcome, wait_outcome,
};
pub use self::clock::{ClockMode, RunClock};
pub use self::http_exchange::{HttpAnswers, RecordedBody, RecordedResponse, recorded_headers};
pub use self::recorder::{HttpSlot, TranscriptRecorder};
pub use self::recording_services::RecordingServices;
use crate::outcome::{Completion, SuspendedOn};

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
    /// For a batch run: each job it ran, in the call's order, with its
    /// end (a batch that failed as a whole ends every job with its
    /// failure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<Vec<BatchedJob>>,
}

/// One job of a recorded batch run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct BatchedJob {
    /// The job as the batch received it.
    pub job: RecordedJob,
    /// How it ended.
    pub outcome: RecordedOutcome,
}

impl Transcript {
    /// Each job's end: the job's own for a batch run, else the run's.
    pub fn job_ends(&self) -> Vec<(&RecordedJob, &RecordedOutcome)> {
        match &self.batch {
            Some(jobs) => jobs.iter().map(|b| (&b.job, &b.outcome)).collect(),
            None => vec![(&self.job, &self.outcome)],
        }
    }
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
    /// An invoke parked it until its children end.
    Invoked {
        /// The invoke's step id.
        id: String,
    },
    /// It asked to run again later (`retry-after`) or paused its queue
    /// (`rate-limit`).
    Later {
        /// `retryAfter` or `rateLimit`.
        how: String,
        /// For how long, ms.
        ms: u64,
        /// Why.
        reason: String,
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
                on: SuspendedOn::Sleep(id),
                ..
            } => RecordedOutcome::Slept { id: id.clone() },
            Completion::Suspended {
                on: SuspendedOn::Wait(id),
                ..
            } => RecordedOutcome::Waited { id: id.clone() },
            Completion::Suspended {
                on: SuspendedOn::Children(id),
                ..
            } => RecordedOutcome::Invoked { id: id.clone() },
            Completion::Later(later) => {
                let (how, ms, reason) = match later {
                    crate::outcome::Later::RetryAfter { delay_ms, reason } => {
                        ("retryAfter", *delay_ms, reason)
                    }
                    crate::outcome::Later::RateLimit {
                        duration_ms,
                        reason,
                    } => ("rateLimit", *duration_ms, reason),
                };
                RecordedOutcome::Later {
                    how: how.into(),
                    ms,
                    reason: reason.clone(),
                }
            }
        }
    }
}

/// An invoke's state as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct RecordedInvoke {
    /// When it times out, ms since the epoch.
    #[serde(default)]
    pub deadline: Option<u64>,
    /// Each child's end so far (`null`: not ended).
    pub ends: Vec<Option<RecordedChildEnd>>,
}

/// An invoked child's end as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "end", rename_all = "camelCase")]
pub enum RecordedChildEnd {
    /// Completed with this JSON text.
    Completed {
        /// The return value.
        value: String,
    },
    /// Failed for good.
    Failed {
        /// The failure kind.
        kind: String,
        /// Why.
        reason: String,
        /// Attempts made.
        attempts: u32,
    },
    /// Timed out for the parent.
    TimedOut,
}

impl From<&crate::services::ChildEnd> for RecordedChildEnd {
    fn from(end: &crate::services::ChildEnd) -> Self {
        use crate::services::ChildEnd;
        match end {
            ChildEnd::Completed(value) => RecordedChildEnd::Completed {
                value: value.clone(),
            },
            ChildEnd::Failed {
                kind,
                reason,
                attempts,
            } => RecordedChildEnd::Failed {
                kind: kind.clone(),
                reason: reason.clone(),
                attempts: *attempts,
            },
            ChildEnd::TimedOut => RecordedChildEnd::TimedOut,
        }
    }
}

impl RecordedChildEnd {
    /// The end it records.
    pub fn end(&self) -> crate::services::ChildEnd {
        use crate::services::ChildEnd;
        match self {
            RecordedChildEnd::Completed { value } => ChildEnd::Completed(value.clone()),
            RecordedChildEnd::Failed {
                kind,
                reason,
                attempts,
            } => ChildEnd::Failed {
                kind: kind.clone(),
                reason: reason.clone(),
                attempts: *attempts,
            },
            RecordedChildEnd::TimedOut => ChildEnd::TimedOut,
        }
    }
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
    /// Jobs started by an `enqueue` or an `invoke`.
    StartJobs {
        /// The step.
        id: String,
        /// The queues of the jobs started, in order.
        queues: Vec<String>,
        /// Whether as children of the job (an invoke).
        children: bool,
        /// Their ids.
        answer: Answer<Vec<String>>,
    },
    /// An invoke's state: its deadline and each child's end so far.
    InvokeState {
        /// The step.
        id: String,
        /// The state.
        answer: Answer<RecordedInvoke>,
    },
    /// An invoke past its deadline: the children at these indexes timed
    /// out.
    InvokeExpire {
        /// The step.
        id: String,
        /// The indexes.
        pending: Vec<usize>,
        /// The store's error, if it failed.
        #[serde(default)]
        error: Option<RecordedError>,
    },
    /// An event sent.
    SendEvent {
        /// The step.
        id: String,
        /// The event's name.
        name: String,
        /// Its id.
        answer: Answer<String>,
    },
    /// A `retry-after` counted.
    RetryAfterCount {
        /// The job's count of them.
        answer: Answer<u32>,
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
            Call::StartJobs { id, .. } => format!("start jobs `{id}`"),
            Call::InvokeState { id, .. } => format!("invoke `{id}`"),
            Call::InvokeExpire { id, .. } => format!("invoke expiry `{id}`"),
            Call::SendEvent { id, .. } => format!("send event `{id}`"),
            Call::RetryAfterCount { .. } => "retry-after count".into(),
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
