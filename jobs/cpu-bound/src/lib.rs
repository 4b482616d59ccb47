//! A CPU-bound handler: `rounds` chained SHA-256 hashes (see
//! `cpu-bound-core`). The benchmarks compare it with the same code run
//! natively, with and without fuel metering.
//!
//! Input: `{ "rounds": 100000, "seed": "abc" }`. Output: `{ "digest": "..." }`.

use airlock_guest::{Context, JobError};
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
struct Work {
    rounds: u64,
    #[serde(default)]
    seed: String,
}

#[derive(Serialize)]
struct Digest {
    digest: String,
}

fn crunch(_ctx: &Context, work: Work) -> Result<Digest, JobError> {
    Ok(Digest {
        digest: cpu_bound_core::hash_chain(&work.seed, work.rounds),
    })
}

airlock_guest::handler!(crunch);
