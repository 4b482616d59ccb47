//! One job, addressed as `<queue>:<id>` (its *ref*) under `/v1/jobs` —
//! BullMQ ids are only unique within a queue, and queue names cannot
//! contain `:` —: inspect (with why it waits), timeline, retry, remove,
//! cancel, promote, re-pin, and wait for the result.

use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::ApiState;
use super::auth::{Caller, Role};
use super::error::{ApiError, ErrorBody, JsonBody, PathParams, QueryParams};
use super::lookup::{split_ref, visible_job};
use crate::gate::{WaitReason, Why};
use crate::queue::{CancelOutcome, JobSnapshot, JobState};

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
    /// Why it is not running yet (absent when it runs or has finished):
    /// its key at its limit, a durable sleep, a delay, its children, a
    /// paused queue, no host serving the queue, or waiting for a slot.
    pub waiting: Option<WaitReason>,
}

/// Wait parameters.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct WaitQuery {
    /// How long to wait: a number with a unit, `30s`, `500ms`, `2m`
    /// (default 30 s, at most 5 min).
    #[param(
        pattern = r"^(([0-9]{1,5}|[0-2][0-9]{5}|300000)ms|([0-9]{1,2}|[0-2][0-9]{2}|300)s|[0-5]m)$"
    )]
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

