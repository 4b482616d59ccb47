//! Server-Sent Events: a queue's or a job's events, live, from BullMQ's
//! events stream. Each SSE event but a job stream's first (`state`, the job
//! as it is now) carries the stream id, so a client that reconnects with
//! `Last-Event-ID` resumes without a gap.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;

use super::ApiState;
use super::auth::{Caller, Role};
use super::error::{ApiError, ErrorBody, PathParams};
use super::lookup::bound;
use super::lookup::{split_ref, visible_job};
use crate::queue::{JobState, QueueEventItem, Subscription};

fn sse_event(item: &QueueEventItem) -> Event {
    Event::default()
        .id(item.id.clone())
        .event(item.event.clone())
        .data(serde_json::to_string(item).unwrap_or_default())
}

fn resume_from(headers: &HeaderMap) -> Option<String> {
    headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// Unfolds a subscription into SSE events; a job's stream ends after its
/// terminal event.
fn event_stream(
    events: Subscription,
    job_id: Option<String>,
    first: Option<Event>,
) -> impl Stream<Item = Result<Event, Infallible>> {
    let state = (events, job_id, first, false);
    futures::stream::unfold(state, |(events, job_id, first, done)| async move {
        if done {
            return None;
        }
        if let Some(event) = first {
            return Some((Ok(event), (events, job_id, None, false)));
        }
        loop {
            let item = events.next().await?;
            match &job_id {
                Some(id) if item.job_id.as_deref() != Some(id.as_str()) => continue,
                Some(_) => {
                    let done = item.is_terminal();
                    return Some((Ok(sse_event(&item)), (events, job_id, None, done)));
                }
                None => return Some((Ok(sse_event(&item)), (events, job_id, None, false))),
            }
        }
    })
}

/// A queue's events as Server-Sent Events (`added`, `active`, `progress`,
/// `completed`, `failed`, `stalled`, `delayed`, ...).
#[utoipa::path(
    operation_id = "events_queue_events",
    get,
    path = "/v1/queues/{queue}/events",
    tag = "events",
    params(("queue" = String, Path, description = "Queue name")),
    responses((status = 200, description = "text/event-stream of queue events"), (status = 404, description = "Not found", body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn queue_events(
    State(state): State<ApiState>,
    caller: Caller,
    PathParams(queue): PathParams<String>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    caller.require(&[Role::Reader])?;
    bound(&state, &caller, &queue).await?;
    let after = match resume_from(&headers) {
        Some(id) => id,
        None => state.queues().events_cursor(&queue).await?,
    };
    let events = state.queues().subscribe(&queue, &after).await?;
    Ok(Sse::new(event_stream(events, None, None))
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}

/// One job's events as Server-Sent Events, ending with `completed` or
/// `failed`. The first event, `state`, is the job as it is now; a job that
/// already finished gets only that event (unless the request resumes with
/// `Last-Event-ID`).
#[utoipa::path(
    operation_id = "events_job_events",
    get,
    path = "/v1/jobs/{ref}/events",
    tag = "events",
    params(("ref" = String, Path, description = "`<queue>:<id>`")),
    responses((status = 200, description = "text/event-stream of the job's events"), (status = 404, description = "Not found", body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn job_events(
    State(state): State<ApiState>,
    caller: Caller,
    PathParams(job_ref): PathParams<String>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let (queue, id) = split_ref(&job_ref)?;
    let resumed = resume_from(&headers);
    let after = match &resumed {
        Some(id) => id.clone(),
        None => state.queues().events_cursor(&queue).await?,
    };
    let job = visible_job(&state, &caller, &job_ref).await?;
    let events = state.queues().subscribe(&queue, &after).await?;
    let finished = matches!(job.state, JobState::Completed | JobState::Failed);
    let snapshot = Event::default()
        .event("state")
        .data(serde_json::to_string(&job).unwrap_or_default());
    let stream = event_stream(events, Some(id), Some(snapshot));
    // A finished job's stream is just its state.
    let stream: std::pin::Pin<Box<dyn Stream<Item = Result<Event, Infallible>> + Send>> =
        if finished && resumed.is_none() {
            Box::pin(futures::StreamExt::take(stream, 1))
        } else {
            Box::pin(stream)
        };
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}
