//! `/v1/queues/{queue}/canary`, `…/promote`, `…/rollback`: what a queue's
//! new jobs run, one step at a time (`registry::versions` says what each
//! step moves). Admin or deployer (with the queue and its handler in scope).

use axum::Json;
use axum::extract::State;
use serde::Deserialize;
use utoipa::ToSchema;

use super::ApiState;
use super::auth::{Caller, Role};
use super::error::{ApiError, ErrorBody, JsonBody, PathParams};
use super::lookup::bound;
use crate::registry::{Binding, Promotion, Rollback};

/// A canary to set.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CanaryRequest {
    /// The candidate: the digest of an uploaded version of the queue's
    /// handler (`POST /v1/handlers/{name}?candidate=true` uploads one
    /// without it taking traffic).
    #[schema(pattern = "^[0-9a-f]{64}$")]
    pub digest: String,
    /// The share of new jobs that run it, 1 to 99.
    #[serde(deserialize_with = "airlock_core::int::one")]
    #[schema(minimum = 1, maximum = 99)]
    pub percent: u8,
}

/// How far a promote or rollback reaches.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Reach {
    /// Promote: make the candidate the handler's current version, for
    /// every queue bound to it without a version of its own (default `false`:
    /// this queue alone runs it).
    #[serde(default)]
    pub all_queues: bool,
    /// Rollback: go back a version on this queue alone, never moving the
    /// handler's current version (default `false`: without a canary or a
    /// version of its own, the handler goes back for every queue bound to
    /// it).
    #[serde(default)]
    pub queue_only: bool,
}

/// Send a share of a queue's new jobs to a candidate version (admin or deployer); the
/// rest run what they ran. Replaces a canary it had.
#[utoipa::path(
    operation_id = "queues_set_canary",
    put,
    path = "/v1/queues/{queue}/canary",
    tag = "queues",
    params(("queue" = String, Path, description = "Queue name")),
    request_body = CanaryRequest,
    responses(
        (status = 200, description = "The binding, with its canary", body = Binding),
        (status = 400, description = "Bad digest or percent (the field named)", body = ErrorBody),
        (status = 404, description = "Not bound", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub async fn set_canary(
    State(state): State<ApiState>,
    caller: Caller,
    PathParams(queue): PathParams<String>,
    JsonBody(request): JsonBody<CanaryRequest>,
) -> Result<Json<Binding>, ApiError> {
    caller.require(&[Role::Deployer])?;
    // A version is the handler's: its handler must be in scope too.
    let binding = bound(&state, &caller, &queue).await?;
    caller.require_handler(&binding.handler)?;
    let binding = (state.registry())
        .set_canary(&queue, &request.digest, request.percent)
        .await?;
    let details = serde_json::json!({"digest": request.digest, "percent": request.percent});
    state.audit(&caller, "queue.canary", &queue, details).await;
    Ok(Json(binding))
}

/// Make a queue's canary candidate what its new jobs run (admin or deployer): on this
/// queue alone (its binding's `version`), or, with `allQueues`, as the
/// handler's current version for every queue bound to it without a
/// version of its own. The canary goes. Hosts see it at their next registry
/// poll (`--poll`, 500 ms); jobs already started stay on their version.
#[utoipa::path(
    operation_id = "queues_promote",
    post,
    path = "/v1/queues/{queue}/promote",
    tag = "queues",
    params(("queue" = String, Path, description = "Queue name")),
    request_body = Reach,
    responses(
        (status = 200, description = "What was promoted, and where", body = Promotion),
        (status = 404, description = "Not bound", body = ErrorBody),
        (status = 409, description = "No canary to promote", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub async fn promote(
    State(state): State<ApiState>,
    caller: Caller,
    PathParams(queue): PathParams<String>,
    JsonBody(reach): JsonBody<Reach>,
) -> Result<Json<Promotion>, ApiError> {
    caller.require(&[Role::Deployer])?;
    // A version is the handler's: its handler must be in scope too.
    let binding = bound(&state, &caller, &queue).await?;
    caller.require_handler(&binding.handler)?;
    let promotion = state.registry().promote(&queue, reach.all_queues).await?;
    let details = serde_json::to_value(&promotion).unwrap_or_default();
    state.audit(&caller, "queue.promote", &queue, details).await;
    Ok(Json(promotion))
}

/// Undo the last change to what a queue's new jobs run (admin or deployer): its
/// canary is removed; without one, a queue with a version of its own
/// (`version`) goes back to its handler's current one; else its handler
/// goes back to the version before its current one — for every queue
/// bound to that handler without a version of its own (the answer lists
/// them) — unless `queueOnly`, which gives this queue alone the version
/// before the one it runs as its own.
/// Hosts see it at their next registry poll (`--poll`, 500 ms); jobs
/// already started stay on their version.
#[utoipa::path(
    operation_id = "queues_rollback",
    post,
    path = "/v1/queues/{queue}/rollback",
    tag = "queues",
    params(("queue" = String, Path, description = "Queue name")),
    request_body = Reach,
    responses(
        (status = 200, description = "What was rolled back", body = Rollback),
        (status = 404, description = "Not bound", body = ErrorBody),
        (status = 409, description = "No canary and no earlier version", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub async fn rollback(
    State(state): State<ApiState>,
    caller: Caller,
    PathParams(queue): PathParams<String>,
    JsonBody(reach): JsonBody<Reach>,
) -> Result<Json<Rollback>, ApiError> {
    caller.require(&[Role::Deployer])?;
    // A version is the handler's: its handler must be in scope too.
    let binding = bound(&state, &caller, &queue).await?;
    caller.require_handler(&binding.handler)?;
    let rollback = state.registry().rollback(&queue, reach.queue_only).await?;
    let details = serde_json::to_value(&rollback).unwrap_or_default();
    state
        .audit(&caller, "queue.rollback", &queue, details)
        .await;
    Ok(Json(rollback))
}
