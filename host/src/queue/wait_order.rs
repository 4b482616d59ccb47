//! Reading the two ends of BullMQ's wait list, and moving a job to its
//! front: what `gate::fairness` needs so a tenant's first job does not wait
//! behind another tenant's backlog.
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

use redis::Script;
use std::sync::LazyLock;

use super::{QueueError, QueueService};

/// KEYS[1] the wait list; ARGV the ids, the one to be taken first last.
/// Answers how many were moved (a job a worker took meanwhile is not in the
/// list, and stays where it is).
static TO_FRONT: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("lua/to_front.lua")));

/// The two ends of a queue's wait list.
#[derive(Debug, Default)]
pub struct WaitEnds {
    /// The newest jobs, newest first.
    pub newest: Vec<String>,
    /// The jobs workers take next, the next one last.
    pub next: Vec<String>,
}

impl QueueService {
    /// The `newest` newest and the `next` next-to-run ids of `queue`'s wait
    /// list, in one round trip (they overlap on a short list).
    pub async fn wait_ends(
        &self,
        queue: &str,
        newest: usize,
        next: usize,
    ) -> Result<WaitEnds, QueueError> {
        let wait = self.store().keys().bullmq(queue, "wait");
        let mut conn = self.store().conn();
        let (newest, next): (Vec<String>, Vec<String>) = redis::pipe()
            .lrange(&wait, 0, newest as isize - 1)
            .lrange(&wait, -(next as isize), -1)
            .query_async(&mut conn)
            .await?;
        Ok(WaitEnds { newest, next })
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
