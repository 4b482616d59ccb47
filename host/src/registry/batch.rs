//! A binding's `batch` rule: a host runs up to `size` jobs of the queue in
//! one instance run (the handler's `run-batch`), and its bounds. The
//! batching itself is `worker::batches`.

use serde::{Deserialize, Serialize};

use super::{RegistryError, invalid};
use airlock_core::json_path::JsonPath;

/// Most jobs one batch holds.
pub const MAX_BATCH_SIZE: u32 = 1_000;
/// Longest a batch waits for `minSize` jobs: a minute.
pub const MAX_BATCH_TIMEOUT_MS: u64 = 60_000;

/// Batches (`batch`): a host gathers the queue's ready jobs and runs up to
/// `size` of them in one call of the handler's `run-batch` (the
/// `batch-handler` world of `airlock:job@0.6.0`), then ends each job on its
/// own with its own outcome. A batch starts as soon as it holds `size`
/// jobs; before that, once it holds `minSize` and no job has joined it for
/// 5 ms (`worker::batches::SETTLE`: the jobs the host had to hand); at the
/// latest `timeoutMs` after its first job joined, with what it holds. Jobs of
/// different producers (tenants), handler versions, per-job limits or
/// (with `key`) keys never share a batch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Batch {
    /// Most jobs in one batch, 1 to 1000.
    #[serde(deserialize_with = "airlock_core::int::one")]
    #[schema(minimum = 1, maximum = 1000)]
    pub size: u32,
    /// Jobs a batch waits for (up to `timeoutMs`) before it starts, 1 to
    /// 1000 (default `size`; a value over `size` waits for `size`).
    #[serde(default, deserialize_with = "airlock_core::int::opt")]
    #[schema(minimum = 1, maximum = 1000)]
    pub min_size: Option<u32>,
    /// The longest a batch waits for `minSize` jobs after its first job
    /// joined, in ms (1 to 60000); then it starts with what it holds.
    #[serde(deserialize_with = "airlock_core::int::one")]
    #[schema(minimum = 1, maximum = 60_000)]
    pub timeout_ms: u64,
    /// Where the job's data holds its batch key (`$.accountId`): jobs of
    /// different values never share a batch; jobs without a value (or
    /// whose data is not JSON) share the batches of the empty key.
    #[serde(default)]
    #[schema(value_type = Option<String>, pattern = r"^\$(\.[A-Za-z0-9_-]{1,64}){1,16}$", max_length = 256)]
    pub key: Option<JsonPath>,
}

impl Batch {
    /// Checks the bounds, naming the field.
    pub fn validate(&self) -> Result<(), RegistryError> {
        if !(1..=MAX_BATCH_SIZE).contains(&self.size) {
            return Err(invalid(
                "batch.size",
                format!("must be 1 to {MAX_BATCH_SIZE}"),
            ));
        }
        if let Some(min) = self.min_size
            && !(1..=MAX_BATCH_SIZE).contains(&min)
        {
            return Err(invalid(
                "batch.minSize",
                format!("must be 1 to {MAX_BATCH_SIZE}"),
            ));
        }
        if !(1..=MAX_BATCH_TIMEOUT_MS).contains(&self.timeout_ms) {
            return Err(invalid(
                "batch.timeoutMs",
                format!("must be 1 to {MAX_BATCH_TIMEOUT_MS} (a minute)"),
            ));
        }
        Ok(())
    }

    /// Jobs a batch waits for before it starts: `minSize`, at most
    /// `size`; `size` without it.
    pub fn min_size(&self) -> usize {
        self.min_size.unwrap_or(self.size).min(self.size) as usize
    }
}
