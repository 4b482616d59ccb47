//! What a run is given and what it reports back, as plain data: the job it
//! is for ([`JobInput`]) and its outbound HTTP counts ([`HttpSummary`]).
//! The sandbox fills them in; the queue and state code store and read them
//! without depending on the sandbox.

/// The job a run is for, as handed to the guest.
#[derive(Debug, Clone, Default)]
pub struct JobInput {
    /// Job id.
    pub id: String,
    /// Queue name.
    pub queue: String,
    /// Job name.
    pub name: String,
    /// Job data, JSON text.
    pub data: String,
    /// This attempt, from 1.
    pub attempt: u32,
    /// Attempts allowed.
    pub max_attempts: u32,
    /// Enqueue time, ms since the Unix epoch.
    pub enqueued_at_ms: u64,
    /// Flow parent `(queue, id)`, if any.
    pub parent: Option<(String, String)>,
}

/// A run's outbound HTTP counts, read at its end (the sandbox's
/// `HttpStats`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HttpSummary {
    /// Requests sent.
    pub requests: u64,
    /// Requests refused.
    pub refused: u64,
    /// Request body bytes.
    pub bytes_out: u64,
    /// Response body bytes.
    pub bytes_in: u64,
}
