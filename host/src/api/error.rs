//! API errors: every failure is a status code with a JSON body naming the
//! problem — `{"error": {"code": "...", "message": "...", "field": "..."}}`.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use crate::queue::OptionError;
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

    /// 503: Redis (or another dependency) failed; the request changed nothing
    /// that a retry would double.
    pub fn unavailable(err: impl std::fmt::Display) -> Self {
        tracing::warn!(error = %err, "request failed on a dependency");
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            format!("backing store unavailable, retry later: {err}"),
        )
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(ErrorBody { error: self.detail })).into_response()
    }
}

impl From<OptionError> for ApiError {
    fn from(e: OptionError) -> Self {
        ApiError::field(e.field, e.message)
    }
}

impl From<RegistryError> for ApiError {
    fn from(e: RegistryError) -> Self {
        match e {
            RegistryError::Invalid { field, message } => ApiError::field(field, message),
            RegistryError::Component(v) => {
                let mut err =
                    ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, v.code(), v.to_string());
                err.detail.field = Some("body".into());
                err
            }
            RegistryError::NotFound(what) => ApiError::not_found(what),
            e @ RegistryError::InUse { .. } => ApiError::conflict(e.to_string()),
            RegistryError::Redis(e) => ApiError::unavailable(e),
        }
    }
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

    async fn from_request(req: axum::extract::Request, state: &S) -> Result<Self, Self::Rejection> {
        let is_json = req
            .headers()
            .get(axum::http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/json"));
        if !is_json {
            return Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                "expected a JSON body (Content-Type: application/json)",
            ));
        }
        let bytes = axum::body::Bytes::from_request(req, state)
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
            })?;
        let mut de = serde_json::Deserializer::from_slice(&bytes);
        match serde_path_to_error::deserialize(&mut de) {
            Ok(v) => Ok(JsonBody(v)),
            Err(e) => {
                let path = e.path().to_string();
                let inner = e.into_inner();
                let mut err =
                    ApiError::new(StatusCode::BAD_REQUEST, "invalid_json", inner.to_string());
                // serde names unknown and missing fields in its message;
                // the path names where in the document it happened.
                err.detail.field = Some(if path == "." { "body".into() } else { path });
                Err(err)
            }
        }
    }
}
