//! Keeps one BullMQ worker per bound queue, following the registry.
//!
//! Every `poll` interval the supervisor reads the registry's generation
//! counter; when it moved (a deploy, a new or changed binding), it reloads
//! the bindings and reconciles: starts workers for new queues, updates the
//! binding (handler digest, limits) and concurrency of running ones in
//! place, and closes workers of unbound queues. A worker that cannot start
//! (Redis down) is retried on the next turn.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use tokio::sync::watch;

use super::HostContext;
use super::executor::{Executor, ResolvedBinding};
use crate::queue::QueueWorker;
use crate::registry::Binding;

struct RunningQueue {
    worker: QueueWorker,
    binding: Arc<RwLock<ResolvedBinding>>,
}

/// The reconciler of bindings and workers.
pub struct Supervisor {
    host: Arc<HostContext>,
    /// Only these queues, when set (`serve --queues`).
    only: Option<HashSet<String>>,
    running: HashMap<String, RunningQueue>,
    seen_generation: Option<u64>,
}

impl Supervisor {
    /// A supervisor for `host`, limited to `only` queues when given.
    pub fn new(host: Arc<HostContext>, only: Option<HashSet<String>>) -> Self {
        Supervisor {
            host,
            only,
            running: HashMap::new(),
            seen_generation: None,
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
            tokio::select! {
                _ = tokio::time::sleep(poll) => {}
                _ = shutdown.changed() => {}
            }
            if *shutdown.borrow() {
                break;
            }
        }
        self.close_all(grace).await;
    }

    /// Closes every worker concurrently.
    pub async fn close_all(&mut self, grace: Duration) {
        let running: Vec<RunningQueue> = self.running.drain().map(|(_, r)| r).collect();
        tracing::info!(workers = running.len(), "draining workers");
        let closes = running.iter().map(|r| r.worker.close(grace));
        futures::future::join_all(closes).await;
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
            let resolved = ResolvedBinding {
                binding: binding.clone(),
                digest,
            };
            if let Some(r) = self.running.get(&binding.queue) {
                let previous = r.binding.read().unwrap().clone();
                if previous.binding.concurrency != binding.concurrency {
                    r.worker.set_concurrency(binding.concurrency);
                }
                if previous.digest != resolved.digest {
                    tracing::info!(queue = %binding.queue, digest = %resolved.digest, "new handler version");
                }
                *r.binding.write().unwrap() = resolved;
                continue;
            }
            let shared = Arc::new(RwLock::new(resolved));
            let executor = Arc::new(Executor::new(self.host.clone(), shared.clone()));
            let mut settings = self.host.worker_settings.clone();
            settings.concurrency = binding.concurrency;
            match QueueWorker::start(&self.host.queues, &binding.queue, &settings, executor).await {
                Ok(worker) => {
                    tracing::info!(queue = %binding.queue, handler = %binding.handler, concurrency = binding.concurrency, "worker started");
                    self.running.insert(
                        binding.queue.clone(),
                        RunningQueue {
                            worker,
                            binding: shared,
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
