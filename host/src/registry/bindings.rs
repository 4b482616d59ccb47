//! Queue bindings: which handler runs a queue's jobs, under which limits,
//! with how many at once per host, with which default job options, and
//! with what it may reach: its configuration and its egress list — the
//! types and what makes one valid ([`BindingSpec::resolve`]). Storing them
//! is `binding_store.rs`'s.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::batch::Batch;
use super::canary::Canary;
use super::gate_rules::{
    CancelOn, Debounce, Fairness, KeyConcurrency, KeyRate, MAX_CANCEL_ON, MAX_FINISH_TIMEOUT_MS,
    MAX_KEY_LIMIT, Singleton,
};
use super::starts::{OnFailure, Starts};
pub use super::warm::WarmInstances;
use super::{RegistryError, invalid};
use crate::names;
use crate::queue::DefaultJobOptions;
use crate::sandbox::egress::EgressRule;
use crate::sandbox::{HostMaxima, Limits, LimitsOverride};

/// Most entries of a binding's `config`.
pub const MAX_CONFIG_ENTRIES: usize = 100;
/// Longest `config` value, in characters.
pub const MAX_CONFIG_VALUE_CHARS: usize = 8192;
/// Most rules of a binding's `egress` list.
pub const MAX_EGRESS_RULES: usize = 100;

/// An egress rule as the API documents it (schema only; the type is
/// `sandbox::egress::EgressRule`).
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
#[serde(untagged)]
pub enum EgressRuleDoc {
    /// `scheme://host[:port]`: any method and path of that destination.
    Pattern(EgressPatternText),
    /// A destination with conditions (no other members: the server refuses
    /// unknown ones).
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    Rule {
        /// The destination, `scheme://host[:port]`.
        url: EgressPatternText,
        /// Allowed methods; absent: any.
        #[schema(inline, value_type = Option<Vec<MethodName>>)]
        methods: Option<Vec<String>>,
        /// Requests' paths must be within this prefix, whole segments at a
        /// time (`/v3/mail/send` covers `/v3/mail/send/batch`, not
        /// `/v3/mail/sender`); a path with a `.` or `..` segment (also
        /// percent-encoded), an encoded `/` or `\`, a `\`, a `;` or a NUL
        /// is within none. Absent: any path.
        #[schema(
            pattern = r"^(/([A-Za-z0-9_~!$&'()*+,=:@-]|\.[A-Za-z0-9_~!$&'()*+,=:@-]|\.\.[A-Za-z0-9._~!$&'()*+,=:@-])[A-Za-z0-9._~!$&'()*+,=:@-]*|/)+$",
            max_length = 1024
        )]
        path_prefix: Option<String>,
    },
}

