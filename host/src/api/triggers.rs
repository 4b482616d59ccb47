//! `POST /v1/events`: deliver an event to every queue subscribed to it.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;

use super::ApiState;
use super::auth::{Caller, Role};
use super::error::{ApiError, ErrorBody, JsonBody};
use crate::triggers::{Delivery, Event, deliver};

/// Send an event: every queue whose binding lists its name gets a job with
/// the event (`{name, data, id, ts}`) as data. With an `id`, the same event
/// within 24 hours creates no new jobs and the answer says `duplicate`.
#[utoipa::path(
    post,
    operation_id = "events_send",
    path = "/v1/events",
    tag = "events",
    request_body = Event,
    responses(
        (status = 202, description = "Delivered (or already delivered)", body = Delivery),
        (status = 400, description = "Invalid request (the error names the field)", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub async fn send(
    State(state): State<ApiState>,
    caller: Caller,
    JsonBody(event): JsonBody<Event>,
) -> Result<(StatusCode, Json<Delivery>), ApiError> {
    caller.require(&[Role::Producer])?;
    event.validate()?;
    let size = serde_json::to_vec(&event.data)
        .map(|v| v.len())
        .unwrap_or(0);
    if size > state.limits().max_job_data_bytes {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "job_data_too_large",
            format!("event data is {size} bytes, over the limit"),
        ));
    }
    let delivery = deliver(state.queues(), state.registry(), &event)
        .await
        .map_err(ApiError::unavailable)?;
    Ok((StatusCode::ACCEPTED, Json(delivery)))
}
