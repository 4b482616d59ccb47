//! Jobs: enqueue (single and bulk), list, inspect, retry, remove, promote,
//! re-pin, and wait for the result.
//!
//! A job is addressed as `<queue>:<id>` (its *ref*) under `/v1/jobs`: BullMQ
//! ids are only unique within a queue, and queue names cannot contain `:`.

use std::time::Duration;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::ApiState;
use super::auth::{Caller, Role};
use super::error::{ApiError, ErrorBody, JsonBody};
use crate::queue::{JobOptions, JobSnapshot, JobState, NewJob, fields, validate_queue_name};

/// One job to enqueue.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EnqueueRequest {
    /// BullMQ job name (default: the queue's name).
    #[serde(default)]
    pub name: Option<String>,
    /// The job's data: any JSON.
    #[schema(value_type = Object)]
    pub data: serde_json::Value,
    /// Job options (BullMQ spelling); absent ones take the queue's defaults.
    #[serde(default)]
    pub opts: JobOptions,
}

/// Several jobs at once: all are validated before any is added.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BulkEnqueueRequest {
    /// The jobs, at most 1000.
    pub jobs: Vec<EnqueueRequest>,
}

/// An accepted job.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Accepted {
    /// The job id within its queue.
    pub id: String,
    /// The queue.
    pub queue: String,
    /// `<queue>:<id>`, the job's address under `/v1/jobs`.
    pub r#ref: String,
    /// True when a job with the same id (or deduplication id) already
    /// existed: nothing new was added.
    pub duplicate: bool,
}

/// Accepted jobs of a bulk enqueue, in request order.
#[derive(Debug, Serialize, ToSchema)]
pub struct BulkAccepted {
    /// One entry per requested job.
    pub jobs: Vec<Accepted>,
}

/// Listing parameters.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// State: waiting, prioritized, delayed, waiting-children, active,
    /// completed, failed.
    pub state: String,
    /// Offset (newest first).
    #[serde(default)]
    pub start: usize,
    /// Page size (default 50, at most 500).
    pub limit: Option<usize>,
}

/// A page of jobs.
#[derive(Debug, Serialize, ToSchema)]
pub struct JobPage {
    /// The jobs.
    pub jobs: Vec<JobSnapshot>,
    /// Offset of the next page, when there may be one.
    pub next: Option<usize>,
}

/// A job with its log.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobDetails {
    /// The job.
    #[serde(flatten)]
    pub job: JobSnapshot,
    /// Its log lines (first 1000).
    pub logs: Vec<String>,
    /// Total log lines.
    pub log_count: usize,
}

/// Wait parameters.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct WaitQuery {
    /// How long to wait, e.g. `30s`, `500ms` (default 30 s, at most 5 min).
    pub timeout: Option<String>,
}

/// Result of a wait.
#[derive(Debug, Serialize, ToSchema)]
pub struct WaitResult {
    /// Whether the job finished (completed or failed) in time.
    pub finished: bool,
    /// The job as it is now.
    pub job: JobSnapshot,
}

/// Result of an action on a job.
#[derive(Debug, Serialize, ToSchema)]
pub struct ActionResult {
    /// The job after the action.
    pub job: JobSnapshot,
}

/// Splits a job ref into `(queue, id)`.
pub fn split_ref(job_ref: &str) -> Result<(String, String), ApiError> {
    let (queue, id) = job_ref.split_once(':').ok_or_else(|| {
        ApiError::field(
            "ref",
            "a job is addressed as `<queue>:<id>`, e.g. `payments:42`",
        )
    })?;
    validate_queue_name(queue).map_err(|e| ApiError::field("ref", e.message))?;
    if id.is_empty() {
        return Err(ApiError::field("ref", "the job id is empty"));
    }
    Ok((queue.to_string(), id.to_string()))
}

