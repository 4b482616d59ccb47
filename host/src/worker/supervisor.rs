//! Keeps one BullMQ worker per bound queue, following the registry.
//!
//! Every `poll` interval the supervisor reads the registry's generation
//! counter; when it moved (a deploy, a new or changed binding), it reloads
//! the bindings and reconciles: starts workers for new queues, updates the
//! binding (handler digest, limits) and concurrency of running ones in
//! place, and closes workers of unbound queues. A worker that cannot start
//! (Redis down) is retried on the next turn. Concurrencies are the host's
//! [`capacity`](super::capacity) shares of the bindings'.
//!
//! Closing a worker waits up to `grace` for its running jobs, so it happens
//! on a task of its own: reconciling and drain handling go on meanwhile.
//! The fleet heartbeat is another task altogether
//! ([`membership`](super::membership)); the supervisor only hears its drain
//! requests — a draining host pauses every worker (no new jobs; running
//! ones finish), a withdrawn request resumes them — and tells it which
//! queues it serves.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinSet;

use super::HostContext;
use super::executor::{Executor, ResolvedBinding};
use super::membership::{self, FleetLink, Membership};
use crate::queue::QueueWorker;
use crate::registry::Binding;

/// A queue this host serves: its worker and executor.
struct ServedQueue {
    worker: QueueWorker,
    /// Writes the queue's run records once its worker has closed.
    executor: Arc<Executor>,
    binding: Arc<RwLock<Arc<ResolvedBinding>>>,
    /// The concurrency this host gives the queue (its capacity share).
    concurrency: usize,
}

impl ServedQueue {
    /// Closes the worker (waiting up to `grace` for its jobs), then gives
    /// back the key slots of finished runs and writes the run records
    /// still queued (`Executor::close`).
    async fn close(&self, grace: Duration) {
        // No new job joins a batch, and the batches gathering run now
        // rather than at their timeout, within the grace.
        self.worker.pause();
        self.executor.flush_batches();
        self.worker.close(grace).await;
        self.executor.close().await;
    }
}

/// The reconciler of bindings and workers.
pub struct Supervisor {
    host: Arc<HostContext>,
    /// Only these queues, when set (`serve --queues`).
    only: Option<HashSet<String>>,
    /// The queues this host serves, by name: a worker each.
    served: HashMap<String, ServedQueue>,
    seen_generation: Option<u64>,
    membership: Option<Membership>,
    /// How long a closing worker waits for its running jobs.
    grace: Duration,
    /// Workers being closed (unbound queues).
    closing: JoinSet<()>,
    draining: bool,
    link: Option<FleetLink>,
}

impl Supervisor {
    /// A supervisor for `host`, limited to `only` queues when given,
    /// registered in the fleet when `membership` is given; closing workers
    /// wait up to `grace` for their jobs.
    pub fn new(
        host: Arc<HostContext>,
        only: Option<HashSet<String>>,
        membership: Option<Membership>,
        grace: Duration,
    ) -> Self {
        Supervisor {
            host,
            only,
            served: HashMap::new(),
            seen_generation: None,
            membership,
            grace,
            closing: JoinSet::new(),
            draining: false,
            link: None,
        }
    }

    /// The queues this host serves (each has a worker).
    pub fn queues(&self) -> Vec<String> {
        let mut q: Vec<String> = self.served.keys().cloned().collect();
        q.sort();
        q
    }

    /// Runs until `shutdown` turns true, then closes every worker, giving
    /// running jobs up to the grace period to finish.
    pub async fn run(mut self, poll: Duration, mut shutdown: watch::Receiver<bool>) {
        let heartbeat = self.membership.take().map(|m| {
            let (link, task) = membership::start(self.host.clone(), m, shutdown.clone());
            self.link = Some(link);
            task
        });
        let cancels = super::cancels::listen(
            self.host.cancels.clone(),
            self.host.queues.clone(),
            shutdown.clone(),
        );
        let mut drain = self.link.as_ref().map(|l| l.drain.clone());
        loop {
            if let Err(e) = self.reconcile().await {
                tracing::warn!(error = %e, "reconciling bindings failed; will retry");
            }
            self.publish_queues().await;
            // Warm instances past their binding's idle time give their pool
            // slots back (dropping them resets the slots: off this task).
            let sandbox = self.host.sandbox.clone();
            tokio::task::spawn_blocking(move || sandbox.sweep_warm());
            tokio::select! {
                _ = tokio::time::sleep(poll) => {}
                _ = shutdown.changed() => {}
                Ok(()) = async {
                    match drain.as_mut() {
                        Some(rx) => rx.changed().await,
                        None => std::future::pending().await,
                    }
                } => {}
                Some(_) = self.closing.join_next(), if !self.closing.is_empty() => {}
            }
            if let Some(rx) = &drain {
                let wanted = *rx.borrow();
                self.apply_drain(wanted);
            }
            if *shutdown.borrow() {
                break;
            }
        }
        self.close_all().await;
        let _ = cancels.await;
        if let Some(task) = heartbeat {
            let _ = task.await;
        }
    }

