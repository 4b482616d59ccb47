//! `/v1/queues`: bindings (which handler runs a queue, limits, concurrency,
//! default job options), counts, pause/resume, and the destructive actions
//! (drain, clean, obliterate), which need the queue's name as confirmation.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::ApiState;
use super::auth::{Caller, Role};
use super::error::{ApiError, ErrorBody, JsonBody, PathParams};
use super::lookup::{ListState, bindings, bound, in_scope};
use crate::queue::QueueCounts;
use crate::registry::{Binding, BindingSpec, RegistryError};

/// A queue: its binding and job counts.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueueView {
    /// The binding.
    #[serde(flatten)]
    pub binding: Binding,
    /// Jobs per state, the whole queue's; `null` for a producer token,
    /// which reads only the jobs it enqueued (other producers' numbers are
    /// not its business, and whole-queue numbers over its own rows
    /// mislead).
    pub counts: Option<QueueCounts>,
}

/// The queue list.
#[derive(Debug, Serialize, ToSchema)]
pub struct QueueList {
    /// Bound queues by name.
    pub queues: Vec<QueueView>,
}

/// Confirmation of a destructive action: must repeat the queue name.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DrainRequest {
    /// The queue's name, to confirm.
    pub confirm: String,
    /// Also remove delayed jobs.
    #[serde(default)]
    pub delayed: bool,
}

/// Clean finished (or other) jobs older than a grace period.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CleanRequest {
    /// The queue's name, to confirm.
    pub confirm: String,
    /// The state to clean.
    pub state: ListState,
    /// Only jobs older than this many milliseconds.
    #[serde(default, deserialize_with = "airlock_core::int::opt")]
    #[schema(minimum = 0, maximum = 31_536_000_000_u64, value_type = Option<u64>)]
    pub grace_ms: Option<u64>,
    /// At most this many jobs (default 1000).
    #[serde(default, deserialize_with = "airlock_core::int::opt")]
    #[schema(minimum = 1, maximum = 100_000)]
    pub limit: Option<u32>,
}

/// Retry failed jobs in bulk.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RetryFailedRequest {
    /// Only the jobs whose last failure was of this kind.
    #[schema(
        pattern = r"^(fuel_exhausted|memory_limit|timeout|stack_overflow|memory_fault|trap|guest_retry|guest_fatal|invalid_output|output_too_large|instantiation|capacity|host_unavailable|cancelled|timed_out|rate_limited|skipped)$"
    )]
    pub failure_kind: Option<String>,
    /// At most this many jobs, newest failed first (default 1000).
    #[serde(default, deserialize_with = "airlock_core::int::opt")]
    #[schema(minimum = 1, maximum = 10_000)]
    pub limit: Option<u32>,
}

/// The jobs a bulk retry moved back to waiting.
#[derive(Debug, Serialize, ToSchema)]
pub struct Retried {
    /// Their ids.
    pub retried: Vec<String>,
}

/// Remove the queue and every job in it.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ObliterateRequest {
    /// The queue's name, to confirm.
    pub confirm: String,
    /// Also when jobs are active.
    #[serde(default)]
    pub force: bool,
}

/// Result of a clean.
#[derive(Debug, Serialize, ToSchema)]
pub struct Cleaned {
    /// Ids of the removed jobs.
    pub removed: Vec<String>,
}

fn confirm(queue: &str, given: &str) -> Result<(), ApiError> {
    if queue != given {
        return Err(ApiError::field(
            "confirm",
            format!("must repeat the queue name `{queue}` to confirm this destructive action"),
        ));
    }
    Ok(())
}

async fn view(state: &ApiState, caller: &Caller, binding: Binding) -> Result<QueueView, ApiError> {
    let counts = match caller.role {
        Role::Producer | Role::Cron => None,
        Role::Admin | Role::Deployer | Role::Reader => {
            Some(state.queues().counts(&binding.queue).await?)
        }
    };
    Ok(QueueView { binding, counts })
}

