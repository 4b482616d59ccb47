//! What a job looks like from outside: its state and every field a user
//! relies on, read from BullMQ's job hash plus Airlock's own fields.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::state::fields;

/// Where a job is in its life (BullMQ states).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum JobState {
    /// Ready to run.
    Waiting,
    /// Ready to run, ordered by priority.
    Prioritized,
    /// Waiting for its time (a delay, a backoff, a durable sleep).
    Delayed,
    /// A flow parent waiting for its children.
    WaitingChildren,
    /// Running on some host.
    Active,
    /// Finished with a result.
    Completed,
    /// Finished without one.
    Failed,
    /// Not found in any state set (being moved, or gone).
    Unknown,
}

impl JobState {
    /// Every listable state.
    pub const ALL: [JobState; 7] = [
        JobState::Waiting,
        JobState::Prioritized,
        JobState::Delayed,
        JobState::WaitingChildren,
        JobState::Active,
        JobState::Completed,
        JobState::Failed,
    ];

    /// The kebab-case name used in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Waiting => "waiting",
            JobState::Prioritized => "prioritized",
            JobState::Delayed => "delayed",
            JobState::WaitingChildren => "waiting-children",
            JobState::Active => "active",
            JobState::Completed => "completed",
            JobState::Failed => "failed",
            JobState::Unknown => "unknown",
        }
    }

    /// Parses an API state name.
    pub fn parse(name: &str) -> Option<JobState> {
        JobState::ALL.into_iter().find(|s| s.as_str() == name)
    }

    /// The name BullMQ's scripts use for the state's set.
    pub(crate) fn bullmq_name(self) -> &'static str {
        match self {
            JobState::Waiting => "wait",
            other => other.as_str(),
        }
    }
}

impl From<bullmq::JobState> for JobState {
    fn from(s: bullmq::JobState) -> Self {
        match s {
            bullmq::JobState::Waiting => JobState::Waiting,
            bullmq::JobState::Active => JobState::Active,
            bullmq::JobState::Delayed => JobState::Delayed,
            bullmq::JobState::Prioritized => JobState::Prioritized,
            bullmq::JobState::Completed => JobState::Completed,
            bullmq::JobState::Failed => JobState::Failed,
            bullmq::JobState::WaitingChildren => JobState::WaitingChildren,
            bullmq::JobState::Unknown => JobState::Unknown,
        }
    }
}

/// Job counts of a queue.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueueCounts {
    /// Waiting (including while the queue is paused).
    pub waiting: u64,
    /// Running.
    pub active: u64,
    /// Delayed.
    pub delayed: u64,
    /// Waiting with a priority.
    pub prioritized: u64,
    /// Flow parents waiting for children.
    pub waiting_children: u64,
    /// Completed and kept.
    pub completed: u64,
    /// Failed and kept.
    pub failed: u64,
    /// Whether the queue is paused.
    pub paused: bool,
}

/// Measurements of a job's last run, from Airlock's job-hash fields. They
/// are written a moment after the run ends (hosts batch them), so a job
/// that just finished may not have them yet; a job that retention removed
/// at its finish never gets them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunMetrics {
    /// Fuel used (absent when the run was unmetered).
    pub fuel_used: Option<u64>,
    /// Peak linear memory, bytes.
    pub peak_memory_bytes: Option<u64>,
    /// Wall time, ms (fractional).
    pub wall_time_ms: Option<f64>,
    /// Outbound HTTP requests sent (absent when the run tried none).
    pub http_requests: Option<u64>,
    /// Outbound HTTP requests refused by the egress rules or the limits
    /// before anything was sent.
    pub http_refused: Option<u64>,
    /// Request body bytes sent.
    pub http_bytes_out: Option<u64>,
    /// Response body bytes read.
    pub http_bytes_in: Option<u64>,
}

impl RunMetrics {
    /// The last run's measurements in a job hash; all absent when it has
    /// none.
    fn of(fields: &HashMap<String, String>) -> RunMetrics {
        let Some(last) = crate::state::runs::LastRun::of(fields) else {
            return RunMetrics::default();
        };
        let http = last.http;
        RunMetrics {
            fuel_used: last.fuel_used,
            peak_memory_bytes: Some(last.peak_memory_bytes),
            wall_time_ms: Some(last.wall_time_ms),
            http_requests: http.map(|h| h.requests),
            http_refused: http.map(|h| h.refused),
            http_bytes_out: http.map(|h| h.bytes_out),
            http_bytes_in: http.map(|h| h.bytes_in),
        }
    }
}

