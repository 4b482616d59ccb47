//! The key-line pump: refills a queue's key lines every half lease, for
//! what a crash left undone (crash windows: see `state::key_limits`). It
//! runs while the queue's binding has a rule that keeps lines
//! (`keyConcurrency`, `singleton`, `fairness`), and once when
//! a host starts serving the queue: a line whose rule the binding no longer
//! has (taken off while jobs waited in it, perhaps while no host ran) is
//! emptied, so its jobs do not wait for their parking's hour; after a pass
//! without such a rule the pump ends (the executor starts it again when a
//! rule comes back). Tenants' lines under `fairness` are refilled by
//! `super::fairness`, which knows their shares.

use std::sync::Arc;
use std::time::Duration;

use crate::queue::QueueService;
use crate::registry::Binding;
use crate::state::key_limits::LineLimits;

/// A queue's key lines and their limits under its binding.
pub struct KeyLines {
    queue: String,
    limits: LineLimits,
}

impl KeyLines {
    /// The lines of `binding`'s queue, with the limits it sets.
    pub fn of(binding: &Binding) -> KeyLines {
        KeyLines {
            queue: binding.queue.clone(),
            limits: LineLimits {
                key: binding.key_concurrency.as_ref().map(|r| r.limit),
                singleton: binding.singleton.is_some(),
                fairness: binding.fairness.is_some(),
            },
        }
    }
}

/// Runs until the task is aborted, or until a pass finds the binding
/// without a rule that keeps lines; `lines` gives the queue's lines under
/// its binding as it is now (the binding may change while the pump runs).
pub async fn pump(queues: Arc<QueueService>, lease: Duration, lines: impl Fn() -> KeyLines) {
    let mut tick = tokio::time::interval((lease / 2).max(Duration::from_millis(100)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let lease_ms = lease.as_millis() as u64;
    loop {
        tick.tick().await;
        let KeyLines { queue, limits } = lines();
        let filled = async {
            let key_limits = &queues.state().key_limits;
            let released = key_limits.fill_lines(&queue, limits, lease_ms).await?;
            queues.promote_released(released).await
        };
        if let Err(e) = filled.await {
            tracing::warn!(queue, error = %e, "could not refill the key lines");
            continue;
        }
        if limits == LineLimits::default() {
            return;
        }
    }
}
