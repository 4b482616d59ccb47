//! API errors: every failure is a status code with a JSON body naming the
//! problem — `{"error": {"code": "...", "message": "...", "field": "..."}}`.
//!
//! The layers below return typed errors ([`FieldError`], [`QueueError`],
//! [`RegistryError`]); this module is the one place that turns them into
//! statuses. The extractors here ([`JsonBody`], [`QueryParams`],
//! [`PathParams`]) reject bad input in the same shape, naming the field, and
//! [`json_errors`] rewrites whatever axum itself answers (an unknown route,
//! a wrong method, an oversized body) into it too.

use axum::Json;
use axum::extract::{FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use crate::delivery::DeliveryError;
use crate::error::{FieldError, QueueError};
use crate::registry::RegistryError;

/// The body of every error response.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// The error.
    pub error: ErrorDetail,
}

/// What went wrong.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorDetail {
    /// Machine-readable code (`invalid_field`, `not_found`, `unauthorized`...).
    pub code: String,
    /// Human-readable explanation.
    pub message: String,
    /// The offending request field, when one is to blame.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

/// An error response.
#[derive(Debug)]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// Body.
    pub detail: ErrorDetail,
}

/// What a 503 for a failure during the request says: it cannot know whether
/// a write that was under way took effect.
const OUTCOME_UNKNOWN: &str = "Redis failed while the request ran, so whether a change it asked for \
     took effect is unknown. Retrying is safe for reads, and for an enqueue that carries a jobId \
     or an Idempotency-Key header (it is then never doubled)";

impl ApiError {
    /// An error with status, code and message.
    pub fn new(status: StatusCode, code: &str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            detail: ErrorDetail {
                code: code.to_string(),
                message: message.into(),
                field: None,
            },
        }
    }

    /// 400 naming a field.
    pub fn field(field: impl Into<String>, message: impl Into<String>) -> Self {
        let mut e = ApiError::new(StatusCode::BAD_REQUEST, "invalid_field", message);
        e.detail.field = Some(field.into());
        e
    }

    /// 404.
    pub fn not_found(what: impl Into<String>) -> Self {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("{} not found", what.into()),
        )
    }

    /// 409.
    pub fn conflict(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::CONFLICT, "conflict", message)
    }

    /// 503 for a dependency that failed while the request ran: the outcome
    /// of a write is unknown (see [`OUTCOME_UNKNOWN`]).
    pub fn outcome_unknown(err: impl std::fmt::Display) -> Self {
        tracing::warn!(error = %err, "request failed on a dependency");
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            format!("{OUTCOME_UNKNOWN}: {err}"),
        )
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(ErrorBody { error: self.detail })).into_response()
    }
}

impl From<FieldError> for ApiError {
    fn from(e: FieldError) -> Self {
        ApiError::field(e.field, e.message)
    }
}

impl From<QueueError> for ApiError {
    fn from(e: QueueError) -> Self {
        match e {
            QueueError::Invalid(f) => f.into(),
            QueueError::NotFound(what) => ApiError::not_found(what),
            QueueError::Conflict(f) => {
                let mut err = ApiError::conflict(f.message);
                err.detail.field = Some(f.field);
                err
            }
            QueueError::WrongState(message) => ApiError::conflict(message),
            QueueError::Unavailable(message) => ApiError::outcome_unknown(message),
            QueueError::Internal(message) => {
                tracing::error!(error = %message, "internal error");
                ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
            }
        }
    }
}

impl From<RegistryError> for ApiError {
    fn from(e: RegistryError) -> Self {
        match e {
            RegistryError::Invalid(f) => f.into(),
            RegistryError::Component(v) => {
                let mut err =
                    ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, v.code(), v.to_string());
                err.detail.field = Some("body".into());
                err
            }
            RegistryError::NotFound(what) => ApiError::not_found(what),
            e @ RegistryError::MissingHandler(_) => {
                let mut err = ApiError::new(StatusCode::NOT_FOUND, "not_found", e.to_string());
                err.detail.field = Some("handler".into());
                err
            }
            e @ RegistryError::InUse { .. } => ApiError::conflict(e.to_string()),
            RegistryError::Conflict(message) => ApiError::conflict(message),
            RegistryError::Redis(e) => ApiError::outcome_unknown(format!("{e:#}")),
        }
    }
}

impl From<DeliveryError> for ApiError {
    fn from(e: DeliveryError) -> Self {
        match e {
            DeliveryError::Queue(e) => e.into(),
            DeliveryError::Registry(e) => e.into(),
        }
    }
}

