//! The glue between the `run` export and a typed handler function.

use std::time::{Duration, UNIX_EPOCH};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::bindings::airlock::job::context as host;
use crate::bindings::airlock::job::types::{Job, JobError as WitJobError};
use crate::context::{Context, JobInfo};
use crate::error::JobError;

/// Runs `handler` on `job`: installs the panic reporter, decodes the input,
/// calls the handler and encodes its output. Called by [`crate::handler!`].
pub fn run_handler<I, O, F>(job: Job, handler: F) -> Result<String, WitJobError>
where
    I: DeserializeOwned,
    O: Serialize,
    F: FnOnce(&Context, I) -> Result<O, JobError>,
{
    install_panic_reporter();
    crate::http::begin_job();
    let input: I = decode_input(&job.data)?;
    let ctx = Context::new(job_info(job));
    let output = handler(&ctx, input).map_err(WitJobError::from)?;
    serde_json::to_string(&output).map_err(|e| {
        WitJobError::Fatal(format!("handler output could not be encoded as JSON: {e}"))
    })
}

/// Decodes the job data, naming the offending field when it does not fit:
/// bad input is never fixed by a retry, so the error is fatal.
pub(crate) fn decode_input<I: DeserializeOwned>(data: &str) -> Result<I, WitJobError> {
    let mut de = serde_json::Deserializer::from_str(data);
    serde_path_to_error::deserialize(&mut de).map_err(|e| WitJobError::from(fatal_decode_error(e)))
}

fn fatal_decode_error<E: std::fmt::Display>(e: serde_path_to_error::Error<E>) -> JobError {
    let path = e.path().to_string();
    let inner = e.into_inner();
    if path == "." {
        JobError::Fatal(format!("invalid job data: {inner}"))
    } else {
        JobError::Fatal(format!("invalid job data at field `{path}`: {inner}"))
    }
}

/// Decodes a JSON value into `T` the way job data is decoded: a mismatch is
/// a *fatal* error naming the field. For handlers that take
/// `serde_json::Value` and decide themselves what shape they got.
pub fn decode<T: DeserializeOwned>(value: serde_json::Value) -> Result<T, JobError> {
    serde_path_to_error::deserialize(value).map_err(fatal_decode_error)
}

/// The payload of an Airlock event (`POST /v1/events` delivers jobs whose
/// data is `{name, data, id, ts}`), or the value itself when it is not an
/// event: lets one handler serve both direct jobs and event subscriptions.
pub fn event_payload(value: serde_json::Value) -> serde_json::Value {
    let is_event = value.get("name").is_some_and(|n| n.is_string())
        && value.get("id").is_some_and(|i| i.is_string())
        && value.get("ts").is_some_and(|t| t.is_u64())
        && value.get("data").is_some();
    match value {
        serde_json::Value::Object(mut map) if is_event => {
            map.remove("data").unwrap_or(serde_json::Value::Null)
        }
        other => other,
    }
}

/// Wasm guests abort on panic (no unwinding), so the message would be lost in
/// a bare trap. The hook hands it to the host first, which then fails the
/// attempt as retryable with this message.
pub(crate) fn install_panic_reporter() {
    std::panic::set_hook(Box::new(|info| {
        let payload = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "non-string panic payload".to_string());
        let message = match info.location() {
            Some(loc) => format!("{payload} (at {}:{})", loc.file(), loc.line()),
            None => payload,
        };
        host::report_panic(&message);
    }));
}

pub(crate) fn job_info(job: Job) -> JobInfo {
    JobInfo {
        id: job.id,
        queue: job.queue,
        name: job.name,
        attempt: job.attempt,
        max_attempts: job.max_attempts,
        enqueued_at: UNIX_EPOCH + Duration::from_millis(job.enqueued_at_ms),
        started_at: UNIX_EPOCH + Duration::from_millis(job.started_at_ms),
        parent: job.parent.map(Into::into),
    }
}
