//! Airlock's own Redis handle, and [`Keys`]: the one place every Redis key
//! Airlock names is built — its registry keys, its per-queue keys, and the
//! few BullMQ keys its own scripts read. The table of them, with types and
//! what each holds, is docs/ARCHITECTURE.md's "Redis keys"; a test below
//! checks that table against these builders, key by key.
//!
//! BullMQ's keys are otherwise the `queue` module's business. Airlock's
//! registry keys (handlers, components, bindings, hosts, events, waits,
//! cancels, artifacts, secrets) carry the `{airlock}` hash tag after the
//! prefix, so the multi-key registry transactions stay in one slot on
//! Redis Cluster; per-queue keys carry the queue's own prefix and name, so
//! they land in the queue's slot whatever hash tag the queue uses. A
//! queue's secrets are the exception: they live with the registry.
//!
//! Per-job state lives in BullMQ's job hash (`P:QUEUE:ID`) as `airlock.*`
//! fields; `state::meta` owns them.

mod access;

pub use self::access::{RedisAccess, Unreachable};

use anyhow::Context as _;
use bullmq::options::RedisConnectionOptions;
use bullmq::redis_connection::{AnyConnection, RedisConnection};
use redis::AsyncCommands;
use std::collections::HashMap;
use std::sync::Arc;

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

    /// Managed API tokens' sealed records, by name (see `access`).
    pub fn api_tokens(&self) -> String {
        self.registry("api-tokens")
    }

    /// When an API host last saw each managed token used, by name (see
    /// `access`).
    pub fn api_token_uses(&self) -> String {
        self.registry("api-token-uses")
    }

    /// The audit log, a stream (see `audit`).
    pub fn audit(&self) -> String {
        self.registry("audit")
    }

    /// The audit log's last entry number (see `audit`).
    pub fn audit_seq(&self) -> String {
        self.registry("audit-seq")
    }

    /// Queue bindings.
    pub fn bindings(&self) -> String {
        self.registry("bindings")
    }

    /// The seals of the bindings: queue → `VERSION:HMAC` (see
    /// `registry::seal`).
    pub fn binding_seals(&self) -> String {
        self.registry("binding-seals")
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

    /// Present while a live host gives dead host `id`'s jobs back: the
    /// claim, and what keeps the host fenced should it come back meanwhile.
    pub fn host_recovering(&self, id: &str) -> String {
        self.registry(&format!("host:{id}:recovering"))
    }

    /// The incarnation of the process that last took host id `id`: a
    /// heartbeat of any other process under the id is refused (`fleet`).
    pub fn host_incarnation(&self, id: &str) -> String {
        self.registry(&format!("host:{id}:incarnation"))
    }

    /// The BullMQ worker ids a host's workers hold their jobs' locks with,
    /// by queue: what a live host needs to give a dead one's jobs back.
    pub fn host_workers(&self, id: &str) -> String {
        self.registry(&format!("host:{id}:workers"))
    }

    /// The fleet's recent events, for durable waits (see `state::waits`).
    pub fn recent_events(&self) -> String {
        self.registry("events")
    }

    /// The jobs waiting for an event (name, path, value) by its digest (see
    /// `state::waits`).
    pub fn event_waiters(&self, digest: &str) -> String {
        self.registry(&format!("waits:{digest}"))
    }

    /// The paths event waits of one event name match on, by its digest.
    pub fn event_wait_paths(&self, digest: &str) -> String {
        self.registry(&format!("wait-paths:{digest}"))
    }

    /// What an event did to jobs that existed before it (the waits it
    /// ended, the jobs it cancelled), by the digest of its id (see
    /// `state::events`).
    pub fn event_effects(&self, digest: &str) -> String {
        self.registry(&format!("event-effects:{digest}"))
    }

    /// Where a wait token leads, by the token's digest.
    pub fn wait_token(&self, digest: &str) -> String {
        self.registry(&format!("token:{digest}"))
    }

    /// The deadlines of invokes waiting for their children (see
    /// `state::invoke_deadlines`).
    pub fn invoke_deadlines(&self) -> String {
        self.registry("invoke-deadlines")
    }

    /// The fleet's cancel stream (see `state::cancels`).
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

    // A queue's keys: `P:QUEUE:…`, in the queue's slot.

    fn queue_key(&self, queue: &str, rest: &str) -> String {
        format!("{}:{queue}:{rest}", self.prefix)
    }

    /// BullMQ's hash of job `id` of `queue`.
    pub fn job(&self, queue: &str, id: &str) -> String {
        airlock_core::job_ref::key(&self.prefix, queue, id)
    }

    /// A job key `P:QUEUE:ID` as `(queue, id)` (`airlock_core::job_ref`'s
    /// rule: the queue ends at the first `:` after the prefix).
    pub fn split_job_key<'k>(&self, job_key: &'k str) -> Option<(&'k str, &'k str)> {
        airlock_core::job_ref::split_key(&self.prefix, job_key)
    }

    /// One of BullMQ's own keys of `queue` that Airlock names: read
    /// (`delayed`, `active`, the state sets a cancel checks) or, for
    /// `wait` (`queue::wait_order`) and `events` (`queue::recovery`),
    /// also written.
    pub fn bullmq(&self, queue: &str, name: &str) -> String {
        self.queue_key(queue, name)
    }

    /// A job's producer and limits while it is being added (see
    /// `state::meta`).
    pub fn pending(&self, queue: &str, id: &str) -> String {
        self.queue_key(queue, &format!("airlock-pending:{id}"))
    }

    /// How far a queue's failed set was read to announce its failures
    /// (see `worker::on_failure`).
    pub fn failures_cursor(&self, queue: &str) -> String {
        self.queue_key(queue, "airlock:failures-cursor")
    }

    /// The ids of the jobs of batch `id` of `queue`, a JSON array, for a
    /// job's page (see `worker::batches`); kept
    /// `worker::batches::BATCH_MEMBERS_TTL`.
    pub fn batch_members(&self, queue: &str, id: &str) -> String {
        self.queue_key(queue, &format!("airlock:batch:{id}"))
    }

    /// The transcript of batch `id` of `queue`, one for all its jobs'
    /// runs (see `state::meta`); kept like [`Keys::batch_members`].
    pub fn batch_transcript(&self, queue: &str, id: &str) -> String {
        self.queue_key(queue, &format!("airlock:batch:{id}:transcript"))
    }

    /// The runs of `queue` that ended in `minute` (ms / 60,000), by end.
    pub fn run_stats(&self, queue: &str, minute: u64) -> String {
        self.queue_key(queue, &format!("airlock:stats:{minute}"))
    }

    /// The started jobs one `cancelOn` (event, value) cancels, by the
    /// digest of both (see `state::cancels`).
    pub fn cancel_on(&self, queue: &str, digest: &str) -> String {
        self.queue_key(queue, &format!("airlock:cancel-on:{digest}"))
    }

    /// A key's slots under `keyConcurrency`/`singleton`, by the key's hash
    /// (see `state::key_limits`).
    pub fn key_slots(&self, queue: &str, hash: &str) -> String {
        self.queue_key(queue, &format!("airlock:kc:{hash}:slots"))
    }

    /// A key's line of parked jobs.
    pub fn key_line(&self, queue: &str, hash: &str) -> String {
        self.queue_key(queue, &format!("airlock:kc:{hash}:line"))
    }

    /// A key's jobs on their way into its line.
    pub fn key_parking(&self, queue: &str, hash: &str) -> String {
        self.queue_key(queue, &format!("airlock:kc:{hash}:parking"))
    }

    /// The key hashes of `queue` with a line or parking jobs.
    pub fn key_lines(&self, queue: &str) -> String {
        self.queue_key(queue, "airlock:kc:lines")
    }

    /// The tenant hashes (`t…`) of `queue` that ran jobs lately under its
    /// `fairness` (`gate::fairness`' work list).
    pub fn tenants(&self, queue: &str) -> String {
        self.queue_key(queue, "airlock:kc:tenants")
    }

    /// A key's theoretical arrival time under a per-key rate: `kind` is
    /// `kt` (`keyThrottle`) or `kr` (`keyRateLimit`; see `state::key_rates`).
    pub fn key_rate_tat(&self, queue: &str, kind: &str, hash: &str) -> String {
        self.queue_key(queue, &format!("airlock:{kind}:{hash}:tat"))
    }

    /// When a key's throttle lets its next start through, counted from the
    /// starts it admitted (see `state::key_rates`).
    pub fn key_rate_started(&self, queue: &str, hash: &str) -> String {
        self.queue_key(queue, &format!("airlock:kt:{hash}:started"))
    }

    /// The start times a per-key rate granted to waiting jobs.
    pub fn key_rate_grants(&self, queue: &str, kind: &str, hash: &str) -> String {
        self.queue_key(queue, &format!("airlock:{kind}:{hash}:grants"))
    }

    /// When a key's debounce burst began (see `state::debounces`).
    pub fn debounce_first(&self, queue: &str, hash: &str) -> String {
        self.queue_key(queue, &format!("airlock:db:{hash}:first"))
    }
}

