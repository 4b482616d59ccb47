//! Jobs: enqueue (single and bulk), list, inspect, retry, remove, promote,
//! re-pin, and wait for the result.
//!
//! A job is addressed as `<queue>:<id>` (its *ref*) under `/v1/jobs`: BullMQ
//! ids are only unique within a queue, and queue names cannot contain `:`.

use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use utoipa::{IntoParams, ToSchema};

use super::ApiState;
use super::auth::{Caller, Role};
use super::error::{ApiError, ErrorBody, JsonBody, PathParams, QueryParams};
use super::queues::bound;
use crate::flow;
use crate::names;
use crate::queue::{
    CancelOutcome, Deduplication, JobOptions, JobSnapshot, JobState, NewJob, WaitReason,
};

/// One job to enqueue.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EnqueueRequest {
    /// BullMQ job name (default: the queue's name).
    #[serde(default)]
    pub name: Option<String>,
    /// The job's data: any JSON.
    #[schema(value_type = Value)]
    pub data: serde_json::Value,
    /// Job options (BullMQ spelling); absent ones take the queue's defaults.
    #[serde(default)]
    pub opts: JobOptions,
}

/// Several jobs at once: all are validated before any is added.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BulkEnqueueRequest {
    /// The jobs, 1 to 1000.
    #[schema(min_items = 1, max_items = 1000)]
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

/// A state jobs can be listed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ListState {
    /// Ready to run.
    Waiting,
    /// Ready to run, ordered by priority.
    Prioritized,
    /// Waiting for its time.
    Delayed,
    /// Flow parents waiting for their children.
    WaitingChildren,
    /// Running.
    Active,
    /// Finished with a result.
    Completed,
    /// Finished without one.
    Failed,
}

impl From<ListState> for JobState {
    fn from(s: ListState) -> JobState {
        match s {
            ListState::Waiting => JobState::Waiting,
            ListState::Prioritized => JobState::Prioritized,
            ListState::Delayed => JobState::Delayed,
            ListState::WaitingChildren => JobState::WaitingChildren,
            ListState::Active => JobState::Active,
            ListState::Completed => JobState::Completed,
            ListState::Failed => JobState::Failed,
        }
    }
}

/// Listing parameters.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    /// The state to list.
    pub state: ListState,
    /// Offset (newest first).
    #[serde(default, deserialize_with = "airlock_core::int::query_opt")]
    #[param(minimum = 0, maximum = 1_000_000_000, value_type = Option<u64>)]
    pub start: Option<usize>,
    /// Page size (default 50).
    #[serde(default, deserialize_with = "airlock_core::int::query_opt")]
    #[param(minimum = 1, maximum = 500)]
    pub limit: Option<usize>,
    /// Keep only the jobs of the page whose id, name or data (as compact
    /// JSON) contains this text, ignoring case (a page may then hold fewer
    /// than `limit`; follow `next`).
    #[serde(default)]
    #[param(max_length = 200)]
    pub q: Option<String>,
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

/// Splits a job ref into `(queue, id)`.
pub fn split_ref(job_ref: &str) -> Result<(String, String), ApiError> {
    let (queue, id) = job_ref.split_once(':').ok_or_else(|| {
        ApiError::field(
            "ref",
            "a job is addressed as `<queue>:<id>`, e.g. `payments:42`",
        )
    })?;
    names::queue("ref", queue)?;
    if id.is_empty() || id.len() > crate::queue::MAX_ID_LEN {
        return Err(ApiError::field(
            "ref",
            "the job id must be 1 to 256 characters",
        ));
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
        .await?
        .ok_or_else(|| ApiError::not_found(format!("job `{job_ref}`")))?;
    if !caller.reads_everything() && job.producer.as_deref() != Some(caller.name.as_str()) {
        return Err(ApiError::not_found(format!("job `{job_ref}`")));
    }
    Ok(job)
}

/// How many bytes `value` takes as compact JSON, without building the text.
fn json_len(value: &serde_json::Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// Refuses job data over the API's per-job limit.
pub(super) fn check_data_size(
    state: &ApiState,
    field: &str,
    data: &serde_json::Value,
) -> Result<(), ApiError> {
    let size = json_len(data);
    if size > state.limits().max_job_data_bytes {
        let mut err = ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "job_data_too_large",
            format!(
                "`{field}` is {size} bytes, the maximum is {}",
                state.limits().max_job_data_bytes
            ),
        );
        err.detail.field = Some(field.to_string());
        return Err(err);
    }
    Ok(())
}

/// The header that makes an enqueue safe to retry.
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// How long an idempotency key keeps answering with its first job.
pub const IDEMPOTENCY_TTL_MS: u64 = 24 * 60 * 60 * 1000;

/// The `Idempotency-Key` header, checked.
fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(value) = headers.get(IDEMPOTENCY_KEY) else {
        return Ok(None);
    };
    let key = value
        .to_str()
        .map_err(|_| ApiError::field("Idempotency-Key", "must be ASCII"))?;
    names::id("Idempotency-Key", key, 200)?;
    Ok(Some(key.to_string()))
}