/// An egress destination pattern, `scheme://host[:port]` (schema only; the
/// exact syntax of `sandbox::egress::PATTERN_REGEX`).
#[derive(utoipa::ToSchema)]
#[schema(
    pattern = r"^https?://(\*\.)?[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*(:(\*|[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?$",
    max_length = 300
)]
pub struct EgressPatternText(#[allow(dead_code)] String);

/// An HTTP method name (schema only).
#[derive(utoipa::ToSchema)]
#[schema(pattern = "^[A-Za-z]+$")]
pub struct MethodName(#[allow(dead_code)] String);

/// A queue's binding as stored and served.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Binding {
    /// The queue.
    pub queue: String,
    /// The handler that runs its jobs.
    pub handler: String,
    /// Sandbox limits of every job (a job may lower them).
    pub limits: Limits,
    /// Jobs run at once per host.
    pub concurrency: usize,
    /// Options applied to jobs enqueued through Airlock that do not set them.
    pub default_job_options: DefaultJobOptions,
    /// Event names that enqueue a job on this queue (`POST /v1/events`).
    #[serde(default)]
    pub events: Vec<String>,
    /// Jobs active at once across the whole fleet (BullMQ global concurrency).
    #[serde(default)]
    pub global_concurrency: Option<u64>,
    /// Jobs started per time window across the whole fleet.
    #[serde(default)]
    pub rate_limit: Option<RateLimit>,
    /// Configuration the handler reads (`config.get`).
    #[serde(default)]
    pub config: BTreeMap<String, String>,
    /// Where its jobs may send HTTP requests (within the host operator's
    /// `--egress-allow`); empty: nowhere.
    #[serde(default)]
    #[schema(value_type = Vec<EgressRuleDoc>)]
    pub egress: Vec<EgressRule>,
    /// A job's time to finish, in milliseconds from when it became ready
    /// (its enqueue time plus the delay it was added with), across every
    /// attempt, backoff, durable sleep and wait; past it the job fails as
    /// `timed_out`. Absent: no such limit.
    #[serde(default)]
    pub finish_timeout_ms: Option<u64>,
    /// Events that cancel this queue's running and sleeping jobs.
    #[serde(default)]
    pub cancel_on: Vec<CancelOn>,
    /// At most `limit` jobs of one key at once across the fleet.
    #[serde(default)]
    pub key_concurrency: Option<KeyConcurrency>,
    /// Starts per key per period; over it, a job waits for its turn.
    #[serde(default)]
    pub key_throttle: Option<KeyRate>,
    /// Starts per key per period; over it, a job is dropped.
    #[serde(default)]
    pub key_rate_limit: Option<KeyRate>,
    /// Of a key's jobs added close together, only the last runs.
    #[serde(default)]
    pub debounce: Option<Debounce>,
    /// One job of a key at a time: a new one is skipped, or replaces it.
    #[serde(default)]
    pub singleton: Option<Singleton>,
    /// The queue's capacity shared between tenants by weight.
    pub fairness: Option<Fairness>,
    /// Runs a job in the instance an earlier job of the same producer left,
    /// within bounds; absent: a fresh instance for every job.
    #[serde(default)]
    pub warm_instances: Option<WarmInstances>,
    /// Puts a W3C `traceparent` on the handler's outbound requests, so
    /// the service called joins the run's trace (on hosts that export
    /// traces, for sampled runs).
    #[serde(default)]
    pub propagate_trace: bool,
    /// Records each run's transcript (`sandbox::transcript`) into the job.
    #[serde(default)]
    pub record_transcripts: bool,
    /// Sends a share of new jobs to a candidate version of the handler.
    #[serde(default)]
    pub canary: Option<Canary>,
    /// The version (digest) this queue's new jobs run instead of its
    /// handler's current one: set by a per-queue promote or rollback.
    #[serde(default)]
    pub version: Option<String>,
    /// The queues and events its handler may start.
    #[serde(default)]
    pub starts: Option<Starts>,
    /// Where its jobs that failed for good are announced.
    #[serde(default)]
    pub on_failure: Option<OnFailure>,
    /// Runs its jobs in batches (the handler's `run-batch`).
    #[serde(default)]
    pub batch: Option<Batch>,
}

impl Binding {
    /// Whether a job's producer decides how it runs — which warm instance
    /// it may share (`warmInstances`), which batch it may join (`batch`),
    /// whose turn it takes (`fairness` by `producer`) — so it must be on
    /// the job from its add on.
    pub fn producer_decides(&self) -> bool {
        self.warm_instances.is_some()
            || self.batch.is_some()
            || self
                .fairness
                .as_ref()
                .is_some_and(|f| f.tenant == super::TenantOf::Producer)
    }

    /// Whether flow control decides anything before a job of this binding
    /// runs (`gate::admission`): a per-key rate or throttle, a key slot
    /// (`singleton`, `keyConcurrency`, `fairness`), the end of a debounce
    /// burst, `cancelOn`. Without any, a job is admitted without a read.
    pub fn has_admission_rules(&self) -> bool {
        self.keeps_lines()
            || self.key_throttle.is_some()
            || self.key_rate_limit.is_some()
            || self.debounce.is_some()
            || !self.cancel_on.is_empty()
    }

    /// Whether jobs of this binding may wait in key lines: a rule whose
    /// slots they take (`keyConcurrency`, `singleton`, `fairness`).
    pub fn keeps_lines(&self) -> bool {
        self.key_concurrency.is_some() || self.singleton.is_some() || self.fairness.is_some()
    }
}

/// A fleet-wide rate limit: at most `max` jobs started per `durationMs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RateLimit {
    /// Jobs per window.
    #[schema(minimum = 1, maximum = 1_000_000_000)]
    #[serde(deserialize_with = "airlock_core::int::one")]
    pub max: u64,
    /// Window length in milliseconds (at most a day).
    #[schema(minimum = 1, maximum = 86_400_000)]
    #[serde(deserialize_with = "airlock_core::int::one")]
    pub duration_ms: u64,
}

