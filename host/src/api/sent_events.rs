//! `POST /v1/events`: deliver an event to every queue subscribed to it.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};

use super::ApiState;
use super::auth::{Caller, Role};
use super::error::{ApiError, ErrorBody, JsonBody};
use super::lookup::check_data_size;
use crate::delivery::{Delivery, Event, deliver};
use crate::traces;

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
    params(
        ("traceparent" = Option<String>, Header, description = "W3C trace context: the jobs the event creates join this trace (under its `send` span when the host exports traces). Malformed: ignored."),
        ("tracestate" = Option<String>, Header, description = "W3C trace state, carried with `traceparent`.")
    ),
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
    headers: HeaderMap,
    JsonBody(event): JsonBody<Event>,
) -> Result<(StatusCode, Json<Delivery>), ApiError> {
    caller.require(&[Role::Producer])?;
    event.validate()?;
    check_data_size(&state, "data", &event.data)?;
    // A producer's event cancels and resumes only the jobs that producer
    // enqueued; so does a scoped token's, which reaches its queues alone.
    let producer = caller.events_producer();
    let lease_ms = state.host().worker_settings.lock_duration.as_millis() as u64;
    // The jobs the event creates join one trace (`crate::traces`).
    let send = traces::Send::start(&state.host().traces, &headers, "send", &event.name);
    let delivery = deliver(
        state.queues(),
        state.registry(),
        &event,
        producer,
        caller.scope.as_deref(),
        lease_ms,
        send.metadata(),
    )
    .await;
    send.end_with(&delivery, |d| d.jobs.clone());
    Ok((StatusCode::ACCEPTED, Json(delivery?)))
}

/// How many recent events to list.
#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct RecentQuery {
    /// At most this many (default 50, at most 500).
    #[serde(default, deserialize_with = "airlock_core::int::query_opt")]
    #[param(minimum = 1, maximum = 500, value_type = Option<u64>)]
    pub limit: Option<usize>,
}

/// One recent event and the jobs it created.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecentEventJobs {
    /// The event.
    #[serde(flatten)]
    pub event: crate::state::events::RecentEvent,
    /// Its job on each queue now subscribed to its name, as `<queue>:<id>`,
    /// while the job exists (a debounced queue's job has another id).
    pub jobs: Vec<String>,
    /// The jobs whose durable wait (`wait-for-event`) it ended, as
    /// `<queue>:<id>`: those waiting when it was sent and those that
    /// started waiting later and found it among the recent events (the
    /// first 100; the record lasts 7 days from its last entry, and a job
    /// removed since stays listed).
    pub resumed: Vec<String>,
    /// The jobs it cancelled through their bindings' `cancelOn` rules, as
    /// `<queue>:<id>` (the first 100, in the same record).
    pub cancelled: Vec<String>,
}

/// The recent events.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct RecentEvents {
    /// Newest first.
    pub events: Vec<RecentEventJobs>,
}

/// The most recent events sent to `POST /v1/events` (the fleet keeps about
/// the last 10,000, each of at most 64 KiB as JSON), newest first, with the
/// jobs each created, resumed and cancelled. A producer token sees only
/// the events it sent (among the last 1,000). Entries of the stream that do not parse, that are
/// larger than the stream keeps (64 KiB of JSON), whose name or id is longer
/// than `POST /v1/events` accepts (256 and 200 characters), or that name a
/// producer of more than 256 characters are left out: any Redis client can
/// add them.
#[utoipa::path(
    get,
    operation_id = "events_recent",
    path = "/v1/events",
    tag = "events",
    params(RecentQuery),
    responses(
        (status = 200, description = "OK", body = RecentEvents),
        (status = 400, description = "Invalid request (the error names the field)", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub async fn recent(
    State(state): State<ApiState>,
    caller: Caller,
    super::error::QueryParams(query): super::error::QueryParams<RecentQuery>,
) -> Result<Json<RecentEvents>, ApiError> {
    caller.require(&[Role::Reader, Role::Producer])?;
    let limit = query.limit.unwrap_or(50);
    if !(1..=500).contains(&limit) {
        return Err(ApiError::field("limit", "must be between 1 and 500"));
    }
    let producer = caller.events_producer();
    let events = state
        .queues()
        .state()
        .events
        .recent(limit, producer)
        .await?;
    let bindings = super::lookup::bindings(&state, &caller).await?;
    let ids: Vec<&str> = events.iter().map(|e| e.id.as_str()).collect();
    let effects = state.queues().state().events.effects(&ids).await?;
    let mut out = Vec::with_capacity(events.len());
    for (event, effects) in events.into_iter().zip(effects) {
        let mut jobs = Vec::new();
        for binding in bindings.iter().filter(|b| b.events.contains(&event.name)) {
            let id = format!("evt-{}", event.id);
            let key = state.queues().job_key(&binding.queue, &id);
            let mut conn = state.queues().store().conn();
            let exists: bool = redis::AsyncCommands::exists(&mut conn, key)
                .await
                .map_err(crate::error::QueueError::from)?;
            if exists {
                jobs.push(airlock_core::job_ref::join(&binding.queue, &id));
            }
        }
        out.push(RecentEventJobs {
            event,
            jobs,
            resumed: effects.resumed,
            cancelled: effects.cancelled,
        });
    }
    Ok(Json(RecentEvents { events: out }))
}
