//! Test guest: fails with a retryable error until a given attempt, logging
//! each attempt with the guest's clock, so tests can check retry counts and
//! backoff timings from the job's log.
//!
//! Input: `{ "succeedOnAttempt": 3 }` (default: never succeeds).

use std::time::{SystemTime, UNIX_EPOCH};

use airlock_guest::{Context, JobError};
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Input {
    #[serde(default)]
    succeed_on_attempt: Option<u32>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Output {
    succeeded_on_attempt: u32,
}

fn flaky(ctx: &Context, input: Input) -> Result<Output, JobError> {
    let attempt = ctx.job().attempt;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    ctx.info(format!(
        "attempt {attempt} of {} at {now}",
        ctx.job().max_attempts
    ));
    match input.succeed_on_attempt {
        Some(n) if attempt >= n => Ok(Output {
            succeeded_on_attempt: attempt,
        }),
        _ => Err(JobError::retry(format!(
            "attempt {attempt} failed on purpose"
        ))),
    }
}

airlock_guest::handler!(flaky);
