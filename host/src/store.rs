//! Airlock's own Redis handle and key names.
//!
//! BullMQ's keys are the `queue` module's business. Airlock's registry keys
//! (handlers, components, bindings) carry the `{airlock}` hash tag after the
//! prefix, so the multi-key registry transactions stay in one slot on Redis
//! Cluster; per-queue keys carry the queue's own prefix and name, so they
//! land in the queue's slot whatever hash tag the queue uses.
//!
//! | key | type | what |
//! |---|---|---|
//! | `P:{airlock}:handlers` | set | handler names |
//! | `P:{airlock}:handler:NAME` | hash | `digest` and `entry` (JSON `HandlerVersion`) of the current version |
//! | `P:{airlock}:handler:NAME:versions` | list | JSON `{digest, version, uploadedAt}`, newest first |
//! | `P:{airlock}:component:DIGEST` | string | component bytes (content-addressed) |
//! | `P:{airlock}:component:DIGEST:info` | string | JSON `ComponentInfo` + `uploadedAt` |
//! | `P:{airlock}:bindings` | hash | queue name → binding JSON |
//! | `P:{airlock}:generation` | string | bumped on every registry change; hosts poll it |
//! | `P:{airlock}:hosts` | zset | host id → last heartbeat (ms) |
//! | `P:{airlock}:host:ID` | string | a host's description (expires without heartbeats) |
//! | `P:{airlock}:host:ID:drain` | string | present while the host is asked to drain |
//! | `P:{airlock}:events` | stream | recent events for durable waits, `~10,000` (see `queue::waits`) |
//! | `P:{airlock}:waits:DIGEST` | set | jobs waiting for an event name and match: JSON `[queue, id, wait id]` |
//! | `P:{airlock}:wait-paths:DIGEST` | set | the match paths waits of an event name use (`""`: none) |
//! | `P:{airlock}:token:DIGEST` | string | a wait token's job, JSON `[queue, id, wait id]` |
//! | `P:{airlock}:artifact:DIGEST:ENGINE` | string | precompiled component shared by the fleet (TTL 30 days) |
//! | `P:airlock:kv:HANDLER:KEY` | string | the handler's KV store (TTL as asked) |
//! | `P:QUEUE:airlock-pending:ID` | hash | a job's producer and limits while it is being added (see `queue::meta`) |
//!
//! Per-job state lives in BullMQ's job hash (`P:QUEUE:ID`) as `airlock.*`
//! fields; `queue::meta` owns them.

use anyhow::Context as _;
use bullmq::options::RedisConnectionOptions;
use bullmq::redis_connection::{AnyConnection, RedisConnection};
use redis::AsyncCommands;
use std::collections::HashMap;

/// Names of Airlock's registry keys under one prefix.
#[derive(Debug, Clone)]
pub struct Keys {
    prefix: String,
}

impl Keys {
    /// Keys under `prefix` (the same prefix as the BullMQ queues).
    pub fn new(prefix: &str) -> Self {
        Keys {
            prefix: prefix.to_string(),
        }
    }