/// Everything known about one job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobSnapshot {
    /// Job id.
    pub id: String,
    /// Queue.
    pub queue: String,
    /// BullMQ job name.
    pub name: String,
    /// State.
    pub state: JobState,
    /// Data as enqueued.
    pub data: serde_json::Value,
    /// BullMQ options as stored.
    pub opts: serde_json::Value,
    /// Last progress report.
    pub progress: serde_json::Value,
    /// Result, when completed.
    pub returnvalue: Option<serde_json::Value>,
    /// Why it failed, when failed (or why the last attempt failed).
    pub failed_reason: Option<String>,
    /// Airlock failure kind of the last failed attempt: the kind Airlock
    /// put in front of `failedReason` (`fuel_exhausted: ...`).
    pub failure_kind: Option<String>,
    /// Attempts that ended (failed or completed).
    pub attempts_made: u32,
    /// Attempts that started (including ones that stalled).
    pub attempts_started: u32,
    /// Times the job was found stalled and recovered.
    pub stalled_count: u32,
    /// Enqueue time, ms since the epoch.
    pub timestamp: u64,
    /// Start of the last run.
    pub processed_on: Option<u64>,
    /// End of the job.
    pub finished_on: Option<u64>,
    /// Delay in ms.
    pub delay: u64,
    /// Priority (0: none).
    pub priority: u32,
    /// The handler digest the job is pinned to.
    pub handler_digest: Option<String>,
    /// The host that took it last: the worker name BullMQ records when the
    /// job becomes active (`pb`), which for Airlock's workers is their host
    /// id (a job a Node worker took shows that worker's name).
    pub processed_by_host: Option<String>,
    /// The API token that enqueued it.
    pub producer: Option<String>,
    /// The same `pb` field as `processedByHost`, under BullMQ's own
    /// name for it.
    pub worker: Option<String>,
    /// Measurements of the last run.
    pub metrics: RunMetrics,
    /// Durable steps recorded so far (ids).
    pub steps: Vec<String>,
    /// Flow parent key (`prefix:queue:id`), if a child.
    pub parent_key: Option<String>,
    /// What a delayed job is parked for beyond BullMQ's own delays:
    /// `sleeping` (a durable sleep), `event` or `token` (a durable wait);
    /// absent otherwise. `GET /v1/jobs/{ref}`'s `waiting` says more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parked: Option<String>,
    /// The batch of the job's latest run in a batch (a queue bound with
    /// `batch`); after such a run, `metrics` are the job's share of the
    /// batch's: fuel and wall time split evenly between its jobs, the
    /// instance's peak memory, the batch's HTTP counts on its first job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<BatchInfo>,
}

/// A batch a job ran in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct BatchInfo {
    /// The batch's id: the id of the host that ran it, a random part and a
    /// number.
    pub id: String,
    /// Jobs in the batch.
    pub size: u32,
}

fn json_field(fields: &HashMap<String, String>, name: &str) -> Option<serde_json::Value> {
    fields.get(name).map(|raw| {
        serde_json::from_str(raw).unwrap_or_else(|_| serde_json::Value::String(raw.clone()))
    })
}

/// The Airlock failure kind a `failedReason` starts with, if any (Node
/// workers' reasons have none).
fn failure_kind(fields: &HashMap<String, String>) -> Option<String> {
    let reason = fields.get("failedReason")?;
    let (kind, _) = reason.split_once(':')?;
    airlock_core::failure::FailureKind::parse(kind).map(|k| k.as_str().to_string())
}

fn num<T: std::str::FromStr>(fields: &HashMap<String, String>, name: &str) -> Option<T> {
    fields.get(name).and_then(|v| v.parse().ok())
}

impl JobSnapshot {
    /// Builds a snapshot from the job hash (`HGETALL`).
    pub fn from_hash(
        queue: &str,
        id: &str,
        fields: &HashMap<String, String>,
        state: JobState,
    ) -> JobSnapshot {
        let mut steps: Vec<String> = fields
            .keys()
            .filter_map(|k| k.strip_prefix(fields::STEP_PREFIX).map(str::to_string))
            .collect();
        steps.sort();
        JobSnapshot {
            id: id.to_string(),
            queue: queue.to_string(),
            name: fields.get("name").cloned().unwrap_or_default(),
            state,
            data: json_field(fields, "data").unwrap_or(serde_json::Value::Null),
            opts: json_field(fields, "opts").unwrap_or(serde_json::Value::Null),
            progress: json_field(fields, "progress").unwrap_or(serde_json::Value::from(0)),
            returnvalue: json_field(fields, "returnvalue"),
            failed_reason: fields
                .get("failedReason")
                .cloned()
                .filter(|s| !s.is_empty()),
            failure_kind: failure_kind(fields),
            attempts_made: num(fields, "atm").unwrap_or(0),
            attempts_started: num(fields, "ats").unwrap_or(0),
            stalled_count: num(fields, "stc").unwrap_or(0),
            timestamp: num(fields, "timestamp").unwrap_or(0),
            processed_on: num(fields, "processedOn"),
            finished_on: num(fields, "finishedOn"),
            delay: num(fields, "delay").unwrap_or(0),
            priority: num(fields, "priority").unwrap_or(0),
            handler_digest: fields.get(fields::DIGEST).cloned(),
            processed_by_host: fields.get("pb").cloned(),
            producer: fields.get(fields::PRODUCER).cloned(),
            worker: fields.get("pb").cloned(),
            metrics: RunMetrics::of(fields),
            steps,
            parent_key: fields.get("parentKey").cloned(),
            parked: (state == JobState::Delayed)
                .then(|| crate::state::waits::parked_in(fields, airlock_core::clock::now_ms()))
                .flatten()
                .map(|p| p.kind().to_string()),
            batch: fields
                .get(fields::BATCH)
                .and_then(|text| crate::state::runs::BatchRef::parse(text))
                .map(|b| BatchInfo {
                    id: b.id,
                    size: b.size,
                }),
        }
    }
}
