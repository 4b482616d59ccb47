//! Keeps one BullMQ worker per bound queue, following the registry, and
//! represents this host in the fleet.
//!
//! Every `poll` interval the supervisor reads the registry's generation
//! counter; when it moved (a deploy, a new or changed binding), it reloads
//! the bindings and reconciles: starts workers for new queues, updates the
//! binding (handler digest, limits) and concurrency of running ones in
//! place, and closes workers of unbound queues. A worker that cannot start
//! (Redis down) is retried on the next turn. Concurrencies are the host's
//! [`capacity`](super::capacity) shares of the bindings'.
//!
//! Every heartbeat interval it publishes the host's description in the
//! fleet registry and reads its drain request: a draining host pauses every
//! worker (no new jobs; running ones finish) and reports `drained` once
//! idle; a withdrawn request resumes them.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio::sync::watch;

use super::HostContext;
use super::executor::{Executor, ResolvedBinding};
use crate::fleet::{Fleet, HostInfo, HostState};
use crate::queue::QueueWorker;
use crate::registry::Binding;

struct RunningQueue {
    worker: QueueWorker,
    binding: Arc<RwLock<ResolvedBinding>>,
    /// The concurrency this host gives the queue (its capacity share).
    concurrency: usize,
}

/// How this host shows up in the fleet.
#[derive(Clone)]
pub struct Membership {
    /// The fleet registry.
    pub fleet: Fleet,
    /// Heartbeat interval.
    pub heartbeat: Duration,
    /// The host's API address, if any.
    pub address: Option<String>,
}

/// The reconciler of bindings and workers.
pub struct Supervisor {
    host: Arc<HostContext>,
    /// Only these queues, when set (`serve --queues`).
    only: Option<HashSet<String>>,
    running: HashMap<String, RunningQueue>,
    seen_generation: Option<u64>,
    membership: Option<Membership>,
    started_at: u64,
    last_heartbeat: Option<Instant>,
    draining: bool,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

impl Supervisor {
    /// A supervisor for `host`, limited to `only` queues when given,
    /// registered in the fleet when `membership` is given.
    pub fn new(
        host: Arc<HostContext>,
        only: Option<HashSet<String>>,
        membership: Option<Membership>,
    ) -> Self {
        Supervisor {
            host,
            only,
            running: HashMap::new(),
            seen_generation: None,
            membership,
            started_at: now_ms(),
            last_heartbeat: None,
            draining: false,
        }
    }

    /// Queues with a running worker.
    pub fn queues(&self) -> Vec<String> {
        let mut q: Vec<String> = self.running.keys().cloned().collect();
        q.sort();
        q
    }

    /// Runs until `shutdown` turns true, then closes every worker, giving
    /// running jobs up to `grace` to finish.
    pub async fn run(
        mut self,
        poll: Duration,
        grace: Duration,
        mut shutdown: watch::Receiver<bool>,
    ) {
        loop {
            if let Err(e) = self.reconcile().await {
                tracing::warn!(error = %e, "reconciling bindings failed; will retry");
            }
            if let Err(e) = self.heartbeat().await {
                tracing::warn!(error = %e, "fleet heartbeat failed; will retry");
            }
            tokio::select! {
                _ = tokio::time::sleep(poll) => {}
                _ = shutdown.changed() => {}
            }
            if *shutdown.borrow() {
                break;
            }
        }
        self.close_all(grace).await;
        if let Some(m) = &self.membership
            && let Err(e) = m.fleet.leave(&self.host.host_id).await
        {
            tracing::debug!(error = %e, "could not leave the fleet registry");
        }
    }

    /// Closes every worker concurrently.
    pub async fn close_all(&mut self, grace: Duration) {
        let running: Vec<RunningQueue> = self.running.drain().map(|(_, r)| r).collect();
        tracing::info!(workers = running.len(), "draining workers");
        let closes = running.iter().map(|r| r.worker.close(grace));
        futures::future::join_all(closes).await;
    }

    fn state(&self) -> HostState {
        match (self.draining, self.host.running.load(Ordering::Relaxed)) {
            (false, _) => HostState::Running,
            (true, 0) => HostState::Drained,
            (true, _) => HostState::Draining,
        }
    }

