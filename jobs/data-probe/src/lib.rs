//! Test guest: returns the job's data exactly as it reached the guest, as a
//! JSON string (`{"raw": "<the data text>"}`), so tests can check that the
//! host hands over every byte a producer enqueued.

use airlock_guest::{Context, JobError};
use serde::Serialize;
use serde_json::value::RawValue;

#[derive(Serialize)]
struct Echo {
    raw: String,
}

// `RawValue` is unsized: it only ever comes boxed.
#[allow(clippy::boxed_local)]
fn echo(_ctx: &Context, data: Box<RawValue>) -> Result<Echo, JobError> {
    Ok(Echo {
        raw: data.get().to_string(),
    })
}

airlock_guest::handler!(echo);