/// The job, if it exists and the caller may see it (a producer sees only
/// the jobs it enqueued; others get 404, so ids do not leak).
pub async fn visible_job(
    state: &ApiState,
    caller: &Caller,
    job_ref: &str,
) -> Result<JobSnapshot, ApiError> {
    caller.require(&[Role::Reader, Role::Producer])?;
    let (queue, id) = split_ref(job_ref)?;
    let job = state
        .queues()
        .get_job(&queue, &id)
        .await
        .map_err(ApiError::unavailable)?
        .ok_or_else(|| ApiError::not_found(format!("job `{job_ref}`")))?;
    if !caller.reads_everything() && job.producer.as_deref() != Some(caller.name.as_str()) {
        return Err(ApiError::not_found(format!("job `{job_ref}`")));
    }
    Ok(job)
}

fn prepare(
    state: &ApiState,
    queue: &str,
    index: Option<usize>,
    req: EnqueueRequest,
    defaults: &JobOptions,
) -> Result<NewJob, ApiError> {
    let at = |field: &str| match index {
        Some(i) => format!("jobs[{i}].{field}"),
        None => field.to_string(),
    };
    let size = serde_json::to_vec(&req.data).map(|v| v.len()).unwrap_or(0);
    if size > state.limits().max_job_data_bytes {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "job_data_too_large",
            format!(
                "{} is {size} bytes, the maximum is {}",
                at("data"),
                state.limits().max_job_data_bytes
            ),
        ));
    }
    if let Some(name) = &req.name
        && (name.is_empty() || name.len() > 256)
    {
        return Err(ApiError::field(at("name"), "must be 1 to 256 characters"));
    }
    let opts = req.opts.with_defaults(defaults);
    opts.validate()
        .map_err(|e| ApiError::field(at(&format!("opts.{}", e.field)), e.message))?;
    Ok(NewJob {
        name: req.name.unwrap_or_else(|| queue.to_string()),
        data: req.data,
        opts,
    })
}

async fn enqueue_all(
    state: &ApiState,
    caller: &Caller,
    queue: &str,
    requests: Vec<EnqueueRequest>,
    bulk: bool,
) -> Result<Vec<Accepted>, ApiError> {
    caller.require(&[Role::Producer])?;
    validate_queue_name(queue).map_err(|e| ApiError::field("queue", e.message))?;
    let binding = state.registry().binding(queue).await?;
    let limits = &binding.limits;
    let mut jobs = Vec::with_capacity(requests.len());
    for (i, req) in requests.into_iter().enumerate() {
        let job = prepare(
            state,
            queue,
            bulk.then_some(i),
            req,
            &binding.default_job_options,
        )?;
        if let Some(request) = &job.opts.limits {
            limits.lowered_by(request).map_err(|e| {
                let field = format!("opts.limits.{}", e.field);
                ApiError::field(
                    if bulk {
                        format!("jobs[{i}].{field}")
                    } else {
                        field
                    },
                    e.message,
                )
            })?;
        }
        jobs.push(job);
    }
    let added = state
        .queues()
        .add_bulk(queue, jobs)
        .await
        .map_err(ApiError::unavailable)?;
    let mut out = Vec::with_capacity(added.len());
    for job in added {
        if !job.duplicate {
            // Ownership for producer reads; best effort on a finished job.
            let _ = state
                .queues()
                .set_job_field(queue, &job.id, fields::PRODUCER, &caller.name)
                .await;
        }
        out.push(Accepted {
            r#ref: format!("{queue}:{}", job.id),
            id: job.id,
            queue: queue.to_string(),
            duplicate: job.duplicate,
        });
    }
    Ok(out)
}

