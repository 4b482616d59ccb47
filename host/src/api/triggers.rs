//! `POST /v1/events`: deliver an event to every queue subscribed to it.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;

use super::ApiState;
use super::auth::{Caller, Role};
use super::error::{ApiError, ErrorBody, JsonBody};
use super::jobs::check_data_size;
use crate::triggers::{Delivery, Event, deliver};

/// Send an event: every queue whose binding lists its name gets a job with
/// the event (`{name, data, id, ts}`) as data, owned by the producer token
/// that sent it (as if it had enqueued them). With an `id`, the same event
/// within 24 hours creates no new jobs (`duplicate`), and sending it again
/// after a failure (a 503) completes the delivery: exactly one job per
/// subscribed queue. The event also cancels the started jobs its name and
/// data match through their bindings' `cancelOn` rules (`cancelled`), and
/// ends the durable waits (`wait-for-event`) it matches, waking their jobs
/// (`resumed`); from a producer token, both only for jobs that token
/// enqueued.
#[utoipa::path(
    post,
    operation_id = "events_send",
    path = "/v1/events",
    tag = "events",
    request_body = Event,
    responses(
        (status = 202, description = "Delivered (or already delivered)", body = Delivery),
        (status = 400, description = "Invalid request (the error names the field)", body = ErrorBody),
        (status = 413, description = "Body or event data too large", body = ErrorBody)
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
    check_data_size(&state, "data", &event.data)?;
    // A producer's event cancels only the jobs that producer enqueued.
    let producer = (caller.role == Role::Producer).then_some(caller.name.as_str());
    let delivery = deliver(state.queues(), state.registry(), &event, producer).await?;
    Ok((StatusCode::ACCEPTED, Json(delivery)))
}
