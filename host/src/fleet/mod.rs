//! The fleet: every host registers itself in Redis with a heartbeat, so any
//! host's API can list the live ones, and an operator can drain a host (it
//! stops taking jobs and finishes the ones it runs) without touching it.
//!
//! A host writes `P:{airlock}:host:<id>` (its description, expiring after
//! [`Fleet::ttl`] without a heartbeat: Redis's clock says when a host is
//! dead, so the hosts' clocks need not agree) and scores itself in the
//! `P:{airlock}:hosts` sorted set with the heartbeat time, both in one
//! transaction. A member whose description expired is dead: listing skips
//! it, and one live host claims it (`P:{airlock}:host:<id>:recovering`,
//! see [`Fleet::claim_dead`]) to give its jobs back (`worker::recovery`),
//! reading which BullMQ worker ids held their locks from
//! `P:{airlock}:host:<id>:workers` (written with each heartbeat, kept a
//! day). A drain request is the key
//! `P:{airlock}:host:<id>:drain`, read by the host's heartbeat. Each
//! process is an incarnation of its host id, and one that starts under an
//! id an earlier process still holds takes it over ([`incarnation`]).

mod incarnation;

pub use self::incarnation::TakeOver;

use std::collections::BTreeMap;
use std::time::Duration;

use redis::AsyncCommands;
use serde::{Deserialize, Serialize};

use crate::error::QueueError;
use crate::store::Store;
use airlock_core::clock::now_ms;

/// What a host is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum HostState {
    /// Taking and running jobs.
    Running,
    /// Asked to drain: finishing its jobs, taking no new ones.
    Draining,
    /// Drained: idle and taking no jobs.
    Drained,
}

/// A host as it describes itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostInfo {
    /// Host id.
    pub id: String,
    /// Its HTTP API address, if it serves one.
    pub address: Option<String>,
    /// Airlock version.
    pub version: String,
    /// Queues it runs workers for.
    pub queues: Vec<String>,
    /// Jobs running now.
    pub running: usize,
    /// Jobs it can run at once (instance slots).
    pub capacity: usize,
    /// Its memory budget for guests, bytes: the memory limits of the
    /// guests it runs at once add up to at most this.
    #[serde(default)]
    pub memory_budget_bytes: Option<u64>,
    /// The part of the budget its running guests hold (their memory
    /// limits), bytes.
    #[serde(default)]
    pub memory_held_bytes: Option<u64>,
    /// Start time, ms since the epoch.
    pub started_at: u64,
    /// Last heartbeat, ms since the epoch.
    pub heartbeat_at: u64,
    /// Running, draining or drained.
    pub state: HostState,
    /// The registry generation this host's workers follow: every binding
    /// and handler version up to it is live here (absent until the first
    /// reconcile completes).
    #[serde(default)]
    pub generation: Option<u64>,
}

/// How long a host's worker ids are kept after its last heartbeat: past
/// its death, until a live host gives its jobs back.
pub(crate) const WORKERS_KEPT_SECS: u64 = 24 * 60 * 60;

/// How long a claim on a dead host lasts (ms), should its claimant die
/// while recovering (crash windows: `worker::recovery`).
pub(crate) const CLAIM_MS: u64 = 60_000;

/// Registered hosts silent this long are dropped from the set unclaimed
/// (ms): their jobs were left to BullMQ's stalled check.
const FORGOTTEN_AFTER_MS: u64 = 24 * 60 * 60 * 1000;

/// The fleet registry in Redis.
#[derive(Clone)]
pub struct Fleet {
    store: Store,
    /// A host missing heartbeats for this long is dead.
    ttl: Duration,
    /// This process's incarnation of its host id (random, per process).
    incarnation: String,
}

impl Fleet {
    /// The registry; hosts are dead after `ttl` without a heartbeat.
    pub fn new(store: Store, ttl: Duration) -> Self {
        Fleet {
            store,
            ttl,
            incarnation: uuid::Uuid::new_v4().simple().to_string(),
        }
    }

