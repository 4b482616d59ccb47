//! Fail fast while Redis is down: API requests get `503 unavailable` at once
//! instead of hanging on a connection that is busy reconnecting, and no
//! request (bar the long-lived `wait` and event streams) runs unbounded.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::ApiState;
use super::error::ApiError;
use crate::store::Store;

/// Longest a regular API request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);
/// How often, and how patiently, Redis is checked.
const PROBE_EVERY: Duration = Duration::from_millis(250);
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// Whether Redis answered its last probe.
#[derive(Clone)]
pub struct RedisHealth {
    up: Arc<AtomicBool>,
}

impl RedisHealth {
    /// Starts probing `store` in the background.
    pub fn watch(store: Store) -> Self {
        let up = Arc::new(AtomicBool::new(true));
        let flag = up.clone();
        tokio::spawn(async move {
            loop {
                let ok = tokio::time::timeout(PROBE_TIMEOUT, store.ping())
                    .await
                    .unwrap_or(false);
                if flag.swap(ok, Ordering::Relaxed) != ok {
                    if ok {
                        tracing::info!("Redis is reachable again");
                    } else {
                        tracing::warn!(
                            "Redis is unreachable; the API answers 503 until it is back"
                        );
                    }
                }
                tokio::time::sleep(PROBE_EVERY).await;
            }
        });
        RedisHealth { up }
    }

    /// Whether Redis answered its last probe.
    pub fn is_up(&self) -> bool {
        self.up.load(Ordering::Relaxed)
    }
}

fn long_lived(path: &str) -> bool {
    path.ends_with("/events") || path.ends_with("/wait")
}

/// The middleware.
pub async fn guard(State(state): State<ApiState>, req: Request, next: Next) -> Response {
    let path = req.uri().path().to_string();
    if path == "/healthz" || path == "/readyz" {
        return next.run(req).await;
    }
    if !state.redis_health().is_up() {
        return ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            "Redis is unreachable; nothing was changed, retry later",
        )
        .into_response();
    }
    if long_lived(&path) {
        return next.run(req).await;
    }
    match tokio::time::timeout(REQUEST_TIMEOUT, next.run(req)).await {
        Ok(response) => response,
        Err(_) => ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            "the request timed out waiting for Redis; retry later",
        )
        .into_response(),
    }
}
