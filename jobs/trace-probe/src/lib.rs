//! Test guest for traces: one job that does each thing a trace shows, in
//! order — step `call` POSTs `{"job": id}` to the job data's `url` (an
//! outbound request inside a step), step `flaky` fails on attempt 1 (a
//! retry), then a durable sleep `nap` of `sleepMs` (default 200) parks the
//! job, and the run after it completes with what `call` got back.
//!
//! Input: `{"url": "http://...", "sleepMs": 200}`.

use std::time::Duration;

use airlock_guest::{Context, JobError};
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Input {
    url: String,
    #[serde(default)]
    sleep_ms: Option<u64>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Output {
    called: u16,
    attempt: u32,
}

fn probe(ctx: &Context, input: Input) -> Result<Output, JobError> {
    let called = ctx.step("call", || -> Result<u16, JobError> {
        let response = ctx
            .http()
            .post(&input.url)
            .json(&serde_json::json!({ "job": ctx.job().id }))
            .send()?;
        Ok(response.status())
    })?;
    ctx.step("flaky", || -> Result<bool, JobError> {
        if ctx.job().attempt == 1 {
            Err(JobError::retry("step `flaky` fails on the first attempt"))
        } else {
            Ok(true)
        }
    })?;
    ctx.sleep("nap", Duration::from_millis(input.sleep_ms.unwrap_or(200)))?;
    Ok(Output {
        called,
        attempt: ctx.job().attempt,
    })
}

airlock_guest::handler!(probe);
