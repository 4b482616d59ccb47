//! The smallest possible handler: echoes nothing, returns `null`. Used by the
//! benchmarks to measure what Airlock itself costs per job.

use airlock_guest::{Context, JobError};

fn noop(_ctx: &Context, _input: serde_json::Value) -> Result<serde_json::Value, JobError> {
    Ok(serde_json::Value::Null)
}

airlock_guest::handler!(noop);
