//! The typed errors every layer below the HTTP API returns, so a status is
//! decided once ([`crate::api::error`]) instead of guessed at each call site.
//!
//! - [`FieldError`]: the input is wrong, and this field is to blame (400).
//! - [`QueueError`]: a queue operation failed — invalid input, no such job,
//!   the job is in the wrong state for it, or Redis could not be reached.
//!
//! The registry has its own [`crate::registry::RegistryError`] (it also knows
//! refused components and handlers still in use); both share `FieldError`.

pub use airlock_core::FieldError;

/// Why a queue operation failed.
#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    /// The request is invalid; names the field.
    #[error(transparent)]
    Invalid(#[from] FieldError),
    /// The job (or schedule) does not exist.
    #[error("{0} not found")]
    NotFound(String),
    /// The request would touch a job that exists already (or is being added
    /// by another producer); names the field that chose its id.
    #[error("{0}")]
    Conflict(FieldError),
    /// The job exists but is in the wrong state for the operation (removing
    /// a locked job, promoting one that is not delayed, ...).
    #[error("{0}")]
    WrongState(String),
    /// Redis could not be reached or failed mid-operation. Whether a write
    /// that was under way took effect is unknown.
    #[error("redis: {0}")]
    Unavailable(String),
    /// A bug or an impossible reply: nothing the caller can fix.
    #[error("internal: {0}")]
    Internal(String),
}

impl From<redis::RedisError> for QueueError {
    fn from(e: redis::RedisError) -> Self {
        QueueError::Unavailable(e.to_string())
    }
}

impl From<bullmq::Error> for QueueError {
    fn from(e: bullmq::Error) -> Self {
        use bullmq::Error as E;
        match e {
            E::Redis(e) => QueueError::Unavailable(e.to_string()),
            E::ConnectionClosed => QueueError::Unavailable("connection closed".into()),
            E::JobNotFound(id) => QueueError::NotFound(format!("job `{id}`")),
            e @ (E::JobLocked(_)
            | E::JobLockNotExist(_)
            | E::JobNotInState(..)
            | E::JobHasFailedChildren(_)
            | E::Script { .. }) => QueueError::WrongState(e.to_string()),
            other => QueueError::Internal(other.to_string()),
        }
    }
}

impl From<serde_json::Error> for QueueError {
    fn from(e: serde_json::Error) -> Self {
        QueueError::Internal(format!("JSON: {e}"))
    }
}