/// A request to create or replace a binding; absent fields take defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BindingSpec {
    /// The handler name (must exist).
    #[schema(pattern = r"^[A-Za-z0-9._-]{1,128}$")]
    pub handler: String,
    /// Limit settings over Airlock's defaults (may raise up to the host maxima).
    #[serde(default)]
    pub limits: LimitsOverride,
    /// `false` runs this queue without fuel metering, bounded by the timeout.
    #[serde(default)]
    pub metered: Option<bool>,
    /// Jobs at once per host (default 10).
    #[serde(default, deserialize_with = "airlock_core::int::opt")]
    #[schema(minimum = 1, maximum = 10_000)]
    pub concurrency: Option<usize>,
    /// Default job options (attempts, backoff, retention...).
    #[serde(default)]
    pub default_job_options: DefaultJobOptions,
    /// Event names this queue subscribes to (1 to 256 characters each).
    #[serde(default)]
    #[schema(inline, value_type = Vec<EventName>, max_items = 100)]
    pub events: Vec<String>,
    /// Jobs active at once across the whole fleet.
    #[serde(default, deserialize_with = "airlock_core::int::opt")]
    #[schema(minimum = 1, maximum = 1_000_000)]
    pub global_concurrency: Option<u64>,
    /// Jobs started per window across the whole fleet.
    #[serde(default)]
    pub rate_limit: Option<RateLimit>,
    /// Configuration the handler reads (`config.get`): keys of letters,
    /// digits, `_`, `.` and `-` (starting with a letter or `_`), values of
    /// up to 8192 characters, at most 100 entries. Not for secrets: these
    /// are served back by the API.
    #[serde(default)]
    #[schema(value_type = BTreeMap<ConfigKey, ConfigValue>)]
    pub config: BTreeMap<String, String>,
    /// Where its jobs may send HTTP requests, at most 100 rules; a request
    /// must also be allowed by the host operator's `--egress-allow`. Empty:
    /// nowhere.
    #[serde(default)]
    #[schema(value_type = Vec<EgressRuleDoc>, max_items = 100)]
    pub egress: Vec<EgressRule>,
    /// A job's time to finish, in milliseconds, counted from when it became
    /// ready (enqueue time plus its initial delay) across every attempt,
    /// backoff, durable sleep and wait: past it the job fails as
    /// `timed_out` and is not retried — stopped if it runs, failed when it
    /// is next taken otherwise (a durable sleep wakes at the deadline for
    /// that). Distinct from `limits.timeoutMs`, one run's deadline.
    #[serde(default, deserialize_with = "airlock_core::int::opt")]
    #[schema(minimum = 1, maximum = 31_536_000_000_u64)]
    pub finish_timeout_ms: Option<u64>,
    /// Events that cancel matching jobs of this queue once they have
    /// started (at most 10 rules). An event sent by a producer token
    /// cancels only the jobs that token enqueued.
    #[serde(default)]
    #[schema(max_items = 10)]
    pub cancel_on: Vec<CancelOn>,
    /// At most `limit` jobs of one key (the value at the path `key` in the
    /// job's data) at once across the fleet; keys take turns.
    #[serde(default)]
    pub key_concurrency: Option<KeyConcurrency>,
    /// `limit` starts per `periodMs` per key (`burst` back to back); a job
    /// over the rate waits for its turn, delayed, no attempt used.
    #[serde(default)]
    pub key_throttle: Option<KeyRate>,
    /// `limit` starts per `periodMs` per key (`burst` back to back); a job
    /// over the rate on its first start is dropped: it fails as
    /// `rate_limited` and is not retried.
    #[serde(default)]
    pub key_rate_limit: Option<KeyRate>,
    /// Of the jobs of one key added through Airlock (the API, events) less
    /// than `periodMs` apart, only the last runs — at the latest
    /// `maxWaitMs` after the first. Such jobs take no `delay` or
    /// `deduplication` of their own.
    #[serde(default)]
    pub debounce: Option<Debounce>,
    /// One running job per key across the fleet: a new one is skipped
    /// (`skip`, it fails as `skipped`) or cancels the running one
    /// (`cancel`).
    #[serde(default)]
    pub singleton: Option<Singleton>,
    /// Share the queue's `globalConcurrency` (required with it) between
    /// tenants — the values at `tenant` in the jobs' data — by weight: a
    /// tenant running its share waits while another is under its own, a
    /// tenant alone uses all of it, and a tenant's first job jumps ahead of
    /// another tenant's backlog in the wait list.
    #[serde(default)]
    pub fairness: Option<Fairness>,
    /// Run a job in the instance an earlier completed job of the same
    /// tenant (producer token), queue, handler version and limits left,
    /// instead of a fresh one: the engine's start-up is paid once per
    /// instance, not per job. Module-level state of the handler persists
    /// between its jobs. Jobs enqueued through the API on such a queue get
    /// an id of Airlock's (`j-…`) unless they name one, so their producer
    /// is stored with the add. Absent: a fresh instance for every job.
    #[serde(default)]
    pub warm_instances: Option<WarmInstances>,
    /// Put a W3C `traceparent` on every outbound HTTP request of the
    /// handler — the run's span as the parent, so the service called joins
    /// the job's trace — replacing a `traceparent` the handler set and
    /// dropping its `tracestate`. Only on hosts that export traces
    /// (`OTEL_EXPORTER_OTLP_*ENDPOINT`) and for runs whose trace is
    /// sampled; otherwise requests go as the handler wrote them. Default
    /// `false`.
    #[serde(default)]
    pub propagate_trace: bool,
    /// Record each run's transcript — the job as received, every durable
    /// call and its answer, each configuration read, each outbound HTTP
    /// request with its response (headers and bodies bounded), how the run
    /// ended — into the job (`GET /v1/jobs/{ref}/transcript`; kept and
    /// removed with the job), for `airlock replay`. Never a secret's value
    /// or a wait token; at most 256 KiB of calls per run. Default `false`.
    #[serde(default)]
    pub record_transcripts: bool,
    /// Send `percent` (1 to 99) of new jobs to a candidate version of the
    /// handler, `digest` (one of its uploaded versions), the rest to its
    /// current version; a job's side is a hash of its id, and it stays on
    /// the version its first run pinned. `GET /v1/stats?queue=` reports
    /// both side by side. `POST /v1/queues/{queue}/rollback` removes it.
    #[serde(default)]
    pub canary: Option<Canary>,
    /// The version (`digest` of one of the handler's uploads) this queue's
    /// new jobs run instead of the handler's current one; absent: the
    /// current one. `POST /v1/queues/{queue}/promote` and a per-queue
    /// rollback set it.
    #[serde(default)]
    #[schema(pattern = "^[0-9a-f]{64}$")]
    pub version: Option<String>,
    /// What the handler may start (`context.enqueue`, `context.invoke`,
    /// `context.send-event`): queue and event names or `*` patterns. A
    /// start outside them fails the job as `guest_fatal`, saying why.
    /// Absent: nothing. A child runs under its own queue's binding, as the
    /// parent's producer, in the parent's trace.
    #[serde(default)]
    pub starts: Option<Starts>,
    /// Announce every job of this queue that failed for good (attempts
    /// used up, or a fatal error) once: as a job on `queue` (a dead-letter
    /// queue) and/or an event named `event`. Its data: `{"queue", "id",
    /// "name", "data", "failure": {"kind", "reason"}, "attempts",
    /// "producer", "failedAt"}`. Also for a job whose host died after it
    /// failed (see `worker::on_failure`).
    #[serde(default)]
    pub on_failure: Option<OnFailure>,
    /// Run the queue's jobs in batches: up to `size` in one call of the
    /// handler's `run-batch` (its `batch-handler` world, airlock:job@0.6.0;
    /// bind refuses a handler without it), each job then ending on its own
    /// with its own outcome. A batch starts with `size` jobs; before that
    /// with `minSize` (default `size`, at most `size`) once no job joined
    /// it for 5 ms; at the latest `timeoutMs` after its first job joined,
    /// with what it holds. Jobs of different producers (verified by the
    /// fleet's seal: without `--secrets-key`, a job with a producer runs in
    /// a batch of its own), handler versions, per-job limits or `key`
    /// values never share a batch. Fuel and the run's deadline are
    /// `limits`' figures times the batch's jobs (at most the host's
    /// maxima); memory is one instance's `limits.memoryBytes`.
    /// `concurrency` counts batches. Durable steps, sleeps, waits and starts are not available
    /// in a batch (the batch fails as `guest_fatal`, naming the call); not
    /// with `warmInstances`. With `recordTranscripts`, a batch run has one
    /// transcript for all its jobs (each job's transcripts list it), kept a
    /// week.
    #[serde(default)]
    pub batch: Option<Batch>,
}

