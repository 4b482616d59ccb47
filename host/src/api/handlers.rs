//! `/v1/handlers`: upload, list, inspect and delete handler components.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::ApiState;
use super::auth::{Caller, Role};
use super::error::{ApiError, ErrorBody, PathParams, QueryParams};
use crate::registry::{HandlerDetails, HandlerVersion};

/// Query of an upload.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct UploadQuery {
    /// A version label for this upload (`v1.4.0`, a git sha), 1 to 128
    /// characters.
    #[param(min_length = 1, max_length = 128)]
    pub version: Option<String>,
    /// `true`: store it as a candidate — the current version and every
    /// queue stay as they are, and no job runs it until a binding names it
    /// (`canary`, `PUT /v1/queues/{queue}/canary`). The handler must have a
    /// current version (409 otherwise). Default `false`: it becomes current.
    pub candidate: Option<bool>,
}

/// A handler as listed.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct HandlerSummary {
    /// Handler name.
    pub name: String,
    /// Current digest.
    pub digest: String,
    /// Current version label.
    pub version: Option<String>,
    /// Component size.
    pub size: usize,
    /// Upload time of the current version (ms since the epoch).
    pub uploaded_at: u64,
    /// Number of uploaded versions.
    pub versions: usize,
}

/// The handler list.
#[derive(Debug, Serialize, ToSchema)]
pub struct HandlerList {
    /// Handlers by name.
    pub handlers: Vec<HandlerSummary>,
}

/// Upload a handler component (raw `application/wasm` body). It is
/// validated — a component, exporting the Airlock `handler` world,
/// importing nothing the host does not provide — then stored under its
/// sha256 digest and made the handler's current version — or, with
/// `candidate=true`, kept beside it for a canary. The answer's `candidate`
/// says which.
#[utoipa::path(
    operation_id = "handlers_upload",
    post,
    path = "/v1/handlers/{name}",
    tag = "handlers",
    params(("name" = String, Path, description = "Handler name"), UploadQuery),
    request_body(
        description = "The component's bytes",
        content(
            (Vec<u8> = "application/wasm"),
            (Vec<u8> = "application/octet-stream")
        )
    ),
    responses(
        (status = 201, description = "Stored: current, or a candidate (`candidate`)", body = HandlerVersion),
        (status = 400, description = "Bad name or version", body = ErrorBody),
        (status = 409, description = "A candidate for a handler with no current version", body = ErrorBody),
        (status = 413, description = "Component too large", body = ErrorBody),
        (status = 415, description = "Not application/wasm", body = ErrorBody),
        (status = 422, description = "Not a valid handler component", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn upload(
    State(state): State<ApiState>,
    caller: Caller,
    PathParams(name): PathParams<String>,
    QueryParams(query): QueryParams<UploadQuery>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<(StatusCode, Json<HandlerVersion>), ApiError> {
    caller.require(&[Role::Deployer])?;
    caller.require_handler(&name)?;
    let content_type = headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if content_type != "application/wasm" && content_type != "application/octet-stream" {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "upload the component as the raw body with Content-Type: application/wasm",
        ));
    }
    let registry = state.registry();
    let version = match query.candidate {
        Some(true) => (registry.upload_candidate(&name, body.to_vec(), query.version)).await?,
        _ => registry.deploy(&name, body.to_vec(), query.version).await?,
    };
    let action = if query.candidate == Some(true) {
        "handler.upload-candidate"
    } else {
        "handler.deploy"
    };
    let details = serde_json::json!({"digest": version.digest, "version": version.version});
    state.audit(&caller, action, &name, details).await;
    Ok((StatusCode::CREATED, Json(version)))
}

/// List handlers.
#[utoipa::path(
    operation_id = "handlers_list",
    get,
    path = "/v1/handlers",
    tag = "handlers",
    responses((status = 200, description = "OK", body = HandlerList), (status = 401, description = "Missing or unknown token", body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn list(
    State(state): State<ApiState>,
    caller: Caller,
) -> Result<Json<HandlerList>, ApiError> {
    caller.require(&[Role::Reader, Role::Producer])?;
    let handlers = state
        .registry()
        .handlers()
        .await?
        .into_iter()
        .filter(|h| caller.sees_handler(&h.name))
        .map(|h| HandlerSummary {
            name: h.name,
            digest: h.current.digest,
            version: h.current.version,
            size: h.current.size,
            uploaded_at: h.current.uploaded_at,
            versions: h.versions.len(),
        })
        .collect();
    Ok(Json(HandlerList { handlers }))
}

/// A handler with its digest history and the imports/exports of its
/// current component.
#[utoipa::path(
    operation_id = "handlers_get",
    get,
    path = "/v1/handlers/{name}",
    tag = "handlers",
    params(("name" = String, Path, description = "Handler name")),
    responses((status = 200, description = "OK", body = HandlerDetails), (status = 404, description = "Not found", body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn get(
    State(state): State<ApiState>,
    caller: Caller,
    PathParams(name): PathParams<String>,
) -> Result<Json<HandlerDetails>, ApiError> {
    caller.require(&[Role::Reader, Role::Producer])?;
    caller.require_handler(&name)?;
    Ok(Json(state.registry().handler(&name).await?))
}

/// Delete a handler (refused with 409 while a queue binds it). Stored
/// components stay for jobs pinned to them.
#[utoipa::path(
    operation_id = "handlers_delete",
    delete,
    path = "/v1/handlers/{name}",
    tag = "handlers",
    params(("name" = String, Path, description = "Handler name")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "Not found", body = ErrorBody),
        (status = 409, description = "Still bound", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub async fn delete(
    State(state): State<ApiState>,
    caller: Caller,
    PathParams(name): PathParams<String>,
) -> Result<StatusCode, ApiError> {
    caller.require(&[Role::Deployer])?;
    caller.require_handler(&name)?;
    state.registry().delete_handler(&name).await?;
    state
        .audit(&caller, "handler.delete", &name, serde_json::json!({}))
        .await;
    Ok(StatusCode::NO_CONTENT)
}
