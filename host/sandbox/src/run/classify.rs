//! How a run ended, named: a guest's result, trap or failed
//! instantiation turned into a [`Completion`] or [`Failure`] with its true
//! reason (a memory cap hit, fuel run out, a suspension, a store outage).
//! Apart from the run's phases because it only reads the store's state.

use wasmtime::Trap;

use crate::bindings::JobError;
use crate::run_state::{RunState, Suspend};
use crate::{Completion, Failure, FailureKind, Limits};

/// Turns the raw result of a run into a [`Completion`], naming the true
/// reason a guest was stopped. A completed run's output is checked
/// against its limit, has revealed values redacted, and is parsed: the one
/// parse of it on the way to BullMQ.
pub(super) fn classify(
    result: wasmtime::Result<Result<String, JobError>>,
    state: &RunState,
    limits: &Limits,
) -> Completion {
    match result {
        Ok(Ok(output)) => {
            if output.len() as u64 > limits.max_output_bytes {
                return Completion::Failed(Failure::new(
                    FailureKind::OutputTooLarge,
                    format!(
                        "output is {} bytes, the limit is {}",
                        output.len(),
                        limits.max_output_bytes
                    ),
                ));
            }
            match serde_json::from_str(&state.redact(output)) {
                Ok(value) => Completion::Completed(value),
                Err(e) => Completion::Failed(Failure::new(
                    FailureKind::InvalidOutput,
                    format!("output is not valid JSON: {e}"),
                )),
            }
        }
        Ok(Err(JobError::Retry(message))) => {
            if state.service_outage.is_some() {
                return Completion::Failed(Failure::new(FailureKind::HostUnavailable, message));
            }
            // A guest whose runtime turns a refused growth into an error it
            // returns (StarlingMonkey's "out of memory", Python's
            // MemoryError) hit its cap as surely as one that traps: a retry
            // under the same cap would only hit it again.
            if state.limiter.limit_hit {
                return Completion::Failed(Failure::new(
                    FailureKind::MemoryLimit,
                    format!(
                        "guest tried to grow its memory past the {} cap (peak {}), then \
                         failed: {message}",
                        bytesize::ByteSize(limits.memory_bytes),
                        bytesize::ByteSize(state.limiter.peak_bytes())
                    ),
                ));
            }
            Completion::Failed(Failure::new(FailureKind::GuestRetry, message))
        }
        Ok(Err(JobError::Fatal(message))) => {
            Completion::Failed(Failure::new(FailureKind::GuestFatal, message))
        }
        Err(err) => {
            if err.downcast_ref::<Suspend>().is_some() {
                if let Some(ended) = state.ended.clone() {
                    return ended;
                }
                if let Some((wake_at_ms, on)) = state.suspended.clone() {
                    return Completion::Suspended { wake_at_ms, on };
                }
            }
            Completion::Failed(classify_trap(&err, state, limits))
        }
    }
}

pub(super) fn classify_instantiation(
    err: &wasmtime::Error,
    state: &RunState,
    limits: &Limits,
) -> Failure {
    if err
        .downcast_ref::<wasmtime::PoolConcurrencyLimitError>()
        .is_some()
    {
        return Failure::new(
            FailureKind::Capacity,
            format!("the instance pool of this host is full: {err}"),
        );
    }
    if state.limiter.limit_hit {
        return Failure::new(
            FailureKind::MemoryLimit,
            format!(
                "the component's initial memory does not fit the {} cap",
                bytesize::ByteSize(limits.memory_bytes)
            ),
        );
    }
    classify_trap(err, state, limits)
}

fn classify_trap(err: &wasmtime::Error, state: &RunState, limits: &Limits) -> Failure {
    let trap = err.downcast_ref::<Trap>().copied();
    if state.limiter.limit_hit && trap != Some(Trap::OutOfFuel) {
        return Failure::new(
            FailureKind::MemoryLimit,
            format!(
                "guest tried to grow its memory past the {} cap (peak {})",
                bytesize::ByteSize(limits.memory_bytes),
                bytesize::ByteSize(state.limiter.peak_bytes())
            ),
        );
    }
    match trap {
        Some(Trap::OutOfFuel) => Failure::new(
            FailureKind::FuelExhausted,
            format!(
                "fuel budget of {} exhausted",
                limits.fuel.unwrap_or_default()
            ),
        ),
        Some(Trap::StackOverflow) => {
            Failure::new(FailureKind::StackOverflow, "wasm call stack exhausted")
        }
        Some(Trap::MemoryOutOfBounds) => Failure::new(
            FailureKind::MemoryFault,
            "out-of-bounds memory access (often a shadow-stack overflow)",
        ),
        _ => match &state.panic_message {
            Some(message) => Failure::new(FailureKind::GuestRetry, format!("panicked: {message}")),
            None => Failure::new(FailureKind::Trap, format!("{err}")),
        },
    }
}
