//! A queue's jobs: enqueue (single and bulk, with `Idempotency-Key`, through
//! flow control's enqueue side) and list. One job's routes are in
//! [`super::job`].

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::ApiState;
use super::auth::{Caller, Role};
use super::error::{ApiError, ErrorBody, JsonBody, PathParams, QueryParams};
use super::lookup::{ListState, bound, check_data_size};
use crate::gate::{self};
use crate::names;
use crate::queue::{Deduplication, JobOptions, JobSnapshot, NewJob};
use crate::traces;

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
    /// Keep only the jobs of the page whose last failure was of this kind
    /// (a page may then hold fewer than `limit`; follow `next`).
    #[serde(default, rename = "failureKind")]
    #[param(
        rename = "failureKind",
        pattern = r"^(fuel_exhausted|memory_limit|timeout|stack_overflow|memory_fault|trap|guest_retry|guest_fatal|invalid_output|output_too_large|instantiation|capacity|host_unavailable|cancelled|timed_out|rate_limited|skipped)$"
    )]
    pub failure_kind: Option<String>,
}

/// A page of jobs.
#[derive(Debug, Serialize, ToSchema)]
pub struct JobPage {
    /// The jobs.
    pub jobs: Vec<JobSnapshot>,
    /// Offset of the next page, when there may be one.
    pub next: Option<usize>,
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
    let index = index.map(|i| i.to_string());
    let mut parts = vec![producer.as_bytes(), key.as_bytes()];
    parts.extend(index.as_deref().map(str::as_bytes));
    let digest = airlock_core::hashing::separated(&parts);
    format!("idem:{}", &hex::encode(digest)[..32])
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
    // On a queue with warm instances, batches or fairness by producer the
    // job's producer decides which instance or batch it may run in or
    // whose turn it takes, so it must be on the job from its add on: an id chosen now
    // makes the add carry it (claim, add, commit; see `state::meta`)
    // instead of writing it just after a BullMQ-chosen id, a moment in
    // which a worker could take the job as producer-less.
    if binding.producer_decides() {
        opts.job_id.get_or_insert_with(crate::queue::new_job_id);
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
        trace: None,
        parent: None,
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
    let binding = bound(state, caller, queue).await?;
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
    // priority, hand-over (see `gate::enqueue`).
    let lease_ms = state.host().worker_settings.lock_duration.as_millis() as u64;
    let field = |i: usize, field: &str| match bulk {
        true => format!("jobs[{i}].{field}"),
        false => field.to_string(),
    };
    // The trace the jobs' runs continue (`crate::traces`).
    let send = traces::Send::start(&state.host().traces, headers, "add", queue);
    for job in &mut jobs {
        job.trace = send.metadata();
    }
    let added = gate::add_governed(state.queues(), &binding, queue, jobs, lease_ms, field).await;
    send.end_with(&added, |added| {
        added.iter().map(|job| job.id.clone()).collect()
    });
    Ok(added?
        .into_iter()
        .map(|job| Accepted {
            r#ref: airlock_core::job_ref::join(queue, &job.id),
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
        ("Idempotency-Key" = Option<String>, Header, description = "Makes a retry safe: for 24 hours the same key (per producer token) answers with the job it first created, marked `duplicate`. Letters, digits, `-`, `_`, `.`; at most 200."),
        ("traceparent" = Option<String>, Header, description = "W3C trace context: the job's runs join this trace (under the enqueue's span when the host exports traces). Malformed: ignored, the job starts no trace of the caller's."),
        ("tracestate" = Option<String>, Header, description = "W3C trace state, carried with `traceparent`.")
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
        ("Idempotency-Key" = Option<String>, Header, description = "Makes a retry safe (see the single enqueue); job i of the bulk is keyed by the key and its index."),
        ("traceparent" = Option<String>, Header, description = "W3C trace context, as for the single enqueue: every job of the bulk joins this trace."),
        ("tracestate" = Option<String>, Header, description = "W3C trace state, carried with `traceparent`.")
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
    let kind = match query.failure_kind.as_deref() {
        Some(name) => Some(super::lookup::failure_kind("failureKind", name)?),
        None => None,
    };
    bound(&state, &caller, &queue).await?;
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
    if let Some(kind) = kind {
        jobs.retain(|j| j.failure_kind.as_deref() == Some(kind.as_str()));
    }
    Ok(Json(JobPage {
        jobs,
        next: full.then_some(start + limit),
    }))
}

/// How many of the newest jobs of each state of each queue a search looks
/// at (see [`search`]).
pub const SEARCH_DEPTH: usize = 100;

/// A search across queues.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct SearchQuery {
    /// The text: jobs whose id, name or data (as compact JSON) contain it,
    /// ignoring case. 1 to 200 characters.
    #[param(min_length = 1, max_length = 200)]
    pub q: String,
    /// At most this many matches (default 50, at most 200).
    #[serde(default, deserialize_with = "airlock_core::int::query_opt")]
    #[param(minimum = 1, maximum = 200, value_type = Option<u64>)]
    pub limit: Option<usize>,
}

/// What a search across queues found.
#[derive(Debug, Serialize, ToSchema)]
pub struct SearchResult {
    /// The matches, newest first (by when they were added); each names
    /// its queue and state.
    pub jobs: Vec<JobSnapshot>,
    /// How many jobs were looked at.
    pub scanned: usize,
    /// Whether some state of some queue held more jobs than the newest
    /// `SEARCH_DEPTH` (100) looked at: an older match may exist there
    /// (a job named by its exact id is found anyway).
    pub truncated: bool,
}

/// Search every bound queue for jobs whose id, name or data contain a
/// text, ignoring case: the newest 100 jobs of each state of each queue
/// are looked at, and a job whose id is the text exactly is found in any
/// queue however old. A producer token finds only the jobs it enqueued.
#[utoipa::path(
    operation_id = "jobs_search",
    get,
    path = "/v1/jobs",
    tag = "jobs",
    params(SearchQuery),
    responses(
        (status = 200, description = "OK", body = SearchResult),
        (status = 400, description = "Invalid request (the error names the field)", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub async fn search(
    State(state): State<ApiState>,
    caller: Caller,
    QueryParams(query): QueryParams<SearchQuery>,
) -> Result<Json<SearchResult>, ApiError> {
    caller.require(&[Role::Reader, Role::Producer])?;
    let text = query.q.trim();
    if text.is_empty() || text.chars().count() > 200 {
        return Err(ApiError::field("q", "must be 1 to 200 characters"));
    }
    let limit = query.limit.unwrap_or(50);
    if !(1..=200).contains(&limit) {
        return Err(ApiError::field("limit", "must be between 1 and 200"));
    }
    let needle = text.to_lowercase();
    let matches = |j: &JobSnapshot| {
        j.id.to_lowercase().contains(&needle)
            || j.name.to_lowercase().contains(&needle)
            || j.data.to_string().to_lowercase().contains(&needle)
    };
    let mine = |j: &JobSnapshot| {
        caller.reads_everything() || j.producer.as_deref() == Some(caller.name.as_str())
    };
    let states = [
        ListState::Active,
        ListState::Waiting,
        ListState::Prioritized,
        ListState::Delayed,
        ListState::WaitingChildren,
        ListState::Failed,
        ListState::Completed,
    ];
    let (mut found, mut scanned, mut truncated) = (Vec::new(), 0, false);
    let mut seen = std::collections::HashSet::new();
    for binding in super::lookup::bindings(&state, &caller).await? {
        let queue = binding.queue;
        // The exact id first: found however old it is.
        if names::id("q", text, 256).is_ok()
            && let Some(job) = state.queues().get_job(&queue, text).await?
            && mine(&job)
        {
            seen.insert((queue.clone(), job.id.clone()));
            found.push(job);
        }
        for list_state in states {
            let jobs = state
                .queues()
                .list(&queue, list_state.into(), 0, SEARCH_DEPTH)
                .await?;
            truncated |= jobs.len() > SEARCH_DEPTH;
            for job in jobs.into_iter().take(SEARCH_DEPTH) {
                scanned += 1;
                if mine(&job) && matches(&job) && seen.insert((queue.clone(), job.id.clone())) {
                    found.push(job);
                }
            }
        }
    }
    found.sort_by_key(|j| std::cmp::Reverse(j.timestamp));
    found.truncate(limit);
    Ok(Json(SearchResult {
        jobs: found,
        scanned,
        truncated,
    }))
}
