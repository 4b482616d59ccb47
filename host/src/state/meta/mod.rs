//! Airlock's own per-job state: the `airlock.*` fields of a BullMQ job hash
//! ([`super::fields`] names them) and the *pending* key that carries a
//! job's producer and per-job limits across its add. The table says who
//! writes each; [`Runs`](super::runs::Runs) writes a run's measurements
//! and the queue's per-minute tallies, [`super::waits`] a wait's outcome
//! and token, and no other module writes any of them.
//!
//! | where | what | written by |
//! |---|---|---|
//! | `airlock.limits` | per-job limits (JSON `LimitsOverride`) | moved from the pending hash by [`Meta::commit`] or [`Meta::pin`] |
//! | `airlock.digest` | handler digest the job is pinned to | [`Meta::pin`] (before every run of a job that may carry state: a rerun, or any run of a job whose id is not a BullMQ integer), [`Meta::set_and_pin`] (with its first durable write: a step, a sleep, a KV write), [`Runs::write`](super::runs::Runs::write) (when it finishes), [`Meta::repin`] |
//! | `airlock.lastRun` | the last run's wall time, peak memory, fuel and (for a run that tried a request) HTTP counts, packed (`runs::LastRun`); jobs measured by older hosts carry `airlock.fuelUsed`, `airlock.peakMemoryBytes`, `airlock.wallTimeMs`, `airlock.http*` instead | [`Runs::write`](super::runs::Runs::write), after the run, batched |
//! | `airlock.run:<n>` | run `n`'s measurements, host and end (JSON `RunEntry`; the first 100 runs, but for a completed first run: see [`super::runs`]) | [`Runs::write`](super::runs::Runs::write), with the measurements; [`Meta::keep_first_run`] |
//! | `airlock.transcript:<n>` | run `n`'s transcript (JSON `sandbox::transcript::Transcript`; a binding with `recordTranscripts`, the first 25 runs), or for a run in a batch `{"batch": ID}`: its batch's transcript, kept once (below) | [`Runs::write`](super::runs::Runs::write), with the measurements; read by [`Meta::transcripts`] |
//! | `airlock.stepAt:<id>` | when a durable step was recorded (ms) | [`Meta::set_and_pin`], with the step |
//! | `airlock.step:<id>` | a durable step's recorded result | [`Meta::set_and_pin`] (through the guest's services) |
//! | `airlock.sleep:<id>` | a durable sleep's wake-up time (ms) | [`Meta::set_and_pin`], [`Meta::wake_sleeps`] |
//! | `airlock.wait:<id>` | a durable wait: what for, until when | [`Meta::set_and_pin`] (through the guest's services) |
//! | `airlock.waited:<id>` | a durable wait's outcome, first writer wins | [`super::waits`] (its resolve script, `HSETNX`) |
//! | `airlock.token:<id>` | a wait's completion token | [`super::waits`] (its token script, `HSETNX`) |
//! | `airlock.trace` | the trace the job's runs continue: JSON of W3C `traceparent`/`tracestate`, as BullMQ's telemetry writes its `tm` option (see `crate::traces`) | moved from the pending hash by [`Meta::commit`] or [`Meta::pin`] |
//! | `airlock.producer`, `airlock.producerSeal` | the API token that enqueued the job, and Airlock's seal on it (queue, id, producer, name, data; written only by hosts with the secrets key) | moved from the pending hash by [`Meta::commit`] or [`Meta::pin`]; [`Meta::set_producer`] |
//! | `P:QUEUE:airlock-pending:ID` (hash) | `claim` (the adding producer) and the `airlock.*` fields to move into the job once it exists | [`Meta::claim`], [`Meta::commit`] |
//! | `P:QUEUE:airlock:batch:ID:transcript` | a recorded batch run's transcript (one for all its jobs), kept a week (`worker::batches::BATCH_MEMBERS_TTL`), like the batch's list of jobs | [`Meta::keep_batch_transcript`], before its jobs finish; read by [`Meta::transcripts`] |
//! | `P:QUEUE:airlock:stats:MINUTE` (hash) | runs of the queue that ended in that minute (ms / 60,000), by end: `completed`, a failure kind, `slept`, `waited`; and by latency bucket, `run:<bound>` and `wait:<bound>` ([`LATENCY_BOUNDS_MS`](super::runs::LATENCY_BOUNDS_MS)); for a binding with a canary, by version too: `v:<digest>:<end>`, `v:<digest>:wallMs`, `v:<digest>:fuel`; expires after [`STATS_TTL`](super::runs::STATS_TTL) (25 h) | [`Runs::add_tallies`](super::runs::Runs::add_tallies) (`HINCRBY`, each host's sums once a second); read by [`Runs::stats`](super::runs::Runs::stats) |
//!
//! Fields live in the job's own hash, so BullMQ deletes them with the job
//! (retention, clean, obliterate) and they can never be orphaned. A batch's
//! transcript serves many jobs, so it lives beside them and expires on its
//! own: a job kept longer than a week keeps a pointer to nothing, and
//! lists no transcript for that run.
//!
//! ## Adding a job with state of its own
//!
//! BullMQ's add scripts store BullMQ's fields only, and the Rust port offers
//! no way to add others in the same script call, so a job's producer and
//! limits cannot be written atomically with its add. Instead:
//!
//! 1. **claim** (one script, on the id the job will have): if the job exists,
//!    the add is a duplicate and nothing is written; if another producer's
//!    claim on the id is pending, likewise; else the pending hash is set
//!    (`claim` = the producer, plus the fields to move), expiring in 7 days.
//! 2. **add**: BullMQ's own script, through the port.
//! 3. **commit** (one script): the pending fields are copied into the job
//!    hash (`HSETNX`, only if the hash exists) and the pending key deleted.
//!
//! A duplicate add therefore changes nothing about the existing job, and
//! another producer can neither own it nor set its limits. A worker that
//! takes the job between 2 and 3 reads the pending hash ([`Meta::pin`]), so
//! no job runs without the limits it was enqueued with.
//!
//! Crash windows:
//! - after 1, before 2: the pending key expires unused; the same producer
//!   retrying the add within 7 days takes its claim over;
//! - after 2, before 3: the job exists with its state in the pending hash;
//!   its first run reads it from there and moves it, and an idempotent retry
//!   of the add commits it. Until then a producer token cannot read the job
//!   (admin and reader tokens can). Only a job left waiting for more than
//!   7 days *and* never retried loses its pending state.
//!
//! Jobs with neither a producer nor limits (Node producers, schedule ticks
//! and on-demand triggers, events sent with an admin token) need none of
//! this. An event sent with a producer token does: its jobs
//! (`evt-<event id>`) carry that producer and go through claim, add,
//! commit. A job that has a producer but neither a custom id nor
//! deduplication nor limits gets a BullMQ-generated id, which no other add
//! can share; its producer is written right after the add
//! ([`Meta::set_producer`]). On a queue whose jobs' producer decides how
//! they run (warm instances, fairness by producer: `Binding::producer_decides`)
//! `api::jobs` gives every such job a `j-<uuid>` id instead, so it is
//! claimed.

