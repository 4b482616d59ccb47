//! `/v1/api-tokens`: managed API tokens (admin), created, listed, rotated
//! and revoked while the fleet runs (`crate::access`). A token's secret is
//! in the answer that creates or rotates it, and nowhere else: not in the
//! listing, not in Redis (its digest only), not in a log. Tokens of
//! `--tokens`/`--tokens-file` are listed (name and role) but changed only
//! where they are configured. A host without the fleet's key answers 503
//! `api_tokens_unavailable` to every change (it could not seal them).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::ApiState;
use super::auth::{Caller, Role};
use super::error::{ApiError, ErrorBody, JsonBody, PathParams};
use crate::access::{AccessError, ManagedToken, ManagedTokens, Scope};
use airlock_core::clock::now_ms;

/// Longest a managed token may live: ten years.
pub const MAX_EXPIRES_IN_SECONDS: u64 = 10 * 365 * 24 * 60 * 60;

/// A token to create.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewToken {
    /// Its name (1–128 of `A-Za-z0-9._-`): the caller's name in the API,
    /// and the producer of the jobs it enqueues. A live token of the name
    /// (managed or configured) is refused (409).
    #[schema(pattern = r"^[A-Za-z0-9._-]{1,128}$")]
    pub name: String,
    /// What it may do: `admin`, `deployer`, `producer`, `reader` or
    /// `cron`.
    pub role: Role,
    /// The queues and handlers it is limited to: outside them every route
    /// answers as if they did not exist (404), and fleet-wide routes
    /// (hosts, metrics) answer 403. Without it, the whole fleet. An
    /// `admin` token cannot have one (use `deployer`).
    #[serde(default)]
    pub scope: Option<Scope>,
    /// Seconds until it stops working (1 to ten years); without it, it
    /// works until revoked.
    #[serde(default, deserialize_with = "airlock_core::int::opt")]
    #[schema(minimum = 1, maximum = 315360000)]
    pub expires_in_seconds: Option<u64>,
}

/// A token as listed: never its secret.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokenView {
    /// Its name.
    pub name: String,
    /// What it may do.
    pub role: Role,
    /// The queues and handlers it is limited to; absent: the whole fleet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<Scope>,
    /// `managed` (created through the API) or `configured` (`--tokens`,
    /// `--tokens-file`: no times).
    pub source: String,
    /// When it was created or last rotated, ms since the epoch.
    pub created_at: Option<u64>,
    /// The token that created or last rotated it.
    pub created_by: Option<String>,
    /// When it stops working.
    pub expires_at: Option<u64>,
    /// When an API host last saw it used (written every 10 s).
    pub last_used_at: Option<u64>,
    /// When it was revoked: it works no more.
    pub revoked_at: Option<u64>,
    /// The token that revoked it.
    pub revoked_by: Option<String>,
}

impl TokenView {
    fn managed(token: ManagedToken, last_used_at: Option<u64>) -> TokenView {
        TokenView {
            name: token.name,
            role: token.role,
            scope: token.scope,
            source: "managed".into(),
            created_at: Some(token.created_at),
            created_by: Some(token.created_by),
            expires_at: token.expires_at,
            last_used_at,
            revoked_at: token.revoked_at,
            revoked_by: token.revoked_by,
        }
    }
}

/// A token just created or rotated, with its secret: shown this once.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct IssuedToken {
    /// The token.
    #[serde(flatten)]
    pub view: TokenView,
    /// Its secret (`alt_` and 64 hex digits), for `Authorization: Bearer`.
    /// Not shown again: Airlock keeps its digest only.
    pub token: String,
}

/// The tokens.
#[derive(Debug, Serialize, ToSchema)]
pub struct TokenList {
    /// Configured ones first, then managed ones by name (revoked ones
    /// too).
    pub tokens: Vec<TokenView>,
}

fn managed(state: &ApiState) -> Result<&ManagedTokens, ApiError> {
    state.managed_tokens().map(|m| m.as_ref()).ok_or_else(|| {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "api_tokens_unavailable",
            "this host has no fleet key (--artifact-key-file / AIRLOCK_ARTIFACT_KEY), so it can neither seal nor take managed tokens",
        )
    })
}

fn refused(e: AccessError) -> ApiError {
    match e {
        AccessError::Exists(name) => ApiError::conflict(format!(
            "a live token named `{name}` exists: revoke it first"
        )),
        AccessError::NotFound(name) => ApiError::not_found(format!("managed token `{name}`")),
        AccessError::Redis(e) => ApiError::outcome_unknown(e),
    }
}