    fn host_key(&self, id: &str) -> String {
        self.store.keys().host(id)
    }

    /// How long a host lives without a heartbeat.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// Publishes this host's description and its workers' BullMQ ids (by
    /// queue), in one script that first checks this process is still the
    /// id's incarnation: `false`, with nothing written, when a later
    /// process took the id over ([`incarnation`]).
    pub async fn heartbeat(
        &self,
        info: &HostInfo,
        workers: &BTreeMap<String, String>,
    ) -> Result<bool, QueueError> {
        let keys = self.store.keys();
        let mut conn = self.store.conn();
        let written: i64 = incarnation::HEARTBEAT
            .key(keys.host_incarnation(&info.id))
            .key(self.host_key(&info.id))
            .key(keys.hosts())
            .key(keys.host_workers(&info.id))
            .arg(&self.incarnation)
            .arg(serde_json::to_string(info)?)
            .arg(self.ttl.as_millis().max(1) as u64)
            .arg(info.heartbeat_at)
            .arg(&info.id)
            .arg(serde_json::to_string(workers)?)
            .arg(WORKERS_KEPT_SECS)
            .invoke_async(&mut conn)
            .await?;
        Ok(written == 1)
    }

    /// Publishes host `id`'s workers' BullMQ ids (by queue) alone, between
    /// heartbeats.
    pub async fn publish_workers(
        &self,
        id: &str,
        workers: &BTreeMap<String, String>,
    ) -> Result<(), QueueError> {
        let mut conn = self.store.conn();
        let _: () = conn
            .set_ex(
                self.store.keys().host_workers(id),
                serde_json::to_string(workers)?,
                WORKERS_KEPT_SECS,
            )
            .await?;
        Ok(())
    }

    /// Hosts that died without leaving: registered, their description
    /// expired.
    pub async fn dead_hosts(&self) -> Result<Vec<String>, QueueError> {
        let (ids, infos) = self.members().await?;
        Ok(ids
            .into_iter()
            .zip(infos)
            .filter(|(_, info)| info.is_none())
            .map(|(id, _)| id)
            .collect())
    }

    /// Claims dead host `id` for recovery: true for one caller at a time,
    /// and only while the host is still dead once the claim is made.
    ///
    /// The claim is the key `…:host:<id>:recovering` (`SET NX`), made
    /// before the host's death is checked again; a host coming back writes
    /// its description before it looks for that key
    /// ([`Fleet::being_recovered`]). Whichever of the two goes second sees
    /// the other: either the claimant finds the host alive and gives the
    /// claim up, or the host finds the claim and stays fenced until
    /// [`Fleet::recovered`], so no job it takes meanwhile is given away
    /// under it.
    pub async fn claim_dead(&self, id: &str) -> Result<bool, QueueError> {
        let keys = self.store.keys();
        let mut conn = self.store.conn();
        let claimed: Option<String> = redis::cmd("SET")
            .arg(keys.host_recovering(id))
            .arg(1)
            .arg("NX")
            .arg("PX")
            .arg(CLAIM_MS)
            .query_async(&mut conn)
            .await?;
        if claimed.is_none() {
            return Ok(false);
        }
        if self.is_alive(id).await? {
            let _: i64 = conn.del(keys.host_recovering(id)).await?;
            return Ok(false);
        }
        let _: i64 = conn.zrem(keys.hosts(), id).await?;
        Ok(true)
    }

    /// Whether host `id`'s description is there (it heartbeats).
    pub async fn is_alive(&self, id: &str) -> Result<bool, QueueError> {
        let mut conn = self.store.conn();
        Ok(conn.exists(self.host_key(id)).await?)
    }

    /// Whether a live host is giving this host's jobs back (it was counted
    /// dead): a host coming back stays fenced while it is.
    pub async fn being_recovered(&self, id: &str) -> Result<bool, QueueError> {
        let mut conn = self.store.conn();
        Ok(conn.exists(self.store.keys().host_recovering(id)).await?)
    }

