//! What flow control reads from a job: the values at its binding's key
//! paths, the key slots they name, and the `cancelOn` matches.

use serde_json::Value;

use airlock_core::json_path::JsonPath;

use crate::queue::RunningJob;
use crate::registry::{Binding, SingletonMode};
use crate::state::key_limits::KeySlot;

/// The job's data, parsed once for every rule of `binding` that keys on
/// it; `None` when no rule does (the data is then neither encoded nor
/// parsed: `RunningJob::input` re-encodes it, a cost on every job) or it is
/// not JSON.
pub fn keyed_data<J: RunningJob>(binding: &Binding, job: &J) -> Option<Value> {
    let keyed = binding.key_concurrency.is_some()
        || binding.singleton.is_some()
        || binding.key_throttle.is_some()
        || binding.key_rate_limit.is_some()
        || binding.debounce.is_some()
        || binding.fairness.is_some()
        || !binding.cancel_on.is_empty();
    keyed
        .then(|| serde_json::from_str(&job.input().data).ok())
        .flatten()
}

/// The value at `path` in the job's `data`, as JSON text, if it has one.
pub fn key_value(path: &JsonPath, data: Option<&Value>) -> Option<String> {
    path.get(data?).map(|v| v.to_string())
}

/// The key slot in `queue` of the value at `path` in the job's `data`.
pub fn slot_of(path: &JsonPath, queue: &str, data: Option<&Value>) -> Option<KeySlot> {
    Some(KeySlot::of(queue, path.get(data?)?))
}

/// What a job does when its key has no slot for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnFull {
    /// Wait in the key's line (`keyConcurrency`).
    Wait,
    /// Fail as `skipped` (`singleton`, mode `skip`).
    Skip,
    /// Cancel the key's running job, then wait for its slot (`singleton`,
    /// mode `cancel`).
    CancelRunning,
}

/// One key slot a job must hold to run.
pub struct KeyGate {
    pub slot: KeySlot,
    pub limit: u64,
    /// Where the key comes from, as the rule writes it (a path, or
    /// `producer`): for failure reasons.
    pub path: String,
    /// The key's value, as JSON text (for failure reasons).
    pub value: String,
    pub on_full: OnFull,
    /// A tenant's slot (`fairness`): its share as it is when the slot goes
    /// back, the limit its line is refilled up to then.
    pub share: Option<super::fairness::TenantShare>,
}

/// The key slots of the job under `binding`: its `singleton` key's, then
/// its `keyConcurrency` key's (each only when the job's data holds a value
/// at the rule's path).
pub fn key_gates(binding: &Binding, queue: &str, data: Option<&Value>) -> Vec<KeyGate> {
    let mut gates = Vec::new();
    if let Some(rule) = &binding.singleton
        && let Some(slot) = slot_of(&rule.key, queue, data)
    {
        gates.push(KeyGate {
            slot: slot.singleton(),
            limit: 1,
            path: rule.key.as_str().to_string(),
            value: key_value(&rule.key, data).unwrap_or_default(),
            on_full: match rule.mode {
                SingletonMode::Skip => OnFull::Skip,
                SingletonMode::Cancel => OnFull::CancelRunning,
            },
            share: None,
        });
    }
    if let Some(rule) = &binding.key_concurrency
        && let Some(slot) = slot_of(&rule.key, queue, data)
    {
        gates.push(KeyGate {
            slot,
            limit: rule.limit,
            path: rule.key.as_str().to_string(),
            value: key_value(&rule.key, data).unwrap_or_default(),
            on_full: OnFull::Wait,
            share: None,
        });
    }
    gates
}

/// The (event, value) pairs of `binding`'s cancel-on rules that find a
/// value in the job's data.
pub fn cancel_matches(binding: &Binding, data: Option<&Value>) -> Vec<(String, Value)> {
    let Some(data) = data else {
        return Vec::new();
    };
    binding
        .cancel_on
        .iter()
        .filter_map(|rule| {
            let value = rule.job_match.get(data)?;
            Some((rule.event.clone(), value.clone()))
        })
        .collect()
}
