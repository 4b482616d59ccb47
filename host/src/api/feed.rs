//! Server-Sent Events: a queue's or a job's events, live, from BullMQ's
//! events stream, and a job's log lines. Each of BullMQ's events carries
//! its stream id, so a client that reconnects with `Last-Event-ID` resumes
//! without a gap; a job stream's first event (`state`, the job as it is
//! now) and its `log` events carry none (the log lines start again from
//! the first on a reconnect, each with its index).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;

use super::ApiState;
use super::auth::{Caller, Role};
use super::error::{ApiError, ErrorBody, PathParams, QueryParams};
use super::lookup::bound;
use super::lookup::{split_ref, visible_job};
use crate::access::read_tokens::Opened;
use crate::queue::{JobSnapshot, JobState, QueueEventItem, Subscription};
use airlock_core::clock::now_ms;
use serde::Deserialize;
use utoipa::IntoParams;

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

/// A queue's subscription as SSE events.
fn queue_stream(events: Subscription) -> impl Stream<Item = Result<Event, Infallible>> {
    futures::stream::unfold(events, |events| async move {
        let item = events.next().await?;
        Some((Ok(sse_event(&item)), events))
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
    Ok(Sse::new(queue_stream(events))
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}

/// The query of a job's event stream.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct JobEventsQuery {
    /// A read token for this job, or its flow's
    /// (`POST /v1/jobs/{ref}/read-token`), in place of the `Authorization`
    /// header, which a browser's `EventSource` cannot send. The stream
    /// ends when the token expires.
    #[param(pattern = r"^(jrt_[0-9]{1,20}|jrf_[0-9]{1,20}_([0-9a-f]{2}){1,400})_[0-9a-f]{64}$")]
    pub token: Option<String>,
}

/// One job's events as Server-Sent Events, ending with `completed` or
/// `failed`. The first event, `state`, is the job as it is now; then
/// BullMQ's events for the job (`active`, `progress`, `delayed`, …) and a
/// `log` event for each log line it writes (`{"index": N, "line": TEXT}`,
/// read every 250 ms; on a reconnect they start again from index 0), the
/// lines written before its end coming before `completed` or `failed`. A
/// job that already finished gets only its `state` (unless the request
/// resumes with `Last-Event-ID`). With a read token (`?token=`) instead of
/// a bearer token, the stream also ends when the token expires.
#[utoipa::path(
    operation_id = "events_job_events",
    get,
    path = "/v1/jobs/{ref}/events",
    tag = "events",
    params(("ref" = String, Path, description = "`<queue>:<id>`"), JobEventsQuery),
    responses(
        (status = 200, description = "text/event-stream of the job's events"),
        (status = 401, description = "No bearer token and no read token, or one that is unknown, expired or another job's", body = ErrorBody),
        (status = 404, description = "Not found", body = ErrorBody)
    ),
    security(("bearer" = []), ())
)]
pub async fn job_events(
    State(state): State<ApiState>,
    caller: Result<Caller, ApiError>,
    PathParams(job_ref): PathParams<String>,
    QueryParams(query): QueryParams<JobEventsQuery>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let (queue, id) = split_ref(&job_ref)?;
    // Who follows it is settled before Redis is asked anything.
    let follower = match &query.token {
        Some(token) => Follower::Token(read_token(&state, token, &job_ref)?),
        None => Follower::Caller(caller?),
    };
    let resumed = resume_from(&headers);
    let after = match &resumed {
        Some(id) => id.clone(),
        None => state.queues().events_cursor(&queue).await?,
    };
    let (job, ends_at) = match follower {
        Follower::Token(opened) => (
            opened_job(&state, &opened, &queue, &id, &job_ref).await?,
            Some(opened.expires_at),
        ),
        Follower::Caller(caller) => (visible_job(&state, &caller, &job_ref).await?, None),
    };
    let events = state.queues().subscribe(&queue, &after).await?;
    let finished = matches!(job.state, JobState::Completed | JobState::Failed);
    let snapshot = Event::default()
        .event("state")
        .data(serde_json::to_string(&job).unwrap_or_default());
    // A finished job's stream is just its state.
    let stream: std::pin::Pin<Box<dyn Stream<Item = Result<Event, Infallible>> + Send>> =
        if finished && resumed.is_none() {
            Box::pin(futures::stream::once(async { Ok(snapshot) }))
        } else {
            Box::pin(job_stream(
                state.clone(),
                queue,
                id,
                events,
                snapshot,
                ends_at,
            ))
        };
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}

/// Who follows a job's stream.
enum Follower {
    /// A browser, with a read token that holds for the job (for a flow's
    /// token: if the job is in the flow).
    Token(Opened),
    /// A caller with a bearer token.
    Caller(Caller),
}

/// 401, saying no more, for a read token that does not open a job.
fn refused() -> ApiError {
    ApiError::new(
        StatusCode::UNAUTHORIZED,
        "unauthorized",
        "unknown or expired read token, or one for another job",
    )
}

