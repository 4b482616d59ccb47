//! The error a handler returns, and how host errors map onto it.

use std::fmt;

use crate::bindings::airlock::job::types::{HostError, JobError as WitJobError};

/// Why a job run failed, and whether retrying can help.
///
/// Any `std::error::Error` converts into a *retryable* error with `?`, which
/// is the right default for I/O-like failures. Use [`JobError::fatal`] for
/// failures no retry can fix (invalid input, a business rule refusing the
/// job): the job then fails at once, like BullMQ's `UnrecoverableError`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobError {
    /// Retried per the job's `attempts` and `backoff` options.
    Retry(String),
    /// Never retried.
    Fatal(String),
}

impl JobError {
    /// A failure worth retrying.
    pub fn retry(message: impl Into<String>) -> Self {
        JobError::Retry(message.into())
    }

    /// A failure no retry can fix.
    pub fn fatal(message: impl Into<String>) -> Self {
        JobError::Fatal(message.into())
    }

    /// The failure message.
    pub fn message(&self) -> &str {
        match self {
            JobError::Retry(m) | JobError::Fatal(m) => m,
        }
    }

    /// Whether the job would be retried.
    pub fn is_retryable(&self) -> bool {
        matches!(self, JobError::Retry(_))
    }

    /// Maps a failed host call: a store that is unreachable is worth a retry,
    /// anything else (unsupported feature, refused arguments, a limit) is not.
    pub(crate) fn from_host(what: &str, err: HostError) -> Self {
        match err {
            HostError::Unavailable(m) => JobError::Retry(format!("{what}: {m}")),
            HostError::Unsupported(m) => JobError::Fatal(format!("{what} unsupported: {m}")),
            HostError::Invalid(m) => JobError::Fatal(format!("{what} refused: {m}")),
            HostError::LimitExceeded(m) => JobError::Fatal(format!("{what}: limit exceeded: {m}")),
        }
    }
}

impl fmt::Display for JobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JobError::Retry(m) => write!(f, "{m}"),
            JobError::Fatal(m) => write!(f, "fatal: {m}"),
        }
    }
}

impl<E: std::error::Error> From<E> for JobError {
    fn from(err: E) -> Self {
        JobError::Retry(err.to_string())
    }
}

impl From<JobError> for WitJobError {
    fn from(err: JobError) -> Self {
        match err {
            JobError::Retry(m) => WitJobError::Retry(m),
            JobError::Fatal(m) => WitJobError::Fatal(m),
        }
    }
}
