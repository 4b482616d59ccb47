//! `POST /v1/jobs/{ref}/read-token`: a short-lived token that opens one
//! job's event stream and nothing else (`crate::access::read_tokens`), for
//! a web app's backend to hand the browser that shows the job's progress
//! (`EventSource` on `GET /v1/jobs/{ref}/events?token=…`, which cannot
//! send an `Authorization` header). The caller must see the job, as for
//! reading it; the token reads no other job and no other route, and stops
//! working, and ends the stream it opened, when it expires.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::ApiState;
use super::auth::Caller;
use super::error::{ApiError, ErrorBody, JsonBody, PathParams};
use super::lookup::visible_job;
use crate::access::read_tokens::{DEFAULT_SECONDS, MAX_SECONDS, ReadTokens};
use airlock_core::clock::now_ms;

/// What the token opens, and for how long.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReadTokenRequest {
    /// Seconds until it expires (1 to 3600; default 600).
    #[serde(default, deserialize_with = "airlock_core::int::opt")]
    #[schema(minimum = 1, maximum = 3600)]
    pub expires_in_seconds: Option<u64>,
    /// Also the streams of the jobs below this one in its flow (its
    /// children, theirs, …, up to a flow's 8 levels) that its producer
    /// enqueued (default `false`: this job's alone).
    #[serde(default)]
    pub flow: Option<bool>,
}

/// A read token for one job.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReadToken {
    /// The token (`jrt_…`, or `jrf_…` for a flow): give it to the page
    /// that follows the job.
    pub token: String,
    /// The job it opens, `<queue>:<id>`.
    #[serde(rename = "ref")]
    pub job_ref: String,
    /// When it stops working (and ends a stream it opened), ms since the
    /// epoch.
    pub expires_at: u64,
    /// The job's event stream with the token, relative to the API's base
    /// URL: what `EventSource` opens.
    pub events_path: String,
}

fn issuer(state: &ApiState) -> Result<&ReadTokens, ApiError> {
    state.read_tokens().ok_or_else(|| {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "read_tokens_unavailable",
            "this host has no fleet key (--artifact-key-file / AIRLOCK_ARTIFACT_KEY), so it can neither make nor check read tokens",
        )
    })
}

/// Make a read token for one job's event stream (any role that may read
/// the job: a producer, its own jobs only). The token opens
/// `GET /v1/jobs/{ref}/events?token=…` and no other route or job — with
/// `flow`, also the streams of the jobs below this one in its flow that
/// the same producer enqueued — on every API host of the fleet, until it
/// expires; it cannot be revoked earlier.
#[utoipa::path(
    post,
    operation_id = "jobs_read_token",
    path = "/v1/jobs/{ref}/read-token",
    tag = "jobs",
    params(("ref" = String, Path, description = "`<queue>:<id>`")),
    request_body = ReadTokenRequest,
    responses(
        (status = 201, description = "The token", body = ReadToken),
        (status = 400, description = "Invalid request (the error names the field)", body = ErrorBody),
        (status = 404, description = "No such job (or not the caller's)", body = ErrorBody),
        (status = 503, description = "No fleet key on this host, or Redis unavailable", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub async fn issue(
    State(state): State<ApiState>,
    caller: Caller,
    PathParams(job_ref): PathParams<String>,
    JsonBody(request): JsonBody<ReadTokenRequest>,
) -> Result<(StatusCode, Json<ReadToken>), ApiError> {
    let seconds = request.expires_in_seconds.unwrap_or(DEFAULT_SECONDS);
    if !(1..=MAX_SECONDS).contains(&seconds) {
        return Err(ApiError::field(
            "expiresInSeconds",
            format!("must be 1 to {MAX_SECONDS} (an hour)"),
        ));
    }
    let job = visible_job(&state, &caller, &job_ref).await?;
    let job_ref = airlock_core::job_ref::join(&job.queue, &job.id);
    let expires_at = now_ms() + seconds * 1000;
    let flow = request.flow.unwrap_or(false);
    let token = issuer(&state)?.issue(&job_ref, expires_at, flow);
    let events_path = format!("/v1/jobs/{}/events?token={token}", path_segment(&job_ref));
    Ok((
        StatusCode::CREATED,
        Json(ReadToken {
            token,
            job_ref,
            expires_at,
            events_path,
        }),
    ))
}

/// `text` as one URL path segment.
fn path_segment(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes())
        .collect::<String>()
        .replace('+', "%20")
}
