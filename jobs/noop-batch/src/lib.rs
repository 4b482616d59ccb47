//! The smallest batch handler: each job of the batch returns `null`. Used
//! by the benchmarks to measure what a batch costs per job (`noop`'s twin
//! for a queue bound with `batch`).

use airlock_guest::{BatchJob, Context, JobError};

fn noop(_ctx: &Context, jobs: Vec<BatchJob<serde_json::Value>>) -> Vec<Result<(), JobError>> {
    jobs.iter().map(|_| Ok(())).collect()
}

airlock_guest::batch_handler!(noop);
