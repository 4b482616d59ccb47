//! Back-pressure: a host runs at most as many guests as it has instance
//! slots, within a memory budget. Workers are given concurrencies that fit
//! (so a full host stops fetching rather than hoarding locked jobs), and
//! every run holds a permit, so even a burst past the shares waits for room
//! instead of failing.

use std::collections::HashMap;
use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::registry::Binding;

const MIB: u64 = 1 << 20;

/// A host's room for running guests.
pub struct Capacity {
    slots: Arc<Semaphore>,
    memory_mib: Arc<Semaphore>,
    total_slots: usize,
    total_mib: u64,
}

/// Room held by one run; released on drop.
pub struct Permit {
    _slot: OwnedSemaphorePermit,
    _memory: OwnedSemaphorePermit,
}

/// A job that could never fit on this host.
#[derive(Debug, thiserror::Error)]
#[error(
    "the job's memory limit of {need_mib} MiB exceeds this host's memory budget of {budget_mib} MiB"
)]
pub struct TooBig {
    need_mib: u64,
    budget_mib: u64,
}

impl Capacity {
    /// `slots` guests at once, whose memory limits add up to at most
    /// `memory_budget` bytes.
    pub fn new(slots: usize, memory_budget: u64) -> Self {
        let total_mib = (memory_budget / MIB).max(1);
        Capacity {
            slots: Arc::new(Semaphore::new(slots.max(1))),
            memory_mib: Arc::new(Semaphore::new(total_mib as usize)),
            total_slots: slots.max(1),
            total_mib,
        }
    }

    /// Instance slots.
    pub fn slots(&self) -> usize {
        self.total_slots
    }

    /// The memory budget, bytes.
    pub fn memory_budget(&self) -> u64 {
        self.total_mib * MIB
    }

    /// The part of the budget running guests hold now (their memory
    /// limits, not what they use), bytes.
    pub fn memory_held(&self) -> u64 {
        let free = self.memory_mib.available_permits() as u64;
        self.total_mib.saturating_sub(free) * MIB
    }

    /// Waits for a slot and `memory_bytes` of the budget.
    pub async fn acquire(&self, memory_bytes: u64) -> Result<Permit, TooBig> {
        let need_mib = memory_bytes.div_ceil(MIB).max(1);
        if need_mib > self.total_mib {
            return Err(TooBig {
                need_mib,
                budget_mib: self.total_mib,
            });
        }
        let slot = self
            .slots
            .clone()
            .acquire_owned()
            .await
            .expect("never closed");
        let memory = self
            .memory_mib
            .clone()
            .acquire_many_owned(need_mib as u32)
            .await
            .expect("never closed");
        Ok(Permit {
            _slot: slot,
            _memory: memory,
        })
    }

    /// The concurrency each queue gets on this host: its binding's, scaled
    /// down (never below 1) when all of them together would not fit the
    /// slots or the memory budget.
    pub fn shares(&self, bindings: &[Binding]) -> HashMap<String, usize> {
        let wanted: usize = bindings.iter().map(|b| b.concurrency).sum();
        let wanted_mib: u64 = bindings
            .iter()
            .map(|b| b.concurrency as u64 * b.limits.memory_bytes.div_ceil(MIB).max(1))
            .sum();
        let factor = (self.total_slots as f64 / wanted.max(1) as f64)
            .min(self.total_mib as f64 / wanted_mib.max(1) as f64)
            .min(1.0);
        bindings
            .iter()
            .map(|b| {
                let share = ((b.concurrency as f64 * factor).floor() as usize).max(1);
                (b.queue.clone(), share)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::BindingSpec;
    use crate::sandbox::HostMaxima;

    fn binding(queue: &str, concurrency: usize, memory_mib: u64) -> Binding {
        let spec: BindingSpec = serde_json::from_value(serde_json::json!({
            "handler": "h",
            "concurrency": concurrency,
            "limits": {"memoryBytes": memory_mib * MIB},
        }))
        .unwrap();
        spec.resolve(queue, &HostMaxima::default()).unwrap()
    }

    #[test]
    fn shares_fit_the_slots_and_the_memory_budget() {
        let capacity = Capacity::new(10, 1 << 30);
        let small = [binding("a", 4, 64), binding("b", 4, 64)];
        assert_eq!(capacity.shares(&small)["a"], 4, "fits: unchanged");
        let many = [binding("a", 20, 16), binding("b", 20, 16)];
        assert_eq!(capacity.shares(&many)["a"], 5, "40 wanted, 10 slots");
        let fat = [binding("a", 8, 256)];
        assert_eq!(
            capacity.shares(&fat)["a"],
            4,
            "8 x 256 MiB in a 1 GiB budget"
        );
    }

    #[tokio::test]
    async fn a_job_larger_than_the_budget_is_refused_not_queued() {
        let capacity = Capacity::new(2, 64 * MIB);
        assert!(capacity.acquire(128 * MIB).await.is_err());
        let _a = capacity.acquire(32 * MIB).await.unwrap();
        let _b = capacity.acquire(32 * MIB).await.unwrap();
        let third =
            tokio::time::timeout(std::time::Duration::from_millis(50), capacity.acquire(MIB)).await;
        assert!(third.is_err(), "no slot left: the third run waits");
    }
}
