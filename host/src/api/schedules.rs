//! `/v1/queues/{queue}/schedules`: cron and interval schedules (BullMQ job
//! schedulers), and on-demand triggers.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;
use utoipa::ToSchema;

use super::ApiState;
use super::auth::{Caller, Role};
use super::error::{ApiError, ErrorBody, JsonBody, PathParams};
use super::lookup::bound;
use crate::queue::{Deduplication, NewJob, ScheduleSpec, ScheduleView};

/// A queue's schedules.
#[derive(Debug, Serialize, ToSchema)]
pub struct ScheduleList {
    /// Soonest first.
    pub schedules: Vec<ScheduleView>,
}

/// Result of a trigger.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Triggered {
    /// The run's job, as `<queue>:<id>`.
    pub r#ref: String,
    /// True when a run requested just before is still waiting: this request
    /// joined it instead of adding another.
    pub coalesced: bool,
}

fn check_id(id: &str) -> Result<(), ApiError> {
    Ok(crate::names::id("id", id, 128)?)
}

/// Create or replace a schedule: a cron `pattern` (with `tz`) or an `every`
/// interval; each tick enqueues one job across the whole fleet.
#[utoipa::path(
    put,
    operation_id = "schedules_put",
    path = "/v1/queues/{queue}/schedules/{id}",
    tag = "schedules",
    params(("queue" = String, Path, description = "Queue name"), ("id" = String, Path, description = "Schedule id")),
    request_body = ScheduleSpec,
    responses(
        (status = 200, description = "OK", body = ScheduleView),
        (status = 400, description = "Invalid request (the error names the field)", body = ErrorBody),
        (status = 404, description = "Not found", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub async fn put(
    State(state): State<ApiState>,
    caller: Caller,
    PathParams((queue, id)): PathParams<(String, String)>,
    JsonBody(spec): JsonBody<ScheduleSpec>,
) -> Result<Json<ScheduleView>, ApiError> {
    caller.require(&[Role::Deployer])?;
    check_id(&id)?;
    let binding = bound(&state, &caller, &queue).await?;
    spec.validate()?;
    let mut spec = spec;
    spec.opts = spec.opts.with_defaults(&binding.default_job_options);
    let view = state.queues().upsert_schedule(&queue, &id, &spec).await?;
    let details = serde_json::json!({"schedule": id, "pattern": spec.pattern, "every": spec.every});
    state.audit(&caller, "schedule.set", &queue, details).await;
    Ok(Json(view))
}

/// A queue's schedules with their next run times.
#[utoipa::path(
    get,
    operation_id = "schedules_list",
    path = "/v1/queues/{queue}/schedules",
    tag = "schedules",
    params(("queue" = String, Path, description = "Queue name")),
    responses((status = 200, description = "OK", body = ScheduleList), (status = 404, description = "Not found", body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn list(
    State(state): State<ApiState>,
    caller: Caller,
    PathParams(queue): PathParams<String>,
) -> Result<Json<ScheduleList>, ApiError> {
    caller.require(&[Role::Reader])?;
    bound(&state, &caller, &queue).await?;
    let schedules = state.queues().schedules(&queue).await?;
    Ok(Json(ScheduleList { schedules }))
}

/// One schedule.
#[utoipa::path(
    get,
    operation_id = "schedules_get",
    path = "/v1/queues/{queue}/schedules/{id}",
    tag = "schedules",
    params(("queue" = String, Path, description = "Queue name"), ("id" = String, Path, description = "Schedule id")),
    responses((status = 200, description = "OK", body = ScheduleView), (status = 404, description = "Not found", body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn get(
    State(state): State<ApiState>,
    caller: Caller,
    PathParams((queue, id)): PathParams<(String, String)>,
) -> Result<Json<ScheduleView>, ApiError> {
    caller.require(&[Role::Reader])?;
    check_id(&id)?;
    bound(&state, &caller, &queue).await?;
    state
        .queues()
        .schedule(&queue, &id)
        .await?
        .map(Json)
        .ok_or_else(|| ApiError::not_found(format!("schedule `{id}` of queue `{queue}`")))
}

/// Delete a schedule (jobs it already enqueued stay).
#[utoipa::path(
    delete,
    operation_id = "schedules_delete",
    path = "/v1/queues/{queue}/schedules/{id}",
    tag = "schedules",
    params(("queue" = String, Path, description = "Queue name"), ("id" = String, Path, description = "Schedule id")),
    responses((status = 204, description = "Deleted"), (status = 404, description = "Not found", body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn delete(
    State(state): State<ApiState>,
    caller: Caller,
    PathParams((queue, id)): PathParams<(String, String)>,
) -> Result<StatusCode, ApiError> {
    caller.require(&[Role::Deployer])?;
    check_id(&id)?;
    bound(&state, &caller, &queue).await?;
    if !state.queues().remove_schedule(&queue, &id).await? {
        return Err(ApiError::not_found(format!(
            "schedule `{id}` of queue `{queue}`"
        )));
    }
    let details = serde_json::json!({"schedule": id});
    state
        .audit(&caller, "schedule.delete", &queue, details)
        .await;
    Ok(StatusCode::NO_CONTENT)
}

/// Run a schedule now, with its template (admin, deployer or `cron` token — the
/// `Authorization: Bearer CRON_SECRET` pattern). Refused with 409 while a
/// run of the schedule is active; a trigger arriving while the previous
/// trigger still waits joins it (`coalesced`). Never doubled.
#[utoipa::path(
    post,
    operation_id = "schedules_trigger",
    path = "/v1/queues/{queue}/schedules/{id}/trigger",
    tag = "schedules",
    params(("queue" = String, Path, description = "Queue name"), ("id" = String, Path, description = "Schedule id")),
    responses(
        (status = 202, description = "Enqueued (or joined a waiting trigger)", body = Triggered),
        (status = 404, description = "Not found", body = ErrorBody),
        (status = 409, description = "A run of this schedule is active", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub async fn trigger(
    State(state): State<ApiState>,
    caller: Caller,
    PathParams((queue, id)): PathParams<(String, String)>,
) -> Result<(StatusCode, Json<Triggered>), ApiError> {
    caller.require(&[Role::Cron])?;
    check_id(&id)?;
    let binding = bound(&state, &caller, &queue).await?;
    let schedule = state
        .queues()
        .schedule(&queue, &id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("schedule `{id}` of queue `{queue}`")))?;
    if let Some(running) = state.queues().schedule_running(&queue, &id).await? {
        let mut err = ApiError::conflict(format!(
            "schedule `{id}` is running right now (job {queue}:{running}); try again when it finishes"
        ));
        err.detail.code = "already_running".into();
        return Err(err);
    }
    let mut opts = binding.default_job_options.to_job_options();
    let now = airlock_core::clock::now_ms();
    opts.job_id = Some(format!("trigger-{id}-{now}"));
    // Until this run finishes, another trigger finds it and joins it.
    opts.deduplication = Some(Deduplication {
        id: format!("trigger:{id}"),
        ttl: None,
        ..Default::default()
    });
    let added = state
        .queues()
        .add(
            &queue,
            NewJob {
                name: schedule.name.clone(),
                data: schedule.data.clone().unwrap_or(serde_json::Value::Null),
                opts,
                producer: None,
                trace: None,
                parent: None,
            },
        )
        .await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(Triggered {
            r#ref: airlock_core::job_ref::join(&queue, &added.id),
            coalesced: added.duplicate,
        }),
    ))
}