/// A shared, auto-reconnecting Redis connection for Airlock's own keys
/// (BullMQ's connection type, so a Redis Cluster works the same way).
#[derive(Clone)]
pub struct Store {
    conn: RedisConnection,
    /// A second connection, opened on first use, for values of megabytes
    /// (components and compiled artifacts, [`Store::bulk_conn`]). Commands
    /// on one connection queue behind each other on its socket: a 12 MB
    /// upload and its artifact on the shared one held up the API's Redis
    /// probe past its second, and the API answered 503 for a moment.
    bulk: Arc<tokio::sync::OnceCell<RedisConnection>>,
    options: RedisConnectionOptions,
    keys: Keys,
}

impl Store {
    /// Connects to `redis` (a URL, or comma-separated cluster seed URLs)
    /// with what the URL says and nothing more ([`Store::connect_with`]).
    pub async fn connect(redis: &str, prefix: &str) -> anyhow::Result<Self> {
        Store::connect_with(&RedisAccess::url(redis), prefix).await
    }

    /// Connects to Redis as `access` says (TLS, credentials). The
    /// connection reconnects by itself forever: a Redis restart is an
    /// outage, not the end of the host.
    pub async fn connect_with(access: &RedisAccess, prefix: &str) -> anyhow::Result<Self> {
        let options = access.options()?;
        let conn = RedisConnection::new_managed_only(&options)
            .await
            .with_context(|| format!("connecting to {}", access.redacted()))?;
        Ok(Store {
            conn,
            bulk: Arc::default(),
            options,
            keys: Keys::new(prefix),
        })
    }