/// A job's timeline: each run (start, wall time, fuel, peak memory,
/// outbound HTTP, host, how it ended), its recorded steps with their
/// results and times, its durable sleeps and waits.
#[utoipa::path(
    operation_id = "jobs_timeline",
    get,
    path = "/v1/jobs/{ref}/timeline",
    tag = "jobs",
    params(("ref" = String, Path, description = "`<queue>:<id>`")),
    responses((status = 200, description = "OK", body = crate::queue::timeline::Timeline), (status = 404, description = "Not found", body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn timeline(
    State(state): State<ApiState>,
    caller: Caller,
    PathParams(job_ref): PathParams<String>,
) -> Result<Json<crate::queue::timeline::Timeline>, ApiError> {
    let job = visible_job(&state, &caller, &job_ref).await?;
    Ok(Json(state.queues().timeline(&job.queue, &job.id).await?))
}

/// A job's run transcripts (a binding with `recordTranscripts`).
#[derive(Debug, Serialize, ToSchema)]
pub struct Transcripts {
    /// One per run that left one (the first 25 runs; a run in a batch
    /// whose transcript expired left none), oldest first; empty when the
    /// job's binding does not record them.
    pub runs: Vec<RunTranscript>,
}

/// One run's transcript.
#[derive(Debug, Serialize, ToSchema)]
pub struct RunTranscript {
    /// Which run (BullMQ's `ats`).
    pub run: u32,
    /// What the run received and how it ended.
    pub transcript: crate::sandbox::transcript::Transcript,
}

/// What each run of a job received from outside its sandbox — the job,
/// every durable call and its answer, each configuration read, each
/// outbound request with its response (bounded), how it ended — when its
/// binding records transcripts (`recordTranscripts`). Never a secret's
/// value or a wait token. The job's own read rules apply: a producer
/// token reads only its own jobs'. A run in a batch answers its batch's
/// one transcript (kept a week): the batch's calls, its own end
/// (`completed` when each job got an outcome) and `batch`, every job of
/// the batch (one producer's) with its data and its end. `airlock replay`
/// runs another handler version against them.
#[utoipa::path(
    operation_id = "jobs_transcript",
    get,
    path = "/v1/jobs/{ref}/transcript",
    tag = "jobs",
    params(("ref" = String, Path, description = "`<queue>:<id>`")),
    responses((status = 200, description = "OK", body = Transcripts), (status = 404, description = "Not found", body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn transcript(
    State(state): State<ApiState>,
    caller: Caller,
    PathParams(job_ref): PathParams<String>,
) -> Result<Json<Transcripts>, ApiError> {
    let job = visible_job(&state, &caller, &job_ref).await?;
    let runs = super::lookup::transcripts(&state, &job.queue, &job.id)
        .await?
        .into_iter()
        .map(|(run, transcript)| RunTranscript { run, transcript })
        .collect();
    Ok(Json(Transcripts { runs }))
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
    PathParams(job_ref): PathParams<String>,
) -> Result<Json<JobDetails>, ApiError> {
    let job = visible_job(&state, &caller, &job_ref).await?;
    let (logs, log_count) = state.queues().job_logs(&job.queue, &job.id, 0, 999).await?;
    let waiting = match job.state {
        JobState::Active | JobState::Completed | JobState::Failed => None,
        _ => {
            let binding = state.registry().binding(&job.queue).await.ok();
            let hosts = state.host().fleet.hosts().await?;
            let mut serving = crate::gate::Serving::default();
            for host in hosts.iter().filter(|h| h.queues.contains(&job.queue)) {
                serving.hosts += 1;
                serving.slots += host.capacity;
                serving.busy += host.running.min(host.capacity);
            }
            Why::new(state.queues())
                .why_waiting(&job, binding.as_ref(), serving)
                .await?
        }
    };
    Ok(Json(JobDetails {
        waiting,
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
    responses((status = 200, description = "OK", body = ActionResult), (status = 404, description = "Not found", body = ErrorBody), (status = 409, description = "Not failed or completed", body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn retry(
    State(state): State<ApiState>,
    caller: Caller,
    PathParams(job_ref): PathParams<String>,
) -> Result<Json<ActionResult>, ApiError> {
    let job = visible_job(&state, &caller, &job_ref).await?;
    caller.require(&[Role::Producer])?;
    state.queues().retry(&job.queue, &job.id).await?;
    state
        .audit(&caller, "job.retry", &job_ref, serde_json::json!({}))
        .await;
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
    PathParams(job_ref): PathParams<String>,
) -> Result<StatusCode, ApiError> {
    let job = visible_job(&state, &caller, &job_ref).await?;
    caller.require(&[Role::Producer])?;
    state.queues().remove(&job.queue, &job.id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Why a job is cancelled.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CancelBody {
    /// In words, for the `failedReason` (at most 500 characters).
    #[serde(default)]
    #[schema(max_length = 500)]
    pub reason: Option<String>,
}

/// A cancel that was accepted.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CancelAccepted {
    /// The state the job was in when the cancel arrived.
    pub was: JobState,
    /// The job now: a running job is stopped within milliseconds, a
    /// waiting or delayed one as soon as a worker of its queue takes it
    /// (`GET /v1/jobs/{ref}/wait` to see it fail).
    pub job: JobSnapshot,
}

/// Cancel a job that has not finished: it fails as `cancelled` and is not
/// retried. A running job's guest is stopped on whichever host runs it; a
/// waiting, prioritized or delayed job (a durable sleep too) is moved to
/// the head of its queue and failed by the next worker without running. A
/// job in a paused queue, or a flow parent waiting for its children, fails
/// when it is next taken.
#[utoipa::path(
    operation_id = "jobs_cancel",
    post,
    path = "/v1/jobs/{ref}/cancel",
    tag = "jobs",
    params(("ref" = String, Path, description = "`<queue>:<id>`")),
    request_body = CancelBody,
    responses((status = 202, description = "Cancel requested", body = CancelAccepted), (status = 400, description = "Invalid request (the error names the field)", body = ErrorBody), (status = 404, description = "Not found", body = ErrorBody), (status = 409, description = "Already finished", body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn cancel(
    State(state): State<ApiState>,
    caller: Caller,
    PathParams(job_ref): PathParams<String>,
    JsonBody(body): JsonBody<CancelBody>,
) -> Result<(StatusCode, Json<CancelAccepted>), ApiError> {
    let job = visible_job(&state, &caller, &job_ref).await?;
    caller.require(&[Role::Producer])?;
    let given = body.reason.unwrap_or_default();
    if given.chars().count() > crate::state::cancels::MAX_REASON_CHARS {
        return Err(ApiError::field("reason", "must be at most 500 characters"));
    }
    let by = format!("by `{}` through the API", caller.name);
    let reason = if given.trim().is_empty() {
        by
    } else {
        format!("{} ({by})", given.trim())
    };
    let was = match state.queues().cancel(&job.queue, &job.id, &reason).await? {
        CancelOutcome::Requested(was) => was,
        CancelOutcome::AlreadyFinished(now) => {
            return Err(ApiError::conflict(format!(
                "job `{job_ref}` is {}; only a job that has not finished can be cancelled",
                now.as_str()
            )));
        }
    };
    Ok((
        StatusCode::ACCEPTED,
        Json(CancelAccepted {
            was,
            job: visible_job(&state, &caller, &job_ref).await?,
        }),
    ))
}

/// Run a delayed job now. A job in a durable sleep wakes up and goes on
/// past the sleep.
#[utoipa::path(
    operation_id = "jobs_promote",
    post,
    path = "/v1/jobs/{ref}/promote",
    tag = "jobs",
    params(("ref" = String, Path, description = "`<queue>:<id>`")),
    responses((status = 200, description = "OK", body = ActionResult), (status = 404, description = "Not found", body = ErrorBody), (status = 409, description = "Not delayed", body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn promote(
    State(state): State<ApiState>,
    caller: Caller,
    PathParams(job_ref): PathParams<String>,
) -> Result<Json<ActionResult>, ApiError> {
    let job = visible_job(&state, &caller, &job_ref).await?;
    caller.require(&[Role::Producer])?;
    state.queues().promote(&job.queue, &job.id).await?;
    Ok(Json(ActionResult {
        job: visible_job(&state, &caller, &job_ref).await?,
    }))
}

/// Move a job to its handler's current version (admin or deployer). Its next run uses
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
    PathParams(job_ref): PathParams<String>,
) -> Result<Json<ActionResult>, ApiError> {
    caller.require(&[Role::Deployer])?;
    let job = visible_job(&state, &caller, &job_ref).await?;
    let binding = state.registry().binding(&job.queue).await?;
    let digest = state
        .registry()
        .current_digest(&binding.handler)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("handler `{}`", binding.handler)))?;
    state.queues().repin(&job.queue, &job.id, &digest).await?;
    let details = serde_json::json!({"digest": digest});
    state.audit(&caller, "job.repin", &job_ref, details).await;
    Ok(Json(ActionResult {
        job: visible_job(&state, &caller, &job_ref).await?,
    }))
}

/// Longest a `wait` may block.
const MAX_WAIT: Duration = Duration::from_secs(300);

/// Parses a `timeout` like `30s`, `500ms`, `2m` (the documented pattern).
fn parse_timeout(text: &str) -> Result<Duration, ApiError> {
    let bad = || {
        ApiError::field(
            "timeout",
            format!("`{text}` is not a duration like 30s, 500ms or 2m"),
        )
    };
    let split = text.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (digits, unit) = text.split_at(split);
    if digits.is_empty() || digits.len() > 6 {
        return Err(bad());
    }
    // The documented pattern allows no more digits than each unit needs.
    let max_digits = match unit {
        "ms" => 6,
        "s" => 3,
        "m" => 1,
        _ => return Err(bad()),
    };
    if digits.len() > max_digits {
        return Err(bad());
    }
    let n: u64 = digits.parse().map_err(|_| bad())?;
    let timeout = match unit {
        "ms" => Duration::from_millis(n),
        "s" => Duration::from_secs(n),
        "m" => Duration::from_secs(n * 60),
        _ => return Err(bad()),
    };
    if timeout > MAX_WAIT {
        return Err(ApiError::field("timeout", "must be at most 5m"));
    }
    Ok(timeout)
}

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
    PathParams(job_ref): PathParams<String>,
    QueryParams(query): QueryParams<WaitQuery>,
) -> Result<Json<WaitResult>, ApiError> {
    let timeout = match &query.timeout {
        None => Duration::from_secs(30),
        Some(text) => parse_timeout(text)?,
    };
    let (queue, id) = split_ref(&job_ref)?;
    // Subscribe before looking, so a finish in between is not missed.
    let cursor = state.queues().events_cursor(&queue).await?;
    let job = visible_job(&state, &caller, &job_ref).await?;
    if matches!(job.state, JobState::Completed | JobState::Failed) {
        return Ok(Json(WaitResult {
            finished: true,
            job,
        }));
    }
    let events = state.queues().subscribe(&queue, &cursor).await?;
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
