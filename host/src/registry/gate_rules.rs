//! A binding's flow-control rules: per-key concurrency, start rates,
//! debounce, singleton and `cancelOn` — what each field means and its
//! bounds. `gate/` enforces them; `BindingSpec::resolve` checks them
//! together with the rest of a binding.

use serde::{Deserialize, Serialize};

use super::{RegistryError, invalid};
use airlock_core::json_path::JsonPath;

/// One running job per key (`singleton`): a job that starts while another
/// job of its key runs is skipped (`skip`: it fails as `skipped`, not
/// retried) or cancels the running one and runs once it has stopped
/// (`cancel`; a running job another producer token enqueued is not
/// cancelled but waited for). Across the fleet, with the same leases as
/// `keyConcurrency`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Singleton {
    /// Where the job's data holds its key (`$.customerId`).
    #[schema(value_type = String, pattern = r"^\$(\.[A-Za-z0-9_-]{1,64}){1,16}$", max_length = 256)]
    pub key: JsonPath,
    /// What a new job does while one of its key runs.
    pub mode: SingletonMode,
}

/// What a new job of a busy singleton key does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SingletonMode {
    /// It is skipped: fails as `skipped` without running.
    Skip,
    /// It cancels the running one (if the same producer enqueued it; else
    /// it waits for it) and runs after it.
    Cancel,
}

/// Debounce: of the jobs of one key added through Airlock (the API,
/// events) less than `periodMs` apart, only the last runs, `periodMs` after
/// it was added — and at the latest `maxWaitMs` after the first of them.
/// See `state::debounces`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Debounce {
    /// Where the job's data holds its key (`$.customerId`).
    #[schema(value_type = String, pattern = r"^\$(\.[A-Za-z0-9_-]{1,64}){1,16}$", max_length = 256)]
    pub key: JsonPath,
    /// The quiet time that ends a burst, in ms (at most a day).
    #[schema(minimum = 1, maximum = 86_400_000)]
    #[serde(deserialize_with = "airlock_core::int::one")]
    pub period_ms: u64,
    /// The longest a burst may hold its job back, in ms (at most a day).
    #[serde(default, deserialize_with = "airlock_core::int::opt")]
    #[schema(minimum = 1, maximum = 86_400_000)]
    pub max_wait_ms: Option<u64>,
}

/// A per-key start rate (`keyThrottle`, `keyRateLimit`): `limit` starts per
/// `periodMs` for the jobs whose data holds the same value at `key`,
/// `burst` of them back to back (default 1). A job without a value at
/// `key` is not limited. See `state::key_rates`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KeyRate {
    /// Where the job's data holds its key (`$.customerId`).
    #[schema(value_type = String, pattern = r"^\$(\.[A-Za-z0-9_-]{1,64}){1,16}$", max_length = 256)]
    pub key: JsonPath,
    /// Starts per period, 1 to 1000000.
    #[schema(minimum = 1, maximum = 1_000_000)]
    #[serde(deserialize_with = "airlock_core::int::one")]
    pub limit: u64,
    /// The period in milliseconds, at most a day.
    #[schema(minimum = 1, maximum = 86_400_000)]
    #[serde(deserialize_with = "airlock_core::int::one")]
    pub period_ms: u64,
    /// Starts allowed back to back, 1 to 1000000 (default 1).
    #[serde(default, deserialize_with = "airlock_core::int::opt")]
    #[schema(minimum = 1, maximum = 1_000_000)]
    pub burst: Option<u64>,
}

impl KeyRate {
    pub(super) fn validate(&self, field: &str) -> Result<(), RegistryError> {
        if !(1..=1_000_000).contains(&self.limit) {
            return Err(invalid(&format!("{field}.limit"), "must be 1 to 1000000"));
        }
        if !(1..=86_400_000).contains(&self.period_ms) {
            return Err(invalid(
                &format!("{field}.periodMs"),
                "must be 1 to 86400000 (a day)",
            ));
        }
        if let Some(b) = self.burst
            && !(1..=1_000_000).contains(&b)
        {
            return Err(invalid(&format!("{field}.burst"), "must be 1 to 1000000"));
        }
        Ok(())
    }

