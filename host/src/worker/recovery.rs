//! Recovery in seconds: when a host dies without leaving, a live host gives
//! its jobs and key slots back as soon as the fleet knows it dead, instead
//! of after its locks and leases run out (lock duration plus stalled
//! interval: ~60 s with the defaults).
//!
//! **When a host is dead.** Its description (`P:{airlock}:host:<id>`)
//! expires [`Fleet::ttl`] (5 heartbeats) after its last heartbeat, by
//! Redis's clock. Every host with workers looks twice per heartbeat for
//! registered hosts whose description is gone ([`Fleet::dead_hosts`]),
//! and claims each ([`Fleet::claim_dead`]: one claimant, and only while
//! the host is still dead). Then, for every queue the dead
//! host published a BullMQ worker id for, the key slots of each job locked
//! by that worker go to the heads of their lines
//! (`gate::admission::release_slots_of`), then the job goes back to
//! waiting through BullMQ's own script (`queue::recovery`). Live hosts
//! take them from there.
//!
//! **Never twice.** A host's heartbeat is its lease on its jobs: a host
//! whose last successful heartbeat was sent [`fence_after`] ago (4
//! heartbeats, one less than the description lives) stops every guest it
//! runs (`super::membership`), so by the time its description expires and
//! its jobs are handed to another host, none of them still runs here. A
//! host that was only slow (its Redis unreachable for 4–5 heartbeats)
//! ends the stopped runs as `host_unavailable`, which puts them back to
//! waiting with no attempt counted; its locks are still its own, so nothing
//! else ran them. A host that comes back while it is being recovered stays
//! fenced until the recovery ends (see [`Fleet::claim_dead`] for why the
//! two cannot miss each other), so no job it would take meanwhile is handed
//! away under it. BullMQ's move checks the dead worker's token against the
//! lock, so a job that finished or changed hands in the meantime is left
//! alone.
//!
//! Like every Redis key, the registry and the workers' ids are untrusted
//! input: a forged member of `P:{airlock}:hosts` with a forged worker list
//! can make a host move the jobs those ids name back to waiting. That grants
//! a Redis writer nothing it lacked: any Redis client can read a lock's
//! token and run BullMQ's `moveJobFromActiveToWait` itself. The guest of a
//! job moved so still runs on its live host, whose finish then fails on the
//! lost lock.
//!
//! Crash windows, and what recovery leaves to the old path (BullMQ's
//! stalled check and the slot leases: lock duration plus stalled
//! interval; `state::key_limits` says what a lease does):
//! - a claimant that dies after its claim and before it gave everything
//!   back leaves the rest to the old path, or to the next claim once its
//!   own expires (60 s), and a dead host that comes back meanwhile fenced
//!   until then; a job already moved is not moved again;
//! - a lock with less than 5 s left is left to the old path
//!   (`queue::recovery`): with the default lock of 30 s, renewed every
//!   15 s, a dead host's locks have 10–25 s left when it is found dead;
//! - a host that dies between starting a worker and publishing its id
//!   (at once, or with its first heartbeat: `super::supervisor`) leaves
//!   that worker's jobs to the old path;
//! - a host restarted under the same id gives its predecessor's jobs back
//!   itself ([`take_over`]; its crash windows are `fleet::incarnation`'s);
//!   one that restarts while a live host recovers the id waits for that
//!   recovery to end before its first heartbeat, so the ids read once its
//!   description is back are never its own;
//! - a Redis error before a dead host's jobs are listed leaves them to
//!   the old path, or to the next claim once this one expires (60 s); one
//!   while listing, reading or moving a job leaves that job to the old
//!   path.
//!
//! How the moved job's rerun fares is `worker::executor`'s.

use std::collections::BTreeMap;
use std::time::Duration;

use super::HostContext;
use crate::fleet::{Fleet, TakeOver};

/// How long after its last successful heartbeat was sent a host stops its
/// guests: one heartbeat before the fleet counts it dead.
pub fn fence_after(fleet: &Fleet, heartbeat: Duration) -> Duration {
    fleet.ttl().saturating_sub(heartbeat)
}

/// Claims every dead host and gives its jobs back (see the module docs).
pub async fn recover_dead_hosts(host: &HostContext, fleet: &Fleet) {
    let dead = match fleet.dead_hosts().await {
        Ok(dead) => dead,
        Err(e) => {
            tracing::debug!(error = %e, "could not look for dead hosts");
            return;
        }
    };
    for id in dead {
        if id == host.host_id {
            // This host's own description expired (it was fenced): its
            // next heartbeat registers it again; its jobs were stopped.
            continue;
        }
        match fleet.claim_dead(&id).await {
            Ok(true) => recover_host(host, fleet, &id).await,
            Ok(false) => {}
            Err(e) => tracing::debug!(host = %id, error = %e, "could not claim a dead host"),
        }
    }
}

