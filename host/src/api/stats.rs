//! `GET /v1/me` (who a token is) and `GET /v1/stats` (runs per minute by
//! how they ended, and their latency percentiles): what the dashboard needs to show the right actions and
//! its charts, on the public API like everything else it shows.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::ApiState;
use super::auth::{Caller, Role};
use super::error::{ApiError, ErrorBody, QueryParams};
use crate::state::runs::{LATENCY_BOUNDS_MS, RUN_BUCKETS, VERSION_PREFIX, WAIT_BUCKETS};

/// The calling token.
#[derive(Debug, Serialize, ToSchema)]
pub struct Me {
    /// Its name (the producer recorded on the jobs it enqueues).
    pub name: String,
    /// Its role: `admin`, `deployer`, `producer`, `reader` or `cron`.
    pub role: String,
    /// The queues and handlers it is limited to; absent for a token of the
    /// whole fleet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<crate::access::Scope>,
}

/// Who the token is: its name, role and scope.
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
        Role::Deployer => "deployer",
        Role::Producer => "producer",
        Role::Reader => "reader",
        Role::Cron => "cron",
    };
    Json(Me {
        name: caller.name,
        role: role.into(),
        scope: caller.scope.as_deref().cloned(),
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
    /// Only the queues bound to this handler now (with `queue`: that
    /// queue, if this handler runs it; else none).
    #[serde(default)]
    #[param(pattern = r"^[A-Za-z0-9._-]{1,128}$")]
    pub handler: Option<String>,
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

/// Runs per minute, and their latencies over the whole window.
#[derive(Debug, Serialize, ToSchema)]
pub struct Stats {
    /// Oldest first, one entry per minute (empty minutes included).
    pub minutes: Vec<MinuteStats>,
    /// Latency percentiles of the window's runs.
    pub latency: Latency,
    /// The window's runs by handler version, for queues whose binding has
    /// (or had, within the window) a canary: each version's runs by end,
    /// wall time and fuel, side by side. Empty otherwise.
    pub versions: BTreeMap<String, VersionStats>,
}

/// One handler version's runs over the window (a binding with a canary).
#[derive(Debug, Default, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VersionStats {
    /// Runs by how they ended.
    pub runs: BTreeMap<String, u64>,
    /// Their wall time, summed, ms.
    pub wall_ms: u64,
    /// Their fuel, summed (0 for unmetered runs).
    pub fuel: u64,
}

/// How long runs took and waited over a window, from the per-minute
/// tallies' buckets (bounds 1, 2, 5, 10, 20, 50, 100, 200, 500 ms, 1, 2,
/// 5, 10, 30, 60 s, 5 min, 1 h).
#[derive(Debug, Serialize, ToSchema)]
pub struct Latency {
    /// From a job's enqueue (plus its delay) to the start of its first run
    /// — including any time flow control held it; later runs (a retry, a
    /// wake-up) are not counted.
    pub wait: Percentiles,
    /// Run times (wall time in the sandbox), every run.
    pub run: Percentiles,
}

/// Percentiles of one latency, in ms: each is the bound of the bucket it
/// fell in, so the true value is at most that (and above the bucket
/// below); `null` when there were no runs, or past the last bound (over
/// an hour).
#[derive(Debug, Default, Serialize, ToSchema)]
pub struct Percentiles {
    /// How many runs were measured.
    pub count: u64,
    /// The median.
    pub p50: Option<u64>,
    /// The 90th percentile.
    pub p90: Option<u64>,
    /// The 99th percentile.
    pub p99: Option<u64>,
}

impl Percentiles {
    /// Percentiles of the counts per bucket (`LATENCY_BOUNDS_MS` and one
    /// past it).
    fn of(buckets: &[u64]) -> Percentiles {
        let count: u64 = buckets.iter().sum();
        let at = |p: f64| -> Option<u64> {
            if count == 0 {
                return None;
            }
            let rank = ((p * count as f64).ceil() as u64).max(1);
            let mut seen = 0;
            for (i, n) in buckets.iter().enumerate() {
                seen += n;
                if seen >= rank {
                    return LATENCY_BOUNDS_MS.get(i).copied();
                }
            }
            None
        };
        Percentiles {
            count,
            p50: at(0.5),
            p90: at(0.9),
            p99: at(0.99),
        }
    }
}

/// Runs per minute by how they ended, and their latency percentiles (a
/// first run's enqueue→start, every run's run time), over every bound
/// queue, one queue or the queues of one handler, as the hosts recorded
/// them (kept 25 hours). Jobs failed before any run
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
    if let Some(queue) = &query.queue {
        super::lookup::bound(&state, &caller, queue).await?;
    }
    if let Some(handler) = &query.handler {
        crate::names::handler("handler", handler)?;
    }
    // Both filters, when both are given: the queue, if that handler runs it.
    let queues: Vec<String> = super::lookup::bindings(&state, &caller)
        .await?
        .into_iter()
        .filter(|b| query.queue.as_ref().is_none_or(|q| &b.queue == q))
        .filter(|b| query.handler.as_ref().is_none_or(|h| &b.handler == h))
        .map(|b| b.queue)
        .collect();
    let mut total: BTreeMap<u64, BTreeMap<String, u64>> = BTreeMap::new();
    let bucket_count = LATENCY_BOUNDS_MS.len() + 1;
    let (mut run, mut wait) = (vec![0u64; bucket_count], vec![0u64; bucket_count]);
    let mut versions: BTreeMap<String, VersionStats> = BTreeMap::new();
    for queue in &queues {
        for (minute, counts) in state.queues().state().runs.stats(queue, minutes).await? {
            let slot = total.entry(minute).or_default();
            for (field, n) in counts {
                if let Some(rest) = field.strip_prefix(VERSION_PREFIX) {
                    if let Some((digest, what)) = rest.split_once(':') {
                        let version = versions.entry(digest.to_string()).or_default();
                        match what {
                            "wallMs" => version.wall_ms += n,
                            "fuel" => version.fuel += n,
                            end => *version.runs.entry(end.to_string()).or_default() += n,
                        }
                    }
                } else if let Some(i) = RUN_BUCKETS.iter().position(|b| *b == field) {
                    run[i] += n;
                } else if let Some(i) = WAIT_BUCKETS.iter().position(|b| *b == field) {
                    wait[i] += n;
                } else {
                    *slot.entry(field).or_default() += n;
                }
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
        latency: Latency {
            wait: Percentiles::of(&wait),
            run: Percentiles::of(&run),
        },
        versions,
        minutes: total
            .into_iter()
            .map(|(minute, runs)| MinuteStats {
                at: minute * 60_000,
                runs,
            })
            .collect(),
    }))
}

#[cfg(test)]
mod tests {
    use super::Percentiles;

    #[test]
    fn a_percentile_is_the_bound_of_the_bucket_its_rank_falls_in() {
        // 10 runs: 5 at ≤ 1 ms, 4 at ≤ 10 ms, 1 past the last bound.
        let mut buckets = vec![0u64; 18];
        (buckets[0], buckets[3], buckets[17]) = (5, 4, 1);
        let p = Percentiles::of(&buckets);
        assert_eq!(
            (p.count, p.p50, p.p90, p.p99),
            (10, Some(1), Some(10), None)
        );
        let none = Percentiles::of(&[0; 18]);
        assert_eq!((none.count, none.p50), (0, None));
    }
}
