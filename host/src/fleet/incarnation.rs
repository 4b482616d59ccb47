//! Incarnations: each `airlock serve` process is an incarnation of its
//! host id, named by a random id of its own ([`Fleet::incarnation`]). The
//! id's current one is `P:{airlock}:host:<id>:incarnation`.
//!
//! **A restarted host takes its id over.** A host with a fixed
//! `--host-id` (a systemd unit, a StatefulSet pod) that is restarted
//! within a second of a crash finds its predecessor's description still
//! alive, so no live host counts that predecessor dead; without more, its
//! jobs and key slots would wait for BullMQ's stalled check and the slot
//! leases (lock duration plus stalled interval). So before its first
//! heartbeat a process makes itself the id's incarnation and reads what
//! the earlier one left ([`Fleet::take_over`], one script): the BullMQ
//! worker ids it held its jobs' locks with, and how long ago its last
//! heartbeat landed. Every heartbeat checks the incarnation in the same
//! script that writes it, and an earlier process's heartbeat is refused
//! from then on. `worker::recovery::take_over` gives those jobs back once
//! the earlier process must have stopped its guests.
//!
//! Crash windows:
//! - **The earlier process is not dead after all** (two processes started
//!   under one id, or an old one that was only cut off from Redis): its
//!   next heartbeat is refused, so it stops its guests at once and shuts
//!   down (`worker::membership`); one that cannot reach Redis stops them
//!   when its fence comes ([`super::Fleet::ttl`] less a heartbeat after its
//!   last counted heartbeat), as always. The new process gives the jobs
//!   back only after that fence plus a heartbeat, counted from the earlier
//!   process's last heartbeat as Redis's clock saw it land (which is after
//!   it was sent), so neither case runs a job on two hosts at once.
//! - **A frozen VM** (the earlier process paused, then resumed): its fence
//!   has run out by the time it resumes, so its membership task, whose
//!   tick is due at once, stops its guests as it wakes; a guest may run on
//!   until its next epoch tick (a few ms), and its finish fails on the lock
//!   BullMQ gave to the job's next run. This is the window a resumed host
//!   has with a dead host's recovery too (docs/OPERATIONS.md).
//! - **A live host is already recovering the id** (the earlier process
//!   was counted dead before the restart): the new process waits for that
//!   recovery to end before its first heartbeat, so the recovering host
//!   never sees the id alive mid-way and leaves the rest to the stalled
//!   check.
//! - **The new process dies before it gave the jobs back** (a host that
//!   crashes again at once): the next process under the id takes its
//!   claim over — the claim names the incarnation holding it — and gives
//!   back what the dead one's workers held. What that one had not given
//!   back of its own predecessor's jobs is left to BullMQ's stalled check
//!   and the leases: its heartbeats overwrote their workers' ids.
//!
//! Like every Redis key, the incarnation is untrusted input: a forged one
//! makes a host's heartbeats refused, so it stops and leaves — what
//! deleting its description would do to it anyway.

use std::collections::BTreeMap;
use std::sync::LazyLock;
use std::time::Duration;

use redis::Script;

use super::{CLAIM_MS, Fleet, WORKERS_KEPT_SECS};
use crate::error::QueueError;

/// The heartbeat: the incarnation checked and the description, the hosts
/// set and the workers' ids written, in one script.
pub(super) static HEARTBEAT: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/heartbeat.lua")));

/// A clean shutdown's leave, unless a later process took the id over.
pub(super) static LEAVE: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/leave.lua")));

static TAKE_OVER: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/take_over.lua")));

/// What a process found of the earlier incarnation of its host id.
#[derive(Debug, PartialEq, Eq)]
pub enum TakeOver {
    /// None left workers' ids (a first start, or they were given back).
    Nothing,
    /// A live host is giving the earlier incarnation's jobs back (it was
    /// counted dead): wait for it to end before heartbeating.
    BeingRecovered,
    /// The earlier incarnation held its jobs' locks with these BullMQ
    /// worker ids (by queue), and its last heartbeat landed `silent_for`
    /// ago (the fleet's ttl, or more, when its description is gone). This
    /// process now holds the recovery claim on the id.
    Predecessor {
        workers: BTreeMap<String, String>,
        silent_for: Duration,
    },
}

impl Fleet {
    /// This process's incarnation of its host id.
    pub fn incarnation(&self) -> &str {
        &self.incarnation
    }

    /// Makes this process host `id`'s incarnation, refusing every earlier
    /// one's heartbeat from now on, and answers what the earlier one left
    /// (see the module docs).
    pub async fn take_over(&self, id: &str) -> Result<TakeOver, QueueError> {
        let keys = self.store.keys();
        let mut conn = self.store.conn();
        let found: Vec<redis::Value> = TAKE_OVER
            .key(keys.host_incarnation(id))
            .key(keys.host(id))
            .key(keys.host_workers(id))
            .key(keys.host_recovering(id))
            .arg(&self.incarnation)
            .arg(WORKERS_KEPT_SECS)
            .arg(CLAIM_MS)
            .invoke_async(&mut conn)
            .await?;
        use redis::Value::{BulkString, Int};
        Ok(match found.as_slice() {
            [Int(-1)] => TakeOver::BeingRecovered,
            [Int(left), BulkString(workers)] => TakeOver::Predecessor {
                workers: serde_json::from_slice(workers).unwrap_or_default(),
                silent_for: match u64::try_from(*left) {
                    Ok(left) => self.ttl.saturating_sub(Duration::from_millis(left)),
                    Err(_) => self.ttl,
                },
            },
            _ => TakeOver::Nothing,
        })
    }
}
