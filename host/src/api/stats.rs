//! `GET /v1/me` (who a token is) and `GET /v1/stats` (runs per minute by
//! how they ended): what the dashboard needs to show the right actions and
//! its charts, on the public API like everything else it shows.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::ApiState;
use super::auth::{Caller, Role};
use super::error::{ApiError, ErrorBody, QueryParams};

/// The calling token.
#[derive(Debug, Serialize, ToSchema)]
pub struct Me {
    /// Its name (the producer recorded on the jobs it enqueues).
    pub name: String,
    /// Its role: `admin`, `producer`, `reader` or `cron`.
    pub role: String,
}

/// Who the token is: its name and role.
#[utoipa::path(
    get,
    operation_id = "me",
    path = "/v1/me",
    tag = "health",
    responses((status = 200, description = "OK", body = Me)),
    security(("bearer" = []))
)]
pub async fn me(caller: Caller) -> Json<Me> {
    let role = match caller.role {
        Role::Admin => "admin",
        Role::Producer => "producer",
        Role::Reader => "reader",
        Role::Cron => "cron",
    };
    Json(Me {
        name: caller.name,
        role: role.into(),
    })
}

/// Which minutes to tally.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct StatsQuery {
    /// How many minutes up to now (default 60, at most 1440).
    #[serde(default, deserialize_with = "airlock_core::int::query_opt")]
    #[param(minimum = 1, maximum = 1440, value_type = Option<u64>)]
    pub minutes: Option<u64>,
    /// One queue only (default: every bound queue).
    #[serde(default)]
    #[param(pattern = r"^[A-Za-z0-9._{}-]{1,128}$")]
    pub queue: Option<String>,
}

/// One minute's runs.
#[derive(Debug, Serialize, ToSchema)]
pub struct MinuteStats {
    /// The minute's start, ms since the epoch.
    pub at: u64,
    /// Runs that ended in it, by how: `completed`, a failure kind
    /// (`fuel_exhausted`, `guest_retry`...), `slept`, `waited`.
    pub runs: BTreeMap<String, u64>,
}

/// Runs per minute.
#[derive(Debug, Serialize, ToSchema)]
pub struct Stats {
    /// Oldest first, one entry per minute (empty minutes included).
    pub minutes: Vec<MinuteStats>,
}

/// Runs per minute by how they ended, over every bound queue (or one),
/// as the hosts recorded them (kept 25 hours). Jobs failed before any run
/// — a cancel mark, a rate limit, a time to finish that passed while the
/// job waited — are not runs and are not counted.
#[utoipa::path(
    get,
    operation_id = "stats",
    path = "/v1/stats",
    tag = "hosts",
    params(StatsQuery),
    responses(
        (status = 200, description = "OK", body = Stats),
        (status = 400, description = "Invalid request (the error names the field)", body = ErrorBody),
        (status = 404, description = "Queue not bound", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub async fn stats(
    State(state): State<ApiState>,
    caller: Caller,
    QueryParams(query): QueryParams<StatsQuery>,
) -> Result<Json<Stats>, ApiError> {
    caller.require(&[Role::Reader])?;
    let minutes = query.minutes.unwrap_or(60);
    if !(1..=1440).contains(&minutes) {
        return Err(ApiError::field("minutes", "must be between 1 and 1440"));
    }
    let queues = match query.queue {
        Some(queue) => {
            super::lookup::bound(&state, &queue).await?;
            vec![queue]
        }
        None => state
            .registry()
            .bindings()
            .await?
            .into_iter()
            .map(|b| b.queue)
            .collect(),
    };
    let mut total: BTreeMap<u64, BTreeMap<String, u64>> = BTreeMap::new();
    for queue in &queues {
        for (minute, counts) in state.queues().state().runs.stats(queue, minutes).await? {
            let slot = total.entry(minute).or_default();
            for (end, n) in counts {
                *slot.entry(end).or_default() += n;
            }
        }
    }
    if total.is_empty() {
        let now = airlock_core::clock::now_ms() / 60_000;
        for minute in now.saturating_sub(minutes - 1)..=now {
            total.insert(minute, BTreeMap::new());
        }
    }
    Ok(Json(Stats {
        minutes: total
            .into_iter()
            .map(|(minute, runs)| MinuteStats {
                at: minute * 60_000,
                runs,
            })
            .collect(),
    }))
}
