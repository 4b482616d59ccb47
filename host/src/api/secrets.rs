//! `/v1/queues/{queue}/secrets`: a queue's secrets. Admin or deployer. A value
//! goes in and never comes out: the listing has names, destinations,
//! flags and update times. Sealing needs the fleet's secrets key, so a
//! host started without one answers 503 `secrets_unavailable`.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;
use utoipa::ToSchema;

use super::ApiState;
use super::auth::{Caller, Role};
use super::error::{ApiError, ErrorBody, JsonBody, PathParams};
use super::lookup::bound;
use crate::registry::{SecretSpec, SecretView};
use crate::sandbox::secrets::SecretsKey;

/// A queue's secrets.
#[derive(Debug, Serialize, ToSchema)]
pub struct SecretList {
    /// By name.
    pub secrets: Vec<SecretView>,
}

fn key(state: &ApiState) -> Result<&SecretsKey, ApiError> {
    state.host().secrets_key.as_ref().ok_or_else(|| {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "secrets_unavailable",
            "this host has no secrets key (--secrets-key-file / AIRLOCK_SECRETS_KEY), so it cannot encrypt secrets",
        )
    })
}

/// Set (create or replace) a secret of a queue. The value is encrypted with
/// the fleet's secrets key before it reaches Redis.
#[utoipa::path(
    put,
    operation_id = "secrets_put",
    path = "/v1/queues/{queue}/secrets/{name}",
    tag = "queues",
    params(("queue" = String, Path, description = "Queue name"), ("name" = String, Path, description = "Secret name")),
    request_body = SecretSpec,
    responses(
        (status = 200, description = "OK (never the value)", body = SecretView),
        (status = 400, description = "Invalid request (the error names the field)", body = ErrorBody),
        (status = 403, description = "The token's role may not do this", body = ErrorBody),
        (status = 404, description = "Not found", body = ErrorBody),
        (status = 503, description = "No secrets key on this host, or Redis unavailable", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub async fn put(
    State(state): State<ApiState>,
    caller: Caller,
    PathParams((queue, name)): PathParams<(String, String)>,
    JsonBody(spec): JsonBody<SecretSpec>,
) -> Result<Json<SecretView>, ApiError> {
    caller.require(&[Role::Deployer])?;
    bound(&state, &caller, &queue).await?;
    let key = key(&state)?;
    let view = state
        .registry()
        .set_secret(key, &queue, &name, &spec)
        .await?;
    // The secret's name and rules; never its value.
    let details = serde_json::json!({
        "name": name,
        "allow": view.allow,
        "reveal": spec.reveal,
        "inBody": spec.in_body,
    });
    state.audit(&caller, "secret.set", &queue, details).await;
    Ok(Json(view))
}

/// A queue's secrets: names, destinations, flags, update times — never a
/// value.
#[utoipa::path(
    get,
    operation_id = "secrets_list",
    path = "/v1/queues/{queue}/secrets",
    tag = "queues",
    params(("queue" = String, Path, description = "Queue name")),
    responses(
        (status = 200, description = "OK", body = SecretList),
        (status = 403, description = "The token's role may not do this", body = ErrorBody),
        (status = 404, description = "Not found", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub async fn list(
    State(state): State<ApiState>,
    caller: Caller,
    PathParams(queue): PathParams<String>,
) -> Result<Json<SecretList>, ApiError> {
    caller.require(&[Role::Deployer])?;
    bound(&state, &caller, &queue).await?;
    let key = state.host().secrets_key.as_ref();
    Ok(Json(SecretList {
        secrets: state.registry().secrets(key, &queue).await?,
    }))
}

/// Delete a secret of a queue.
#[utoipa::path(
    delete,
    operation_id = "secrets_delete",
    path = "/v1/queues/{queue}/secrets/{name}",
    tag = "queues",
    params(("queue" = String, Path, description = "Queue name"), ("name" = String, Path, description = "Secret name")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 400, description = "Invalid request (the error names the field)", body = ErrorBody),
        (status = 403, description = "The token's role may not do this", body = ErrorBody),
        (status = 404, description = "Not found", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub async fn delete(
    State(state): State<ApiState>,
    caller: Caller,
    PathParams((queue, name)): PathParams<(String, String)>,
) -> Result<StatusCode, ApiError> {
    caller.require(&[Role::Deployer])?;
    bound(&state, &caller, &queue).await?;
    if !state.registry().delete_secret(&queue, &name).await? {
        return Err(ApiError::not_found(format!("secret `{name}`")));
    }
    let details = serde_json::json!({"name": name});
    state.audit(&caller, "secret.delete", &queue, details).await;
    Ok(StatusCode::NO_CONTENT)
}
