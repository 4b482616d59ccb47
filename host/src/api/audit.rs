//! `GET /v1/audit`: the audit log (admin), newest first, filtered
//! (`crate::audit`). Each entry says whether its seal verifies; the
//! listing names the numbers missing among the entries read.

use axum::Json;
use axum::extract::State;
use serde::Deserialize;
use utoipa::IntoParams;

use super::ApiState;
use super::auth::{Caller, Role};
use super::error::{ApiError, ErrorBody, QueryParams};
use crate::audit::{AuditListing, Filter, MAX_SCANNED};

/// Most entries one answer holds.
pub const MAX_LIMIT: u64 = 1000;
/// The latest time a query may name: the end of the year 9999, in ms.
pub const MAX_TIME_MS: u64 = 253_402_300_799_999;

/// What to list.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct AuditQuery {
    /// Only this token's changes (its name).
    #[serde(default)]
    pub who: Option<String>,
    /// Only actions starting with this (`queue.`, `secret.set`).
    #[serde(default)]
    pub action: Option<String>,
    /// Only changes to this queue, handler, token, host or job.
    #[serde(default)]
    pub target: Option<String>,
    /// Not before this time, ms since the epoch (by Redis's clock, which
    /// stamped the entry's stream id). After `until`: nothing matches.
    #[serde(default, deserialize_with = "airlock_core::int::query_opt")]
    #[param(value_type = Option<u64>, minimum = 0, maximum = 253402300799999_u64)]
    pub since: Option<u64>,
    /// Not after this time, ms since the epoch (Redis's clock).
    #[serde(default, deserialize_with = "airlock_core::int::query_opt")]
    #[param(value_type = Option<u64>, minimum = 0, maximum = 253402300799999_u64)]
    pub until: Option<u64>,
    /// At most this many entries (default 100, at most 1,000).
    #[serde(default, deserialize_with = "airlock_core::int::query_opt")]
    #[param(value_type = Option<u64>, minimum = 1, maximum = 1000)]
    pub limit: Option<u64>,
}

/// The audit log (admin): every change made through the API — who (the
/// token's name and role), what, to what, when, from where — newest first.
/// Filters apply to the newest 10,000 entries of the time range. An entry
/// whose seal does not verify (written or altered by hand, or read on a
/// host without the fleet key) says `sealed: false`; `gaps` names entry
/// numbers missing among those read (entries removed by hand).
#[utoipa::path(
    get,
    operation_id = "audit_list",
    path = "/v1/audit",
    tag = "audit",
    params(AuditQuery),
    responses(
        (status = 200, description = "OK", body = AuditListing),
        (status = 400, description = "Invalid query (the error names the parameter)", body = ErrorBody),
        (status = 403, description = "The token's role may not do this", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub async fn list(
    State(state): State<ApiState>,
    caller: Caller,
    QueryParams(query): QueryParams<AuditQuery>,
) -> Result<Json<AuditListing>, ApiError> {
    caller.require(&[Role::Admin])?;
    let limit = query.limit.unwrap_or(100);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(ApiError::field(
            "limit",
            format!("must be 1 to {MAX_LIMIT}"),
        ));
    }
    for (name, ms) in [("since", query.since), ("until", query.until)] {
        if ms.is_some_and(|ms| ms > MAX_TIME_MS) {
            return Err(ApiError::field(
                name,
                format!("must be at most {MAX_TIME_MS} (ms: the end of the year 9999)"),
            ));
        }
    }
    let filter = Filter {
        who: query.who,
        action: query.action,
        target: query.target,
        since: query.since,
        until: query.until,
        limit: (limit as usize).min(MAX_SCANNED),
    };
    let listing = state
        .audit_log()
        .list(&filter)
        .await
        .map_err(ApiError::outcome_unknown)?;
    Ok(Json(listing))
}
