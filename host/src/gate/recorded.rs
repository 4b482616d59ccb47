//! Key slots given back once BullMQ has recorded a job's end.
//!
//! A job that completed or failed holds its key slots (and its `cancelOn`
//! entries) until its worker reports that BullMQ's `moveToFinished` (or,
//! for a failed attempt that will be retried, the retry's move) returned:
//! the port's worker sends `completed` / `failed` events right after, and
//! the queue's worker hands them to [`RecordedEnds::recorded`]. Two things
//! follow:
//! - a freed slot's next job is only promoted after the finish is written,
//!   so BullMQ's `active` list never holds a job that ended beside the one
//!   that took its slot;
//! - giving the slot back is off the job's path: the worker fetches its
//!   next job in the same script that records the finish, without waiting
//!   for the release's round trip.
//!
//! Crash windows:
//! - the port reports no end (its `moveToFinished` failed on the
//!   connection: the job is still active and its lock will lapse): the
//!   slots go back [`FALLBACK`] after the run ended anyway, and the job's
//!   rerun takes a slot like any other;
//! - the host dies between the recorded finish and the release: see
//!   `state::key_limits`;
//! - the host closes: [`RecordedEnds::release_all`] gives back what is
//!   still held, after the worker has stopped.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::admission::Admitted;
use crate::tasks::AbortOnDrop;

/// How long after a run's end its slots are held at most, waiting for the
/// worker to report the end recorded.
pub const FALLBACK: Duration = Duration::from_secs(5);

/// Runs that ended and wait for BullMQ to record it, by job id.
pub struct RecordedEnds {
    /// Job id → (when its run ended, what it holds).
    waiting: Arc<Mutex<Waiting>>,
    /// Releases what waited past [`FALLBACK`]: started by the first
    /// [`RecordedEnds::hold`] (a queue whose binding holds nothing runs
    /// none); ends with this.
    sweeper: std::sync::OnceLock<AbortOnDrop>,
}

type Waiting = HashMap<String, (Instant, Admitted)>;

impl Default for RecordedEnds {
    fn default() -> Self {
        Self::new()
    }
}

impl RecordedEnds {
    /// An empty set.
    pub fn new() -> Self {
        RecordedEnds {
            waiting: Arc::default(),
            sweeper: std::sync::OnceLock::new(),
        }
    }

    /// Gives back, every fifth of [`FALLBACK`], what waited past it.
    fn sweep(waiting: Arc<Mutex<Waiting>>) -> AbortOnDrop {
        AbortOnDrop(tokio::spawn(async move {
            loop {
                tokio::time::sleep(FALLBACK / 5).await;
                let overdue: Vec<Admitted> = {
                    let mut waiting = waiting.lock().unwrap_or_else(|p| p.into_inner());
                    waiting
                        .extract_if(|_, (ended, _)| ended.elapsed() >= FALLBACK)
                        .map(|(_, (_, admitted))| admitted)
                        .collect()
                };
                for admitted in overdue {
                    tracing::debug!(
                        "no recorded end reported within {FALLBACK:?}; giving the key slots back"
                    );
                    admitted.finish_ended().await;
                }
            }
        }))
    }

    /// Holds `admitted` (job `id`'s slots, after its run completed or
    /// failed) until its end is recorded. A job already waiting under the
    /// same id (a run whose end was never reported, rerun here) is
    /// replaced: the slots are the same job's.
    pub fn hold(&self, id: &str, admitted: Admitted) {
        self.sweeper
            .get_or_init(|| Self::sweep(self.waiting.clone()));
        let mut waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
        waiting.insert(id.to_string(), (Instant::now(), admitted));
    }

    /// BullMQ recorded job `id`'s end: its slots go back (in a task of
    /// their own; this is called from the worker's event loop).
    pub fn recorded(&self, id: &str) {
        if self.sweeper.get().is_none() {
            // Nothing was ever held here.
            return;
        }
        let admitted = {
            let mut waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
            waiting.remove(id).map(|(_, a)| a)
        };
        if let Some(admitted) = admitted {
            tokio::spawn(admitted.finish_ended());
        }
    }

    /// Gives back everything still held (the host is closing).
    pub async fn release_all(&self) {
        let all: Vec<Admitted> = {
            let mut waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
            waiting.drain().map(|(_, (_, a))| a).collect()
        };
        for admitted in all {
            admitted.finish_ended().await;
        }
    }
}