    /// The rate, for `state::key_rates`.
    pub fn rate(&self) -> crate::state::key_rates::Rate {
        crate::state::key_rates::Rate {
            limit: self.limit,
            period_ms: self.period_ms,
            burst: self.burst.unwrap_or(1),
        }
    }
}

/// Largest `keyConcurrency.limit`.
pub const MAX_KEY_LIMIT: u64 = 100_000;

/// Per-key concurrency: at most `limit` jobs whose data holds the same
/// value at `key` run at once, across the fleet (the queue's
/// `globalConcurrency` and each host's `concurrency` still cap them all).
/// Keys take turns: a key with a deep backlog does not hold up another
/// key's jobs. A job without a value at `key` is limited by the queue's
/// own limits only. See `state::key_limits`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KeyConcurrency {
    /// Where the job's data holds its key (`$.customerId`).
    #[schema(value_type = String, pattern = r"^\$(\.[A-Za-z0-9_-]{1,64}){1,16}$", max_length = 256)]
    pub key: JsonPath,
    /// Jobs of one key at once, 1 to 100000.
    #[schema(minimum = 1, maximum = 100_000)]
    #[serde(deserialize_with = "airlock_core::int::one")]
    pub limit: u64,
}

/// Most `cancelOn` rules of a binding.
pub const MAX_CANCEL_ON: usize = 10;

/// An event that cancels the jobs it matches (Inngest's `cancelOn`): a job
/// whose data holds, at `match`, the value the event's data holds at
/// `eventMatch` (the same path when absent) is cancelled — if it has
/// started (it runs, sleeps, or waits for a retry): a job is matched from
/// its first run on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CancelOn {
    /// The event name (`order.cancelled`), 1 to 256 characters.
    #[schema(min_length = 1, max_length = 256)]
    pub event: String,
    /// Where the job's data holds the value to match (`$.orderId`).
    #[serde(rename = "match")]
    #[schema(value_type = String, pattern = r"^\$(\.[A-Za-z0-9_-]{1,64}){1,16}$", max_length = 256)]
    pub job_match: JsonPath,
    /// Where the event's data holds it; absent: the same path as `match`.
    #[serde(default)]
    #[schema(value_type = Option<String>, pattern = r"^\$(\.[A-Za-z0-9_-]{1,64}){1,16}$", max_length = 256)]
    pub event_match: Option<JsonPath>,
}

impl CancelOn {
    /// The path into the event's data.
    pub fn event_path(&self) -> &JsonPath {
        self.event_match.as_ref().unwrap_or(&self.job_match)
    }
}

/// Longest `finishTimeoutMs`: a year, the longest durable sleep.
pub const MAX_FINISH_TIMEOUT_MS: u64 = crate::sandbox::MAX_SLEEP_MS;

/// Most entries in `fairness.weights`.
pub const MAX_TENANT_WEIGHTS: usize = 1000;

/// Largest tenant weight.
pub const MAX_TENANT_WEIGHT: u32 = 1000;

