//! Replays on the host (admin or deployer): one job against an uploaded handler
//! version (`POST /v1/jobs/{ref}/replay`), and moving a queue's parked jobs
//! onto another version after replaying each (`POST
//! /v1/queues/{queue}/migrate`). Both run the version in this host's
//! sandbox with every call answered from the job's transcripts
//! (`crate::replay`): nothing is sent anywhere and nothing but the
//! migrated pins is written.
//!
//! Transcripts are read from Redis, which any BullMQ producer can write: a
//! forged one can make a replay's report wrong, and so let a migration move
//! a job an admin or deployer asked to move to a version they chose (only an
//! uploaded version: the target is checked against the handler's
//! versions). It cannot choose code or reach anything else.
//!
//! Migration, job by job: a delayed job parked in a durable sleep or wait,
//! pinned to another version, with transcripts; its runs replayed against
//! the target; moved (re-pinned) only when the replay did not diverge — so
//! the new version reaches the very sleep or wait the job is parked in,
//! through the same steps and requests (values may differ: the recorded
//! results stay and are what it replays). Crash and race window: a job
//! that runs between its replay and its re-pin (woken meanwhile) is
//! refused, as its runs count changed; a job woken in the instant between
//! that check and the re-pin has its next run on the new version from the
//! point it reached, which the replay did not cover.

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::ApiState;
use super::auth::{Caller, Role};
use super::error::{ApiError, ErrorBody, JsonBody, PathParams};
use super::lookup::{transcripts, visible_job};
use crate::queue::JobState;
use crate::replay::{self, Report, Verdict};
use crate::sandbox::Limits;
use crate::sandbox::transcript::Transcript;
use crate::worker::loader::LoadError;

/// The handler version to replay with.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplayWith {
    /// The digest of an uploaded handler version (64 lowercase hex
    /// digits).
    #[schema(pattern = "^[0-9a-f]{64}$")]
    pub digest: String,
}

/// Replay a job against an uploaded handler version, on this host (admin or deployer):
/// each run of the job again, in order, every call answered from its
/// transcripts (no request leaves the host, nothing is written). The
/// report says whether the version did the same, something different, or
/// diverged at step N.
#[utoipa::path(
    operation_id = "jobs_replay",
    post,
    path = "/v1/jobs/{ref}/replay",
    tag = "jobs",
    params(("ref" = String, Path, description = "`<queue>:<id>`")),
    request_body = ReplayWith,
    responses(
        (status = 200, description = "The replay's report", body = Report),
        (status = 400, description = "`digest` is malformed or names no uploaded version", body = ErrorBody),
        (status = 404, description = "No such job", body = ErrorBody),
        (status = 409, description = "The job has no transcripts", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub async fn replay_job(
    State(state): State<ApiState>,
    caller: Caller,
    PathParams(job_ref): PathParams<String>,
    JsonBody(with): JsonBody<ReplayWith>,
) -> Result<Json<Report>, ApiError> {
    caller.require(&[Role::Deployer])?;
    let job = visible_job(&state, &caller, &job_ref).await?;
    let runs = transcripts(&state, &job.queue, &job.id).await?;
    if runs.is_empty() {
        return Err(ApiError::conflict(format!(
            "job `{job_ref}` has no transcripts: its queue records them only with `recordTranscripts`"
        )));
    }
    Ok(Json(
        run_replay(&state, &with.digest, &job_ref, &runs).await?,
    ))
}

/// What to migrate a queue's parked jobs to.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct MigrateTo {
    /// The digest of an uploaded version of the queue's handler.
    #[schema(pattern = "^[0-9a-f]{64}$")]
    pub to: String,
    /// Replay and report only; move nothing. Default `false`.
    #[serde(default)]
    pub dry_run: bool,
}

/// One job a migration refused.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Refused {
    /// `<queue>:<id>`.
    pub job: String,
    /// Why.
    pub reason: String,
    /// The replay's report, when there was one.
    pub report: Option<Report>,
}

/// What a migration did.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Migration {
    /// The version the jobs moved to.
    pub to: String,
    /// Whether this was a dry run (nothing moved).
    pub dry_run: bool,
    /// The jobs moved (with a dry run: that would move).
    pub migrated: Vec<String>,
    /// The parked jobs refused, and why.
    pub refused: Vec<Refused>,
    /// Delayed jobs left alone: not parked in a sleep or wait, or already
    /// on the target version.
    pub skipped: usize,
}

/// Most delayed jobs one migration looks at.
const MAX_MIGRATE: usize = 1000;

