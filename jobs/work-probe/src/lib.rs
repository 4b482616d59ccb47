//! Test guest for starting other work: its job data says what to do.
//!
//! - `{"invoke": [job, ...], "maxRunning"?, "timeoutMs"?}`: invokes the jobs
//!   (`{"queue", "name", "data", "attempts"?}`) and returns their ends
//!   (`{"value"}`, `{"failed": {"kind", "reason", "attempts"}}` or
//!   `{"timedOut": true}`) and how many runs the parent took; step `before`
//!   counts in KV how often the code before the invoke really ran.
//! - `{"enqueue": job}`: enqueues it, returns its ref.
//! - `{"event": {"name", "data"}}`: sends it, returns its id.
//! - `{"retryAfterMs": n}`: asks to run again in n ms on its first run,
//!   completes with the run number on the next.
//! - `{"rateLimitMs": n}`: pauses its queue for n ms on its first run,
//!   completes on the next.
//! - as a child: `{"echo": value, "failUntil"?: n, "fatal"?: true,
//!   "sleepMs"?: n}` fails (retryably) on attempts below n, fails fatally
//!   with `fatal`, busy-waits `sleepMs`, and returns `value`; it counts its
//!   runs in KV under `runs:<queue>:<id>`.

use std::time::{Duration, Instant};

use airlock_guest::{ChildEnd, Context, FanOut, JobError, NewJob};
use serde_json::{Value, json};

fn new_job(spec: &Value) -> NewJob {
    let mut job = NewJob::new(
        spec["queue"].as_str().unwrap_or_default(),
        spec["name"].as_str().unwrap_or("child"),
        spec["data"].clone(),
    );
    if let Some(n) = spec["attempts"].as_u64() {
        job = job.attempts(n as u32);
    }
    job
}

fn count(ctx: &Context, key: &str) -> Result<u64, JobError> {
    let runs: u64 = ctx.kv().get(key)?.and_then(|v| v.parse().ok()).unwrap_or(0);
    ctx.kv().set(key, &(runs + 1).to_string(), None)?;
    Ok(runs + 1)
}

fn probe(ctx: &Context, input: Value) -> Result<Value, JobError> {
    let job = ctx.job().clone();
    let runs = count(ctx, &format!("runs:{}:{}", job.queue, job.id))?;
    if let Some(jobs) = input["invoke"].as_array() {
        ctx.step("before", || {
            count(ctx, &format!("before:{}:{}", job.queue, job.id))
        })?;
        let fan_out = FanOut {
            max_running: input["maxRunning"].as_u64().map(|n| n as u32),
            timeout: input["timeoutMs"].as_u64().map(Duration::from_millis),
        };
        let ends =
            ctx.invoke_many::<Value>("children", jobs.iter().map(new_job).collect(), fan_out)?;
        let ends: Vec<Value> = ends
            .into_iter()
            .map(|end| match end {
                ChildEnd::Completed(value) => json!({ "value": value }),
                ChildEnd::Failed(f) => json!({
                    "failed": { "kind": f.kind, "reason": f.reason, "attempts": f.attempts }
                }),
                ChildEnd::TimedOut => json!({ "timedOut": true }),
            })
            .collect();
        let before: u64 = ctx
            .kv()
            .get(&format!("before:{}:{}", job.queue, job.id))?
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        return Ok(json!({ "ends": ends, "runs": runs, "before": before }));
    }
    if input.get("enqueue").is_some() {
        let r = ctx.enqueue("enqueue", new_job(&input["enqueue"]))?;
        return Ok(json!({ "queue": r.queue, "id": r.id }));
    }
    if input.get("event").is_some() {
        let e = &input["event"];
        let id = ctx.send_event("event", e["name"].as_str().unwrap_or_default(), &e["data"])?;
        return Ok(json!({ "eventId": id }));
    }
    if let Some(ms) = input["retryAfterMs"].as_u64() {
        if runs == 1 {
            ctx.retry_after(Duration::from_millis(ms), "the API said 429");
        }
        return Ok(json!({ "runs": runs, "attempt": job.attempt }));
    }
    if let Some(ms) = input["rateLimitMs"].as_u64() {
        if runs == 1 {
            ctx.rate_limit(Duration::from_millis(ms), "slow down");
        }
        return Ok(json!({ "runs": runs, "attempt": job.attempt }));
    }
    if let Some(ms) = input["sleepMs"].as_u64() {
        let until = Instant::now() + Duration::from_millis(ms);
        while Instant::now() < until {}
    }
    if input["fatal"].as_bool() == Some(true) {
        return Err(JobError::fatal(format!("child {} refuses", job.id)));
    }
    if let Some(n) = input["failUntil"].as_u64()
        && u64::from(job.attempt) < n
    {
        return Err(JobError::retry(format!("attempt {} fails", job.attempt)));
    }
    Ok(input.get("echo").cloned().unwrap_or(Value::Null))
}

airlock_guest::handler!(probe);
