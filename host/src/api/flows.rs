//! `POST /v1/flows`: add a parent job with children (possibly on other
//! queues) that must finish first — BullMQ's FlowProducer, atomically.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;

use super::ApiState;
use super::auth::{Caller, Role};
use super::error::{ApiError, ErrorBody, JsonBody};
use crate::queue::{FlowNode, FlowSpec, fields};

fn mark_producer<'a>(node: &'a FlowNode, out: &mut Vec<&'a FlowNode>) {
    out.push(node);
    for child in &node.children {
        mark_producer(child, out);
    }
}

/// Add a flow. Every queue in the tree must be bound (a job on an unbound
/// queue would wait forever). A child's `onFailure` says what its failure
/// does to the parent: `fail` (default), `ignore`, `remove` or `continue`.
#[utoipa::path(
    post,
    operation_id = "flows_add",
    path = "/v1/flows",
    tag = "flows",
    request_body = FlowSpec,
    responses(
        (status = 202, description = "Added", body = FlowNode),
        (status = 400, description = "Invalid request (the error names the field)", body = ErrorBody),
        (status = 404, description = "A queue of the tree is not bound", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub async fn add(
    State(state): State<ApiState>,
    caller: Caller,
    JsonBody(spec): JsonBody<FlowSpec>,
) -> Result<(StatusCode, Json<FlowNode>), ApiError> {
    caller.require(&[Role::Producer])?;
    spec.validate()?;
    for (path, node) in spec.nodes() {
        let field = if path.is_empty() {
            "queue".to_string()
        } else {
            format!("{path}.queue")
        };
        match state.registry().binding(&node.queue).await {
            Ok(binding) => {
                let size = serde_json::to_vec(&node.data).map(|v| v.len()).unwrap_or(0);
                if size > state.limits().max_job_data_bytes {
                    return Err(ApiError::new(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        "job_data_too_large",
                        format!("{path} data is {size} bytes, over the limit"),
                    ));
                }
                let _ = binding;
            }
            Err(crate::registry::RegistryError::NotFound(_)) => {
                let mut err = ApiError::not_found(format!("binding of queue `{}`", node.queue));
                err.detail.field = Some(field);
                return Err(err);
            }
            Err(e) => return Err(e.into()),
        }
    }
    let added = state
        .queues()
        .add_flow(&spec)
        .await
        .map_err(ApiError::unavailable)?;
    let mut nodes = Vec::new();
    mark_producer(&added, &mut nodes);
    for node in nodes {
        let _ = state
            .queues()
            .set_job_field(&node.queue, &node.id, fields::PRODUCER, &caller.name)
            .await;
    }
    Ok((StatusCode::ACCEPTED, Json(added)))
}
