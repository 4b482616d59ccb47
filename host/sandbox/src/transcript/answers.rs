//! Service answers as a transcript records them: a value or an error, a
//! wait's target, outcome and state, a flow child's result. Each converts
//! both ways, so a replay can hand the recorded answer back to the guest.

use serde::{Deserialize, Serialize};

use crate::services::{ChildResult, ServiceError, WaitFor, WaitOutcome, WaitState};

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
            ServiceError::Refused(m) => ("refused", m),
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
            "refused" => ServiceError::Refused(m),
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
