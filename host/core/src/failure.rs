//! Why a run failed, in one closed vocabulary: the sandbox classifies a
//! run into a [`FailureKind`], and the worker, the job's recorded reason,
//! the metrics and the CLI's exit codes all read that same kind.

use serde::{Deserialize, Serialize};

/// Why a run failed. The kind decides what happens to the job: a
/// [`FailureKind::GuestRetry`] uses up an attempt and is retried per the
/// job's attempts and backoff; the host's own trouble
/// ([`FailureKind::Capacity`], [`FailureKind::HostUnavailable`]) puts the
/// job back without using up an attempt ([`FailureKind::is_infrastructure`]);
/// every other kind is final — a guest killed for breaking a limit would
/// break it again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// The fuel budget ran out (CPU limit).
    FuelExhausted,
    /// The guest tried to grow its memory past the cap.
    MemoryLimit,
    /// The wall-clock deadline passed.
    Timeout,
    /// The wasm call stack overflowed (unbounded recursion).
    StackOverflow,
    /// An out-of-bounds memory access (often a shadow-stack overflow).
    MemoryFault,
    /// Any other trap: `unreachable`, division by zero, a bad indirect call.
    Trap,
    /// The guest returned a retryable error (or panicked).
    GuestRetry,
    /// The guest returned a fatal error: do not retry.
    GuestFatal,
    /// The return value is not valid JSON.
    InvalidOutput,
    /// The return value is larger than the output cap.
    OutputTooLarge,
    /// The component could not be instantiated or compiled, or the run's
    /// limits are over this host's maxima: a configuration problem.
    Instantiation,
    /// This host's instance pool was full: transient, the job is put back.
    Capacity,
    /// A backing store (Redis) failed while the guest needed it.
    HostUnavailable,
    /// Someone cancelled the job (the API, or an event the binding cancels
    /// on): the run was stopped, or never started. Not retried.
    Cancelled,
    /// The job's own time to finish (the binding's `finishTimeoutMs`,
    /// counted across every attempt, sleep and wait) ran out. Not retried.
    TimedOut,
    /// Its key was over the binding's `keyRateLimit`: the job was dropped
    /// without running. Not retried.
    RateLimited,
    /// Its `singleton` key already had a running job (mode `skip`): the job
    /// was dropped without running. Not retried.
    Skipped,
}

impl FailureKind {
    /// The stable snake_case name used in `failedReason`, metrics and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::FuelExhausted => "fuel_exhausted",
            FailureKind::MemoryLimit => "memory_limit",
            FailureKind::Timeout => "timeout",
            FailureKind::StackOverflow => "stack_overflow",
            FailureKind::MemoryFault => "memory_fault",
            FailureKind::Trap => "trap",
            FailureKind::GuestRetry => "guest_retry",
            FailureKind::GuestFatal => "guest_fatal",
            FailureKind::InvalidOutput => "invalid_output",
            FailureKind::OutputTooLarge => "output_too_large",
            FailureKind::Instantiation => "instantiation",
            FailureKind::Capacity => "capacity",
            FailureKind::HostUnavailable => "host_unavailable",
            FailureKind::Cancelled => "cancelled",
            FailureKind::TimedOut => "timed_out",
            FailureKind::RateLimited => "rate_limited",
            FailureKind::Skipped => "skipped",
        }
    }

    /// Parses the name produced by [`FailureKind::as_str`].
    pub fn parse(name: &str) -> Option<FailureKind> {
        FailureKind::ALL
            .iter()
            .copied()
            .find(|k| k.as_str() == name)
    }

    /// A job's `failedReason` split as the sandbox writes it (`kind:
    /// message`): the kind, when the text before the first `": "` names
    /// one, and the rest. Another writer's reason (a Node worker's error)
    /// is all message, with no kind.
    pub fn split_reason(reason: &str) -> (Option<FailureKind>, &str) {
        match reason.split_once(": ") {
            Some((kind, message)) => match FailureKind::parse(kind) {
                Some(kind) => (Some(kind), message),
                None => (None, reason),
            },
            None => (None, reason),
        }
    }

    /// Every kind, for metrics and docs.
    pub const ALL: [FailureKind; 17] = [
        FailureKind::FuelExhausted,
        FailureKind::MemoryLimit,
        FailureKind::Timeout,
        FailureKind::StackOverflow,
        FailureKind::MemoryFault,
        FailureKind::Trap,
        FailureKind::GuestRetry,
        FailureKind::GuestFatal,
        FailureKind::InvalidOutput,
        FailureKind::OutputTooLarge,
        FailureKind::Instantiation,
        FailureKind::Capacity,
        FailureKind::HostUnavailable,
        FailureKind::Cancelled,
        FailureKind::TimedOut,
        FailureKind::RateLimited,
        FailureKind::Skipped,
    ];

    /// Whether another attempt could succeed. Sandbox kills are final: the
    /// same code on the same input breaks the same limit again.
    pub fn is_retryable(self) -> bool {
        matches!(
            self,
            FailureKind::GuestRetry | FailureKind::Capacity | FailureKind::HostUnavailable
        )
    }

    /// Whether the failure is the host's, not the job's: a full instance
    /// pool or a Redis outage. A queue host puts such a job back without
    /// counting an attempt.
    pub fn is_infrastructure(self) -> bool {
        matches!(self, FailureKind::Capacity | FailureKind::HostUnavailable)
    }
}

impl std::fmt::Display for FailureKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::FailureKind;

    #[test]
    fn a_reason_splits_into_its_kind_only_when_it_names_one() {
        assert_eq!(
            FailureKind::split_reason("guest_fatal: card declined: insufficient funds"),
            (
                Some(FailureKind::GuestFatal),
                "card declined: insufficient funds"
            )
        );
        // A Node worker's error, with and without a colon.
        assert_eq!(
            FailureKind::split_reason("Error: boom"),
            (None, "Error: boom")
        );
        assert_eq!(FailureKind::split_reason("boom"), (None, "boom"));
    }
}