/// The error for a body serde refused: its path in the document names the
/// field (`jobs[1].opts.priority`), `body` for the document itself.
fn decode_error(e: serde_path_to_error::Error<serde_json::Error>) -> ApiError {
    let path = e.path().to_string();
    let inner = e.into_inner();
    let mut err = ApiError::new(StatusCode::BAD_REQUEST, "invalid_json", inner.to_string());
    err.detail.field = Some(if path == "." { "body".into() } else { path });
    err
}

/// Parses a whole JSON document: trailing bytes after the value are an
/// error, not ignored, and an array where the document says object is
/// refused ([`airlock_core::strict`]), not filled in by position.
pub fn parse_json<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(airlock_core::strict::Strict(&mut de))
        .map_err(decode_error)?;
    de.end().map_err(|e| {
        let mut err = ApiError::new(StatusCode::BAD_REQUEST, "invalid_json", e.to_string());
        err.detail.field = Some("body".into());
        err
    })?;
    Ok(value)
}

/// A JSON body extractor whose rejections are [`ApiError`]s naming the
/// field (serde's path) instead of axum's plain-text 422.
pub struct JsonBody<T>(pub T);

impl<S, T> axum::extract::FromRequest<S> for JsonBody<T>
where
    S: Send + Sync,
    T: serde::de::DeserializeOwned,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let is_json = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
        if !is_json {
            return Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                "expected a JSON body (Content-Type: application/json)",
            ));
        }
        let bytes = body_bytes(req, state).await?;
        Ok(JsonBody(parse_json(&bytes)?))
    }
}

/// The raw body, with axum's rejections (an oversized body above all) as
/// [`ApiError`]s.
pub async fn body_bytes<S: Send + Sync>(
    req: Request,
    state: &S,
) -> Result<axum::body::Bytes, ApiError> {
    use axum::extract::FromRequest;
    axum::body::Bytes::from_request(req, state)
        .await
        .map_err(|e| {
            if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "body_too_large",
                    e.body_text(),
                )
            } else {
                ApiError::new(StatusCode::BAD_REQUEST, "bad_body", e.body_text())
            }
        })
}

/// A query-string extractor whose rejections name the parameter.
pub struct QueryParams<T>(pub T);

impl<S, T> FromRequestParts<S> for QueryParams<T>
where
    S: Send + Sync,
    T: serde::de::DeserializeOwned,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        let query = parts.uri.query().unwrap_or_default();
        let de = serde_urlencoded::Deserializer::new(form_urlencoded::parse(query.as_bytes()));
        serde_path_to_error::deserialize(de)
            .map(QueryParams)
            .map_err(|e| {
                let path = e.path().to_string();
                let inner = e.into_inner();
                let mut err =
                    ApiError::new(StatusCode::BAD_REQUEST, "invalid_query", inner.to_string());
                err.detail.field = Some(if path == "." { "query".into() } else { path });
                err
            })
    }
}

/// A path-parameter extractor whose rejections are JSON.
pub struct PathParams<T>(pub T);

impl<S, T> FromRequestParts<S> for PathParams<T>
where
    S: Send + Sync,
    T: serde::de::DeserializeOwned + Send,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|axum::extract::Path(v)| PathParams(v))
            .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, "invalid_path", e.body_text()))
    }
}

/// Middleware: an error response that is not JSON (axum's own 404 for an
/// unknown route, 405 for a wrong method, 413 for an oversized body...)
/// becomes the JSON error shape, its text as the message.
pub async fn json_errors(req: Request, next: Next) -> Response {
    let response = next.run(req).await;
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if is_json {
        return response;
    }
    let (parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, 64 << 10)
        .await
        .map(|b| String::from_utf8_lossy(&b).trim().to_string())
        .unwrap_or_default();
    let code = match status {
        StatusCode::NOT_FOUND => "not_found",
        StatusCode::METHOD_NOT_ALLOWED => "method_not_allowed",
        StatusCode::PAYLOAD_TOO_LARGE => "body_too_large",
        StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported_media_type",
        s if s.is_server_error() => "internal",
        _ => "bad_request",
    };
    let message = if text.is_empty() {
        status
            .canonical_reason()
            .unwrap_or("request refused")
            .to_string()
    } else {
        text
    };
    let mut rebuilt = ApiError::new(status, code, message).into_response();
    // Keep what the original said beyond its body (`Allow` on a 405).
    for (name, value) in parts.headers.iter() {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            rebuilt.headers_mut().insert(name.clone(), value.clone());
        }
    }
    rebuilt.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    rebuilt
}