/// Gives back the jobs and key slots of dead host `id`.
async fn recover_host(host: &HostContext, fleet: &Fleet, id: &str) {
    let workers = match fleet.workers_of(id).await {
        Ok(w) => w,
        Err(e) => {
            tracing::warn!(host = %id, error = %e, "could not read a dead host's workers; its jobs are left to the stalled check");
            return;
        }
    };
    // A host back under the same id writes its description before its
    // workers' ids (the first heartbeat writes both at once; the supervisor
    // writes them alone only after it), and a restarted one writes neither
    // until this claim is gone (`take_over`). So ids read before the
    // description is seen again are the dead one's: none of its
    // successor's jobs is given away. A host that was only cut off, back
    // meanwhile, keeps its jobs.
    match fleet.is_alive(id).await {
        Ok(false) => {}
        Ok(true) => {
            tracing::info!(host = %id, "a host counted dead is back before its jobs were given back; it keeps them");
            let _ = fleet.release_claim(id).await;
            return;
        }
        Err(e) => {
            tracing::warn!(host = %id, error = %e, "could not check a dead host again; its jobs are left to the stalled check");
            return;
        }
    }
    let (requeued, left) = give_back(host, id, &workers).await;
    if let Err(e) = fleet.recovered(id).await {
        tracing::debug!(host = %id, error = %e, "could not end a dead host's recovery");
    }
    tracing::info!(
        host = %id,
        requeued,
        left_to_fail = left,
        "gave a dead host's jobs back"
    );
}

/// Before this process's first heartbeat: takes its host id over from the
/// process that ran under it before (`fleet::incarnation`) and, on a task
/// of its own, gives back that process's jobs and key slots once it must
/// have stopped its guests — its fence, counted from its last heartbeat,
/// plus one heartbeat. Waits while a live host recovers the id.
pub async fn take_over(host: &std::sync::Arc<HostContext>, heartbeat: Duration) {
    let fleet = &host.fleet;
    let (workers, silent_for) = loop {
        match fleet.take_over(&host.host_id).await {
            Ok(TakeOver::Nothing) => return,
            Ok(TakeOver::Predecessor {
                workers,
                silent_for,
            }) => break (workers, silent_for),
            Ok(TakeOver::BeingRecovered) => {
                tracing::info!(host = %host.host_id, "a live host is giving this id's earlier jobs back; waiting for it before joining the fleet");
                tokio::time::sleep(heartbeat / 2).await;
            }
            Err(e) => {
                tracing::warn!(host = %host.host_id, error = %e, "could not take this host id over; an earlier process's jobs under it are left to the stalled check");
                return;
            }
        }
    };
    let wait = (fence_after(fleet, heartbeat) + heartbeat).saturating_sub(silent_for);
    tracing::info!(
        host = %host.host_id,
        queues = workers.len(),
        after = ?wait,
        "took this host id over from an earlier process; giving its jobs back once it must have stopped"
    );
    let host = host.clone();
    tokio::spawn(async move {
        tokio::time::sleep(wait).await;
        let (requeued, left) = give_back(&host, &host.host_id, &workers).await;
        if let Err(e) = host.fleet.release_claim(&host.host_id).await {
            tracing::debug!(error = %e, "could not lift the claim on this host id");
        }
        tracing::info!(
            host = %host.host_id,
            requeued,
            left_to_fail = left,
            "gave the jobs of this id's earlier process back"
        );
    });
}

/// Gives back the key slots and jobs of host `id`'s `workers` (BullMQ
/// worker ids by queue), each job's slots before the job: answers how many
/// jobs went back to waiting and how many were left to fail (stalled too
/// often).
async fn give_back(
    host: &HostContext,
    id: &str,
    workers: &BTreeMap<String, String>,
) -> (usize, usize) {
    let (mut requeued, mut left) = (0, 0);
    for (queue, worker_id) in workers {
        let stalled = match host.queues.locked_by(queue, worker_id).await {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(host = %id, queue, error = %e, "could not list a dead host's jobs");
                continue;
            }
        };
        if stalled.is_empty() {
            continue;
        }
        let binding = host.registry.binding(queue).await.ok();
        let settings = &host.worker_settings;
        for job in &stalled {
            let found = host
                .queues
                .stalled_job(queue, job, settings.max_stalled_count)
                .await;
            let found = match found {
                Ok(Some(found)) => found,
                Ok(None) => continue,
                Err(e) => {
                    tracing::warn!(host = %id, queue, job = %job.id, error = %e, "could not read a dead host's job");
                    continue;
                }
            };
            // The slots first: once the job is back in waiting, a live host
            // may take it and find its own lease, keeping a slot the release
            // would then free under it. Until the move, the job's lock is
            // the dead worker's (with `LOCK_LEFT_MS` to go), so it runs
            // nowhere.
            if let Some(binding) = &binding {
                crate::gate::admission::release_slots_of(
                    &host.queues,
                    binding,
                    (queue, &job.id, found.name()),
                    &found.data,
                    settings.lock_duration,
                )
                .await;
            }
            if !found.may_run_again {
                left += 1;
                continue;
            }
            match host.queues.requeue_stalled(queue, job, &found).await {
                Ok(true) => requeued += 1,
                Ok(false) => {}
                Err(e) => {
                    tracing::warn!(host = %id, queue, job = %job.id, error = %e, "could not give a dead host's job back");
                }
            }
        }
    }
    (requeued, left)
}