    /// Pauses (drain) or resumes every worker.
    fn apply_drain(&mut self, drain: bool) {
        if drain == self.draining {
            return;
        }
        self.draining = drain;
        for r in self.served.values() {
            if drain {
                r.worker.pause();
                r.executor.flush_batches();
            } else {
                r.worker.resume();
            }
        }
    }

    /// Hands the served queues and their workers' ids to the heartbeat. A
    /// changed set of workers is also written at once, not with the next
    /// heartbeat, once a heartbeat has counted (before that, only the
    /// heartbeat writes them, with the host's description: see
    /// `super::recovery`): a host that dies within a heartbeat of a new
    /// worker still leaves its jobs findable. One that dies between a
    /// worker's start and this write (or its first heartbeat) leaves that
    /// worker's first jobs to BullMQ's stalled check.
    async fn publish_queues(&self) {
        let Some(link) = &self.link else { return };
        *link.queues.lock().unwrap_or_else(|p| p.into_inner()) = self.queues();
        let workers: BTreeMap<String, String> = self
            .served
            .iter()
            .map(|(queue, r)| (queue.clone(), r.worker.worker_id().to_string()))
            .collect();
        let changed = {
            let mut published = link.workers.lock().unwrap_or_else(|p| p.into_inner());
            let changed = *published != workers;
            *published = workers.clone();
            changed
        };
        let registered = link.registered.load(std::sync::atomic::Ordering::Acquire);
        if changed
            && registered
            && let Err(e) = self
                .host
                .fleet
                .publish_workers(&self.host.host_id, &workers)
                .await
        {
            tracing::warn!(error = %e, "could not publish this host's workers; the next heartbeat will");
        }
    }

    /// Closes every worker concurrently (and waits for those already
    /// closing).
    pub async fn close_all(&mut self) {
        let served: Vec<ServedQueue> = self.served.drain().map(|(_, r)| r).collect();
        tracing::info!(workers = served.len(), "draining workers");
        self.publish_queues().await;
        let grace = self.grace;
        let closes = served.iter().map(|r| r.close(grace));
        futures::future::join_all(closes).await;
        while self.closing.join_next().await.is_some() {}
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
            .served
            .keys()
            .filter(|q| !wanted.contains(*q))
            .cloned()
            .collect();
        for queue in gone {
            if let Some(r) = self.served.remove(&queue) {
                tracing::info!(queue, "queue unbound; closing its worker");
                let grace = self.grace;
                self.closing.spawn(async move { r.close(grace).await });
            }
        }

        for binding in bindings {
            // The queue's own version (a per-queue promote or rollback), else the
            // handler's current one.
            let Some(digest) = self.host.registry.runs(&binding).await? else {
                tracing::warn!(queue = %binding.queue, handler = %binding.handler, "bound handler is missing");
                continue;
            };
            // A batch queue's share counts batches (its executor runs at
            // most that many at once); its worker holds the jobs of that
            // many full batches.
            let share = shares.get(&binding.queue).copied().unwrap_or(1);
            let concurrency = share * binding.batch.as_ref().map_or(1, |b| b.size as usize);
            let resolved = ResolvedBinding::new(binding.clone(), digest, &self.host);
            if let Some(r) = self.served.get_mut(&binding.queue) {
                if r.concurrency != concurrency {
                    r.worker.set_concurrency(concurrency);
                    r.concurrency = concurrency;
                }
                r.executor.set_batches_at_once(share);
                let previous = r.binding.read().unwrap().clone();
                // Unchanged: the same resolution, so warm instances made
                // under it go on serving (see `sandbox::warm`).
                if previous.binding == resolved.binding && previous.digest == resolved.digest {
                    continue;
                }
                if previous.digest != resolved.digest {
                    tracing::info!(queue = %binding.queue, digest = %resolved.digest, "new handler version");
                }
                r.executor.rebind(resolved);
                continue;
            }
            let shared = Arc::new(RwLock::new(Arc::new(resolved)));
            let executor = Arc::new(Executor::new(self.host.clone(), shared.clone()));
            executor.set_batches_at_once(share);
            let mut settings = self.host.worker_settings.clone();
            settings.concurrency = concurrency;
            match QueueWorker::start(
                &self.host.queues,
                &binding.queue,
                &settings,
                executor.clone(),
            )
            .await
            {
                Ok(worker) => {
                    if self.draining {
                        worker.pause();
                    }
                    tracing::info!(queue = %binding.queue, handler = %binding.handler, concurrency, "worker started");
                    self.served.insert(
                        binding.queue.clone(),
                        ServedQueue {
                            worker,
                            executor,
                            binding: shared,
                            concurrency,
                        },
                    );
                    self.publish_queues().await;
                }
                Err(e) => {
                    complete = false;
                    tracing::warn!(queue = %binding.queue, error = %e, "could not start worker; will retry");
                }
            }
        }
        if complete {
            self.seen_generation = Some(generation);
            self.host
                .applied_generation
                .store(generation, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(())
    }
}