/// Create or replace a queue's binding.
///
/// On a host that runs jobs, an `egress` rule that no pattern of the host
/// operator's `--egress-allow` list overlaps is refused (400 naming
/// `egress[i]`): every request under it would be refused.
#[utoipa::path(
    operation_id = "queues_bind",
    put,
    path = "/v1/queues/{queue}",
    tag = "queues",
    params(("queue" = String, Path, description = "Queue name")),
    request_body = BindingSpec,
    responses((status = 200, description = "OK", body = QueueView), (status = 400, description = "Invalid request (the error names the field)", body = ErrorBody), (status = 403, description = "The token's role may not do this", body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn bind(
    State(state): State<ApiState>,
    caller: Caller,
    PathParams(queue): PathParams<String>,
    JsonBody(spec): JsonBody<BindingSpec>,
) -> Result<Json<QueueView>, ApiError> {
    caller.require(&[Role::Deployer])?;
    // Outside the scope: as if the queue were not there, or the handler.
    in_scope(&caller, &queue)?;
    if !caller.sees_handler(&spec.handler) {
        return Err(RegistryError::MissingHandler(spec.handler.clone()).into());
    }
    // A host that runs jobs holds the rules against its operator's list;
    // an API-only host (`--no-workers`) does not know its workers' lists.
    let operator = state.host.runs_jobs.then_some(&*state.host.egress);
    let binding = state.registry().bind(&queue, &spec, operator).await?;
    state
        .queues()
        .set_global_limits(
            &queue,
            binding.global_concurrency,
            binding.rate_limit.map(|r| (r.max, r.duration_ms)),
        )
        .await?;
    let details = serde_json::json!({"handler": binding.handler});
    state.audit(&caller, "queue.bind", &queue, details).await;
    Ok(Json(view(&state, &caller, binding).await?))
}

/// List bound queues with their counts.
#[utoipa::path(
    operation_id = "queues_list",
    get,
    path = "/v1/queues",
    tag = "queues",
    responses((status = 200, description = "OK", body = QueueList)),
    security(("bearer" = []))
)]
pub async fn list(
    State(state): State<ApiState>,
    caller: Caller,
) -> Result<Json<QueueList>, ApiError> {
    caller.require(&[Role::Reader, Role::Producer])?;
    let mut queues = Vec::new();
    for binding in bindings(&state, &caller).await? {
        queues.push(view(&state, &caller, binding).await?);
    }
    Ok(Json(QueueList { queues }))
}