mod add;
mod pin;
mod producer;
mod transcripts;

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use redis::AsyncCommands;

pub use self::add::{Claim, Pending};
pub use self::pin::Pinned;
pub use self::producer::Producer;
pub use self::transcripts::TranscriptField;
use crate::error::QueueError;
use crate::state::fields;
use crate::store::Store;
use airlock_core::seal::ProducerSeal;

/// `KEYS[1]` job hash, `KEYS[2]` pending hash; `ARGV[1]` claimant,
/// `ARGV[2]` TTL (ms), then field/value pairs. 0: the job exists; 1: claimed
/// (or re-claimed by the same claimant); 2: another claimant holds it.
static CLAIM: LazyLock<redis::Script> =
    LazyLock::new(|| redis::Script::new(include_str!("../lua/claim.lua")));

/// `KEYS[1]` job hash, `KEYS[2]` pending hash: copies the pending fields
/// (all but `claim`) into the job hash when it exists, without overwriting,
/// and deletes the pending hash. 1 when something was moved.
static COMMIT: LazyLock<redis::Script> =
    LazyLock::new(|| redis::Script::new(include_str!("../lua/commit.lua")));

/// `KEYS[1]` job hash, `KEYS[2]` pending hash; `ARGV[1]` the current
/// digest. Pins the job to `ARGV[1]` unless it has a digest, moves pending
/// state over (like [`COMMIT`]), and answers `{digest, limits, producer,
/// producer seal}` (each `false` when missing) and 1 when this call pinned
/// it (0 when it was pinned before) —
/// or nil when the job no longer exists (nothing is written then: a
/// removed job's hash is never resurrected).
static PIN: LazyLock<redis::Script> =
    LazyLock::new(|| redis::Script::new(include_str!("../lua/pin.lua")));

/// `HSET` into a hash only if it still exists: writing to a job that was
/// just removed must not resurrect a stray hash. 1 when written.
static HSET_IF_EXISTS: LazyLock<redis::Script> =
    LazyLock::new(|| redis::Script::new(include_str!("../lua/hset_if_exists.lua")));