/// The BullMQ deduplication id behind an idempotency key: namespaced by the
/// producer, so two producers' keys never meet, and hashed to a fixed
/// length.
fn idempotency_dedup_id(producer: &str, key: &str, index: Option<usize>) -> String {
    let mut hasher = Sha256::new();
    hasher.update(producer.as_bytes());
    hasher.update([0]);
    hasher.update(key.as_bytes());
    if let Some(i) = index {
        hasher.update([0]);
        hasher.update(i.to_string().as_bytes());
    }
    format!("idem:{}", &hex::encode(hasher.finalize())[..32])
}

fn prepare(
    state: &ApiState,
    caller: &Caller,
    queue: &str,
    index: Option<usize>,
    req: EnqueueRequest,
    binding: &crate::registry::Binding,
    idempotency: Option<&str>,
) -> Result<NewJob, ApiError> {
    let at = |field: &str| match index {
        Some(i) => format!("jobs[{i}].{field}"),
        None => field.to_string(),
    };
    check_data_size(state, &at("data"), &req.data)?;
    if let Some(name) = &req.name
        && (name.is_empty() || name.len() > 256)
    {
        return Err(ApiError::field(at("name"), "must be 1 to 256 characters"));
    }
    let mut opts = req.opts.with_defaults(&binding.default_job_options);
    if let Some(key) = idempotency {
        if opts.deduplication.is_some() {
            return Err(ApiError::field(
                at("opts.deduplication"),
                "cannot be combined with an Idempotency-Key header",
            ));
        }
        opts.deduplication = Some(Deduplication {
            id: idempotency_dedup_id(&caller.name, key, index),
            ttl: Some(IDEMPOTENCY_TTL_MS),
            ..Default::default()
        });
    }
    opts.validate().map_err(|e| e.under(&at("opts")))?;
    // On a queue with warm instances the job's producer decides which
    // instance it may run in, so it must be on the job from its add on:
    // an id chosen now makes the add carry it (claim, add, commit; see
    // `queue::meta`) instead of writing it just after a BullMQ-chosen id,
    // a moment in which a worker could take the job as producer-less.
    if binding.warm_instances.is_some() {
        opts.job_id
            .get_or_insert_with(|| format!("j-{}", uuid::Uuid::new_v4().simple()));
    }
    if let Some(request) = &opts.limits {
        binding
            .limits
            .lowered_by(request)
            .map_err(|e| ApiError::field(at(&format!("opts.limits.{}", e.field)), e.message))?;
    }
    Ok(NewJob {
        name: req.name.unwrap_or_else(|| queue.to_string()),
        data: req.data,
        opts,
        producer: Some(caller.name.clone()),
    })
}

async fn enqueue_all(
    state: &ApiState,
    caller: &Caller,
    queue: &str,
    headers: &HeaderMap,
    requests: Vec<EnqueueRequest>,
    bulk: bool,
) -> Result<Vec<Accepted>, ApiError> {
    caller.require(&[Role::Producer])?;
    let idempotency = idempotency_key(headers)?;
    let binding = bound(state, queue).await?;
    let mut jobs = Vec::with_capacity(requests.len());
    for (i, req) in requests.into_iter().enumerate() {
        jobs.push(prepare(
            state,
            caller,
            queue,
            bulk.then_some(i),
            req,
            &binding,
            idempotency.as_deref(),
        )?);
    }
    // Flow control's enqueue side: debounce, key reservations, held-back
    // priority, hand-over (see `flow::enqueue`).
    let lease_ms = state.host().worker_settings.lock_duration.as_millis() as u64;
    let field = |i: usize, field: &str| match bulk {
        true => format!("jobs[{i}].{field}"),
        false => field.to_string(),
    };
    let added = flow::add_governed(state.queues(), &binding, queue, jobs, lease_ms, field).await?;
    Ok(added
        .into_iter()
        .map(|job| Accepted {
            r#ref: format!("{queue}:{}", job.id),
            id: job.id,
            queue: queue.to_string(),
            duplicate: job.duplicate,
        })
        .collect())
}

