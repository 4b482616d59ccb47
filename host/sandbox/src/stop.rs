//! Stopping a run from outside: a cancellation, or the job's own time to
//! finish running out while it computes.
//!
//! The caller keeps a [`StopHandle`] and gives the run its [`StopSignal`]
//! (in [`crate::RunEnv::stop`]). The run races the guest against the
//! signal exactly as it races it against its deadline: a computing guest
//! yields to its runtime at every epoch tick (2 ms by default), so once
//! [`StopHandle::stop`] is called the guest is dropped at its next yield —
//! with every request it has in flight — and the run fails with the
//! [`Failure`] the stop carried. A stop before the run starts fails it
//! before the guest is instantiated.

use tokio::sync::watch;

use crate::outcome::Failure;

/// Stops the run holding the matching [`StopSignal`]. Cheap to clone.
#[derive(Debug, Clone)]
pub struct StopHandle {
    tx: std::sync::Arc<watch::Sender<Option<Failure>>>,
}

/// What a run watches to be stopped. Cheap to clone.
#[derive(Debug, Clone)]
pub struct StopSignal {
    rx: watch::Receiver<Option<Failure>>,
}

/// A connected handle and signal.
pub fn stop_pair() -> (StopHandle, StopSignal) {
    let (tx, rx) = watch::channel(None);
    (
        StopHandle {
            tx: std::sync::Arc::new(tx),
        },
        StopSignal { rx },
    )
}

impl StopHandle {
    /// Stops the run with `failure`. Only the first stop counts: a run
    /// cancelled and then timed out fails as cancelled.
    pub fn stop(&self, failure: Failure) {
        self.tx.send_if_modified(|current| {
            if current.is_some() {
                return false;
            }
            *current = Some(failure);
            true
        });
    }

    /// Whether [`StopHandle::stop`] was called.
    pub fn is_stopped(&self) -> bool {
        self.tx.borrow().is_some()
    }
}

impl StopSignal {
    /// The stop, once one was asked for; pending forever otherwise (also
    /// when every handle is gone: nobody can stop the run any more).
    pub async fn stopped(&mut self) -> Failure {
        // The borrow guard is released before any other await.
        let stopped = self.rx.wait_for(Option::is_some).await.map(|f| f.clone());
        match stopped {
            Ok(Some(failure)) => failure,
            _ => std::future::pending().await,
        }
    }

    /// The stop asked for so far, if any.
    pub fn current(&self) -> Option<Failure> {
        self.rx.borrow().clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::FailureKind;

    #[tokio::test]
    async fn the_first_stop_wins() {
        let (handle, mut signal) = stop_pair();
        assert!(signal.current().is_none());
        handle.stop(Failure::new(FailureKind::Cancelled, "by request"));
        handle.stop(Failure::new(FailureKind::TimedOut, "late"));
        let failure = signal.stopped().await;
        assert_eq!(failure.kind, FailureKind::Cancelled);
        assert!(handle.is_stopped());
    }

    #[tokio::test]
    async fn a_dropped_handle_never_stops_the_run() {
        let (handle, mut signal) = stop_pair();
        drop(handle);
        let waited =
            tokio::time::timeout(std::time::Duration::from_millis(20), signal.stopped()).await;
        assert!(waited.is_err());
    }
}