/// What read token `token` opens for job `job_ref`: refused when it is
/// malformed, expired or another job's (and on a host without the fleet's
/// key, which cannot check one).
fn read_token(state: &ApiState, token: &str, job_ref: &str) -> Result<Opened, ApiError> {
    (state.read_tokens())
        .and_then(|tokens| tokens.check(token, job_ref, now_ms()).ok())
        .ok_or_else(refused)
}

/// The job a read token opened; refused, for a flow's token, when the job
/// is not below the token's job in its flow or not its producer's.
async fn opened_job(
    state: &ApiState,
    opened: &Opened,
    queue: &str,
    id: &str,
    job_ref: &str,
) -> Result<JobSnapshot, ApiError> {
    let job = (state.queues().get_job(queue, id).await?)
        .ok_or_else(|| ApiError::not_found(format!("job `{job_ref}`")))?;
    if let Some(flow) = &opened.flow
        && *flow != job_ref
        && !in_flow(state, &job, flow).await?
    {
        return Err(refused());
    }
    Ok(job)
}

/// Whether `job` is below `flow` (a job's ref) in its flow — its parent, or
/// its parent's, … up to a flow's depth — and has the flow's producer.
async fn in_flow(state: &ApiState, job: &JobSnapshot, flow: &str) -> Result<bool, ApiError> {
    let Some((flow_queue, flow_id)) = airlock_core::job_ref::split(flow) else {
        return Ok(false);
    };
    let Some(top) = state.queues().get_job(flow_queue, flow_id).await? else {
        return Ok(false);
    };
    if top.producer.is_none() || top.producer != job.producer {
        return Ok(false);
    }
    let prefix = state.queues().prefix().to_string();
    let mut parent = job.parent_key.clone();
    for _ in 0..crate::queue::MAX_FLOW_DEPTH {
        let Some(key) = parent else {
            return Ok(false);
        };
        let Some((queue, id)) = airlock_core::job_ref::split_key(&prefix, &key) else {
            return Ok(false);
        };
        if (queue, id) == (flow_queue, flow_id) {
            return Ok(true);
        }
        parent = match state.queues().get_job(queue, id).await? {
            Some(above) => above.parent_key,
            None => return Ok(false),
        };
    }
    Ok(false)
}

/// How often an open job stream reads the job's new log lines.
const LOG_POLL: Duration = Duration::from_millis(250);

/// Most log lines read at once.
const LOG_PAGE: usize = 100;

/// What a job's stream holds between two of its events.
struct Follow {
    state: ApiState,
    queue: String,
    id: String,
    events: Subscription,
    /// Events ready to send, in order.
    ready: VecDeque<Event>,
    /// How many of the job's log lines were sent.
    logs_sent: usize,
    /// The job ended: send what is ready, then stop.
    ended: bool,
    poll: tokio::time::Interval,
    /// When a read token's stream stops.
    until: Option<tokio::time::Instant>,
}

impl Follow {
    /// Queues the job's log lines not sent yet.
    async fn read_logs(&mut self) {
        loop {
            let (start, end) = (self.logs_sent, self.logs_sent + LOG_PAGE - 1);
            let Ok((lines, _)) = (self.state.queues())
                .job_logs(&self.queue, &self.id, start, end)
                .await
            else {
                return;
            };
            let read = lines.len();
            for line in lines {
                let data = serde_json::json!({"index": self.logs_sent, "line": line});
                self.ready
                    .push_back(Event::default().event("log").data(data.to_string()));
                self.logs_sent += 1;
            }
            if read < LOG_PAGE {
                return;
            }
        }
    }
}

/// A job's stream: `first`, then its events and log lines, until its
/// terminal event or `ends_at` (ms).
fn job_stream(
    state: ApiState,
    queue: String,
    id: String,
    events: Subscription,
    first: Event,
    ends_at: Option<u64>,
) -> impl Stream<Item = Result<Event, Infallible>> {
    let until = ends_at
        .map(|at| tokio::time::Instant::now() + Duration::from_millis(at.saturating_sub(now_ms())));
    let follow = Follow {
        state,
        queue,
        id,
        events,
        ready: VecDeque::from([first]),
        logs_sent: 0,
        ended: false,
        poll: tokio::time::interval(LOG_POLL),
        until,
    };
    futures::stream::unfold(follow, |mut f| async move {
        loop {
            if let Some(event) = f.ready.pop_front() {
                return Some((Ok(event), f));
            }
            if f.ended {
                return None;
            }
            let until = f.until;
            let expired = async move {
                match until {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                item = f.events.next() => {
                    let item = item?;
                    if item.job_id.as_deref() != Some(f.id.as_str()) {
                        continue;
                    }
                    if item.is_terminal() {
                        // The lines it wrote come before its end.
                        f.read_logs().await;
                        f.ended = true;
                    }
                    f.ready.push_back(sse_event(&item));
                }
                _ = f.poll.tick() => f.read_logs().await,
                () = expired => return None,
            }
        }
    })
}
