//! Cancelling a job, wherever it is, with BullMQ's own machinery.
//!
//! A cancel does three things, in this order:
//! 1. **Marks the job** with BullMQ's *deferred failure* (`defa`, the field
//!    BullMQ itself sets when a child fails its parent): every BullMQ
//!    worker — Airlock's and Node's — that takes a job carrying it fails the
//!    job at once, unrecoverably, with that text as `failedReason`, without
//!    running it. The mark is written by one script only while the job
//!    exists and has not finished, so a finished job is never marked (a
//!    later retry of it would fail at once). The same script reads the
//!    job's state (as BullMQ's `getState` does), so the state a cancel
//!    answers is the one its mark met: a running job is `active`, never
//!    the `failed` its cancel then makes it.
//! 2. **Tells the fleet** by appending `{queue, id, reason, at}` to the
//!    cancel stream ([`crate::state::cancels`]). Every host follows it
//!    (`worker::cancels`); the one running the job stops its guest at the
//!    next epoch tick and fails it as `cancelled`.
//! 3. **Brings a waiting job forward**: a delayed job (a backoff, a delay,
//!    a durable sleep) is promoted and a waiting or prioritized one moved to
//!    the head of the wait list (BullMQ's `promote` and `changePriority`
//!    with LIFO), so the next worker to fetch fails it now instead of when
//!    its turn would have come.
//!
//! Crash windows: a crash after 1 leaves a marked job that fails when it is
//! next taken (a running one when it is retried or recovered after a stall);
//! after 2, a delayed job fails at its own time; no window runs a marked
//! job's guest again, and none loses a job. A host that dies running a
//! marked job leaves it to recovery (a live host's, `worker::recovery`,
//! within seconds, else BullMQ's stalled check); the worker that takes it
//! then fails it on the mark, without running it. A host that misses the
//! stream entry (it restarted, or Redis lost the stream) lets that one run
//! finish; the mark still stops every later attempt.
//!
//! What stays put: a job in a **paused** queue fails when the queue is
//! resumed, a flow parent **waiting for its children** when they finish,
//! and a job of a queue **no host serves** when one does — the mark waits
//! for a worker, as BullMQ's own deferred failures do.
//!
//! Cancel-on-event ([`QueueService::cancel_matching`]) cancels the jobs the
//! state's cancel-on-event index holds for an event's value.

use std::sync::LazyLock;

use super::{JobState, QueueError, QueueService};
use crate::state::cancels::{CancelRequest, MAX_REASON_CHARS};
use crate::state::fields;
use airlock_core::clock::now_ms;

/// The job-hash field of the mark: BullMQ's deferred failure.
pub const MARK_FIELD: &str = "defa";

/// The BullMQ sets a job's state is read from, in [`MARK`]'s `KEYS[2..]`
/// order (BullMQ's own `getState` order).
const STATE_SETS: [&str; 8] = [
    "completed",
    "failed",
    "delayed",
    "prioritized",
    "active",
    "wait",
    "paused",
    "waiting-children",
];

/// `KEYS[1]` job hash, `KEYS[2..9]` the [`STATE_SETS`]; `ARGV[1]` job id,
/// `ARGV[2]` the failure text. Reads the job's state as BullMQ's
/// `getState` does and marks it in the same step, so the state answered is
/// the one the mark met: `{0, _}` no such job; `{-1, state}` it already
/// finished (not marked); `{1, state}` marked.
static MARK: LazyLock<redis::Script> =
    LazyLock::new(|| redis::Script::new(include_str!("lua/cancel_mark.lua")));

/// What a cancel found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelOutcome {
    /// The job was marked (and the fleet told) while in this state.
    Requested(JobState),
    /// The job had already finished: nothing was changed.
    AlreadyFinished(JobState),
}

impl QueueService {
    /// Cancels job `queue:id` (see the module docs): it fails as
    /// `cancelled` with `reason`, now if it runs or waits its turn, and is
    /// never retried.
    pub async fn cancel(
        &self,
        queue: &str,
        id: &str,
        reason: &str,
    ) -> Result<CancelOutcome, QueueError> {
        let q = self.queue(queue).await?;
        let request = CancelRequest {
            queue: queue.to_string(),
            id: id.to_string(),
            reason: reason.chars().take(MAX_REASON_CHARS).collect(),
            at_ms: now_ms(),
        };
        let keys = self.store().keys();
        let mut mark = MARK.key(self.job_key(queue, id));
        for set in STATE_SETS {
            mark.key(keys.bullmq(queue, set));
        }
        let mut conn = self.store().conn();
        let (marked, state): (i64, String) = mark
            .arg(id)
            .arg(request.failed_reason())
            .invoke_async(&mut conn)
            .await?;
        let state = JobState::parse(&state).unwrap_or(JobState::Unknown);
        match marked {
            0 => return Err(QueueError::NotFound(format!("job `{queue}:{id}`"))),
            -1 => return Ok(CancelOutcome::AlreadyFinished(state)),
            _ => {}
        }
        self.state().cancels.publish(&request).await?;
        if matches!(
            state,
            JobState::Delayed | JobState::Waiting | JobState::Prioritized
        ) && let Some(job) = q.get_job(id).await?
        {
            // Each step is BullMQ's own script and fails harmlessly when a
            // worker took the job in between (it is then failed by the mark).
            if state == JobState::Delayed
                && let Err(e) = job.promote().await
            {
                tracing::debug!(queue, id, error = %e, "cancel: promote");
            }
            if let Err(e) = job.change_priority(0, true).await {
                tracing::debug!(queue, id, error = %e, "cancel: move to the head");
            }
        }
        Ok(CancelOutcome::Requested(state))
    }
}

impl QueueService {
    /// Cancels the started jobs of `queue` whose data held `value` for
    /// `event` — only those enqueued by `producer` when one is given.
    /// Answers the ids it cancelled; finished or removed ones leave the set.
    pub async fn cancel_matching(
        &self,
        queue: &str,
        event: &str,
        value: &serde_json::Value,
        producer: Option<&str>,
        reason: &str,
    ) -> Result<Vec<String>, QueueError> {
        let cancels = &self.state().cancels;
        let ids = cancels.indexed(queue, event, value).await?;
        let mut cancelled = Vec::new();
        let mut gone = Vec::new();
        for id in ids {
            if let Some(producer) = producer {
                let owner = self
                    .state()
                    .meta
                    .get(&self.job_key(queue, &id), fields::PRODUCER)
                    .await?;
                if owner.as_deref() != Some(producer) {
                    continue;
                }
            }
            match self.cancel(queue, &id, reason).await {
                Ok(CancelOutcome::Requested(_)) => {
                    cancelled.push(id.clone());
                    gone.push(id);
                }
                Ok(CancelOutcome::AlreadyFinished(_)) | Err(QueueError::NotFound(_)) => {
                    gone.push(id)
                }
                Err(e) => return Err(e),
            }
        }
        cancels.unindex(queue, event, value, &gone).await?;
        Ok(cancelled)
    }
}
