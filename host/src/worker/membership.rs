//! This host's membership in the fleet: its heartbeat, its drain request
//! and its fence, on a task of their own, and beside it the task that
//! recovers dead hosts.
//!
//! Every heartbeat interval the task publishes the host's description
//! (queues, running jobs, capacity, state) and its workers' BullMQ ids, and
//! reads its drain request, handing a change to the supervisor through a
//! `watch` channel. It shares nothing with the supervisor's work but that
//! channel and a snapshot of the served queues, so no supervisor step —
//! closing a queue whose jobs take their whole grace period, a slow
//! reconcile while Redis is down — can delay a heartbeat: a live host never
//! ages out of `/v1/hosts`.
//!
//! Each heartbeat may take at most one interval; one that fails or takes
//! longer does not count. When the last heartbeat that counted was sent
//! [`super::recovery::fence_after`] ago, the host stops every guest it runs
//! and every one that starts until a heartbeat counts again (and no live
//! host is giving its jobs away: `Fleet::claim_dead`), and its workers stop
//! fetching (as in a drain): the fleet is about to count it dead and hand
//! its jobs to other hosts. A stopped run ends as `host_unavailable`, which
//! puts the job back to waiting without counting an attempt when its lock
//! is still this host's.
//!
//! A heartbeat the fleet refuses because a later process took this host's
//! id over (`fleet::incarnation`) ends this process: it stops every guest
//! at once, as a fence does, asks the host to shut down (`stop`), and
//! leaves the id's records to the later process.
//!
//! Twice per interval a second task gives back the jobs of hosts that died
//! (`super::recovery`); it is apart so that a long recovery never delays a
//! heartbeat.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;

use super::HostContext;
use crate::fleet::{Fleet, HostInfo, HostState};
use crate::sandbox::{Failure, FailureKind};
use airlock_core::clock::now_ms;

/// How this host shows up in the fleet.
#[derive(Clone)]
pub struct Membership {
    /// The fleet registry.
    pub fleet: Fleet,
    /// Heartbeat interval.
    pub heartbeat: Duration,
    /// The host's API address, if any.
    pub address: Option<String>,
    /// Shuts the host down: sent when a later process took its id over.
    pub stop: watch::Sender<bool>,
    /// Set when a later process took this host's id over.
    pub superseded: Arc<AtomicBool>,
}

/// What the supervisor tells the membership task and hears back.
#[derive(Clone)]
pub struct FleetLink {
    /// Queues this host runs workers for, as the supervisor last set them.
    pub queues: Arc<Mutex<Vec<String>>>,
    /// The BullMQ id of each queue's worker, as the supervisor last set
    /// them: published with each heartbeat for recovery.
    pub workers: Arc<Mutex<BTreeMap<String, String>>>,
    /// Whether a heartbeat of this host counted yet: until one has, its
    /// description is not there, and the supervisor must leave the
    /// workers' ids to the heartbeat (`super::recovery` says why).
    pub registered: Arc<AtomicBool>,
    /// Whether the fleet asks this host to drain (written by the task).
    pub drain: watch::Receiver<bool>,
}

/// Starts the heartbeat task (and the recovery task beside it); it runs
/// until `shutdown` turns true, then takes the host out of the registry.
pub fn start(
    host: Arc<HostContext>,
    membership: Membership,
    mut shutdown: watch::Receiver<bool>,
) -> (FleetLink, tokio::task::JoinHandle<()>) {
    let queues = Arc::new(Mutex::new(Vec::new()));
    let workers = Arc::new(Mutex::new(BTreeMap::new()));
    let registered = Arc::new(AtomicBool::new(false));
    let (drain_tx, drain_rx) = watch::channel(false);
    let link = FleetLink {
        queues: queues.clone(),
        workers: workers.clone(),
        registered: registered.clone(),
        drain: drain_rx,
    };
    let started_at = now_ms();
    let task = tokio::spawn(async move {
        let every = membership.heartbeat;
        let fence = super::recovery::fence_after(&membership.fleet, every);
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // Recovering a dead host can take a while (its jobs, one by one):
        // on a task of its own, so it never delays a heartbeat.
        let recovery = tokio::spawn(recover_loop(
            host.clone(),
            membership.fleet.clone(),
            every / 2,
            shutdown.clone(),
        ));
        // When the last heartbeat that counted was sent.
        let mut counted = tokio::time::Instant::now();
        let mut fenced = false;
        loop {
            tokio::select! {
                biased;
                _ = shutdown.changed() => {}
                _ = tick.tick() => {}
            }
            if *shutdown.borrow() {
                break;
            }
            if !fenced && counted.elapsed() >= fence {
                fenced = true;
                stop_guests(&host, counted.elapsed());
                // And take no job meanwhile: the supervisor pauses every
                // worker, as for a drain, until a heartbeat counts again
                // and brings the drain request back.
                drain_tx.send_replace(true);
            }
            let sent = tokio::time::Instant::now();
            let beat = beat(&host, &membership, &queues, &workers, started_at);
            let requested = match tokio::time::timeout(every, beat).await {
                Ok(Ok(Some(requested))) => requested,
                Ok(Ok(None)) => {
                    give_way(&host, &membership);
                    drain_tx.send_replace(true);
                    break;
                }
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "fleet heartbeat failed; will retry");
                    continue;
                }
                Err(_) => {
                    tracing::warn!("fleet heartbeat took longer than its interval; will retry");
                    continue;
                }
            };
            counted = sent;
            registered.store(true, Ordering::Release);
            if fenced {
                // Counted dead meanwhile, and a live host is giving this
                // one's jobs away: stay fenced until it is done.
                match membership.fleet.being_recovered(&host.host_id).await {
                    Ok(false) => {
                        fenced = false;
                        host.cancels.unfence();
                        tracing::info!("fleet heartbeat back: running jobs again");
                    }
                    Ok(true) => tracing::info!(
                        "fleet heartbeat back, this host's jobs still being recovered: staying fenced"
                    ),
                    Err(e) => {
                        tracing::warn!(error = %e, "could not read this host's recovery: staying fenced");
                    }
                }
            }
            let drain = requested || fenced;
            if *drain_tx.borrow() != drain {
                tracing::info!(draining = drain, "drain request changed");
                drain_tx.send_replace(drain);
            }
        }
        let _ = recovery.await;
        if membership.superseded.load(Ordering::Acquire) {
            return;
        }
        if let Err(e) = membership.fleet.leave(&host.host_id).await {
            tracing::debug!(error = %e, "could not leave the fleet registry");
        }
    });
    (link, task)
}

