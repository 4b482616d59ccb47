//! Health, readiness and Prometheus metrics.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;

use super::ApiState;
use super::auth::{Caller, Role};
use super::error::{ApiError, ErrorBody};
use crate::metrics::DepthLabels;

/// Liveness: the process answers.
#[utoipa::path(operation_id = "health_healthz", get, path = "/healthz", tag = "health", responses((status = 200, description = "ok", body = String)))]
pub async fn healthz() -> &'static str {
    "ok"
}

/// Readiness: Redis answered its last probe (every 250 ms). While it does
/// not, 503 with the error body (`unavailable`), its message
/// `redis unreachable: ` and the probe's error.
#[utoipa::path(
    operation_id = "health_readyz",
    get,
    path = "/readyz",
    tag = "health",
    responses((status = 200, description = "OK", body = String), (status = 503, description = "Redis unreachable: code `unavailable`, the message `redis unreachable: ` and the last probe's error", body = ErrorBody))
)]
pub async fn readyz(State(state): State<ApiState>) -> Result<&'static str, ApiError> {
    let health = state.redis_health();
    if health.is_up() {
        return Ok("ready");
    }
    let why = health.why().unwrap_or_else(|| "no answer".into());
    Err(ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "unavailable",
        format!("redis unreachable: {why}"),
    ))
}

/// Prometheus metrics: job runs by outcome and failure kind, durations,
/// fuel, memory, queue depths, live hosts. Needs a reader token (Prometheus
/// scrape configs carry one with `authorization: credentials`).
#[utoipa::path(
    operation_id = "health_metrics",
    get,
    path = "/metrics",
    tag = "health",
    responses((status = 200, description = "Prometheus text format", body = String), (status = 401, description = "Missing or unknown token", body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn metrics(
    State(state): State<ApiState>,
    caller: Caller,
) -> Result<impl IntoResponse, ApiError> {
    caller.require(&[Role::Reader])?;
    caller.require_fleet()?;
    let metrics = &state.host().metrics;
    if let Ok(bindings) = state.registry().bindings().await {
        for binding in bindings {
            if let Ok(counts) = state.queues().counts(&binding.queue).await {
                for (job_state, n) in [
                    ("waiting", counts.waiting),
                    ("active", counts.active),
                    ("delayed", counts.delayed),
                    ("prioritized", counts.prioritized),
                    ("waiting-children", counts.waiting_children),
                    ("completed", counts.completed),
                    ("failed", counts.failed),
                ] {
                    metrics
                        .queue_depth
                        .get_or_create(&DepthLabels {
                            queue: binding.queue.clone(),
                            state: job_state.to_string(),
                        })
                        .set(n as i64);
                }
            }
        }
    }
    if let Ok(hosts) = state.host().fleet.hosts().await {
        metrics.hosts.set(hosts.len() as i64);
    }
    let sandbox = &state.host().sandbox;
    metrics.compilations.set(sandbox.compilations() as i64);
    metrics
        .artifacts_refused
        .set(sandbox.artifacts_refused() as i64);
    metrics
        .registry_refused
        .set(state.registry().entries_refused() as i64);
    if let Some(managed) = state.managed_tokens() {
        metrics.api_tokens_refused.set(managed.refused() as i64);
    }
    metrics
        .audit_write_failures
        .set(state.audit_log().failed() as i64);
    Ok((
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4",
        )],
        metrics.render(),
    ))
}
