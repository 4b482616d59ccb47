//! `POST /v1/flows`: add a parent job with children (possibly on other
//! queues) that must finish first — BullMQ's FlowProducer, atomically.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};

use super::ApiState;
use super::auth::{Caller, Role};
use super::error::{ApiError, ErrorBody, JsonBody};
use super::lookup::check_data_size;
use crate::queue::{FlowNode, FlowSpec};
use crate::registry::RegistryError;
use crate::traces;

/// Add a flow. Every queue in the tree must be bound (a job on an unbound
/// queue would wait forever), and each node takes its queue binding's
/// default job options where it sets none. A child's `onFailure` says what
/// its failure does to the parent: `fail` (default), `ignore`, `remove` or
/// `continue`. A node whose `jobId` names a job that exists is refused
/// (409, naming the node): a flow never adopts an existing job.
#[utoipa::path(
    post,
    operation_id = "flows_add",
    path = "/v1/flows",
    tag = "flows",
    params(
        ("traceparent" = Option<String>, Header, description = "W3C trace context: every job of the flow joins this trace (under the flow's `add` span when the host exports traces). Malformed: ignored."),
        ("tracestate" = Option<String>, Header, description = "W3C trace state, carried with `traceparent`.")
    ),
    request_body = FlowSpec,
    responses(
        (status = 202, description = "Added", body = FlowNode),
        (status = 400, description = "Invalid request (the error names the field)", body = ErrorBody),
        (status = 404, description = "A queue of the tree is not bound", body = ErrorBody),
        (status = 409, description = "A node's jobId names a job that exists", body = ErrorBody),
        (status = 413, description = "Body or job data too large", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub async fn add(
    State(state): State<ApiState>,
    caller: Caller,
    headers: HeaderMap,
    JsonBody(mut spec): JsonBody<FlowSpec>,
) -> Result<(StatusCode, Json<FlowNode>), ApiError> {
    caller.require(&[Role::Producer])?;
    spec.validate()?;
    apply_defaults(&state, &caller, &mut spec, String::new()).await?;
    // Every job of the flow joins one trace (`crate::traces`).
    let send = traces::Send::start(&state.host().traces, &headers, "add", &spec.queue);
    let added = state
        .queues()
        .add_traced_flow(&spec, Some(caller.name.as_str()), send.metadata())
        .await;
    send.end_with(&added, |node| vec![node.id.clone()]);
    Ok((StatusCode::ACCEPTED, Json(added?)))
}

/// Checks that every node's queue is bound and its data fits, and fills
/// its options from the binding's defaults.
async fn apply_defaults(
    state: &ApiState,
    caller: &Caller,
    node: &mut FlowSpec,
    path: String,
) -> Result<(), ApiError> {
    let at = |f: &str| {
        if path.is_empty() {
            f.to_string()
        } else {
            format!("{path}.{f}")
        }
    };
    check_data_size(state, &at("data"), &node.data)?;
    // A queue outside the caller's scope is as if unbound.
    let found = match caller.sees_queue(&node.queue) {
        true => state.registry().binding(&node.queue).await,
        false => Err(RegistryError::unbound(&node.queue)),
    };
    let binding = match found {
        Ok(b) => b,
        Err(e @ RegistryError::NotFound(_)) => {
            let mut err = ApiError::from(e);
            err.detail.field = Some(at("queue"));
            return Err(err);
        }
        Err(e) => return Err(e.into()),
    };
    node.opts = node.opts.with_defaults(&binding.default_job_options);
    node.opts.validate().map_err(|e| e.under(&at("opts")))?;
    for (i, child) in node.children.iter_mut().enumerate() {
        Box::pin(apply_defaults(
            state,
            caller,
            child,
            at(&format!("children[{i}]")),
        ))
        .await?;
    }
    Ok(())
}
