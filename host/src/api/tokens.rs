//! `POST /v1/tokens/{token}/complete`: complete a durable wait's token
//! (`context.wait-for-token`), for a person's approval or a third party's
//! callback.
//!
//! The token is the credential: it is 244 random bits that only the job's
//! handler (`context.wait-token`) and the callers it handed them to know,
//! so the route takes no `Authorization` header — a third party calling
//! back has no Airlock token. It is single use: the first completion is the
//! wait's outcome; later ones (and any after the wait timed out) get 409.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;

use super::ApiState;
use super::error::{ApiError, ErrorBody, JsonBody, PathParams};
use super::lookup::check_data_size;
use crate::state::waits::TokenCompletion;

/// A completed token.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct TokenCompleted {
    /// Always true: the wait has this result, and its job runs again.
    pub completed: bool,
}

/// Complete a wait token with a JSON result: any JSON value, which the
/// waiting job's `wait-for-token` returns. No bearer token is needed (the
/// wait token in the path is the credential); a token that is unknown,
/// expired or whose job is gone answers 404, a used one 409.
#[utoipa::path(
    operation_id = "tokens_complete",
    post,
    path = "/v1/tokens/{token}/complete",
    tag = "jobs",
    params(("token" = String, Path, description = "The wait token (`wt_` and 64 hex digits)")),
    request_body(content = Value, description = "The result: any JSON value"),
    responses(
        (status = 202, description = "Completed: the waiting job runs again", body = TokenCompleted),
        (status = 400, description = "The body is not JSON", body = ErrorBody),
        (status = 404, description = "No such token (or its job is gone)", body = ErrorBody),
        (status = 409, description = "Already completed, or the wait timed out", body = ErrorBody),
        (status = 413, description = "Result too large", body = ErrorBody)
    )
)]
pub async fn complete(
    State(state): State<ApiState>,
    PathParams(token): PathParams<String>,
    JsonBody(result): JsonBody<serde_json::Value>,
) -> Result<(StatusCode, Json<TokenCompleted>), ApiError> {
    check_data_size(&state, "body", &result)?;
    let queues = state.queues();
    let waits = &queues.state().waits;
    match waits.complete_token(&token, &result, queues).await? {
        TokenCompletion::Completed => Ok((
            StatusCode::ACCEPTED,
            Json(TokenCompleted { completed: true }),
        )),
        TokenCompletion::AlreadyDone => Err(ApiError::conflict(
            "this token was used already, or its wait timed out",
        )),
        // The token itself is never echoed: error bodies land in logs.
        TokenCompletion::Unknown => Err(ApiError::not_found("token")),
    }
}
