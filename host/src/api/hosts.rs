//! `/v1/hosts`: the live hosts of the fleet, and draining one.

use axum::Json;
use axum::extract::State;
use serde::Serialize;
use utoipa::ToSchema;

use super::ApiState;
use super::auth::{Caller, Role};
use super::error::{ApiError, ErrorBody, PathParams};
use crate::fleet::HostInfo;

/// The live hosts.
#[derive(Debug, Serialize, ToSchema)]
pub struct HostList {
    /// By id; hosts that stopped heartbeating age out.
    pub hosts: Vec<HostInfo>,
}

/// The live hosts: id, address, version, queues, running jobs, capacity,
/// start time, last heartbeat, state.
#[utoipa::path(
    get,
    operation_id = "hosts_list",
    path = "/v1/hosts",
    tag = "hosts",
    responses((status = 200, description = "OK", body = HostList), (status = 401, description = "Missing or unknown token", body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn list(
    State(state): State<ApiState>,
    caller: Caller,
) -> Result<Json<HostList>, ApiError> {
    caller.require(&[Role::Reader])?;
    caller.require_fleet()?;
    let hosts = state.host().fleet.hosts().await?;
    Ok(Json(HostList { hosts }))
}

async fn set_drain(state: &ApiState, id: &str, drain: bool) -> Result<Json<HostList>, ApiError> {
    let fleet = &state.host().fleet;
    if !fleet.set_drain(id, drain).await? {
        return Err(ApiError::not_found(format!("live host `{id}`")));
    }
    let hosts = fleet.hosts().await?;
    Ok(Json(HostList { hosts }))
}

/// Drain a host: it stops taking jobs and finishes the ones it runs (its
/// state goes `draining`, then `drained`). Takes effect at its next
/// heartbeat.
#[utoipa::path(
    post,
    operation_id = "hosts_drain",
    path = "/v1/hosts/{id}/drain",
    tag = "hosts",
    params(("id" = String, Path, description = "Host id")),
    responses((status = 200, description = "OK", body = HostList), (status = 404, description = "Not found", body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn drain(
    State(state): State<ApiState>,
    caller: Caller,
    PathParams(id): PathParams<String>,
) -> Result<Json<HostList>, ApiError> {
    caller.require(&[Role::Admin])?;
    let hosts = set_drain(&state, &id, true).await?;
    state
        .audit(&caller, "host.drain", &id, serde_json::json!({}))
        .await;
    Ok(hosts)
}

/// Let a drained host take jobs again.
#[utoipa::path(
    post,
    operation_id = "hosts_resume",
    path = "/v1/hosts/{id}/resume",
    tag = "hosts",
    params(("id" = String, Path, description = "Host id")),
    responses((status = 200, description = "OK", body = HostList), (status = 404, description = "Not found", body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn resume(
    State(state): State<ApiState>,
    caller: Caller,
    PathParams(id): PathParams<String>,
) -> Result<Json<HostList>, ApiError> {
    caller.require(&[Role::Admin])?;
    let hosts = set_drain(&state, &id, false).await?;
    state
        .audit(&caller, "host.resume", &id, serde_json::json!({}))
        .await;
    Ok(hosts)
}
