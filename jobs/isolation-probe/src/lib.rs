//! Test guest: proves that runs never share state. It bumps a global
//! counter, stamps a global with its own job id, burns some CPU so that
//! concurrent runs overlap, then reports what it sees. In a fresh instance
//! per job the counter is always 1 and the stamp is always its own id.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use airlock_guest::{Context, JobError};
use serde::{Deserialize, Serialize};

static RUNS_SEEN: AtomicU64 = AtomicU64::new(0);
static STAMP: Mutex<Option<String>> = Mutex::new(None);

#[derive(Deserialize)]
struct Input {
    #[serde(default = "default_spin")]
    spin: u64,
}

fn default_spin() -> u64 {
    50_000_000
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Observation {
    runs_seen: u64,
    stamp_before: Option<String>,
    stamp_after: Option<String>,
    job_id: String,
}

fn probe(ctx: &Context, input: Input) -> Result<Observation, JobError> {
    let runs_seen = RUNS_SEEN.fetch_add(1, Ordering::SeqCst) + 1;
    let stamp_before = STAMP.lock().unwrap().replace(ctx.job().id.clone());
    let mut x = 0u64;
    for i in 0..input.spin {
        x = std::hint::black_box(x ^ i.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    }
    let stamp_after = STAMP.lock().unwrap().clone();
    Ok(Observation {
        runs_seen,
        stamp_before,
        stamp_after,
        job_id: ctx.job().id.clone(),
    })
}

airlock_guest::handler!(probe);