/// Enqueue a job. Returns at once (202) with its id; follow it with
/// `GET /v1/jobs/{ref}`, `/wait` or `/events`. A 503 means the outcome is
/// unknown: retry with the same `jobId` or `Idempotency-Key` and the job is
/// never doubled.
#[utoipa::path(
    operation_id = "jobs_enqueue",
    post,
    path = "/v1/queues/{queue}/jobs",
    tag = "jobs",
    params(
        ("queue" = String, Path, description = "Queue name"),
        ("Idempotency-Key" = Option<String>, Header, description = "Makes a retry safe: for 24 hours the same key (per producer token) answers with the job it first created, marked `duplicate`. Letters, digits, `-`, `_`, `.`; at most 200.")
    ),
    request_body = EnqueueRequest,
    responses(
        (status = 202, description = "Accepted", body = Accepted),
        (status = 400, description = "Invalid request (the error names the field)", body = ErrorBody),
        (status = 404, description = "Queue not bound", body = ErrorBody),
        (status = 413, description = "Body or job data too large", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub async fn enqueue(
    State(state): State<ApiState>,
    caller: Caller,
    PathParams(queue): PathParams<String>,
    headers: HeaderMap,
    JsonBody(req): JsonBody<EnqueueRequest>,
) -> Result<(StatusCode, Json<Accepted>), ApiError> {
    let mut accepted = enqueue_all(&state, &caller, &queue, &headers, vec![req], false).await?;
    Ok((StatusCode::ACCEPTED, Json(accepted.remove(0))))
}

/// Most jobs in one bulk request.
pub const MAX_BULK: usize = 1000;

/// Enqueue 1 to 1000 jobs; one invalid job rejects the whole request. With
/// an `Idempotency-Key`, job `i` of the bulk is keyed `key` + `i`.
#[utoipa::path(
    operation_id = "jobs_enqueue_bulk",
    post,
    path = "/v1/queues/{queue}/jobs/bulk",
    tag = "jobs",
    params(
        ("queue" = String, Path, description = "Queue name"),
        ("Idempotency-Key" = Option<String>, Header, description = "Makes a retry safe (see the single enqueue); job i of the bulk is keyed by the key and its index.")
    ),
    request_body = BulkEnqueueRequest,
    responses(
        (status = 202, description = "Accepted", body = BulkAccepted),
        (status = 400, description = "Invalid request (the error names the field)", body = ErrorBody),
        (status = 404, description = "Queue not bound", body = ErrorBody),
        (status = 413, description = "Body or job data too large", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub async fn enqueue_bulk(
    State(state): State<ApiState>,
    caller: Caller,
    PathParams(queue): PathParams<String>,
    headers: HeaderMap,
    JsonBody(req): JsonBody<BulkEnqueueRequest>,
) -> Result<(StatusCode, Json<BulkAccepted>), ApiError> {
    if req.jobs.is_empty() || req.jobs.len() > MAX_BULK {
        return Err(ApiError::field(
            "jobs",
            format!("must hold 1 to {MAX_BULK} jobs"),
        ));
    }
    let jobs = enqueue_all(&state, &caller, &queue, &headers, req.jobs, true).await?;
    Ok((StatusCode::ACCEPTED, Json(BulkAccepted { jobs })))
}

/// List a queue's jobs in one state, newest first. A producer token sees
/// only its own jobs (a page may then hold fewer than `limit`; follow
/// `next`).
#[utoipa::path(
    operation_id = "jobs_list",
    get,
    path = "/v1/queues/{queue}/jobs",
    tag = "jobs",
    params(("queue" = String, Path, description = "Queue name"), ListQuery),
    responses(
        (status = 200, description = "OK", body = JobPage),
        (status = 400, description = "Invalid request (the error names the field)", body = ErrorBody),
        (status = 404, description = "Queue not bound", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub async fn list(
    State(state): State<ApiState>,
    caller: Caller,
    PathParams(queue): PathParams<String>,
    QueryParams(query): QueryParams<ListQuery>,
) -> Result<Json<JobPage>, ApiError> {
    caller.require(&[Role::Reader, Role::Producer])?;
    let limit = query.limit.unwrap_or(50);
    if limit == 0 || limit > 500 {
        return Err(ApiError::field("limit", "must be between 1 and 500"));
    }
    let start = query.start.unwrap_or(0);
    if start > 1_000_000_000 {
        return Err(ApiError::field("start", "must be at most 1000000000"));
    }
    bound(&state, &queue).await?;
    let mut jobs = state
        .queues()
        .list(&queue, query.state.into(), start, start + limit - 1)
        .await?;
    let full = jobs.len() == limit;
    if !caller.reads_everything() {
        jobs.retain(|j| j.producer.as_deref() == Some(caller.name.as_str()));
    }
    if let Some(q) = query.q.as_deref().filter(|q| !q.is_empty()) {
        if q.chars().count() > 200 {
            return Err(ApiError::field("q", "must be at most 200 characters"));
        }
        let needle = q.to_lowercase();
        jobs.retain(|j| {
            j.id.to_lowercase().contains(&needle)
                || j.name.to_lowercase().contains(&needle)
                || j.data.to_string().to_lowercase().contains(&needle)
        });
    }
    Ok(Json(JobPage {
        jobs,
        next: full.then_some(start + limit),
    }))
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
            let mut serving = crate::queue::Serving::default();
            for host in hosts.iter().filter(|h| h.queues.contains(&job.queue)) {
                serving.hosts += 1;
                serving.slots += host.capacity;
                serving.busy += host.running.min(host.capacity);
            }
            state
                .queues()
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
    if given.chars().count() > crate::queue::cancel::MAX_REASON_CHARS {
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
    PathParams(job_ref): PathParams<String>,
) -> Result<Json<ActionResult>, ApiError> {
    caller.require(&[Role::Admin])?;
    let job = visible_job(&state, &caller, &job_ref).await?;
    let binding = state.registry().binding(&job.queue).await?;
    let digest = state
        .registry()
        .current_digest(&binding.handler)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("handler `{}`", binding.handler)))?;
    state.queues().repin(&job.queue, &job.id, &digest).await?;
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
