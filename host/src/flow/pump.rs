//! The key-line pump: refills a queue's key lines every half lease while
//! its binding has a `keyConcurrency` or a `singleton`, so slots a crash
//! swallowed (their leases ran out) and reservations whose promote was lost
//! come back to the jobs waiting for them (see `state::key_limits`).

use std::sync::Arc;
use std::time::Duration;

use crate::queue::QueueService;
use crate::registry::Binding;

/// The key lines of a queue that has any.
pub struct KeyLines {
    queue: String,
    /// The `keyConcurrency` limit (`None` for a `singleton` alone).
    limit: Option<u64>,
}

impl KeyLines {
    /// The lines `binding` keeps, if it keeps any.
    pub fn of(binding: &Binding) -> Option<KeyLines> {
        let limit = binding.key_concurrency.as_ref().map(|r| r.limit);
        (limit.is_some() || binding.singleton.is_some()).then(|| KeyLines {
            queue: binding.queue.clone(),
            limit,
        })
    }
}

/// Runs until the task is aborted; `lines` gives the queue's lines under
/// its binding as it is now (the binding may change while the pump runs).
pub async fn pump(
    queues: Arc<QueueService>,
    lease: Duration,
    lines: impl Fn() -> Option<KeyLines>,
) {
    let mut tick = tokio::time::interval((lease / 2).max(Duration::from_millis(100)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let lease_ms = lease.as_millis() as u64;
    loop {
        tick.tick().await;
        let Some(KeyLines { queue, limit }) = lines() else {
            continue;
        };
        let filled = async {
            let key_limits = &queues.state().key_limits;
            let released = key_limits.fill_lines(&queue, limit, lease_ms).await?;
            queues.promote_released(released).await
        };
        if let Err(e) = filled.await {
            tracing::warn!(queue, error = %e, "could not refill the key lines");
        }
    }
}