    /// A connection handle (cheap clone of the shared connection).
    pub fn conn(&self) -> AnyConnection {
        self.conn.connection()
    }

    /// A handle of the connection for values of megabytes (component
    /// bytes, compiled artifacts), apart from the shared one so that
    /// moving them holds up nothing else. Opened on first use.
    pub async fn bulk_conn(&self) -> anyhow::Result<AnyConnection> {
        let bulk = self
            .bulk
            .get_or_try_init(|| RedisConnection::new_managed_only(&self.options))
            .await
            .context("opening Airlock's connection for large values")?;
        Ok(bulk.connection())
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
    pub async fn ping(&self) -> redis::RedisResult<()> {
        let mut conn = self.conn();
        redis::cmd("PING").query_async::<String>(&mut conn).await?;
        Ok(())
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::Keys;

    /// `Keys`' builders whose keys are BullMQ's, not Airlock's: not in the
    /// table of Airlock's keys.
    const BULLMQ_KEYS: [&str; 2] = ["job", "bullmq"];

    /// Every key [`Keys`] builds, by the builder's name, with the
    /// placeholders docs/ARCHITECTURE.md writes them with.
    fn built() -> Vec<(&'static str, String)> {
        let k = Keys::new("P");
        [
            ("handlers", k.handlers()),
            ("handler", k.handler("NAME")),
            ("handler_versions", k.handler_versions("NAME")),
            ("component", k.component("DIGEST")),
            ("component_info", k.component_info("DIGEST")),
            ("api_tokens", k.api_tokens()),
            ("api_token_uses", k.api_token_uses()),
            ("audit", k.audit()),
            ("audit_seq", k.audit_seq()),
            ("bindings", k.bindings()),
            ("binding_seals", k.binding_seals()),
            ("generation", k.generation()),
            ("hosts", k.hosts()),
            ("host", k.host("ID")),
            ("host_drain", k.host_drain("ID")),
            ("host_workers", k.host_workers("ID")),
            ("host_recovering", k.host_recovering("ID")),
            ("host_incarnation", k.host_incarnation("ID")),
            ("recent_events", k.recent_events()),
            ("event_waiters", k.event_waiters("HASH")),
            ("event_wait_paths", k.event_wait_paths("HASH")),
            ("event_effects", k.event_effects("HASH")),
            ("wait_token", k.wait_token("HASH")),
            ("cancels", k.cancels()),
            ("invoke_deadlines", k.invoke_deadlines()),
            ("failures_cursor", k.failures_cursor("QUEUE")),
            ("batch_members", k.batch_members("QUEUE", "ID")),
            ("batch_transcript", k.batch_transcript("QUEUE", "ID")),
            ("artifact", k.artifact("DIGEST", "ENGINE")),
            ("secrets", k.secrets("QUEUE")),
            ("kv", k.kv("HANDLER", "KEY")),
            ("pending", k.pending("QUEUE", "ID")),
            (
                "run_stats",
                k.run_stats("QUEUE", 0).replace(":0", ":MINUTE"),
            ),
            ("cancel_on", k.cancel_on("QUEUE", "HASH")),
            ("key_slots", k.key_slots("QUEUE", "HASH")),
            ("key_line", k.key_line("QUEUE", "HASH")),
            ("key_parking", k.key_parking("QUEUE", "HASH")),
            ("key_lines", k.key_lines("QUEUE")),
            ("tenants", k.tenants("QUEUE")),
            ("key_rate_tat", k.key_rate_tat("QUEUE", "kt", "HASH")),
            ("key_rate_tat", k.key_rate_tat("QUEUE", "kr", "HASH")),
            ("key_rate_grants", k.key_rate_grants("QUEUE", "kt", "HASH")),
            ("key_rate_started", k.key_rate_started("QUEUE", "HASH")),
            ("debounce_first", k.debounce_first("QUEUE", "HASH")),
        ]
        .into_iter()
        .collect()
    }

    /// The keys of the "Airlock's keys" table in docs/ARCHITECTURE.md: each
    /// row's first cell, which may name several keys.
    fn documented() -> BTreeSet<String> {
        let doc = include_str!("../../../docs/ARCHITECTURE.md");
        let section = doc
            .split("## Redis keys")
            .nth(1)
            .expect("docs/ARCHITECTURE.md has a Redis keys section");
        let section = section.split("\n## ").next().unwrap_or(section);
        section
            .lines()
            .filter(|line| line.starts_with("| `"))
            .flat_map(|line| {
                let first = line.split(" | ").next().unwrap_or_default();
                first
                    .split('`')
                    .skip(1)
                    .step_by(2)
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    #[test]
    fn the_architecture_key_table_is_the_keys_built() {
        let built: BTreeSet<String> = built().into_iter().map(|(_, key)| key).collect();
        let documented = documented();
        let undocumented: Vec<_> = built.difference(&documented).collect();
        let unbuilt: Vec<_> = documented.difference(&built).collect();
        assert!(
            undocumented.is_empty() && unbuilt.is_empty(),
            "built but not in docs/ARCHITECTURE.md: {undocumented:?}; documented but not built: {unbuilt:?}"
        );
    }

    /// The list above is every builder `Keys` has: read from this file,
    /// so a new builder fails here until its key is in the table.
    #[test]
    fn every_key_builder_is_in_the_table_test() {
        let source = include_str!("mod.rs");
        let keys = source
            .split("impl Keys {")
            .nth(1)
            .and_then(|rest| rest.split("\n}\n").next())
            .expect("store/mod.rs has impl Keys");
        let builders: BTreeSet<&str> = keys
            .lines()
            .filter_map(|l| l.trim().strip_prefix("pub fn "))
            .filter(|l| l.contains("-> String"))
            .filter_map(|l| l.split('(').next())
            .collect();
        let listed: BTreeSet<&str> = built().into_iter().map(|(name, _)| name).collect();
        let missing: Vec<_> = builders
            .iter()
            .filter(|b| !listed.contains(*b) && !BULLMQ_KEYS.contains(b))
            .collect();
        assert!(missing.is_empty(), "builders not in `built()`: {missing:?}");
        assert!(builders.len() > 30, "read {} builders", builders.len());
    }

    #[test]
    fn a_job_key_splits_at_the_queue() {
        let k = Keys::new("bull");
        let key = k.job("payments", "repeat:nightly:1700000000000");
        assert_eq!(
            k.split_job_key(&key),
            Some(("payments", "repeat:nightly:1700000000000"))
        );
        assert_eq!(k.split_job_key("other:payments:1"), None);
    }
}