/// Fair shares between tenants (`fairness`): the queue's fleet capacity
/// (its `globalConcurrency`) is shared between the tenants — the API
/// tokens that enqueued the jobs, or the values at a path in the jobs'
/// data (`tenant`) — that have jobs running or waiting, in
/// proportion to their weights. A tenant running its share waits for its
/// turn while another tenant is under its own; a tenant alone uses all of
/// it. Sharing running slots charges each tenant by the wall time its jobs
/// hold them. See `gate::fairness`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Fairness {
    /// Who a job's tenant is: `producer`, the API token that enqueued it
    /// (as Airlock sealed it on the job: a producer token, or an admin
    /// token by its name; jobs without a sealed producer — added by
    /// BullMQ's own clients, by flows, by schedules or by an event an
    /// admin token sent — are one tenant together), or where the job's
    /// data names it (`$.tenantId`; a job without a value there is not
    /// governed by fairness).
    #[schema(value_type = String, pattern = r"^(producer|\$(\.[A-Za-z0-9_-]{1,64}){1,16})$", max_length = 256)]
    pub tenant: TenantOf,
    /// Weights of named tenants, 1 to 1000 (others weigh 1; at most 1000
    /// entries). A name matches a tenant whose value is that string, or
    /// whose value's JSON text it is (`"42"` matches the number 42); with
    /// `tenant: producer`, an API token's name (`null` names the jobs
    /// without a sealed producer).
    #[serde(default, deserialize_with = "airlock_core::int::map")]
    #[schema(value_type = std::collections::BTreeMap<TenantName, TenantWeight>)]
    pub weights: std::collections::BTreeMap<String, u32>,
}

/// Who a job's tenant is under `fairness` (`tenant`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TenantOf {
    /// The API token that enqueued the job, as Airlock's seal on the
    /// job proves (`gate::fairness` reads and checks it); a job without one
    /// belongs to the tenant `null`.
    Producer,
    /// The value at this path in the job's data.
    Path(JsonPath),
}

impl TenantOf {
    /// The word `tenant` takes for [`TenantOf::Producer`].
    pub const PRODUCER: &str = "producer";

    /// The rule as written (`producer` or the path).
    pub fn as_str(&self) -> &str {
        match self {
            TenantOf::Producer => Self::PRODUCER,
            TenantOf::Path(path) => path.as_str(),
        }
    }
}

impl Serialize for TenantOf {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for TenantOf {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<TenantOf, D::Error> {
        let text = String::deserialize(d)?;
        if text == Self::PRODUCER {
            return Ok(TenantOf::Producer);
        }
        JsonPath::parse(&text)
            .map(TenantOf::Path)
            .map_err(|e| serde::de::Error::custom(format!("{e}, or `producer`")))
    }
}

/// A tenant's name in `fairness.weights` (schema only).
#[derive(utoipa::ToSchema)]
#[schema(min_length = 1, max_length = 256)]
pub struct TenantName(#[allow(dead_code)] String);

/// A tenant's weight in `fairness.weights` (schema only).
#[derive(utoipa::ToSchema)]
#[schema(minimum = 1, maximum = 1000)]
pub struct TenantWeight(#[allow(dead_code)] u32);

impl Fairness {
    pub(super) fn validate(&self, global_concurrency: Option<u64>) -> Result<(), RegistryError> {
        if global_concurrency.is_none() {
            return Err(invalid(
                "globalConcurrency",
                "is required with fairness: it is the fleet capacity the tenants share",
            ));
        }
        if self.weights.len() > MAX_TENANT_WEIGHTS {
            return Err(invalid(
                "fairness.weights",
                format!("at most {MAX_TENANT_WEIGHTS} entries"),
            ));
        }
        for (name, weight) in &self.weights {
            if name.is_empty() || name.chars().count() > 256 {
                return Err(invalid(
                    "fairness.weights",
                    "names must be 1 to 256 characters",
                ));
            }
            if !(1..=MAX_TENANT_WEIGHT).contains(weight) {
                return Err(invalid(
                    &format!("fairness.weights.{name}"),
                    format!("must be 1 to {MAX_TENANT_WEIGHT}"),
                ));
            }
        }
        Ok(())
    }

    /// The weight of the tenant whose value is `value`.
    pub fn weight_of(&self, value: &serde_json::Value) -> u32 {
        let named = match value {
            serde_json::Value::String(s) => self.weights.get(s.as_str()),
            other => self.weights.get(other.to_string().as_str()),
        };
        named.copied().unwrap_or(1)
    }
}
