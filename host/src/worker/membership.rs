//! This host's membership in the fleet: its heartbeat and its drain
//! request, on a task of their own.
//!
//! Every heartbeat interval the task publishes the host's description
//! (queues, running jobs, capacity, state) and reads its drain request,
//! handing a change to the supervisor through a `watch` channel. It shares
//! nothing with the supervisor's work but that channel and a snapshot of
//! the served queues, so no supervisor step — closing a queue whose jobs
//! take their whole grace period, a slow reconcile while Redis is down —
//! can delay a heartbeat: a live host never ages out of `/v1/hosts`.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;

use super::HostContext;
use crate::fleet::{Fleet, HostInfo, HostState};
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
}

/// What the supervisor tells the membership task and hears back.
#[derive(Clone)]
pub struct FleetLink {
    /// Queues this host runs workers for, as the supervisor last set them.
    pub queues: Arc<Mutex<Vec<String>>>,
    /// Whether the fleet asks this host to drain (written by the task).
    pub drain: watch::Receiver<bool>,
}

/// Starts the heartbeat task; it runs until `shutdown` turns true, then
/// takes the host out of the registry.
pub fn start(
    host: Arc<HostContext>,
    membership: Membership,
    mut shutdown: watch::Receiver<bool>,
) -> (FleetLink, tokio::task::JoinHandle<()>) {
    let queues = Arc::new(Mutex::new(Vec::new()));
    let (drain_tx, drain_rx) = watch::channel(false);
    let link = FleetLink {
        queues: queues.clone(),
        drain: drain_rx,
    };
    let started_at = now_ms();
    let task = tokio::spawn(async move {
        let mut tick = tokio::time::interval(membership.heartbeat);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = shutdown.changed() => {}
            }
            if *shutdown.borrow() {
                break;
            }
            let beat = beat(&host, &membership, &queues, &drain_tx, started_at);
            if let Err(e) = beat.await {
                tracing::warn!(error = %e, "fleet heartbeat failed; will retry");
            }
        }
        if let Err(e) = membership.fleet.leave(&host.host_id).await {
            tracing::debug!(error = %e, "could not leave the fleet registry");
        }
    });
    (link, task)
}

/// One heartbeat: read the drain request, publish the description.
async fn beat(
    host: &HostContext,
    membership: &Membership,
    queues: &Mutex<Vec<String>>,
    drain: &watch::Sender<bool>,
    started_at: u64,
) -> Result<(), crate::error::QueueError> {
    let requested = membership.fleet.drain_requested(&host.host_id).await?;
    if *drain.borrow() != requested {
        tracing::info!(draining = requested, "drain request changed");
        drain.send_replace(requested);
    }
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
    membership.fleet.heartbeat(&info).await
}
