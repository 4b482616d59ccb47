//! Waking parked jobs: what Airlock's state decides (a key's freed slot is
//! reserved for a job, a wait got its outcome) and BullMQ carries out, by
//! promoting the delayed job to the wait list.

use super::{HELD_BACK_PRIORITY, JobState, QueueError, QueueService};
use crate::state::key_limits::Released;
use crate::state::waits::Wake;

impl QueueService {
    /// Pauses `queue` across the fleet for `duration_ms`: BullMQ's
    /// limiter key, which its workers read where the queue has a rate
    /// limit (`worker.rateLimit`, `context.rate-limit`).
    pub async fn pause_for(&self, queue: &str, duration_ms: u64) -> Result<(), QueueError> {
        let q = self.queue(queue).await?;
        Ok(q.rate_limit(duration_ms.max(1)).await?)
    }

    /// Promotes jobs a key's freed slot was just reserved for
    /// ([`KeyLimits`](crate::state::key_limits::KeyLimits) answers them); one that was held
    /// back at enqueue ([`HELD_BACK_PRIORITY`](super::HELD_BACK_PRIORITY)) also goes from the
    /// prioritized set to the wait list. A tenant's jobs then move to the
    /// wait list's front (`Released::to_front`). A job that is no longer delayed (it
    /// was cancelled and taken, or removed) is skipped: its reservation
    /// expires with its lease.
    pub async fn promote_released(&self, released: Released) -> Result<(), QueueError> {
        let Released {
            queue,
            ids,
            to_front,
        } = released;
        let queue = queue.as_str();
        if ids.is_empty() {
            return Ok(());
        }
        let q = self.queue(queue).await?;
        for id in &ids {
            let Some(job) = q.get_job(id).await? else {
                continue;
            };
            if let Err(e) = job.promote().await {
                tracing::debug!(queue, id, error = %e, "key line: promote");
                continue;
            }
            if job.priority() == HELD_BACK_PRIORITY
                && let Err(e) = job.change_priority(0, false).await
            {
                tracing::debug!(queue, id, error = %e, "key line: to the wait list");
            }
        }
        if to_front {
            self.to_front(queue, &ids).await?;
        }
        Ok(())
    }

    /// Wakes a job parked for a wait that has its outcome: promotes it if
    /// it is delayed. A job in any other state is left alone (a running one
    /// is woken by its host after it parks; see `state::waits`).
    pub async fn wake_waiting(&self, queue: &str, id: &str) -> Result<(), QueueError> {
        let q = self.queue(queue).await?;
        if JobState::from(q.get_job_state(id).await?) != JobState::Delayed {
            return Ok(());
        }
        if let Some(job) = q.get_job(id).await?
            && let Err(e) = job.promote().await
        {
            // BullMQ's promote fails harmlessly when a worker took the job
            // in between.
            tracing::debug!(queue, id, error = %e, "wake a waiting job");
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl Wake for QueueService {
    async fn wake(&self, queue: &str, id: &str) -> Result<(), QueueError> {
        self.wake_waiting(queue, id).await
    }
}
