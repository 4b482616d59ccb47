//! A dead host's jobs, given back to BullMQ at once instead of after their
//! locks expire (see `worker::recovery`, which decides when a host is
//! dead).
//!
//! A job's lock (`<job key>:lock`) holds the token of the BullMQ worker
//! that took it, `<worker id>:<n>` in the port. A dead host published its
//! workers' ids, so the jobs it held are those in the queue's `active` list
//! whose lock token starts with one of them. Each is moved back to waiting
//! by BullMQ's own `moveJobFromActiveToWait`, given the dead worker's
//! token: the script checks it against the lock, so a job whose lock
//! changed hands meanwhile (it finished, or was recovered already) is left
//! alone. The stall is then counted in the job's `stc` and told on the
//! queue's event stream (`stalled`), as BullMQ's stalled check does both.
//! A job that already stalled `max_stalled_count` times is not moved: its
//! lock runs out and BullMQ's stalled check fails it, as it would without
//! Airlock ("job stalled more than allowable limit").
//!
//! Crash window: a host that dies after the move and before counting the
//! stall leaves it uncounted (the job runs again, as it would have). The
//! rest of recovery's windows are `worker::recovery`'s.

use redis::AsyncCommands;

use super::{QueueError, QueueService};

/// A job of a dead host, as found in its queue: its lock still the dead
/// worker's.
#[derive(Debug, Clone)]
pub struct Stalled {
    /// Job id.
    pub id: String,
    /// The dead worker's lock token.
    token: String,
}

/// A dead host's job, read.
#[derive(Clone)]
pub struct StalledJob {
    /// Its data (for the key slots it holds).
    pub data: serde_json::Value,
    /// Whether it may stall once more (`stc` below `max_stalled_count`):
    /// else it is left for BullMQ's stalled check to fail.
    pub may_run_again: bool,
    /// The port's handle on it, for the move back to waiting.
    job: bullmq::Job,
}

impl StalledJob {
    /// Its name (a producer's seal covers it).
    pub fn name(&self) -> &str {
        self.job.name()
    }
}

/// A lock with less than this left (ms) is left to expire: BullMQ's stalled
/// check may move its job as soon as it does, and must not race recovery.
const LOCK_LEFT_MS: i64 = 5_000;

impl QueueService {
    /// The jobs of `queue` whose locks BullMQ worker `worker_id` holds, with
    /// at least [`LOCK_LEFT_MS`] left: until then nothing but their
    /// worker (dead) and recovery moves them.
    pub async fn locked_by(
        &self,
        queue: &str,
        worker_id: &str,
    ) -> Result<Vec<Stalled>, QueueError> {
        let keys = self.store().keys();
        let mut conn = self.store().conn();
        let active: Vec<String> = conn.lrange(keys.bullmq(queue, "active"), 0, -1).await?;
        if active.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        for id in &active {
            let lock = format!("{}:lock", keys.job(queue, id));
            pipe.get(&lock).pttl(&lock);
        }
        let locks: Vec<(Option<String>, i64)> = pipe.query_async(&mut conn).await?;
        let prefix = format!("{worker_id}:");
        Ok(active
            .into_iter()
            .zip(locks)
            .filter_map(|(id, (token, left))| {
                let token = token.filter(|t| t.starts_with(&prefix) && left >= LOCK_LEFT_MS)?;
                Some(Stalled { id, token })
            })
            .collect())
    }

    /// Reads a dead host's job: `None` when it is gone.
    pub async fn stalled_job(
        &self,
        queue: &str,
        job: &Stalled,
        max_stalled_count: u32,
    ) -> Result<Option<StalledJob>, QueueError> {
        let handle = self.queue(queue).await?;
        let Some(found) = handle.get_job(&job.id).await? else {
            return Ok(None);
        };
        let key = self.store().keys().job(queue, &job.id);
        let mut conn = self.store().conn();
        let stalls: Option<u32> = conn.hget(&key, "stc").await?;
        Ok(Some(StalledJob {
            data: found.data().clone(),
            may_run_again: stalls.unwrap_or(0) < max_stalled_count,
            job: found,
        }))
    }

    /// Gives a dead host's job, read by [`QueueService::stalled_job`], back
    /// to waiting (see the module docs): false when its lock is no longer
    /// the dead worker's, or it is gone.
    pub async fn requeue_stalled(
        &self,
        queue: &str,
        job: &Stalled,
        found: &StalledJob,
    ) -> Result<bool, QueueError> {
        match found.job.move_to_wait(Some(&job.token)).await {
            Ok(_) => {}
            Err(e @ bullmq::Error::Script { .. }) => {
                tracing::debug!(queue, id = %job.id, error = %e, "stalled job not moved");
                return Ok(false);
            }
            Err(e) => return Err(e.into()),
        }
        let key = self.store().keys().job(queue, &job.id);
        let mut conn = self.store().conn();
        // Counted and told as BullMQ's stalled check counts and tells it
        // (`queueEvents.on('stalled')` hears it).
        let events = self.store().keys().bullmq(queue, "events");
        redis::pipe()
            .hincr(&key, "stc", 1)
            .ignore()
            .cmd("XADD")
            .arg(&events)
            .arg("MAXLEN")
            .arg("~")
            .arg(10_000)
            .arg("*")
            .arg("event")
            .arg("stalled")
            .arg("jobId")
            .arg(&job.id)
            .ignore()
            .query_async::<()>(&mut conn)
            .await?;
        Ok(true)
    }
}