/// Enqueue a job. Returns at once (202) with its id; follow it with
/// `GET /v1/jobs/{ref}`, `/wait` or `/events`.
#[utoipa::path(
    operation_id = "jobs_enqueue",
    post,
    path = "/v1/queues/{queue}/jobs",
    tag = "jobs",
    params(("queue" = String, Path, description = "Queue name")),
    request_body = EnqueueRequest,
    responses(
        (status = 202, description = "Accepted", body = Accepted),
        (status = 400, description = "Invalid request (the error names the field)", body = ErrorBody),
        (status = 404, description = "Queue not bound", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub async fn enqueue(
    State(state): State<ApiState>,
    caller: Caller,
    Path(queue): Path<String>,
    JsonBody(req): JsonBody<EnqueueRequest>,
) -> Result<(StatusCode, Json<Accepted>), ApiError> {
    let mut accepted = enqueue_all(&state, &caller, &queue, vec![req], false).await?;
    Ok((StatusCode::ACCEPTED, Json(accepted.remove(0))))
}

/// Most jobs in one bulk request.
pub const MAX_BULK: usize = 1000;

/// Enqueue up to 1000 jobs; one invalid job rejects the whole request.
#[utoipa::path(
    operation_id = "jobs_enqueue_bulk",
    post,
    path = "/v1/queues/{queue}/jobs/bulk",
    tag = "jobs",
    params(("queue" = String, Path, description = "Queue name")),
    request_body = BulkEnqueueRequest,
    responses((status = 202, description = "Accepted", body = BulkAccepted), (status = 400, description = "Invalid request (the error names the field)", body = ErrorBody), (status = 413, description = "Body too large", body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn enqueue_bulk(
    State(state): State<ApiState>,
    caller: Caller,
    Path(queue): Path<String>,
    JsonBody(req): JsonBody<BulkEnqueueRequest>,
) -> Result<(StatusCode, Json<BulkAccepted>), ApiError> {
    if req.jobs.is_empty() || req.jobs.len() > MAX_BULK {
        return Err(ApiError::field(
            "jobs",
            format!("must hold 1 to {MAX_BULK} jobs"),
        ));
    }
    let jobs = enqueue_all(&state, &caller, &queue, req.jobs, true).await?;
    Ok((StatusCode::ACCEPTED, Json(BulkAccepted { jobs })))
}

/// List a queue's jobs in one state, newest first.
#[utoipa::path(
    operation_id = "jobs_list",
    get,
    path = "/v1/queues/{queue}/jobs",
    tag = "jobs",
    params(("queue" = String, Path, description = "Queue name"), ListQuery),
    responses((status = 200, description = "OK", body = JobPage), (status = 400, description = "Invalid request (the error names the field)", body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn list(
    State(state): State<ApiState>,
    caller: Caller,
    Path(queue): Path<String>,
    Query(query): Query<ListQuery>,
) -> Result<Json<JobPage>, ApiError> {
    caller.require(&[Role::Reader, Role::Producer])?;
    validate_queue_name(&queue).map_err(|e| ApiError::field("queue", e.message))?;
    let job_state = JobState::parse(&query.state)
        .ok_or_else(|| ApiError::field("state", format!("unknown state `{}`; one of waiting, prioritized, delayed, waiting-children, active, completed, failed", query.state)))?;
    let limit = query.limit.unwrap_or(50);
    if limit == 0 || limit > 500 {
        return Err(ApiError::field("limit", "must be between 1 and 500"));
    }
    let mut jobs = state
        .queues()
        .list(&queue, job_state, query.start, query.start + limit - 1)
        .await
        .map_err(ApiError::unavailable)?;
    let full = jobs.len() == limit;
    if !caller.reads_everything() {
        jobs.retain(|j| j.producer.as_deref() == Some(caller.name.as_str()));
    }
    Ok(Json(JobPage {
        jobs,
        next: full.then_some(query.start + limit),
    }))
}

/// A job: state, progress, result or failure (kind and reason), attempts,
/// timestamps, fuel/memory/time, handler digest, and its log.
#[utoipa::path(
    operation_id = "jobs_get",
    get,
    path = "/v1/jobs/{ref}",
    tag = "jobs",
    params(("ref" = String, Path, description = "`<queue>:<id>`")),
    responses((status = 200, description = "OK", body = JobDetails), (status = 404, description = "Not found", body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn get(
    State(state): State<ApiState>,
    caller: Caller,
    Path(job_ref): Path<String>,
) -> Result<Json<JobDetails>, ApiError> {
    let job = visible_job(&state, &caller, &job_ref).await?;
    let (logs, log_count) = state
        .queues()
        .job_logs(&job.queue, &job.id, 0, 999)
        .await
        .map_err(ApiError::unavailable)?;
    Ok(Json(JobDetails {
        job,
        logs,
        log_count,
    }))
}

/// Retry a failed (or completed) job: back to waiting. Recorded durable
/// steps stay, so a workflow resumes where it failed.
#[utoipa::path(
    operation_id = "jobs_retry",
    post,
    path = "/v1/jobs/{ref}/retry",
    tag = "jobs",
    params(("ref" = String, Path, description = "`<queue>:<id>`")),
    responses((status = 200, description = "OK", body = ActionResult), (status = 404, description = "Not found", body = ErrorBody), (status = 409, description = "Conflict with the current state", body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn retry(
    State(state): State<ApiState>,
    caller: Caller,
    Path(job_ref): Path<String>,
) -> Result<Json<ActionResult>, ApiError> {
    let job = visible_job(&state, &caller, &job_ref).await?;
    caller.require(&[Role::Producer])?;
    if !matches!(job.state, JobState::Failed | JobState::Completed) {
        return Err(ApiError::conflict(format!(
            "job `{job_ref}` is {}; only failed or completed jobs can be retried",
            job.state.as_str()
        )));
    }
    state
        .queues()
        .retry(&job.queue, &job.id)
        .await
        .map_err(|e| ApiError::conflict(format!("{e:#}")))?;
    Ok(Json(ActionResult {
        job: visible_job(&state, &caller, &job_ref).await?,
    }))
}

/// Remove a job (refused while it runs).
#[utoipa::path(
    operation_id = "jobs_remove",
    delete,
    path = "/v1/jobs/{ref}",
    tag = "jobs",
    params(("ref" = String, Path, description = "`<queue>:<id>`")),
    responses((status = 204, description = "No content"), (status = 404, description = "Not found", body = ErrorBody), (status = 409, description = "Locked by a worker", body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn remove(
    State(state): State<ApiState>,
    caller: Caller,
    Path(job_ref): Path<String>,
) -> Result<StatusCode, ApiError> {
    let job = visible_job(&state, &caller, &job_ref).await?;
    caller.require(&[Role::Producer])?;
    let removed = state
        .queues()
        .remove(&job.queue, &job.id)
        .await
        .map_err(|e| ApiError::conflict(format!("{e:#}")))?;
    if !removed {
        return Err(ApiError::conflict(format!(
            "job `{job_ref}` is locked by a running worker"
        )));
    }
    Ok(StatusCode::NO_CONTENT)
}

/// Run a delayed job now. A job in a durable sleep wakes up and goes on
/// past the sleep.
#[utoipa::path(
    operation_id = "jobs_promote",
    post,
    path = "/v1/jobs/{ref}/promote",
    tag = "jobs",
    params(("ref" = String, Path, description = "`<queue>:<id>`")),
    responses((status = 200, description = "OK", body = ActionResult), (status = 409, description = "Not delayed", body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn promote(
    State(state): State<ApiState>,
    caller: Caller,
    Path(job_ref): Path<String>,
) -> Result<Json<ActionResult>, ApiError> {
    let job = visible_job(&state, &caller, &job_ref).await?;
    caller.require(&[Role::Producer])?;
    if job.state != JobState::Delayed {
        return Err(ApiError::conflict(format!(
            "job `{job_ref}` is {}, not delayed",
            job.state.as_str()
        )));
    }
    state
        .queues()
        .promote(&job.queue, &job.id)
        .await
        .map_err(|e| ApiError::conflict(format!("{e:#}")))?;
    Ok(Json(ActionResult {
        job: visible_job(&state, &caller, &job_ref).await?,
    }))
}

/// Move a job to its handler's current version (admin). Its next run uses
/// the new code; recorded steps stay.
#[utoipa::path(
    operation_id = "jobs_repin",
    post,
    path = "/v1/jobs/{ref}/repin",
    tag = "jobs",
    params(("ref" = String, Path, description = "`<queue>:<id>`")),
    responses((status = 200, description = "OK", body = ActionResult), (status = 404, description = "Not found", body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn repin(
    State(state): State<ApiState>,
    caller: Caller,
    Path(job_ref): Path<String>,
) -> Result<Json<ActionResult>, ApiError> {
    caller.require(&[Role::Admin])?;
    let job = visible_job(&state, &caller, &job_ref).await?;
    let binding = state.registry().binding(&job.queue).await?;
    let digest = state
        .registry()
        .current_digest(&binding.handler)
        .await
        .map_err(ApiError::unavailable)?
        .ok_or_else(|| ApiError::not_found(format!("handler `{}`", binding.handler)))?;
    state
        .queues()
        .set_job_field(&job.queue, &job.id, fields::DIGEST, &digest)
        .await
        .map_err(ApiError::unavailable)?;
    Ok(Json(ActionResult {
        job: visible_job(&state, &caller, &job_ref).await?,
    }))
}

/// Longest a `wait` may block.
const MAX_WAIT: Duration = Duration::from_secs(300);

/// Wait until the job completes or fails, up to `timeout`. Answers 200 in
/// both cases; `finished` says which.
#[utoipa::path(
    operation_id = "jobs_wait",
    get,
    path = "/v1/jobs/{ref}/wait",
    tag = "jobs",
    params(("ref" = String, Path, description = "`<queue>:<id>`"), WaitQuery),
    responses((status = 200, description = "OK", body = WaitResult), (status = 400, description = "Invalid request (the error names the field)", body = ErrorBody), (status = 404, description = "Not found", body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn wait(
    State(state): State<ApiState>,
    caller: Caller,
    Path(job_ref): Path<String>,
    Query(query): Query<WaitQuery>,
) -> Result<Json<WaitResult>, ApiError> {
    let timeout = match &query.timeout {
        None => Duration::from_secs(30),
        Some(text) => humantime::parse_duration(text).map_err(|e| {
            ApiError::field(
                "timeout",
                format!("`{text}` is not a duration like 30s: {e}"),
            )
        })?,
    };
    if timeout > MAX_WAIT {
        return Err(ApiError::field("timeout", "must be at most 5m"));
    }
    let (queue, id) = split_ref(&job_ref)?;
    // Subscribe before looking, so a finish in between is not missed.
    let cursor = state
        .queues()
        .events_cursor(&queue)
        .await
        .map_err(ApiError::unavailable)?;
    let job = visible_job(&state, &caller, &job_ref).await?;
    if matches!(job.state, JobState::Completed | JobState::Failed) {
        return Ok(Json(WaitResult {
            finished: true,
            job,
        }));
    }
    let events = state
        .queues()
        .subscribe(&queue, &cursor)
        .await
        .map_err(ApiError::unavailable)?;
    let finished = tokio::time::timeout(timeout, async {
        while let Some(event) = events.next().await {
            if event.job_id.as_deref() == Some(id.as_str()) && event.is_terminal() {
                return true;
            }
        }
        false
    })
    .await
    .unwrap_or(false);
    let job = visible_job(&state, &caller, &job_ref).await?;
    Ok(Json(WaitResult {
        finished: finished || matches!(job.state, JobState::Completed | JobState::Failed),
        job,
    }))
}
