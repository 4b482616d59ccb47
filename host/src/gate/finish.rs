//! A job's time to finish (`finishTimeoutMs`): counted from when it became
//! ready across every attempt, backoff, durable sleep and wait. Past it the
//! job fails as `timed_out` and is not retried: at once when it is taken
//! after its deadline, by stopping its run when the deadline falls inside
//! it, and a durable sleep past it wakes at the deadline instead.

use std::time::Duration;

use crate::registry::Binding;
use crate::sandbox::{Failure, FailureKind, StopHandle};
use crate::tasks::AbortOnDrop;
use airlock_core::clock::now_ms;

/// The deadline of a running job, and the timer that stops it there.
pub struct FinishDeadline {
    /// Epoch milliseconds.
    pub at_ms: u64,
    _timer: AbortOnDrop,
}

impl FinishDeadline {
    /// Starts the timer of a job that became ready at `ready_at_ms`, under
    /// `binding`: `Ok(None)` without a time to finish, `Err` (the failure)
    /// when it has passed already. `stop` stops the run at the deadline.
    pub fn start(
        binding: &Binding,
        ready_at_ms: u64,
        stop: StopHandle,
    ) -> Result<Option<FinishDeadline>, Failure> {
        let Some(ms) = binding.finish_timeout_ms else {
            return Ok(None);
        };
        let at_ms = ready_at_ms.saturating_add(ms);
        let left = at_ms.saturating_sub(now_ms());
        if left == 0 {
            return Err(timed_out(ms));
        }
        let timer = AbortOnDrop(tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(left)).await;
            stop.stop(timed_out(ms));
        }));
        Ok(Some(FinishDeadline {
            at_ms,
            _timer: timer,
        }))
    }
}

/// The failure of a job past its time to finish of `ms`.
fn timed_out(ms: u64) -> Failure {
    Failure::new(
        FailureKind::TimedOut,
        format!(
            "not finished within {} of becoming ready (the binding's finishTimeoutMs)",
            humantime::format_duration(Duration::from_millis(ms))
        ),
    )
}
