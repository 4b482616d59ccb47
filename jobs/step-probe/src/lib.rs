//! Test guest for durable steps: proves a step that failed is retried
//! without re-running the steps before it, and that repeated step ids get
//! one record per occurrence.
//!
//! Step `first` bumps the KV counter `first:<job id>`; step `flaky` fails on
//! attempt 1; three `repeat` steps run in a loop. The output reports how
//! often `first` really ran.

use airlock_guest::{Context, JobError};
use serde::Serialize;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Report {
    first_runs: u64,
    repeats: Vec<u32>,
    attempt: u32,
}

fn probe(ctx: &Context, _input: serde_json::Value) -> Result<Report, JobError> {
    let counter = format!("first:{}", ctx.job().id);
    ctx.step("first", || -> Result<bool, JobError> {
        let runs: u64 = ctx
            .kv()
            .get(&counter)?
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        ctx.kv().set(&counter, &(runs + 1).to_string(), None)?;
        Ok(true)
    })?;
    ctx.step("flaky", || -> Result<bool, JobError> {
        if ctx.job().attempt == 1 {
            Err(JobError::retry("step `flaky` fails on the first attempt"))
        } else {
            Ok(true)
        }
    })?;
    let mut repeats = Vec::new();
    for i in 0..3u32 {
        repeats.push(ctx.step("repeat", || -> Result<u32, JobError> { Ok(i) })?);
    }
    let first_runs = ctx
        .kv()
        .get(&counter)?
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    Ok(Report {
        first_runs,
        repeats,
        attempt: ctx.job().attempt,
    })
}

airlock_guest::handler!(probe);