/// Create a managed token (admin). The answer holds its secret, shown this
/// once; every API host of the fleet takes it within about a second.
#[utoipa::path(
    post,
    operation_id = "api_tokens_create",
    path = "/v1/api-tokens",
    tag = "tokens",
    request_body = NewToken,
    responses(
        (status = 201, description = "Created, with its secret", body = IssuedToken),
        (status = 400, description = "Invalid request (the error names the field)", body = ErrorBody),
        (status = 403, description = "The token's role may not do this", body = ErrorBody),
        (status = 409, description = "A live token has the name", body = ErrorBody),
        (status = 503, description = "No fleet key on this host, or Redis unavailable", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub async fn create(
    State(state): State<ApiState>,
    caller: Caller,
    JsonBody(new): JsonBody<NewToken>,
) -> Result<(StatusCode, Json<IssuedToken>), ApiError> {
    caller.require(&[Role::Admin])?;
    crate::names::handler("name", &new.name)?;
    let expires_at = match new.expires_in_seconds {
        None => None,
        Some(s) if (1..=MAX_EXPIRES_IN_SECONDS).contains(&s) => Some(now_ms() + s * 1000),
        Some(_) => {
            return Err(ApiError::field(
                "expiresInSeconds",
                format!("must be 1 to {MAX_EXPIRES_IN_SECONDS} (ten years)"),
            ));
        }
    };
    if let Some(scope) = &new.scope {
        if new.role == Role::Admin {
            return Err(ApiError::field(
                "scope",
                "an admin token is the whole fleet's: give a scoped token the deployer role",
            ));
        }
        scope.validate()?;
    }
    let managed = managed(&state)?;
    if state.tokens().names().iter().any(|(n, _)| *n == new.name) {
        return Err(ApiError::conflict(format!(
            "`{}` is a configured token's name (--tokens)",
            new.name
        )));
    }
    let (token, secret) = managed
        .create(&new.name, new.role, new.scope, expires_at, &caller.name)
        .await
        .map_err(refused)?;
    let details = serde_json::json!({
        "role": token.role,
        "scope": token.scope,
        "expiresAt": token.expires_at,
    });
    state
        .audit(&caller, "token.create", &token.name, details)
        .await;
    Ok((
        StatusCode::CREATED,
        Json(IssuedToken {
            view: TokenView::managed(token, None),
            token: secret,
        }),
    ))
}

/// The fleet's tokens (admin): names, roles, times, last use — never a
/// secret. Configured tokens are listed on a host without the fleet key
/// too.
#[utoipa::path(
    get,
    operation_id = "api_tokens_list",
    path = "/v1/api-tokens",
    tag = "tokens",
    responses(
        (status = 200, description = "OK", body = TokenList),
        (status = 403, description = "The token's role may not do this", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub async fn list(
    State(state): State<ApiState>,
    caller: Caller,
) -> Result<Json<TokenList>, ApiError> {
    caller.require(&[Role::Admin])?;
    let mut tokens: Vec<TokenView> = state
        .tokens()
        .names()
        .into_iter()
        .map(|(name, role)| TokenView {
            name,
            role,
            scope: None,
            source: "configured".into(),
            created_at: None,
            created_by: None,
            expires_at: None,
            last_used_at: None,
            revoked_at: None,
            revoked_by: None,
        })
        .collect();
    if let Some(managed) = state.managed_tokens() {
        let listed = managed.list().await.map_err(refused)?;
        tokens.extend(
            listed
                .into_iter()
                .map(|(token, used)| TokenView::managed(token, used)),
        );
    }
    Ok(Json(TokenList { tokens }))
}

/// Revoke a managed token (admin): it stops working on every API host
/// within about a second. Its record stays, marked revoked.
#[utoipa::path(
    delete,
    operation_id = "api_tokens_revoke",
    path = "/v1/api-tokens/{name}",
    tag = "tokens",
    params(("name" = String, Path, description = "Token name")),
    responses(
        (status = 200, description = "Revoked", body = TokenView),
        (status = 403, description = "The token's role may not do this", body = ErrorBody),
        (status = 404, description = "No live managed token has the name", body = ErrorBody),
        (status = 503, description = "No fleet key on this host, or Redis unavailable", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub async fn revoke(
    State(state): State<ApiState>,
    caller: Caller,
    PathParams(name): PathParams<String>,
) -> Result<Json<TokenView>, ApiError> {
    caller.require(&[Role::Admin])?;
    let token = managed(&state)?
        .revoke(&name, &caller.name)
        .await
        .map_err(refused)?;
    state
        .audit(&caller, "token.revoke", &name, serde_json::json!({}))
        .await;
    Ok(Json(TokenView::managed(token, None)))
}

/// Give a managed token a new secret (admin): the old secret stops working
/// on every API host within about a second; the answer holds the new one,
/// shown this once.
#[utoipa::path(
    post,
    operation_id = "api_tokens_rotate",
    path = "/v1/api-tokens/{name}/rotate",
    tag = "tokens",
    params(("name" = String, Path, description = "Token name")),
    responses(
        (status = 200, description = "Rotated, with its new secret", body = IssuedToken),
        (status = 403, description = "The token's role may not do this", body = ErrorBody),
        (status = 404, description = "No live managed token has the name", body = ErrorBody),
        (status = 503, description = "No fleet key on this host, or Redis unavailable", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub async fn rotate(
    State(state): State<ApiState>,
    caller: Caller,
    PathParams(name): PathParams<String>,
) -> Result<Json<IssuedToken>, ApiError> {
    caller.require(&[Role::Admin])?;
    let (token, secret) = managed(&state)?
        .rotate(&name, &caller.name)
        .await
        .map_err(refused)?;
    state
        .audit(&caller, "token.rotate", &name, serde_json::json!({}))
        .await;
    Ok(Json(IssuedToken {
        view: TokenView::managed(token, None),
        token: secret,
    }))
}