/// Move a queue's jobs parked in durable sleeps and waits onto another
/// version of its handler (admin or deployer), each only after replaying its recorded
/// runs against that version on this host: a job whose replay diverges
/// before the sleep or wait it is parked in stays where it is. Looks at the
/// newest 1,000 delayed jobs. Jobs with no transcripts are refused.
#[utoipa::path(
    operation_id = "queues_migrate",
    post,
    path = "/v1/queues/{queue}/migrate",
    tag = "queues",
    params(("queue" = String, Path, description = "Queue name")),
    request_body = MigrateTo,
    responses(
        (status = 200, description = "What moved and what was refused", body = Migration),
        (status = 400, description = "`to` is malformed or not a version of the queue's handler", body = ErrorBody),
        (status = 404, description = "The queue is not bound", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub async fn migrate(
    State(state): State<ApiState>,
    caller: Caller,
    PathParams(queue): PathParams<String>,
    JsonBody(to): JsonBody<MigrateTo>,
) -> Result<Json<Migration>, ApiError> {
    caller.require(&[Role::Deployer])?;
    crate::names::digest("to", &to.to)?;
    let binding = super::lookup::bound(&state, &caller, &queue).await?;
    // The versions are the handler's: its handler must be in scope too.
    caller.require_handler(&binding.handler)?;
    let handler = state.registry().handler(&binding.handler).await?;
    if !handler.versions.iter().any(|v| v.digest == to.to) {
        return Err(ApiError::field(
            "to",
            format!(
                "`{}` is not a version of handler `{}`, which queue `{queue}` runs",
                to.to, binding.handler
            ),
        ));
    }
    let now = airlock_core::clock::now_ms();
    let delayed = state
        .queues()
        .list(&queue, JobState::Delayed, 0, MAX_MIGRATE - 1)
        .await?;
    let mut out = Migration {
        to: to.to.clone(),
        dry_run: to.dry_run,
        migrated: Vec::new(),
        refused: Vec::new(),
        skipped: 0,
    };
    for job in delayed {
        let job_ref = airlock_core::job_ref::join(&job.queue, &job.id);
        let key = state.queues().store().keys().job(&job.queue, &job.id);
        let fields = state
            .queues()
            .store()
            .hgetall(&key)
            .await
            .map_err(ApiError::outcome_unknown)?;
        let parked = crate::state::waits::parked_in(&fields, now).is_some();
        if !parked || job.handler_digest.as_deref() == Some(to.to.as_str()) {
            out.skipped += 1;
            continue;
        }
        let runs = transcripts(&state, &job.queue, &job.id).await?;
        if runs.is_empty() {
            out.refused.push(Refused {
                job: job_ref,
                reason: "no transcripts: the queue records them only with `recordTranscripts`"
                    .into(),
                report: None,
            });
            continue;
        }
        let report = run_replay(&state, &to.to, &job_ref, &runs).await?;
        if report.verdict == Verdict::Diverged {
            out.refused.push(Refused {
                job: job_ref,
                reason: format!(
                    "the new version diverges before the point the job is parked at: {}",
                    report.summary()
                ),
                report: Some(report),
            });
            continue;
        }
        if to.dry_run {
            out.migrated.push(job_ref);
            continue;
        }
        // It ran meanwhile (woken, recovered): what was replayed is not
        // where it is now.
        let now_runs: Option<u32> =
            redis::AsyncCommands::hget(&mut state.queues().store().conn(), &key, "ats")
                .await
                .map_err(ApiError::outcome_unknown)?;
        let now_runs = now_runs.unwrap_or(0);
        if now_runs != job.attempts_started {
            out.refused.push(Refused {
                job: job_ref,
                reason: "it ran while it was being replayed; migrate again".into(),
                report: Some(report),
            });
            continue;
        }
        state.queues().repin(&job.queue, &job.id, &to.to).await?;
        out.migrated.push(job_ref);
    }
    if !to.dry_run {
        let details = serde_json::json!({
            "to": to.to,
            "migrated": out.migrated.len(),
            "refused": out.refused.len(),
        });
        state.audit(&caller, "queue.migrate", &queue, details).await;
    }
    Ok(Json(out))
}

/// Replays job `job_ref`'s `runs` against version `digest` on this host,
/// under the sandbox's default limits and within this host's memory budget.
async fn run_replay(
    state: &ApiState,
    digest: &str,
    job_ref: &str,
    runs: &[(u32, Transcript)],
) -> Result<Report, ApiError> {
    crate::names::digest("digest", digest)?;
    let host = state.host();
    let component = match host.loader.get(digest).await {
        Ok(component) => component,
        Err(LoadError::Permanent(e)) => {
            return Err(ApiError::field(
                "digest",
                format!("no uploaded handler version can run as `{digest}`: {e}"),
            ));
        }
        Err(LoadError::Unavailable(e)) => return Err(ApiError::outcome_unknown(e)),
    };
    let limits = Limits::default();
    let _room = host
        .capacity
        .acquire(limits.memory_bytes)
        .await
        .map_err(|e| {
            ApiError::new(
                axum::http::StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                e.to_string(),
            )
        })?;
    let runs: Vec<Transcript> = runs.iter().map(|(_, t)| t.clone()).collect();
    Ok(replay::replay(&host.sandbox, &component, job_ref, &runs, &limits).await)
}
