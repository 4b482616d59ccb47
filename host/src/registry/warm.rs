//! A binding's `warmInstances` rule: its bounds and their check.

use serde::{Deserialize, Serialize};

use super::{RegistryError, invalid};

/// Warm instances (`warmInstances`): a host runs a job in an instance an
/// earlier job left, instead of a fresh one, when both are of this queue,
/// the same handler version, the same limits and the same producer (the
/// API token that enqueued them, as Airlock sealed it, or no producer at
/// all). Anything but a completed job discards the instance. What
/// persists between its jobs is the handler's module-level state, as in a
/// BullMQ sandboxed processor's reused child process; see
/// `sandbox::warm`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WarmInstances {
    /// Jobs one instance runs at most (default 1000).
    #[serde(
        default = "WarmInstances::default_max_jobs",
        deserialize_with = "airlock_core::int::one"
    )]
    #[schema(minimum = 1, maximum = 1_000_000, default = 1000)]
    pub max_jobs: u32,
    /// How long an instance waits for its next job, in ms (default 60000,
    /// at most an hour).
    #[serde(
        default = "WarmInstances::default_idle_ms",
        deserialize_with = "airlock_core::int::one"
    )]
    #[schema(minimum = 1, maximum = 3_600_000, default = 60000)]
    pub idle_ms: u64,
}

impl WarmInstances {
    /// Checks the bounds, naming the field.
    pub fn validate(&self) -> Result<(), RegistryError> {
        if !(1..=1_000_000).contains(&self.max_jobs) {
            return Err(invalid("warmInstances.maxJobs", "must be 1 to 1000000"));
        }
        if !(1..=3_600_000).contains(&self.idle_ms) {
            return Err(invalid(
                "warmInstances.idleMs",
                "must be 1 to 3600000 (an hour)",
            ));
        }
        Ok(())
    }

    fn default_max_jobs() -> u32 {
        1000
    }

    fn default_idle_ms() -> u64 {
        60_000
    }
}
