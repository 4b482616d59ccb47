//! Fail fast while Redis is down: API requests get `503 unavailable` at once
//! instead of hanging on a connection that is busy reconnecting, and no
//! request (bar the long-lived `wait` and event streams) runs unbounded.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::ApiState;
use super::error::ApiError;
use crate::store::Store;

/// Longest a regular API request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);
/// Longest an upload may take: its response waits for the component to
/// compile, which takes 5–15 s for a JavaScript or Python component alone
/// (longer on a busy host, or behind another compile: a host compiles one
/// at a time). Other requests are served meanwhile.
const UPLOAD_TIMEOUT: Duration = Duration::from_secs(300);
/// How often, and how patiently, Redis is checked.
const PROBE_EVERY: Duration = Duration::from_millis(250);
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// Whether Redis answered its last probe, and why not.
#[derive(Clone)]
pub struct RedisHealth {
    up: Arc<AtomicBool>,
    /// The last failed probe's error (Redis's or the client's words,
    /// which name no credential).
    why: Arc<std::sync::Mutex<Option<String>>>,
}

impl RedisHealth {
    /// Starts probing `store` in the background.
    pub fn watch(store: Store) -> Self {
        let up = Arc::new(AtomicBool::new(true));
        let why: Arc<std::sync::Mutex<Option<String>>> = Arc::default();
        let (flag, reason) = (up.clone(), why.clone());
        tokio::spawn(async move {
            loop {
                let failed = match tokio::time::timeout(PROBE_TIMEOUT, store.ping()).await {
                    Ok(Ok(())) => None,
                    Ok(Err(e)) => Some(e.to_string()),
                    Err(_) => Some(format!("no answer to PING within {PROBE_TIMEOUT:?}")),
                };
                let ok = failed.is_none();
                *reason.lock().unwrap_or_else(|p| p.into_inner()) = failed.clone();
                if flag.swap(ok, Ordering::Relaxed) != ok {
                    if ok {
                        tracing::info!("Redis is reachable again");
                    } else {
                        tracing::warn!(
                            why = failed.as_deref().unwrap_or_default(),
                            "Redis is unreachable; the API answers 503 until it is back"
                        );
                    }
                }
                tokio::time::sleep(PROBE_EVERY).await;
            }
        });
        RedisHealth { up, why }
    }

    /// Why the last probe failed (`None` when it did not).
    pub fn why(&self) -> Option<String> {
        self.why.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Whether Redis answered its last probe.
    pub fn is_up(&self) -> bool {
        self.up.load(Ordering::Relaxed)
    }
}

/// Whether a request is one of the long-lived reads that may outlast the
/// request timeout: `GET /v1/jobs/{ref}/wait`, `GET /v1/jobs/{ref}/events`
/// and `GET /v1/queues/{queue}/events`. Matched on method and the whole
/// path shape — `POST /v1/events` (sending an event) is a regular request.
fn long_lived(method: &Method, path: &str) -> bool {
    if method != Method::GET {
        return false;
    }
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    matches!(
        segments.as_slice(),
        ["v1", "jobs", _, "wait" | "events"] | ["v1", "queues", _, "events"]
    )
}

/// Whether a request is a handler upload (`POST /v1/handlers/{name}`).
fn is_upload(method: &Method, path: &str) -> bool {
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    method == Method::POST && matches!(segments.as_slice(), ["v1", "handlers", _])
}

/// The middleware.
pub async fn guard(State(state): State<ApiState>, req: Request, next: Next) -> Response {
    let path = req.uri().path().to_string();
    let method = req.method().clone();
    // These need no Redis: the dashboard's files among them, so it still
    // loads (and says what the API answers) while Redis is down.
    if matches!(
        path.as_str(),
        "/healthz" | "/readyz" | "/openapi.json" | "/ui"
    ) || path.starts_with("/ui/")
    {
        return next.run(req).await;
    }
    if !state.redis_health().is_up() {
        return ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            "Redis is unreachable: the request was not run, so nothing was changed; retry later",
        )
        .into_response();
    }
    if long_lived(&method, &path) {
        return next.run(req).await;
    }
    let limit = if is_upload(&method, &path) {
        UPLOAD_TIMEOUT
    } else {
        REQUEST_TIMEOUT
    };
    match tokio::time::timeout(limit, next.run(req)).await {
        Ok(response) => response,
        Err(_) => ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            "the request timed out waiting for Redis; whether a change it asked for took effect \
             is unknown. Retrying is safe for reads, and for an enqueue that carries a jobId or an \
             Idempotency-Key header",
        )
        .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_streaming_reads_are_long_lived() {
        assert!(long_lived(&Method::GET, "/v1/jobs/q:1/wait"));
        assert!(long_lived(&Method::GET, "/v1/jobs/q:1/events"));
        assert!(long_lived(&Method::GET, "/v1/queues/q/events"));
        assert!(!long_lived(&Method::POST, "/v1/events"));
        assert!(!long_lived(&Method::GET, "/v1/events"));
        assert!(!long_lived(&Method::GET, "/v1/queues/q/jobs/events"));
    }

    #[test]
    fn uploads_are_told_apart() {
        assert!(is_upload(&Method::POST, "/v1/handlers/payments"));
        assert!(!is_upload(&Method::GET, "/v1/handlers/payments"));
        assert!(!is_upload(&Method::POST, "/v1/handlers"));
        assert!(!is_upload(&Method::POST, "/v1/handlers/payments/x"));
    }
}