/// A queue's binding and counts.
#[utoipa::path(
    operation_id = "queues_get",
    get,
    path = "/v1/queues/{queue}",
    tag = "queues",
    params(("queue" = String, Path, description = "Queue name")),
    responses((status = 200, description = "OK", body = QueueView), (status = 404, description = "Not found", body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn get(
    State(state): State<ApiState>,
    caller: Caller,
    PathParams(queue): PathParams<String>,
) -> Result<Json<QueueView>, ApiError> {
    caller.require(&[Role::Reader, Role::Producer])?;
    let binding = bound(&state, &caller, &queue).await?;
    Ok(Json(view(&state, &caller, binding).await?))
}

/// Remove a queue's binding; its jobs stay (and wait for a new binding).
#[utoipa::path(
    operation_id = "queues_unbind",
    delete,
    path = "/v1/queues/{queue}",
    tag = "queues",
    params(("queue" = String, Path, description = "Queue name")),
    responses((status = 204, description = "No content"), (status = 404, description = "Not found", body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn unbind(
    State(state): State<ApiState>,
    caller: Caller,
    PathParams(queue): PathParams<String>,
) -> Result<StatusCode, ApiError> {
    caller.require(&[Role::Deployer])?;
    in_scope(&caller, &queue)?;
    state.registry().unbind(&queue).await?;
    state
        .audit(&caller, "queue.unbind", &queue, serde_json::json!({}))
        .await;
    Ok(StatusCode::NO_CONTENT)
}

/// Pause a queue: no host takes new jobs from it.
#[utoipa::path(
    operation_id = "queues_pause",
    post,
    path = "/v1/queues/{queue}/pause",
    tag = "queues",
    params(("queue" = String, Path, description = "Queue name")),
    responses((status = 200, description = "OK", body = QueueView), (status = 404, description = "Not found", body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn pause(
    State(state): State<ApiState>,
    caller: Caller,
    PathParams(queue): PathParams<String>,
) -> Result<Json<QueueView>, ApiError> {
    caller.require(&[Role::Deployer])?;
    let binding = bound(&state, &caller, &queue).await?;
    state.queues().pause(&queue).await?;
    state
        .audit(&caller, "queue.pause", &queue, serde_json::json!({}))
        .await;
    Ok(Json(view(&state, &caller, binding).await?))
}

/// Resume a paused queue.
#[utoipa::path(
    operation_id = "queues_resume",
    post,
    path = "/v1/queues/{queue}/resume",
    tag = "queues",
    params(("queue" = String, Path, description = "Queue name")),
    responses((status = 200, description = "OK", body = QueueView), (status = 404, description = "Not found", body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn resume(
    State(state): State<ApiState>,
    caller: Caller,
    PathParams(queue): PathParams<String>,
) -> Result<Json<QueueView>, ApiError> {
    caller.require(&[Role::Deployer])?;
    let binding = bound(&state, &caller, &queue).await?;
    state.queues().resume(&queue).await?;
    state
        .audit(&caller, "queue.resume", &queue, serde_json::json!({}))
        .await;
    Ok(Json(view(&state, &caller, binding).await?))
}

/// Remove every waiting (and optionally delayed) job.
#[utoipa::path(
    operation_id = "queues_drain",
    post,
    path = "/v1/queues/{queue}/drain",
    tag = "queues",
    params(("queue" = String, Path, description = "Queue name")),
    request_body = DrainRequest,
    responses((status = 200, description = "OK", body = QueueView), (status = 400, description = "Invalid request (the error names the field)", body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn drain(
    State(state): State<ApiState>,
    caller: Caller,
    PathParams(queue): PathParams<String>,
    JsonBody(req): JsonBody<DrainRequest>,
) -> Result<Json<QueueView>, ApiError> {
    caller.require(&[Role::Deployer])?;
    let binding = bound(&state, &caller, &queue).await?;
    confirm(&queue, &req.confirm)?;
    state.queues().drain(&queue, req.delayed).await?;
    let details = serde_json::json!({"delayed": req.delayed});
    state.audit(&caller, "queue.drain", &queue, details).await;
    Ok(Json(view(&state, &caller, binding).await?))
}

/// Remove jobs of one state older than a grace period.
#[utoipa::path(
    operation_id = "queues_clean",
    post,
    path = "/v1/queues/{queue}/clean",
    tag = "queues",
    params(("queue" = String, Path, description = "Queue name")),
    request_body = CleanRequest,
    responses((status = 200, description = "OK", body = Cleaned), (status = 400, description = "Invalid request (the error names the field)", body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn clean(
    State(state): State<ApiState>,
    caller: Caller,
    PathParams(queue): PathParams<String>,
    JsonBody(req): JsonBody<CleanRequest>,
) -> Result<Json<Cleaned>, ApiError> {
    caller.require(&[Role::Deployer])?;
    bound(&state, &caller, &queue).await?;
    confirm(&queue, &req.confirm)?;
    let grace_ms = req.grace_ms.unwrap_or(0);
    if grace_ms > crate::queue::MAX_DELAY_MS {
        return Err(ApiError::field("graceMs", "must be at most a year"));
    }
    let limit = req.limit.unwrap_or(1000);
    if limit == 0 || limit > 100_000 {
        return Err(ApiError::field("limit", "must be between 1 and 100000"));
    }
    let removed = state
        .queues()
        .clean(&queue, req.state.into(), grace_ms, limit)
        .await?;
    let details =
        serde_json::json!({"graceMs": grace_ms, "limit": limit, "removed": removed.len()});
    state.audit(&caller, "queue.clean", &queue, details).await;
    Ok(Json(Cleaned { removed }))
}

/// Retry a queue's failed jobs, newest first (all of them up to `limit`,
/// or those whose last failure was of `failureKind`, among the newest
/// 100,000 failed jobs): each goes back to waiting as `POST
/// /v1/jobs/{ref}/retry` would send it, its recorded steps kept. A job a
/// worker or another retry took meanwhile is left out.
#[utoipa::path(
    operation_id = "queues_retry_failed",
    post,
    path = "/v1/queues/{queue}/retry",
    tag = "queues",
    params(("queue" = String, Path, description = "Queue name")),
    request_body = RetryFailedRequest,
    responses((status = 200, description = "OK", body = Retried), (status = 400, description = "Invalid request (the error names the field)", body = ErrorBody), (status = 404, description = "Queue not bound", body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn retry_failed(
    State(state): State<ApiState>,
    caller: Caller,
    PathParams(queue): PathParams<String>,
    JsonBody(req): JsonBody<RetryFailedRequest>,
) -> Result<Json<Retried>, ApiError> {
    caller.require(&[Role::Deployer])?;
    let kind = match req.failure_kind.as_deref() {
        Some(name) => Some(super::lookup::failure_kind("failureKind", name)?),
        None => None,
    };
    let limit = req.limit.unwrap_or(1000);
    if limit == 0 || limit > 10_000 {
        return Err(ApiError::field("limit", "must be between 1 and 10000"));
    }
    bound(&state, &caller, &queue).await?;
    let retried = state
        .queues()
        .retry_failed(&queue, kind.map(|k| k.as_str()), limit as usize)
        .await?;
    let details =
        serde_json::json!({"failureKind": kind.map(|k| k.as_str()), "retried": retried.len()});
    state
        .audit(&caller, "queue.retry-failed", &queue, details)
        .await;
    Ok(Json(Retried { retried }))
}

/// Delete a bound queue, all its jobs, and its binding (refused with 409
/// while jobs run, unless `force`).
#[utoipa::path(
    operation_id = "queues_obliterate",
    post,
    path = "/v1/queues/{queue}/obliterate",
    tag = "queues",
    params(("queue" = String, Path, description = "Queue name")),
    request_body = ObliterateRequest,
    responses((status = 204, description = "No content"), (status = 400, description = "Invalid request (the error names the field)", body = ErrorBody), (status = 409, description = "Conflict with the current state", body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn obliterate(
    State(state): State<ApiState>,
    caller: Caller,
    PathParams(queue): PathParams<String>,
    JsonBody(req): JsonBody<ObliterateRequest>,
) -> Result<StatusCode, ApiError> {
    caller.require(&[Role::Deployer])?;
    bound(&state, &caller, &queue).await?;
    confirm(&queue, &req.confirm)?;
    state.queues().obliterate(&queue, req.force).await?;
    let details = serde_json::json!({"force": req.force});
    state
        .audit(&caller, "queue.obliterate", &queue, details)
        .await;
    match state.registry().unbind(&queue).await {
        Ok(()) | Err(RegistryError::NotFound(_)) => Ok(StatusCode::NO_CONTENT),
        Err(e) => Err(e.into()),
    }
}

/// One key's jobs now.
#[derive(Debug, Serialize, ToSchema)]
pub struct KeyJobs {
    /// The key's value.
    #[schema(value_type = Value)]
    pub value: serde_json::Value,
    /// Slots it holds (running jobs, and starts reserved for them).
    pub running: u64,
    /// Its jobs waiting for a slot: in its line, on their way into it, and
    /// held back at enqueue among the jobs scanned.
    pub queued: u64,
}

/// Per-key state of a queue with `keyConcurrency`.
#[derive(Debug, Serialize, ToSchema)]
pub struct QueueKeys {
    /// The binding's key path.
    pub key: String,
    /// Jobs of one key at once.
    pub limit: u64,
    /// The keys found, busiest first.
    pub keys: Vec<KeyJobs>,
    /// How many jobs were scanned to find the keys (up to 500 each of the
    /// active, waiting, prioritized and delayed ones, newest first).
    pub scanned: usize,
}

/// The keys of a queue with `keyConcurrency` and, for each, how many of
/// its jobs run and wait. Keys are found among the queue's newest 500
/// active, waiting, prioritized and delayed jobs; the counts of each key
/// found are exact for its slots and line.
#[utoipa::path(
    get,
    operation_id = "queues_keys",
    path = "/v1/queues/{queue}/keys",
    tag = "queues",
    params(("queue" = String, Path, description = "Queue name")),
    responses(
        (status = 200, description = "OK", body = QueueKeys),
        (status = 404, description = "Queue not bound", body = ErrorBody),
        (status = 409, description = "The binding has no keyConcurrency", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub async fn keys(
    State(state): State<ApiState>,
    caller: Caller,
    PathParams(queue): PathParams<String>,
) -> Result<Json<QueueKeys>, ApiError> {
    caller.require(&[Role::Reader])?;
    let binding = bound(&state, &caller, &queue).await?;
    let Some(rule) = binding.key_concurrency.clone() else {
        return Err(ApiError::conflict(format!(
            "queue `{queue}` has no keyConcurrency"
        )));
    };
    let mut held_back: std::collections::HashMap<String, (serde_json::Value, u64)> =
        Default::default();
    let mut scanned = 0;
    use crate::queue::JobState;
    for job_state in [
        JobState::Active,
        JobState::Waiting,
        JobState::Prioritized,
        JobState::Delayed,
    ] {
        let jobs = state.queues().list(&queue, job_state, 0, 499).await?;
        scanned += jobs.len();
        for job in jobs {
            if let Some(value) = rule.key.get(&job.data) {
                let waiting = matches!(job_state, JobState::Waiting | JobState::Prioritized);
                let entry = held_back
                    .entry(value.to_string())
                    .or_insert_with(|| (value.clone(), 0));
                entry.1 += u64::from(waiting);
            }
        }
    }
    let mut keys = Vec::with_capacity(held_back.len());
    for (value, waiting) in held_back.into_values() {
        let slot = crate::state::key_limits::KeySlot::of(&queue, &value);
        let key_state = state.queues().state().key_limits.counts(&slot).await?;
        keys.push(KeyJobs {
            value,
            running: key_state.held,
            queued: key_state.queued + waiting,
        });
    }
    keys.sort_by_key(|k| std::cmp::Reverse(k.running + k.queued));
    Ok(Json(QueueKeys {
        key: rule.key.as_str().to_string(),
        limit: rule.limit,
        keys,
        scanned,
    }))
}