/// `KEYS[1]` job hash; `ARGV[1]` a digest to pin (or `""`), then
/// field/value pairs. Only if the hash exists: pins the digest unless one is
/// there, and sets the fields. 1 when the job existed.
static SET_AND_PIN: LazyLock<redis::Script> =
    LazyLock::new(|| redis::Script::new(include_str!("../lua/set_and_pin.lua")));

/// Airlock's own scripts by name, with their SHA1s: what `EVALSHA` calls
/// a benchmark sees on Redis are attributed with this.
pub fn script_hashes() -> Vec<(&'static str, String)> {
    [
        ("claim", &CLAIM),
        ("commit", &COMMIT),
        ("pin", &PIN),
        ("hset_if_exists", &HSET_IF_EXISTS),
        ("set_and_pin", &SET_AND_PIN),
        ("hsetnx_if_exists", &HSETNX_IF_EXISTS),
        ("hincr_if_exists", &HINCR_IF_EXISTS),
    ]
    .into_iter()
    .map(|(name, script)| (name, script.get_hash().to_string()))
    .collect()
}

/// `HINCRBY` of one field by 1, only if the hash exists: the count, or
/// nil for a job removed meanwhile (no one-field hash is left of it).
static HINCR_IF_EXISTS: LazyLock<redis::Script> =
    LazyLock::new(|| redis::Script::new(include_str!("../lua/hincr_if_exists.lua")));

/// `HSETNX` of one field, only if the hash exists.
static HSETNX_IF_EXISTS: LazyLock<redis::Script> =
    LazyLock::new(|| redis::Script::new(include_str!("../lua/hsetnx_if_exists.lua")));

/// Whether Redis refused a script it does not have cached (after a restart,
/// or the first call on a server): load and retry.
fn is_noscript(e: &redis::RedisError) -> bool {
    e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript)
        || e.to_string().contains("NoScript")
}

/// Runs a pipeline of script invocations; pipelined `EVALSHA` does not fall
/// back to `EVAL` by itself, so on `NOSCRIPT` the scripts are loaded and the
/// pipeline sent once more.
async fn query_scripts<T: redis::FromRedisValue>(
    conn: &mut bullmq::redis_connection::AnyConnection,
    pipe: &redis::Pipeline,
    scripts: &[&redis::Script],
) -> Result<T, QueueError> {
    match pipe.query_async(conn).await {
        Err(e) if is_noscript(&e) => {
            for script in scripts {
                script.load_async(conn).await?;
            }
            Ok(pipe.query_async(conn).await?)
        }
        result => Ok(result?),
    }
}

/// A job's fields a run's trace reads ([`Meta::trace`]), as Redis holds
/// them: untrusted.
#[derive(Debug, Default)]
pub struct TraceFields {
    /// `airlock.trace`: the trace context the API wrote.
    pub context: Option<String>,
    /// BullMQ's `opts` (a Node producer's telemetry writes `tm` there).
    pub opts: Option<String>,
    /// The previous run's history entry (JSON of `runs::RunEntry`), when
    /// it was asked for and is there.
    pub previous_run: Option<String>,
}

/// Reads and writes Airlock's per-job state on one Redis.
#[derive(Clone)]
pub struct Meta {
    store: Store,
    /// Seals producers (see [`Meta::seal`]); `None` on hosts without the
    /// fleet's secrets key, which write no seal.
    seal_key: Option<Arc<dyn ProducerSeal>>,
}

impl Meta {
    /// Per-job state for the queues on `store`'s Redis, under its prefix.
    pub fn new(store: Store) -> Self {
        Meta {
            store,
            seal_key: None,
        }
    }

    /// Seals the producers of the jobs this host adds with `key` (the
    /// fleet's secrets key).
    pub fn with_seal_key(mut self, key: Option<Arc<dyn ProducerSeal>>) -> Self {
        self.seal_key = key;
        self
    }

    /// The Redis key of a job's hash.
    pub fn job_key(&self, queue: &str, id: &str) -> String {
        self.store.keys().job(queue, id)
    }

    /// The pending hash of a job being added (in the queue's slot).
    pub fn pending_key(&self, queue: &str, id: &str) -> String {
        self.store.keys().pending(queue, id)
    }

    /// The field of durable step `id`.
    pub fn step_field(id: &str) -> String {
        format!("{}{id}", fields::STEP_PREFIX)
    }

    /// The field of durable sleep `id`.
    pub fn sleep_field(id: &str) -> String {
        format!("{}{id}", fields::SLEEP_PREFIX)
    }

