//! Cancelling a job, wherever it is, with BullMQ's own machinery.
//!
//! A cancel does three things, in this order:
//! 1. **Marks the job** with BullMQ's *deferred failure* (`defa`, the field
//!    BullMQ itself sets when a child fails its parent): every BullMQ
//!    worker — Airlock's and Node's — that takes a job carrying it fails the
//!    job at once, unrecoverably, with that text as `failedReason`, without
//!    running it. The mark is written by one script only while the job
//!    exists and has not finished, so a finished job is never marked (a
//!    later retry of it would fail at once).
//! 2. **Tells the fleet** by appending `{queue, id, reason, at}` to the
//!    cancel stream (`P:{airlock}:cancels`, capped at about
//!    [`CANCEL_STREAM_LEN`] entries). Every host follows it
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
//! job's guest again, and none loses a job. A host that misses the stream
//! entry (it restarted, or Redis lost the stream) lets that one run finish;
//! the mark still stops every later attempt.
//!
//! What stays put: a job in a **paused** queue fails when the queue is
//! resumed, a flow parent **waiting for its children** when they finish,
//! and a job of a queue **no host serves** when one does — the mark waits
//! for a worker, as BullMQ's own deferred failures do.
//!
//! The stream is untrusted input like all of Redis: whoever can write to it
//! can cancel jobs — no more than a writer of Redis can do by deleting them.
//! Hosts bound what they read ([`CancelRequest::from_fields`]).

use std::collections::HashMap;
use std::sync::LazyLock;

use redis::AsyncCommands;

use super::{JobState, QueueError, QueueService};
use airlock_core::clock::now_ms;

/// About how many entries the cancel stream keeps (`XADD MAXLEN ~`): hosts
/// read it within milliseconds, so this is hours of cancels.
pub const CANCEL_STREAM_LEN: usize = 10_000;

/// The job-hash field of the mark: BullMQ's deferred failure.
pub const MARK_FIELD: &str = "defa";

/// Longest reason kept, in characters.
pub const MAX_REASON_CHARS: usize = 500;

/// `KEYS[1]` job hash, `KEYS[2]` completed set, `KEYS[3]` failed set;
/// `ARGV[1]` job id, `ARGV[2]` the failure text. 0: no such job; -1: it
/// already finished; 1: marked.
static MARK: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(
        "if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end \
         if redis.call('ZSCORE', KEYS[2], ARGV[1]) or redis.call('ZSCORE', KEYS[3], ARGV[1]) \
         then return -1 end \
         redis.call('HSET', KEYS[1], 'defa', ARGV[2]) \
         return 1",
    )
});

/// One cancel as the fleet hears it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CancelRequest {
    /// The job's queue.
    pub queue: String,
    /// The job's id.
    pub id: String,
    /// Why, in words: becomes the `failedReason` after `cancelled: `.
    pub reason: String,
    /// When it was asked for, ms since the epoch.
    pub at_ms: u64,
}

impl CancelRequest {
    /// The `failedReason` of a job this request cancels.
    pub fn failed_reason(&self) -> String {
        format!("cancelled: {}", self.reason)
    }

    /// A request read back from the stream, if its fields make one: a
    /// queue name and a job id of sane length, a reason cut to
    /// [`MAX_REASON_CHARS`]. Anything else is skipped.
    pub fn from_fields(fields: &HashMap<String, redis::Value>) -> Option<CancelRequest> {
        let text = |name: &str| -> Option<String> {
            match fields.get(name)? {
                redis::Value::BulkString(b) => String::from_utf8(b.clone()).ok(),
                redis::Value::SimpleString(s) => Some(s.clone()),
                _ => None,
            }
        };
        let queue = text("queue")?;
        let id = text("id")?;
        crate::names::queue("queue", &queue).ok()?;
        if id.is_empty() || id.len() > super::MAX_ID_LEN {
            return None;
        }
        let reason: String = text("reason")
            .unwrap_or_default()
            .chars()
            .take(MAX_REASON_CHARS)
            .collect();
        let at_ms = text("at").and_then(|t| t.parse().ok()).unwrap_or(0);
        Some(CancelRequest {
            queue,
            id,
            reason,
            at_ms,
        })
    }
}

