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
//! | `P:{airlock}:handler:NAME` | hash | `digest`, `version`, `updatedAt` of the current version |
//! | `P:{airlock}:handler:NAME:versions` | list | JSON `{digest, version, uploadedAt}`, newest first |
//! | `P:{airlock}:component:DIGEST` | string | component bytes (content-addressed) |
//! | `P:{airlock}:component:DIGEST:info` | string | JSON `ComponentInfo` + `uploadedAt` |
//! | `P:{airlock}:bindings` | hash | queue name → binding JSON |
//! | `P:{airlock}:generation` | string | bumped on every registry change; hosts poll it |
//! | `P:{airlock}:hosts` | zset | host id → last heartbeat (ms) |
//! | `P:{airlock}:host:ID` | string | a host's description (expires without heartbeats) |
//! | `P:{airlock}:host:ID:drain` | string | present while the host is asked to drain |
//! | `P:{airlock}:artifact:DIGEST:ENGINE` | string | precompiled component shared by the fleet (TTL 30 days) |
//! | `P:airlock:kv:HANDLER:KEY` | string | the handler's KV store (TTL as asked) |
//! | `P:airlock:event:ID` | string | an event id's delivery (JSON job refs; TTL 24 h) |
//! | `P:QUEUE:airlock-limits:ID` | string | per-job limits parked before enqueue (TTL 1 day) |
//!
//! Per-job state lives in BullMQ's job hash (`P:QUEUE:ID`) as `airlock.*`
//! fields; see `queue::fields`.

use std::collections::HashMap;
use std::time::Duration;

use anyhow::Context as _;
use bullmq::options::RedisConnectionOptions;
use bullmq::redis_connection::{AnyConnection, RedisConnection};
use redis::AsyncCommands;

/// How long parked per-job limits wait for their job's first run.
const PENDING_LIMITS_TTL: Duration = Duration::from_secs(24 * 60 * 60);

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

    /// A precompiled component for one engine configuration.
    pub fn artifact(&self, digest: &str, engine: &str) -> String {
        self.registry(&format!("artifact:{digest}:{engine}"))
    }

    /// A handler's KV key.
    pub fn kv(&self, handler: &str, key: &str) -> String {
        format!("{}:airlock:kv:{handler}:{key}", self.prefix)
    }

    /// An event id's delivery record.
    pub fn event(&self, id: &str) -> String {
        format!("{}:airlock:event:{id}", self.prefix)
    }

    /// Per-job limits parked until the job's first run.
    pub fn pending_limits(&self, queue: &str, job_id: &str) -> String {
        format!("{}:{queue}:airlock-limits:{job_id}", self.prefix)
    }
}

/// `HSET` into a hash only if it still exists. Built once: a `Script`
/// hashes its source on creation, and this runs after every job.
static HSET_IF_EXISTS: std::sync::LazyLock<redis::Script> = std::sync::LazyLock::new(|| {
    redis::Script::new(
        "if redis.call('EXISTS', KEYS[1]) == 1 then \
           redis.call('HSET', KEYS[1], unpack(ARGV)) return 1 \
         end return 0",
    )
});

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
    pub async fn exists(&self, key: &str) -> anyhow::Result<bool> {
        let mut conn = self.conn();
        Ok(conn.exists(key).await?)
    }

    /// All fields of a hash.
    pub async fn hgetall(&self, key: &str) -> anyhow::Result<HashMap<String, String>> {
        let mut conn = self.conn();
        Ok(conn.hgetall(key).await?)
    }

    /// Sets a hash field only when the hash exists: writing to a job that
    /// was just removed must not resurrect a stray hash.
    pub async fn hset_if_exists(
        &self,
        key: &str,
        field: &str,
        value: &str,
    ) -> anyhow::Result<bool> {
        self.hset_fields_if_exists(key, &[(field, value)]).await
    }

    /// [`Store::hset_if_exists`] for several fields in one round trip.
    pub async fn hset_fields_if_exists(
        &self,
        key: &str,
        pairs: &[(&str, &str)],
    ) -> anyhow::Result<bool> {
        let mut invocation = HSET_IF_EXISTS.key(key);
        for (field, value) in pairs {
            invocation.arg(*field).arg(*value);
        }
        let mut conn = self.conn();
        let set: i64 = invocation.invoke_async(&mut conn).await?;
        Ok(set == 1)
    }

    /// Parks per-job limits for a job about to be enqueued (first writer wins).
    pub async fn set_pending_limits(
        &self,
        queue: &str,
        job_id: &str,
        limits_json: &str,
    ) -> anyhow::Result<()> {
        let key = self.keys.pending_limits(queue, job_id);
        let mut conn = self.conn();
        let _: Option<String> = redis::cmd("SET")
            .arg(&key)
            .arg(limits_json)
            .arg("NX")
            .arg("EX")
            .arg(PENDING_LIMITS_TTL.as_secs())
            .query_async(&mut conn)
            .await?;
        Ok(())
    }
}
