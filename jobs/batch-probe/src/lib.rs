//! A batch handler for the batch tests: each job's data says how it ends
//! (`{"outcome": "ok" | "retry" | "fatal" | "panic" | "step" | "short"}`),
//! and a job that completes returns the ids of every job of its batch, in
//! the order the batch got them, so a test sees who shared a batch, and
//! when its batch's run started (`startedAt`, ms since the epoch).
//! - `retry` / `fatal`: that job alone fails so;
//! - `panic`: on its first attempt, the handler panics, failing (and
//!   retrying) the whole batch;
//! - `step`: the handler calls a durable step, which a batch refuses;
//! - `short`: the handler returns one outcome too few.
//!
//! `{"sleepMs": n}` makes the batch take at least that long (the longest
//! asked in it) before it answers: a batch to kill a host in.

use airlock_guest::{BatchJob, Context, JobError};
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Deserialize)]
struct Probe {
    #[serde(default)]
    outcome: Option<String>,
    #[serde(default, rename = "sleepMs")]
    sleep_ms: Option<u64>,
}

fn probe(ctx: &Context, jobs: Vec<BatchJob<Probe>>) -> Vec<Result<Value, JobError>> {
    let ids: Vec<&str> = jobs.iter().map(|j| j.job.id.as_str()).collect();
    let wants = |what: &str| {
        jobs.iter()
            .any(|j| j.input.outcome.as_deref() == Some(what))
    };
    ctx.info(format!("batch of {}: {}", jobs.len(), ids.join(",")));
    if let Some(ms) = jobs.iter().filter_map(|j| j.input.sleep_ms).max() {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
    ctx.progress(100);
    let first_try_panics = jobs
        .iter()
        .any(|j| j.input.outcome.as_deref() == Some("panic") && j.job.attempt == 1);
    if first_try_panics {
        panic!("a job of this batch asked for a panic");
    }
    if wants("step") {
        let _ = ctx.step("in-a-batch", || Ok::<_, JobError>(1));
    }
    let mut outcomes: Vec<Result<Value, JobError>> = jobs
        .iter()
        .map(|j| match j.input.outcome.as_deref() {
            Some("retry") => Err(JobError::Retry(format!("job {} asked to retry", j.job.id))),
            Some("fatal") => Err(JobError::Fatal(format!("job {} asked to fail", j.job.id))),
            _ => Ok(json!({
                "id": j.job.id,
                "attempt": j.job.attempt,
                "batch": ids,
                "startedAt": started_ms(j.job.started_at),
            })),
        })
        .collect();
    if wants("short") {
        outcomes.pop();
    }
    outcomes
}

/// When the batch's run started, ms since the epoch.
fn started_ms(at: std::time::SystemTime) -> u64 {
    at.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

airlock_guest::batch_handler!(probe);
