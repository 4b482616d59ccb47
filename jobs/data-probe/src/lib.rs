//! Test guest: returns the job's data exactly as it reached the guest, as a
//! JSON string, and the flow parent the host said the job has
//! (`{"raw": "<the data text>", "parent": "<queue>:<id>" | null}`), so
//! tests can check that the host hands over every byte a producer enqueued
//! and a flow child's parent.

use airlock_guest::{Context, JobError};
use serde::Serialize;
use serde_json::value::RawValue;

#[derive(Serialize)]
struct Echo {
    raw: String,
    parent: Option<String>,
}

// `RawValue` is unsized: it only ever comes boxed.
#[allow(clippy::boxed_local)]
fn echo(ctx: &Context, data: Box<RawValue>) -> Result<Echo, JobError> {
    Ok(Echo {
        raw: data.get().to_string(),
        parent: ctx
            .job()
            .parent
            .as_ref()
            .map(|p| format!("{}:{}", p.queue, p.id)),
    })
}

airlock_guest::handler!(echo);