/// Every `every`, gives back the jobs of hosts that died and wakes invokes
/// past their deadline (`super::starts::sweep_deadlines`), until
/// `shutdown`.
async fn recover_loop(
    host: Arc<HostContext>,
    fleet: Fleet,
    every: Duration,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {
                super::recovery::recover_dead_hosts(&host, &fleet).await;
                super::starts::sweep_deadlines(&host.queues).await;
            }
            _ = shutdown.changed() => {}
        }
        if *shutdown.borrow() {
            return;
        }
    }
}

/// Stops every guest of this host: its heartbeat has not counted for
/// `silent`, and the fleet is about to hand its jobs to other hosts.
fn stop_guests(host: &HostContext, silent: Duration) {
    let failure = Failure::new(
        FailureKind::HostUnavailable,
        format!(
            "stopped: host {} could not reach the fleet for {}, so its jobs go to other hosts",
            host.host_id,
            humantime::format_duration(Duration::from_millis(silent.as_millis() as u64)),
        ),
    );
    let stopped = host.cancels.fence(&failure);
    tracing::warn!(stopped, "fleet heartbeat lost: stopped this host's guests");
}

/// A later process took this host's id over: stop every guest now, and
/// the host.
fn give_way(host: &HostContext, membership: &Membership) {
    let failure = Failure::new(
        FailureKind::HostUnavailable,
        format!(
            "stopped: a later process took host id {} over, so this one stops",
            host.host_id
        ),
    );
    let stopped = host.cancels.fence(&failure);
    tracing::error!(
        host = %host.host_id,
        stopped,
        "a later process took this host's id over (another `airlock serve` with the same --host-id): stopped this host's guests and shutting down"
    );
    membership.superseded.store(true, Ordering::Release);
    membership.stop.send_replace(true);
}

/// One heartbeat: read the drain request, publish the description.
/// Answers whether the host is asked to drain; `None` when a later process
/// took its id over.
async fn beat(
    host: &HostContext,
    membership: &Membership,
    queues: &Mutex<Vec<String>>,
    workers: &Mutex<BTreeMap<String, String>>,
    started_at: u64,
) -> Result<Option<bool>, crate::error::QueueError> {
    let requested = membership.fleet.drain_requested(&host.host_id).await?;
    let running = host.running.load(Ordering::Relaxed);
    let info = HostInfo {
        id: host.host_id.clone(),
        address: membership.address.clone(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        queues: queues.lock().unwrap_or_else(|p| p.into_inner()).clone(),
        running,
        capacity: host.capacity.slots(),
        memory_budget_bytes: Some(host.capacity.memory_budget()),
        memory_held_bytes: Some(host.capacity.memory_held()),
        started_at,
        heartbeat_at: now_ms(),
        generation: match host.applied_generation.load(Ordering::Relaxed) {
            super::NO_GENERATION => None,
            g => Some(g),
        },
        state: match (requested, running) {
            (false, _) => HostState::Running,
            (true, 0) => HostState::Drained,
            (true, _) => HostState::Draining,
        },
    };
    let workers = workers.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let counted = membership.fleet.heartbeat(&info, &workers).await?;
    Ok(counted.then_some(requested))
}
