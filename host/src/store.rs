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
//! | `P:airlock:kv:HANDLER:KEY` | string | the handler's KV store (TTL as asked) |
//! | `P:airlock:event:ID` | string | an event id's delivery (JSON job refs; TTL 24 h) |
//! | `P:QUEUE:airlock-limits:ID` | string | per-job limits parked before enqueue (TTL 1 day) |
//!
//! Per-job state lives in BullMQ's job hash (`P:QUEUE:ID`) as `airlock.*`
//! fields; see `queue::fields`.

use std::collections::HashMap;
use std::time::Duration;

use anyhow::Context as _;
use redis::AsyncCommands;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};

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

/// A shared, auto-reconnecting Redis connection for Airlock's own keys.
#[derive(Clone)]
pub struct Store {
    conn: ConnectionManager,
    keys: Keys,
}

impl Store {
    /// Connects to `url`. The connection reconnects by itself forever: a
    /// Redis restart is an outage, not the end of the host.
    pub async fn connect(url: &str, prefix: &str) -> anyhow::Result<Self> {
        let client = redis::Client::open(url).with_context(|| format!("bad Redis URL {url}"))?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(Duration::from_secs(5)))
            .set_response_timeout(Some(Duration::from_secs(10)))
            .set_max_delay(Duration::from_secs(2));
        let conn = ConnectionManager::new_with_config(client, config)
            .await
            .with_context(|| format!("connecting to {url}"))?;
        Ok(Store {
            conn,
            keys: Keys::new(prefix),
        })
    }

    /// A connection handle (cheap clone of the multiplexed connection).
    pub fn conn(&self) -> ConnectionManager {
        self.conn.clone()
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
        let script = redis::Script::new(
            "if redis.call('EXISTS', KEYS[1]) == 1 then \
               redis.call('HSET', KEYS[1], unpack(ARGV)) return 1 \
             end return 0",
        );
        let mut invocation = script.key(key);
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
