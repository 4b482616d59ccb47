//! What a batch run (`run-batch`, [`RunEnv::batch`](super::RunEnv::batch))
//! leaves out: the calls that belong to one job. A batch has no durable
//! state of its own — no step records, no sleeps, waits or children, no
//! starts with an id derived from one job — so each such call ends the
//! run, and the whole batch fails as `guest_fatal` with a reason that
//! names the call (the first one, when the guest goes on after the error
//! it is answered).

use super::{RunState, Suspend};
use crate::bindings::HostError;
use crate::logs::LogLevel as SinkLevel;
use crate::outcome::{Completion, Failure, FailureKind};

impl RunState {
    /// `Ok` outside a batch run. In one, ends the run (see the module
    /// docs) and answers the error the guest sees for `call`.
    pub(super) fn one_job_only(&mut self, call: &str) -> Result<(), HostError> {
        if !self.env.batch {
            return Ok(());
        }
        let reason = format!(
            "`{call}` is not available in a batch run: a batch has no durable state of its own \
             (steps, sleeps, waits, children and starts belong to one job); bind the queue \
             without `batch` to use it"
        );
        if self.ended.is_none() {
            self.log_line(SinkLevel::Error, &reason);
            self.ended = Some(Completion::Failed(Failure::new(
                FailureKind::GuestFatal,
                reason.clone(),
            )));
        }
        Err(HostError::Invalid(reason))
    }

    /// For a call that may stop the guest: `None` outside a batch run; in
    /// one, the run ended (see [`RunState::one_job_only`]) and the error
    /// that stops the guest.
    pub(super) fn batch_stop(&mut self, call: &str) -> Option<wasmtime::Error> {
        self.one_job_only(call)
            .err()
            .map(|_| wasmtime::Error::new(Suspend))
    }
}