/// A `config` key (schema only).
#[derive(utoipa::ToSchema)]
#[schema(pattern = "^[A-Za-z_][A-Za-z0-9_.-]{0,127}$")]
pub struct ConfigKey(#[allow(dead_code)] String);

/// A `config` value (schema only).
#[derive(utoipa::ToSchema)]
#[schema(max_length = 8192)]
pub struct ConfigValue(#[allow(dead_code)] String);

/// An event name (schema only: 1 to 256 characters).
#[derive(utoipa::ToSchema)]
#[schema(min_length = 1, max_length = 256)]
pub struct EventName(#[allow(dead_code)] String);

/// Most jobs one queue may run at once on one host.
pub const MAX_CONCURRENCY: usize = 10_000;

impl BindingSpec {
    /// The binding this spec describes for `queue`, checked against the
    /// host maxima.
    pub fn resolve(&self, queue: &str, maxima: &HostMaxima) -> Result<Binding, RegistryError> {
        names::queue("queue", queue)?;
        names::handler("handler", &self.handler)?;
        let mut limits = Limits::default().with_settings(&self.limits);
        if self.metered == Some(false) {
            if self.limits.fuel.is_some() {
                return Err(invalid(
                    "limits.fuel",
                    "cannot be set on an unmetered queue",
                ));
            }
            limits.fuel = None;
        }
        limits
            .check_within(maxima)
            .map_err(|e| invalid(&format!("limits.{}", e.field), e.message))?;
        let concurrency = self.concurrency.unwrap_or(10);
        if concurrency == 0 || concurrency > MAX_CONCURRENCY {
            return Err(invalid(
                "concurrency",
                format!("must be between 1 and {MAX_CONCURRENCY}"),
            ));
        }
        self.default_job_options
            .validate()
            .map_err(|e| e.under("defaultJobOptions"))?;
        for (i, event) in self.events.iter().enumerate() {
            if event.is_empty() || event.len() > 256 {
                return Err(invalid(
                    &format!("events[{i}]"),
                    "must be 1 to 256 characters",
                ));
            }
        }
        if self.events.len() > 100 {
            return Err(invalid("events", "at most 100 event names"));
        }
        if let Some(canary) = &self.canary {
            if !(1..=99).contains(&canary.percent) {
                return Err(invalid("canary.percent", "must be 1 to 99"));
            }
            names::digest("canary.digest", &canary.digest)?;
        }
        if let Some(version) = &self.version {
            names::digest("version", version)?;
        }
        if let Some(n) = self.global_concurrency
            && !(1..=1_000_000).contains(&n)
        {
            return Err(invalid("globalConcurrency", "must be 1 to 1000000"));
        }
        if let Some(rate) = self.rate_limit {
            if !(1..=1_000_000_000).contains(&rate.max) {
                return Err(invalid("rateLimit.max", "must be 1 to 1000000000"));
            }
            if !(1..=86_400_000).contains(&rate.duration_ms) {
                return Err(invalid(
                    "rateLimit.durationMs",
                    "must be 1 to 86400000 (a day)",
                ));
            }
        }
        if self.config.len() > MAX_CONFIG_ENTRIES {
            return Err(invalid(
                "config",
                format!("at most {MAX_CONFIG_ENTRIES} entries"),
            ));
        }
        for (key, value) in &self.config {
            let b = key.as_bytes();
            let valid = (1..=128).contains(&b.len())
                && (b[0].is_ascii_alphabetic() || b[0] == b'_')
                && b.iter()
                    .all(|c| c.is_ascii_alphanumeric() || b"_.-".contains(c));
            if !valid {
                return Err(invalid(
                    &format!("config.{key}"),
                    "keys are 1 to 128 letters, digits, `_`, `.` or `-`, starting with a letter or `_`",
                ));
            }
            if value.chars().count() > MAX_CONFIG_VALUE_CHARS {
                return Err(invalid(
                    &format!("config.{key}"),
                    format!("values are at most {MAX_CONFIG_VALUE_CHARS} characters"),
                ));
            }
        }
        if self.egress.len() > MAX_EGRESS_RULES {
            return Err(invalid(
                "egress",
                format!("at most {MAX_EGRESS_RULES} rules"),
            ));
        }
        for (i, rule) in self.egress.iter().enumerate() {
            rule.validate()
                .map_err(|e| invalid(&format!("egress[{i}]"), e))?;
        }
        if self.cancel_on.len() > MAX_CANCEL_ON {
            return Err(invalid(
                "cancelOn",
                format!("at most {MAX_CANCEL_ON} rules"),
            ));
        }
        for (i, rule) in self.cancel_on.iter().enumerate() {
            if rule.event.is_empty() || rule.event.len() > 256 {
                return Err(invalid(
                    &format!("cancelOn[{i}].event"),
                    "must be 1 to 256 characters",
                ));
            }
        }
        if let Some(kc) = &self.key_concurrency
            && !(1..=MAX_KEY_LIMIT).contains(&kc.limit)
        {
            return Err(invalid(
                "keyConcurrency.limit",
                format!("must be 1 to {MAX_KEY_LIMIT}"),
            ));
        }
        if let Some(rule) = &self.fairness {
            rule.validate(self.global_concurrency)?;
        }
        if let Some(rule) = &self.key_throttle {
            rule.validate("keyThrottle")?;
        }
        if let Some(rule) = &self.key_rate_limit {
            rule.validate("keyRateLimit")?;
        }
        if let Some(d) = &self.debounce {
            if !(1..=86_400_000).contains(&d.period_ms) {
                return Err(invalid(
                    "debounce.periodMs",
                    "must be 1 to 86400000 (a day)",
                ));
            }
            if let Some(w) = d.max_wait_ms
                && !(1..=86_400_000).contains(&w)
            {
                return Err(invalid(
                    "debounce.maxWaitMs",
                    "must be 1 to 86400000 (a day)",
                ));
            }
        }
        if let Some(w) = &self.warm_instances {
            w.validate()?;
        }
        if let Some(starts) = &self.starts {
            starts.validate("starts")?;
        }
        if let Some(route) = &self.on_failure {
            route.validate("onFailure")?;
        }
        if let Some(batch) = &self.batch {
            batch.validate()?;
            if self.warm_instances.is_some() {
                return Err(invalid(
                    "batch",
                    "cannot be combined with `warmInstances`: a batch runs in a fresh instance",
                ));
            }
        }
        if let Some(ms) = self.finish_timeout_ms
            && !(1..=MAX_FINISH_TIMEOUT_MS).contains(&ms)
        {
            return Err(invalid(
                "finishTimeoutMs",
                format!("must be 1 to {MAX_FINISH_TIMEOUT_MS} (a year)"),
            ));
        }
        Ok(Binding {
            queue: queue.to_string(),
            handler: self.handler.clone(),
            limits,
            concurrency,
            default_job_options: self.default_job_options.clone(),
            events: self.events.clone(),
            global_concurrency: self.global_concurrency,
            rate_limit: self.rate_limit,
            config: self.config.clone(),
            egress: self.egress.clone(),
            finish_timeout_ms: self.finish_timeout_ms,
            cancel_on: self.cancel_on.clone(),
            key_concurrency: self.key_concurrency.clone(),
            key_throttle: self.key_throttle.clone(),
            key_rate_limit: self.key_rate_limit.clone(),
            debounce: self.debounce.clone(),
            singleton: self.singleton.clone(),
            fairness: self.fairness.clone(),
            warm_instances: self.warm_instances.clone(),
            propagate_trace: self.propagate_trace,
            record_transcripts: self.record_transcripts,
            canary: self.canary.clone(),
            version: self.version.clone(),
            starts: self.starts.clone(),
            on_failure: self.on_failure.clone(),
            batch: self.batch.clone(),
        })
    }
}
