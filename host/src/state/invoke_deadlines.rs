//! The deadlines of invokes whose jobs wait in BullMQ's
//! `waiting-children` (`context.invoke` with a timeout, or a binding's
//! time to finish): `invoke-deadlines` in the `{airlock}` slot, a sorted
//! set of `<queue>:<id>` by deadline. A job is noted before it parks, and
//! taken out by the sweep once its deadline has passed (`worker::starts`),
//! whether it was still waiting then or had been woken by its children:
//! an entry outlives its use by at most its deadline.

use redis::AsyncCommands;

use crate::error::QueueError;
use crate::store::Store;

/// Most due entries one sweep handles.
const SWEEP_BATCH: isize = 100;

/// The deadlines of parked invokes.
#[derive(Clone)]
pub struct InvokeDeadlines {
    store: Store,
}

impl InvokeDeadlines {
    /// Deadlines on `store`.
    pub fn new(store: Store) -> Self {
        InvokeDeadlines { store }
    }

    /// Notes that job `id` of `queue` waits for its children until
    /// `deadline` (ms since the epoch).
    pub async fn note(&self, queue: &str, id: &str, deadline: u64) -> Result<(), QueueError> {
        let mut conn = self.store.conn();
        let _: () = conn
            .zadd(
                self.store.keys().invoke_deadlines(),
                airlock_core::job_ref::join(queue, id),
                deadline,
            )
            .await?;
        Ok(())
    }

    /// Jobs whose deadline is `now` or earlier, `(queue, id)`, at most a
    /// batch.
    pub async fn due(&self, now: u64) -> Result<Vec<(String, String)>, QueueError> {
        let mut conn = self.store.conn();
        let refs: Vec<String> = conn
            .zrangebyscore_limit(
                self.store.keys().invoke_deadlines(),
                "-inf",
                now,
                0,
                SWEEP_BATCH,
            )
            .await?;
        Ok(refs
            .iter()
            .filter_map(|r| {
                let (queue, id) = airlock_core::job_ref::split(r)?;
                Some((queue.to_string(), id.to_string()))
            })
            .collect())
    }

    /// Takes job `id` of `queue` out.
    pub async fn done(&self, queue: &str, id: &str) -> Result<(), QueueError> {
        let mut conn = self.store.conn();
        let _: () = conn
            .zrem(
                self.store.keys().invoke_deadlines(),
                airlock_core::job_ref::join(queue, id),
            )
            .await?;
        Ok(())
    }
}
