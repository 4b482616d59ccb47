//! Warm instances: a run may leave its instance to the next job of the same
//! owner instead of dropping it — what BullMQ's sandboxed processors do
//! with their child processes, and what Spin or Fastly do within limits.
//!
//! A fresh instance per job costs a JavaScript or Python handler its
//! engine's start-up on every job (StarlingMonkey ~0.5 ms, CPython more),
//! and the pool slot's reset. A warm instance skips both: the next job
//! calls `run` again on the instance the last job used.
//!
//! The rules, each of which the sandbox enforces here and nowhere else:
//! - **Who shares.** Only runs of the same component digest, on the same
//!   engine (metered or not), under the same [`Limits`] and the same
//!   owner: the caller's [`Reuse::owner`], which the queue host makes of
//!   the queue, the job's producer (the API token that enqueued it, only
//!   when Airlock's seal on it verifies) and the binding's resolution. Nothing of one owner
//!   ever serves another.
//! - **What ends an instance.** Anything but a completed job: a trap, a
//!   limit kill (fuel, memory, output, time), a cancel or timeout, a
//!   durable sleep or wait (the guest was stopped mid-call), a guest error
//!   (`retry` or `fatal`), a panic, a store outage — and a guest still
//!   holding an HTTP request, response or body when its job ended. Also
//!   [`Reuse::max_jobs`] jobs, [`Reuse::max_idle`] without a job, and pool
//!   pressure: a run that finds the pool full evicts idle instances first.
//! - **What is per job.** Fuel (the budget is set again), the memory cap
//!   and the peak (counted from the memory the instance already has:
//!   linear memory never shrinks, so a guest that grows a little every job
//!   reaches its cap and is discarded), the deadline, the log and its caps,
//!   HTTP counts and limits, secret placeholders, the services and the
//!   binding's environment ([`super::run_state::RunState::begin_job`]).
//! - **What persists.** The guest's own memory: module globals, caches, a
//!   JavaScript or Python module's top-level state — exactly what persists
//!   in a BullMQ sandboxed processor's reused child process. The SDKs start
//!   every job from a fresh context (step counters, the job, pending
//!   promises), so only what the handler itself keeps at module level
//!   carries over. Values revealed with `reveal-secret` stay redacted from
//!   every later job's output, since the guest may still hold them.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use wasmtime::Store;

use super::bindings::Handler;
use super::limits::Limits;
use super::run_state::RunState;

/// How a run may leave its instance to later jobs (opt-in, per binding).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reuse {
    /// Who may share the instance: runs with the same owner (and the same
    /// component, engine and limits) only. The queue host puts the queue,
    /// the verified producer and the binding's resolution in it.
    pub owner: String,
    /// Jobs one instance runs at most (then it is dropped).
    pub max_jobs: u32,
    /// How long an instance may wait for its next job.
    pub max_idle: Duration,
    /// Idle instances kept per owner at most (a host's concurrency for the
    /// queue is what can use them).
    pub max_kept: usize,
}

/// An instance kept for its owner's next job.
pub(crate) struct Warm {
    pub store: Store<RunState>,
    pub handler: Handler,
    /// Jobs it has run.
    pub jobs: u32,
    idle_since: Instant,
    max_idle: Duration,
}

impl Warm {
    pub(crate) fn new(store: Store<RunState>, handler: Handler, jobs: u32, reuse: &Reuse) -> Warm {
        Warm {
            store,
            handler,
            jobs,
            idle_since: Instant::now(),
            max_idle: reuse.max_idle,
        }
    }

    fn expired(&self, now: Instant) -> bool {
        now.duration_since(self.idle_since) > self.max_idle
    }
}

/// Which instances may serve a run.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct WarmKey {
    pub digest: String,
    pub metered: bool,
    pub owner: String,
    pub limits: Limits,
}

/// The idle warm instances of one sandbox.
pub(crate) struct WarmPool {
    idle: Mutex<HashMap<WarmKey, Vec<Warm>>>,
    /// Idle instances kept at most, over all owners: half the pool's
    /// slots, so that fresh instances always find room (and a run that
    /// finds the pool full evicts idle ones anyway).
    max_total: usize,
}

impl WarmPool {
    /// A pool keeping at most `max_total` idle instances.
    pub(crate) fn new(max_total: usize) -> WarmPool {
        WarmPool {
            idle: Mutex::default(),
            max_total,
        }
    }

    /// An idle instance for `key`, the most recently used first (its
    /// memory is the most likely to be cached); expired ones are dropped.
    pub(crate) fn take(&self, key: &WarmKey) -> Option<Warm> {
        let now = Instant::now();
        let mut expired = Vec::new();
        let found = {
            let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
            let list = idle.get_mut(key)?;
            let mut found = None;
            while let Some(warm) = list.pop() {
                if warm.expired(now) {
                    expired.push(warm);
                } else {
                    found = Some(warm);
                    break;
                }
            }
            if list.is_empty() {
                idle.remove(key);
            }
            found
        };
        // Dropped outside the lock: dropping a store resets its pool slot.
        drop(expired);
        found
    }

    /// Keeps `warm` for `key`'s next job, unless `max_kept` are kept for
    /// it; over the pool's total, the longest idle instance goes.
    pub(crate) fn put(&self, key: WarmKey, warm: Warm, max_kept: usize) {
        let (refused, over) = {
            let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
            let list = idle.entry(key).or_default();
            let refused = if list.len() < max_kept {
                list.push(warm);
                None
            } else {
                Some(warm)
            };
            let total: usize = idle.values().map(Vec::len).sum();
            (refused, total.saturating_sub(self.max_total))
        };
        drop(refused);
        if over > 0 {
            self.evict(over);
        }
    }

    /// Drops every idle instance that waited longer than its `max_idle`;
    /// how many.
    pub(crate) fn sweep(&self) -> usize {
        let now = Instant::now();
        let expired: Vec<Warm> = {
            let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
            let mut out = Vec::new();
            idle.retain(|_, list| {
                let (old, kept): (Vec<Warm>, Vec<Warm>) = std::mem::take(list)
                    .into_iter()
                    .partition(|w| w.expired(now));
                out.extend(old);
                *list = kept;
                !list.is_empty()
            });
            out
        };
        expired.len()
    }

    /// Drops up to `n` idle instances, the longest idle first, to free
    /// their pool slots; how many.
    pub(crate) fn evict(&self, n: usize) -> usize {
        let evicted: Vec<Warm> = {
            let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
            let mut all: Vec<(Instant, WarmKey, usize)> = idle
                .iter()
                .flat_map(|(k, list)| {
                    list.iter()
                        .enumerate()
                        .map(move |(i, w)| (w.idle_since, k.clone(), i))
                })
                .collect();
            all.sort_by_key(|(at, _, _)| *at);
            all.truncate(n);
            // Remove from the back of each list first so indices stay valid.
            all.sort_by_key(|entry| std::cmp::Reverse(entry.2));
            let mut out = Vec::new();
            for (_, key, i) in all {
                if let Some(list) = idle.get_mut(&key) {
                    out.push(list.remove(i));
                    if list.is_empty() {
                        idle.remove(&key);
                    }
                }
            }
            out
        };
        evicted.len()
    }

    /// Idle instances kept now.
    pub(crate) fn len(&self) -> usize {
        let idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        idle.values().map(Vec::len).sum()
    }
}