    /// Gives up the claim on host `id` without recovering it.
    pub async fn release_claim(&self, id: &str) -> Result<(), QueueError> {
        let mut conn = self.store.conn();
        let _: i64 = conn.del(self.store.keys().host_recovering(id)).await?;
        Ok(())
    }

    /// Ends the recovery of dead host `id`: its workers are forgotten and
    /// its claim lifted.
    pub async fn recovered(&self, id: &str) -> Result<(), QueueError> {
        let keys = self.store.keys();
        let mut conn = self.store.conn();
        let _: i64 = conn
            .del(&[keys.host_workers(id), keys.host_recovering(id)])
            .await?;
        Ok(())
    }

    /// The BullMQ worker ids host `id` last published, by queue (empty when
    /// it published none, or a day has passed).
    pub async fn workers_of(&self, id: &str) -> Result<BTreeMap<String, String>, QueueError> {
        let mut conn = self.store.conn();
        let json: Option<String> = conn.get(self.store.keys().host_workers(id)).await?;
        Ok(json
            .and_then(|j| serde_json::from_str(&j).ok())
            .unwrap_or_default())
    }

    /// Every registered id, with its description if it is alive. Members
    /// older than [`FORGOTTEN_AFTER_MS`] are dropped on the way (a fleet
    /// with no live host to claim them).
    async fn members(&self) -> Result<(Vec<String>, Vec<Option<HostInfo>>), QueueError> {
        let keys = self.store.keys();
        let mut conn = self.store.conn();
        let oldest = now_ms().saturating_sub(FORGOTTEN_AFTER_MS);
        let _: i64 = conn.zrembyscore(keys.hosts(), 0, oldest as f64).await?;
        let ids: Vec<String> = conn.zrange(keys.hosts(), 0, -1).await?;
        if ids.is_empty() {
            return Ok((ids, Vec::new()));
        }
        let host_keys: Vec<String> = ids.iter().map(|id| self.host_key(id)).collect();
        let json: Vec<Option<String>> = redis::cmd("MGET")
            .arg(&host_keys)
            .query_async(&mut conn)
            .await?;
        let infos = json
            .into_iter()
            .map(|j| j.and_then(|j| serde_json::from_str::<HostInfo>(&j).ok()))
            .collect();
        Ok((ids, infos))
    }

    /// Removes this host from the registry (clean shutdown), unless a
    /// later process took its id over meanwhile.
    pub async fn leave(&self, id: &str) -> Result<(), QueueError> {
        let keys = self.store.keys();
        let mut conn = self.store.conn();
        let _: i64 = incarnation::LEAVE
            .key(keys.host_incarnation(id))
            .key(self.host_key(id))
            .key(keys.hosts())
            .arg(&self.incarnation)
            .arg(id)
            .invoke_async(&mut conn)
            .await?;
        Ok(())
    }

    /// The live hosts, by id.
    pub async fn hosts(&self) -> Result<Vec<HostInfo>, QueueError> {
        let (_, infos) = self.members().await?;
        let mut hosts: Vec<HostInfo> = infos.into_iter().flatten().collect();
        hosts.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(hosts)
    }

    /// Asks host `id` to drain (`true`) or to take jobs again (`false`).
    /// Returns false when no live host has that id.
    pub async fn set_drain(&self, id: &str, drain: bool) -> Result<bool, QueueError> {
        if !self.hosts().await?.iter().any(|h| h.id == id) {
            return Ok(false);
        }
        let mut conn = self.store.conn();
        let key = self.store.keys().host_drain(id);
        if drain {
            let _: () = conn.set_ex(key, "1", 24 * 60 * 60).await?;
        } else {
            let _: i64 = conn.del(key).await?;
        }
        Ok(true)
    }

    /// Whether host `id` was asked to drain.
    pub async fn drain_requested(&self, id: &str) -> Result<bool, QueueError> {
        let mut conn = self.store.conn();
        Ok(conn.exists(self.store.keys().host_drain(id)).await?)
    }
}