    /// The field of durable wait `id`.
    pub fn wait_field(id: &str) -> String {
        format!("{}{id}", fields::WAIT_PREFIX)
    }

    /// What a run's trace reads of its job: the trace context it carries
    /// (its `airlock.trace` field, and the options BullMQ stored, whose
    /// `tm` a Node producer's telemetry wrote) and, for `previous_run`,
    /// that run's history entry (`airlock.run:<n>`); all untrusted, parsed
    /// by `crate::traces`. One `HMGET`.
    pub async fn trace(
        &self,
        job_key: &str,
        previous_run: Option<u32>,
    ) -> Result<TraceFields, QueueError> {
        let mut conn = self.store.conn();
        let mut command = redis::cmd("HMGET");
        command.arg(job_key).arg(fields::TRACE).arg("opts");
        if let Some(run) = previous_run {
            command.arg(format!("{}{run}", fields::RUN_PREFIX));
        }
        let mut values: Vec<Option<String>> = command.query_async(&mut conn).await?;
        values.resize(3, None);
        let mut values = values.into_iter();
        Ok(TraceFields {
            context: values.next().flatten(),
            opts: values.next().flatten(),
            previous_run: values.next().flatten(),
        })
    }

    /// Writes a completed first run's history entry, which the recorder
    /// leaves to be read back from the last-run fields (see the module
    /// docs), before something reruns the job and overwrites them. Nothing
    /// when the job has no such run.
    pub async fn keep_first_run(&self, job_key: &str) -> Result<(), QueueError> {
        let fields = self.store.hgetall(job_key).await?;
        if let Some(entry) = super::runs::completed_first_run(&fields) {
            let value = serde_json::to_string(&entry)?;
            let field = format!("{}1", fields::RUN_PREFIX);
            self.set_if_exists(job_key, &[(field.as_str(), value.as_str())])
                .await?;
        }
        Ok(())
    }

    /// Sets fields of a job hash (a step record, a sleep) only if the job
    /// still exists, pinning `pin` with them when given: a job's first
    /// durable write pins it, in the same script. Whether the job existed.
    pub async fn set_and_pin(
        &self,
        job_key: &str,
        pin: Option<&str>,
        pairs: &[(&str, &str)],
    ) -> Result<bool, QueueError> {
        let mut invocation = SET_AND_PIN.key(job_key);
        invocation.arg(pin.unwrap_or(""));
        for (field, value) in pairs {
            invocation.arg(*field).arg(*value);
        }
        let mut conn = self.store.conn();
        let set: i64 = invocation.invoke_async(&mut conn).await?;
        Ok(set == 1)
    }

    /// One field of a job hash.
    pub async fn get(&self, job_key: &str, field: &str) -> Result<Option<String>, QueueError> {
        let mut conn = self.store.conn();
        Ok(conn.hget(job_key, field).await?)
    }

    /// Sets fields of a job hash in one round trip, only if the job still
    /// exists; whether it did.
    pub async fn set_if_exists(
        &self,
        job_key: &str,
        pairs: &[(&str, &str)],
    ) -> Result<bool, QueueError> {
        let mut invocation = HSET_IF_EXISTS.key(job_key);
        for (field, value) in pairs {
            invocation.arg(*field).arg(*value);
        }
        let mut conn = self.store.conn();
        let set: i64 = invocation.invoke_async(&mut conn).await?;
        Ok(set == 1)
    }

    /// Counts one more under `field` of a job hash, only if the job still
    /// exists: the new count, or `None` for a job removed meanwhile.
    pub async fn count_if_exists(
        &self,
        job_key: &str,
        field: &str,
    ) -> Result<Option<u32>, QueueError> {
        let mut conn = self.store.conn();
        Ok(HINCR_IF_EXISTS
            .key(job_key)
            .arg(field)
            .invoke_async(&mut conn)
            .await?)
    }

    /// Marks every pending durable sleep of the job as over (`now`), so its
    /// next run goes on past them: what promoting a sleeping job means.
    pub async fn wake_sleeps(&self, job_key: &str, now: u64) -> Result<(), QueueError> {
        let mut conn = self.store.conn();
        let all: HashMap<String, String> = conn.hgetall(job_key).await?;
        let now_text = now.to_string();
        let pending: Vec<(&str, &str)> = all
            .iter()
            .filter(|(field, value)| {
                field.starts_with(fields::SLEEP_PREFIX)
                    && value.parse::<u64>().is_ok_and(|wake| wake > now)
            })
            .map(|(field, _)| (field.as_str(), now_text.as_str()))
            .collect();
        if !pending.is_empty() {
            self.set_if_exists(job_key, &pending).await?;
        }
        Ok(())
    }
}