    /// The key prefix.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    fn registry(&self, rest: &str) -> String {
        format!("{}:{{airlock}}:{rest}", self.prefix)
    }

    /// Set of handler names.
    pub fn handlers(&self) -> String {
        self.registry("handlers")
    }

    /// Current version of a handler.
    pub fn handler(&self, name: &str) -> String {
        self.registry(&format!("handler:{name}"))
    }

    /// Version history of a handler.
    pub fn handler_versions(&self, name: &str) -> String {
        self.registry(&format!("handler:{name}:versions"))
    }

    /// A component's bytes.
    pub fn component(&self, digest: &str) -> String {
        self.registry(&format!("component:{digest}"))
    }

    /// A component's description.
    pub fn component_info(&self, digest: &str) -> String {
        self.registry(&format!("component:{digest}:info"))
    }

    /// Queue bindings.
    pub fn bindings(&self) -> String {
        self.registry("bindings")
    }

    /// Registry change counter.
    pub fn generation(&self) -> String {
        self.registry("generation")
    }

    /// Live hosts by heartbeat.
    pub fn hosts(&self) -> String {
        self.registry("hosts")
    }

    /// A host's description.
    pub fn host(&self, id: &str) -> String {
        self.registry(&format!("host:{id}"))
    }

    /// A host's drain request.
    pub fn host_drain(&self, id: &str) -> String {
        self.registry(&format!("host:{id}:drain"))
    }

    /// The fleet's recent events, for durable waits (see `queue::waits`).
    pub fn recent_events(&self) -> String {
        self.registry("events")
    }

    /// The jobs waiting for an event (name, path, value) by its digest (see
    /// `queue::waits`).
    pub fn event_waiters(&self, digest: &str) -> String {
        self.registry(&format!("waits:{digest}"))
    }

    /// The paths event waits of one event name match on, by its digest.
    pub fn event_wait_paths(&self, digest: &str) -> String {
        self.registry(&format!("wait-paths:{digest}"))
    }

    /// Where a wait token leads, by the token's digest.
    pub fn wait_token(&self, digest: &str) -> String {
        self.registry(&format!("token:{digest}"))
    }

    /// The fleet's cancel stream (see `queue::cancel`).
    pub fn cancels(&self) -> String {
        self.registry("cancels")
    }

    /// A precompiled component for one engine configuration.
    pub fn artifact(&self, digest: &str, engine: &str) -> String {
        self.registry(&format!("artifact:{digest}:{engine}"))
    }

    /// A queue's secrets: name → sealed envelope (see `sandbox::secrets`).
    pub fn secrets(&self, queue: &str) -> String {
        self.registry(&format!("secrets:{queue}"))
    }

    /// A handler's KV key.
    pub fn kv(&self, handler: &str, key: &str) -> String {
        format!("{}:airlock:kv:{handler}:{key}", self.prefix)
    }
}

/// Where Redis is: one URL for a single server, several (comma-separated)
/// for the seed nodes of a Redis Cluster.
pub fn connection_options(redis: &str) -> anyhow::Result<RedisConnectionOptions> {
    let urls: Vec<&str> = redis
        .split(',')
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .collect();
    for url in &urls {
        redis::parse_redis_url(url).with_context(|| format!("bad Redis URL `{url}`"))?;
    }
    match urls.as_slice() {
        [] => anyhow::bail!("no Redis URL given"),
        [one] => Ok(RedisConnectionOptions::new().url(*one)),
        seeds => Ok(RedisConnectionOptions::new().cluster_nodes(seeds.iter().copied())),
    }
}

/// A shared, auto-reconnecting Redis connection for Airlock's own keys
/// (BullMQ's connection type, so a Redis Cluster works the same way).
#[derive(Clone)]
pub struct Store {
    conn: RedisConnection,
    options: RedisConnectionOptions,
    keys: Keys,
}

impl Store {
    /// Connects to `redis` (a URL, or comma-separated cluster seed URLs).
    /// The connection reconnects by itself forever: a Redis restart is an
    /// outage, not the end of the host.
    pub async fn connect(redis: &str, prefix: &str) -> anyhow::Result<Self> {
        let options = connection_options(redis)?;
        let conn = RedisConnection::new_managed_only(&options)
            .await
            .with_context(|| format!("connecting to {redis}"))?;
        Ok(Store {
            conn,
            options,
            keys: Keys::new(prefix),
        })
    }

    /// A connection handle (cheap clone of the shared connection).
    pub fn conn(&self) -> AnyConnection {
        self.conn.connection()
    }

    /// The underlying BullMQ connection, shared with the queues.
    pub(crate) fn bullmq_connection(&self) -> &RedisConnection {
        &self.conn
    }

    /// How to open more connections to the same Redis (workers, events).
    pub fn options(&self) -> &RedisConnectionOptions {
        &self.options
    }

    /// Whether this is a Redis Cluster.
    pub fn is_cluster(&self) -> bool {
        self.options.is_cluster()
    }

    /// Key names.
    pub fn keys(&self) -> &Keys {
        &self.keys
    }

    /// Whether Redis answers PING.
    pub async fn ping(&self) -> bool {
        let mut conn = self.conn();
        redis::cmd("PING")
            .query_async::<String>(&mut conn)
            .await
            .is_ok()
    }

    /// Whether `key` exists.
    pub async fn exists(&self, key: &str) -> redis::RedisResult<bool> {
        let mut conn = self.conn();
        conn.exists(key).await
    }

    /// All fields of a hash.
    pub async fn hgetall(&self, key: &str) -> redis::RedisResult<HashMap<String, String>> {
        let mut conn = self.conn();
        conn.hgetall(key).await
    }
}