/// What a cancel found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelOutcome {
    /// The job was marked (and the fleet told) while in this state.
    Requested(JobState),
    /// The job had already finished: nothing was changed.
    AlreadyFinished(JobState),
}

impl QueueService {
    /// Appends `request` to the fleet's cancel stream.
    pub async fn publish_cancel(&self, request: &CancelRequest) -> Result<(), QueueError> {
        let mut conn = self.store().conn();
        let _: String = conn
            .xadd_maxlen(
                self.store().keys().cancels(),
                redis::streams::StreamMaxlen::Approx(CANCEL_STREAM_LEN),
                "*",
                &[
                    ("queue", request.queue.as_str()),
                    ("id", request.id.as_str()),
                    ("reason", request.reason.as_str()),
                    ("at", request.at_ms.to_string().as_str()),
                ],
            )
            .await?;
        Ok(())
    }

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
        let mut conn = self.store().conn();
        let marked: i64 = MARK
            .key(self.job_key(queue, id))
            .key(keys.bullmq(queue, "completed"))
            .key(keys.bullmq(queue, "failed"))
            .arg(id)
            .arg(request.failed_reason())
            .invoke_async(&mut conn)
            .await?;
        match marked {
            0 => return Err(QueueError::NotFound(format!("job `{queue}:{id}`"))),
            -1 => {
                let state = JobState::from(q.get_job_state(id).await?);
                return Ok(CancelOutcome::AlreadyFinished(state));
            }
            _ => {}
        }
        self.publish_cancel(&request).await?;
        let state = JobState::from(q.get_job_state(id).await?);
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

/// Cancel-on-event (a binding's `cancelOn`): which started jobs hold which
/// value, so an event finds the jobs it cancels without scanning a queue.
///
/// A run of a queue with `cancelOn` rules adds its job id, before the guest
/// starts, to one set per rule whose path finds a value in the job's data:
/// `<prefix>:<queue>:airlock:cancel-on:<sha256 of event name and value>`
/// (in the queue's hash tag), and takes it out when the job finishes — one
/// round trip each. A host that dies in between leaves the id behind; the
/// next matching event finds the job finished or gone and takes it out then.
/// A job that has not started is in no set: an event cancels jobs that run,
/// sleep or wait for a retry.
impl QueueService {
    fn cancel_index_key(&self, queue: &str, event: &str, value: &serde_json::Value) -> String {
        use sha2::{Digest, Sha256};
        let mut hasher = Sha256::new();
        hasher.update(event.as_bytes());
        hasher.update([0]);
        hasher.update(serde_json::to_string(value).unwrap_or_default().as_bytes());
        let digest: String = hasher
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        self.store().keys().cancel_on(queue, &digest)
    }

    /// Adds (`add`) or takes out job `id` of `queue` from the sets of
    /// `matches` (event name, value), in one round trip.
    pub async fn index_for_cancel(
        &self,
        queue: &str,
        id: &str,
        matches: &[(String, serde_json::Value)],
        add: bool,
    ) -> Result<(), QueueError> {
        if matches.is_empty() {
            return Ok(());
        }
        let mut pipe = redis::pipe();
        for (event, value) in matches {
            let key = self.cancel_index_key(queue, event, value);
            if add {
                pipe.sadd(key, id).ignore();
            } else {
                pipe.srem(key, id).ignore();
            }
        }
        let mut conn = self.store().conn();
        pipe.query_async::<()>(&mut conn).await?;
        Ok(())
    }

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
        let key = self.cancel_index_key(queue, event, value);
        let mut conn = self.store().conn();
        let ids: Vec<String> = conn.smembers(&key).await?;
        let mut cancelled = Vec::new();
        let mut gone = Vec::new();
        for id in ids {
            if let Some(producer) = producer {
                let owner = self
                    .meta()
                    .get(&self.job_key(queue, &id), super::fields::PRODUCER)
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
        if !gone.is_empty() {
            let _: i64 = conn.srem(&key, &gone).await?;
        }
        Ok(cancelled)
    }
}
