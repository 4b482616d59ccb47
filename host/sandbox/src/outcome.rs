//! What a guest run produced: result, failure kind, and measurements.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::logs::LogLine;
pub use airlock_core::failure::FailureKind;

/// A failed run: its kind and a human-readable message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    /// What stopped the run.
    pub kind: FailureKind,
    /// Details: the guest's error message, the trap, the limit that was hit.
    pub message: String,
}

impl Failure {
    /// A failure of `kind` with `message`.
    pub fn new(kind: FailureKind, message: impl Into<String>) -> Self {
        Failure {
            kind,
            message: message.into(),
        }
    }

    /// `kind: message`, the form stored in BullMQ's `failedReason` so any
    /// BullMQ tool shows why a job failed.
    pub fn reason(&self) -> String {
        format!("{}: {}", self.kind, self.message)
    }
}

/// How the run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Completion {
    /// The guest returned this JSON (its text parsed once, within the
    /// output limit, revealed values redacted).
    Completed(serde_json::Value),
    /// The run failed.
    Failed(Failure),
    /// The guest called a durable sleep or wait: park the job until this
    /// time (milliseconds since the Unix epoch), then run it again.
    Suspended {
        /// When the job should run again.
        wake_at_ms: u64,
        /// The sleep or wait it is suspended on (its job is parked until
        /// `wake_at_ms`).
        on: SuspendedOn,
    },
    /// The guest asked to run again later (`retry-after`, `rate-limit`).
    Later(Later),
}

/// When and how a job that asked to run again later runs again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Later {
    /// Delayed by `delay_ms`, no attempt used.
    RetryAfter {
        /// How long from now.
        delay_ms: u64,
        /// The guest's reason.
        reason: String,
    },
    /// The queue paused for `duration_ms`, the job back to waiting, no
    /// attempt used.
    RateLimit {
        /// How long the queue pauses.
        duration_ms: u64,
        /// The guest's reason.
        reason: String,
    },
}

/// The durable sleep or wait a suspended run stopped on, by its id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SuspendedOn {
    /// A durable sleep.
    Sleep(String),
    /// A durable wait: an outcome may come before the job is parked, and
    /// then it should run again at once.
    Wait(String),
    /// An invoke: the job waits in BullMQ's `waiting-children` until its
    /// children have ended (or until `wake_at_ms`, its timeout; `u64::MAX`
    /// for none).
    Children(String),
}

impl SuspendedOn {
    /// The wait's id, when it is a wait.
    pub fn wait(&self) -> Option<&str> {
        match self {
            SuspendedOn::Wait(id) => Some(id),
            SuspendedOn::Sleep(_) | SuspendedOn::Children(_) => None,
        }
    }

    /// The sleep's or wait's id.
    pub fn id(&self) -> &str {
        match self {
            SuspendedOn::Sleep(id) | SuspendedOn::Wait(id) | SuspendedOn::Children(id) => id,
        }
    }
}

/// Everything a run produced.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// How it ended.
    pub completion: Completion,
    /// Fuel consumed; `None` when the run was not metered.
    pub fuel_used: Option<u64>,
    /// Highest total linear-memory size the guest reached, in bytes.
    pub peak_memory_bytes: u64,
    /// Wall time of the run, instantiation included.
    pub wall_time: Duration,
    /// Captured log lines (guest logs, stdout, stderr), capped in bytes and
    /// lines.
    pub logs: Vec<LogLine>,
    /// Log text bytes dropped because a cap was reached.
    pub logs_dropped_bytes: u64,
    /// Log lines dropped because a cap was reached.
    pub logs_dropped_lines: u64,
    /// What the run did over HTTP.
    pub http: crate::http::HttpSummary,
    /// Whether the run used a warm instance an earlier job of its owner
    /// left (see `crate::warm`), rather than a fresh one.
    pub warm: bool,
    /// The run's transcript, when its environment recorded one
    /// (`RunEnv::transcript`).
    pub transcript: Option<crate::transcript::Transcript>,
}

impl RunOutcome {
    /// The failure, if the run failed.
    pub fn failure(&self) -> Option<&Failure> {
        match &self.completion {
            Completion::Failed(f) => Some(f),
            _ => None,
        }
    }
}