    /// Publishes this host and applies a drain request, once per interval.
    async fn heartbeat(&mut self) -> anyhow::Result<()> {
        let Some(m) = self.membership.clone() else {
            return Ok(());
        };
        if self
            .last_heartbeat
            .is_some_and(|t| t.elapsed() < m.heartbeat)
        {
            return Ok(());
        }
        self.last_heartbeat = Some(Instant::now());
        let drain = m.fleet.drain_requested(&self.host.host_id).await?;
        if drain != self.draining {
            self.draining = drain;
            for r in self.running.values() {
                if drain {
                    r.worker.pause();
                } else {
                    r.worker.resume();
                }
            }
            tracing::info!(draining = drain, "drain request changed");
        }
        let info = HostInfo {
            id: self.host.host_id.clone(),
            address: m.address.clone(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            queues: self.queues(),
            running: self.host.running.load(Ordering::Relaxed),
            capacity: self.host.capacity.slots(),
            started_at: self.started_at,
            heartbeat_at: now_ms(),
            state: self.state(),
        };
        m.fleet.heartbeat(&info).await
    }

    /// One reconciliation turn (no-op when the generation did not move and
    /// every wanted worker runs).
    pub async fn reconcile(&mut self) -> anyhow::Result<()> {
        let generation = self.host.registry.generation().await?;
        if self.seen_generation == Some(generation) {
            return Ok(());
        }
        let bindings: Vec<Binding> = self
            .host
            .registry
            .bindings()
            .await?
            .into_iter()
            .filter(|b| {
                self.only
                    .as_ref()
                    .is_none_or(|only| only.contains(&b.queue))
            })
            .collect();
        let shares = self.host.capacity.shares(&bindings);
        let mut complete = true;
        let wanted: HashSet<String> = bindings.iter().map(|b| b.queue.clone()).collect();

        let gone: Vec<String> = self
            .running
            .keys()
            .filter(|q| !wanted.contains(*q))
            .cloned()
            .collect();
        for queue in gone {
            if let Some(r) = self.running.remove(&queue) {
                tracing::info!(queue, "queue unbound; closing its worker");
                r.worker.close(Duration::from_secs(30)).await;
            }
        }

        for binding in bindings {
            let Some(digest) = self.host.registry.current_digest(&binding.handler).await? else {
                tracing::warn!(queue = %binding.queue, handler = %binding.handler, "bound handler is missing");
                continue;
            };
            let concurrency = shares.get(&binding.queue).copied().unwrap_or(1);
            let resolved = ResolvedBinding {
                binding: binding.clone(),
                digest,
            };
            if let Some(r) = self.running.get_mut(&binding.queue) {
                if r.concurrency != concurrency {
                    r.worker.set_concurrency(concurrency);
                    r.concurrency = concurrency;
                }
                let previous_digest = r.binding.read().unwrap().digest.clone();
                if previous_digest != resolved.digest {
                    tracing::info!(queue = %binding.queue, digest = %resolved.digest, "new handler version");
                }
                *r.binding.write().unwrap() = resolved;
                continue;
            }
            let shared = Arc::new(RwLock::new(resolved));
            let executor = Arc::new(Executor::new(self.host.clone(), shared.clone()));
            let mut settings = self.host.worker_settings.clone();
            settings.concurrency = concurrency;
            match QueueWorker::start(&self.host.queues, &binding.queue, &settings, executor).await {
                Ok(worker) => {
                    if self.draining {
                        worker.pause();
                    }
                    tracing::info!(queue = %binding.queue, handler = %binding.handler, concurrency, "worker started");
                    self.running.insert(
                        binding.queue.clone(),
                        RunningQueue {
                            worker,
                            binding: shared,
                            concurrency,
                        },
                    );
                }
                Err(e) => {
                    complete = false;
                    tracing::warn!(queue = %binding.queue, error = %e, "could not start worker; will retry");
                }
            }
        }
        if complete {
            self.seen_generation = Some(generation);
        }
        Ok(())
    }
}
