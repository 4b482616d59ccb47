//! The fleet: every host registers itself in Redis with a heartbeat, so any
//! host's API can list the live ones, and an operator can drain a host (it
//! stops taking jobs and finishes the ones it runs) without touching it.
//!
//! A host writes `P:{airlock}:host:<id>` (its description, expiring after
//! a few missed heartbeats) and scores itself in the `P:{airlock}:hosts`
//! sorted set with the heartbeat time; listing prunes members whose
//! heartbeat is too old, so dead hosts age out on their own. A drain request
//! is the key `P:{airlock}:host:<id>:drain`, read by the host's heartbeat.

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

/// The fleet registry in Redis.
#[derive(Clone)]
pub struct Fleet {
    store: Store,
    /// A host missing heartbeats for this long is dead.
    ttl: Duration,
}

impl Fleet {
    /// The registry; hosts are dead after `ttl` without a heartbeat.
    pub fn new(store: Store, ttl: Duration) -> Self {
        Fleet { store, ttl }
    }

    fn host_key(&self, id: &str) -> String {
        self.store.keys().host(id)
    }

    /// Publishes this host's description.
    pub async fn heartbeat(&self, info: &HostInfo) -> Result<(), QueueError> {
        let keys = self.store.keys();
        let mut conn = self.store.conn();
        redis::pipe()
            .set_ex(
                self.host_key(&info.id),
                serde_json::to_string(info)?,
                self.ttl.as_secs().max(1),
            )
            .ignore()
            .zadd(keys.hosts(), &info.id, info.heartbeat_at)
            .ignore()
            .query_async::<()>(&mut conn)
            .await?;
        Ok(())
    }

    /// Removes this host from the registry (clean shutdown).
    pub async fn leave(&self, id: &str) -> Result<(), QueueError> {
        let mut conn = self.store.conn();
        redis::pipe()
            .del(self.host_key(id))
            .ignore()
            .zrem(self.store.keys().hosts(), id)
            .ignore()
            .query_async::<()>(&mut conn)
            .await?;
        Ok(())
    }

    /// The live hosts, by id. Hosts whose heartbeat is older than the TTL
    /// are pruned on the way.
    pub async fn hosts(&self) -> Result<Vec<HostInfo>, QueueError> {
        let keys = self.store.keys();
        let mut conn = self.store.conn();
        let oldest = now_ms().saturating_sub(self.ttl.as_millis() as u64);
        let _: i64 = conn.zrembyscore(keys.hosts(), 0, oldest as f64).await?;
        let ids: Vec<String> = conn.zrange(keys.hosts(), 0, -1).await?;
        let mut hosts = Vec::with_capacity(ids.len());
        for id in ids {
            let json: Option<String> = conn.get(self.host_key(&id)).await?;
            if let Some(info) = json.and_then(|j| serde_json::from_str::<HostInfo>(&j).ok()) {
                hosts.push(info);
            }
        }
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
