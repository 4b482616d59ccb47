//! Reading the two ends of BullMQ's wait list and of the jobs held back
//! behind it, and moving a job to the wait list's front: what
//! `gate::fairness` needs so a tenant's first job does not wait behind
//! another tenant's backlog.
//!
//! BullMQ's add pushes a job onto the list's left end and its workers take
//! from the right end (first in, first out; a `lifo` job is pushed onto the
//! right). Moving a job to the front is therefore taking it out of the list
//! and pushing it onto the right end — what BullMQ's own `changePriority`
//! does with priority 0 and `lifo`, except that BullMQ searches the list
//! from the right and this searches from the left: a job just added sits
//! there, and a search from the right walks a long backlog first. The job
//! stays in the wait list, where the queue's marker already is; nothing
//! else of BullMQ's records a job's place in it.
//!
//! Jobs Airlock held back at enqueue (their key was full: BullMQ's lowest
//! priority, [`HELD_BACK_PRIORITY`]) wait in BullMQ's prioritized set,
//! which workers take from, lowest score first, only once the wait list is
//! empty; BullMQ scores a job there `priority * 2^32 + counter`, so the
//! held-back ones are the scores from `HELD_BACK_PRIORITY * 2^32` up. One
//! is moved to the wait list's front by the port's own `changePriority`
//! (priority 0, `lifo`), which takes it out of the set and sets its
//! priority field.

use redis::Script;
use std::sync::LazyLock;

use super::{HELD_BACK_PRIORITY, QueueError, QueueService};

/// The lowest score BullMQ gives a held-back job in the prioritized set.
const HELD_BACK_SCORE: u64 = (HELD_BACK_PRIORITY as u64) << 32;

/// KEYS[1] the wait list; ARGV the ids, the one to be taken first last.
/// Answers how many were moved (a job a worker took meanwhile is not in the
/// list, and stays where it is).
static TO_FRONT: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("lua/to_front.lua")));

/// The two ends of a queue's wait list, and of the jobs held back behind
/// it.
#[derive(Debug, Default)]
pub struct WaitEnds {
    /// The newest jobs, newest first.
    pub newest: Vec<String>,
    /// The jobs workers take next, the next one last.
    pub next: Vec<String>,
    /// The newest held-back jobs, newest first.
    pub held_newest: Vec<String>,
    /// The held-back jobs workers take next once the wait list is empty,
    /// the next one first.
    pub held_next: Vec<String>,
}

impl QueueService {
    /// The `newest` newest and the `next` next-to-run ids of `queue`'s wait
    /// list and of its held-back jobs, in one round trip (the ends overlap
    /// on a short list).
    pub async fn wait_ends(
        &self,
        queue: &str,
        newest: usize,
        next: usize,
    ) -> Result<WaitEnds, QueueError> {
        let keys = self.store().keys();
        let (wait, prioritized) = (
            keys.bullmq(queue, "wait"),
            keys.bullmq(queue, "prioritized"),
        );
        let mut conn = self.store().conn();
        let (newest, next, held_newest, held_next) = redis::pipe()
            .lrange(&wait, 0, newest as isize - 1)
            .lrange(&wait, -(next as isize), -1)
            .zrevrangebyscore_limit(&prioritized, "+inf", HELD_BACK_SCORE, 0, newest as isize)
            .zrangebyscore_limit(&prioritized, HELD_BACK_SCORE, "+inf", 0, next as isize)
            .query_async(&mut conn)
            .await?;
        Ok(WaitEnds {
            newest,
            next,
            held_newest,
            held_next,
        })
    }

    /// Moves the held-back jobs of `ids` to the wait list's front, the
    /// first of `ids` to be taken first, through the port's
    /// `changePriority`. A job no longer held back (a worker took it, a
    /// key's release moved it) is left where it is. Answers how many moved.
    pub async fn held_to_front(&self, queue: &str, ids: &[String]) -> Result<u64, QueueError> {
        let q = self.queue(queue).await?;
        let mut moved = 0;
        for id in ids.iter().rev() {
            let Some(job) = q.get_job(id).await? else {
                continue;
            };
            if job.priority() != HELD_BACK_PRIORITY {
                continue;
            }
            match job.change_priority(0, true).await {
                Ok(()) => moved += 1,
                Err(e) => {
                    tracing::debug!(queue, id, error = %e, "fairness: a held-back job to the front")
                }
            }
        }
        Ok(moved)
    }

    /// The data of each job of `ids` in `queue` (`None`: gone).
    pub async fn job_datas(
        &self,
        queue: &str,
        ids: &[String],
    ) -> Result<Vec<Option<String>>, QueueError> {
        let mut pipe = redis::pipe();
        for id in ids {
            pipe.hget(self.job_key(queue, id), "data");
        }
        let mut conn = self.store().conn();
        Ok(pipe.query_async(&mut conn).await?)
    }

    /// Moves the jobs of `ids` that are in `queue`'s wait list to its front,
    /// the first of `ids` to be taken first. Answers how many moved.
    pub async fn to_front(&self, queue: &str, ids: &[String]) -> Result<u64, QueueError> {
        if ids.is_empty() {
            return Ok(0);
        }
        let mut invocation = TO_FRONT.prepare_invoke();
        invocation.key(self.store().keys().bullmq(queue, "wait"));
        for id in ids.iter().rev() {
            invocation.arg(id);
        }
        let mut conn = self.store().conn();
        Ok(invocation.invoke_async(&mut conn).await?)
    }
}
