//! A job's timeline: what only Airlock recorded about each of its runs —
//! when it started, what it cost, how it ended, on which host — and the
//! durable steps, sleeps and waits between them, read from the job's own
//! hash in one `HGETALL`, and a flow parent's children from BullMQ's own
//! sets (`GET /v1/jobs/{ref}/timeline`, the dashboard's waterfall).
//!
//! Everything here is read from Redis and so is untrusted: entries that do
//! not parse are left out, never guessed.

use serde::Serialize;

use super::{QueueError, QueueService};
use crate::state::fields;
use crate::state::runs::{RunEntry, bounded_reason};
use crate::state::waits::WaitRecord;

/// One durable step.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepEntry {
    /// Its id (`id#2` for a second occurrence in one run).
    pub id: String,
    /// Its recorded result.
    #[schema(value_type = Value)]
    pub result: serde_json::Value,
    /// When it was recorded, ms since the epoch (absent for steps recorded
    /// before Airlock kept the time).
    pub at: Option<u64>,
}

/// One durable sleep.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SleepEntry {
    /// Its id.
    pub id: String,
    /// When it wakes (or woke), ms since the epoch.
    pub until: u64,
}

/// One durable wait.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WaitEntry {
    /// Its id.
    pub id: String,
    /// What it waits for, in words.
    pub waits_for: String,
    /// Its deadline, ms since the epoch.
    pub deadline: u64,
    /// `pending`, `came` or `timed_out`.
    pub outcome: String,
    /// What came (the event, the token's result), once it did.
    #[schema(value_type = Option<Value>)]
    pub value: Option<serde_json::Value>,
}

/// Most children listed that failed their parent: BullMQ fails the parent
/// at the first, but a forged set could be any size.
const MAX_UNSUCCESSFUL: isize = 100;

/// One child of a flow parent.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChildEntry {
    /// The child, as `<queue>:<id>`.
    #[serde(rename = "ref")]
    pub job_ref: String,
    /// `pending` (not finished yet), `completed` or `failed` (a failure
    /// the parent was told to go on regardless of, or one that failed the
    /// parent).
    pub state: String,
    /// Its return value (JSON text), or its failure reason.
    pub outcome: Option<String>,
}

/// The batch of a job's latest run in a batch, with its jobs.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BatchEntry {
    /// The batch's id.
    pub id: String,
    /// Jobs in it.
    pub size: u32,
    /// Its jobs, this one included, in the order the batch got them:
    /// those whose latest run in a batch was this one and whose producer
    /// is this job's (a job since run again in another batch, or removed,
    /// is left out). Empty once the batch's list expired (a week after it
    /// ran).
    pub jobs: Vec<BatchSibling>,
}

/// A job of a batch.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BatchSibling {
    /// The job, as `<queue>:<id>`.
    #[serde(rename = "ref")]
    pub job_ref: String,
    /// `completed`, `failed`, or `unfinished` (waiting for a retry, or
    /// running).
    pub state: String,
}

/// A job's runs and durable records, oldest first.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Timeline {
    /// Its runs (the first 100 are kept).
    pub runs: Vec<RunEntry>,
    /// Its recorded steps, in the order they were recorded.
    pub steps: Vec<StepEntry>,
    /// Its durable sleeps.
    pub sleeps: Vec<SleepEntry>,
    /// Its durable waits.
    pub waits: Vec<WaitEntry>,
    /// Its children, when it is a flow parent: BullMQ's pending
    /// (`:dependencies`), finished (`:processed`), ignored-failed
    /// (`:failed`) and parent-failing (`:unsuccessful`) children.
    pub children: Vec<ChildEntry>,
    /// The batch of its latest run in a batch (a queue bound with
    /// `batch`), with its jobs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch: Option<BatchEntry>,
}

impl QueueService {
    /// The timeline of job `id` of `queue` (which must exist).
    pub async fn timeline(&self, queue: &str, id: &str) -> Result<Timeline, QueueError> {
        let fields = self.store().hgetall(&self.job_key(queue, id)).await?;
        if fields.is_empty() {
            return Err(QueueError::NotFound(format!("job `{queue}:{id}`")));
        }
        let mut runs: Vec<RunEntry> = fields
            .iter()
            .filter(|(name, _)| name.starts_with(fields::RUN_PREFIX))
            .filter_map(|(_, value)| serde_json::from_str::<RunEntry>(value).ok())
            .map(|mut run| {
                // Untrusted like all of Redis: held to what the recorder writes.
                run.reason = run.reason.as_deref().map(bounded_reason);
                run
            })
            .chain(crate::state::runs::completed_first_run(&fields))
            .collect();
        runs.sort_by_key(|r| (r.run, r.started_at));
        let mut steps: Vec<StepEntry> = fields
            .iter()
            .filter_map(|(name, value)| {
                let step = name.strip_prefix(fields::STEP_PREFIX)?;
                Some(StepEntry {
                    id: step.to_string(),
                    result: serde_json::from_str(value).unwrap_or(serde_json::Value::Null),
                    at: fields
                        .get(&format!("{}{step}", fields::STEP_AT_PREFIX))
                        .and_then(|at| at.parse().ok()),
                })
            })
            .collect();
        steps.sort_by(|a, b| (a.at, &a.id).cmp(&(b.at, &b.id)));
        let mut sleeps: Vec<SleepEntry> = fields
            .iter()
            .filter_map(|(name, value)| {
                Some(SleepEntry {
                    id: name.strip_prefix(fields::SLEEP_PREFIX)?.to_string(),
                    until: value.parse().ok()?,
                })
            })
            .collect();
        sleeps.sort_by_key(|s| s.until);
        let mut waits: Vec<WaitEntry> = fields
            .iter()
            .filter_map(|(name, value)| {
                let wait = name.strip_prefix(fields::WAIT_PREFIX)?;
                let record: WaitRecord = serde_json::from_str(value).ok()?;
                let outcome = fields
                    .get(&format!("{}{wait}", fields::WAITED_PREFIX))
                    .and_then(|o| serde_json::from_str::<serde_json::Value>(o).ok());
                let (label, value) = match outcome {
                    None => ("pending", None),
                    Some(o) if o.get("came").is_some() => ("came", o.get("came").cloned()),
                    Some(_) => ("timed_out", None),
                };
                Some(WaitEntry {
                    id: wait.to_string(),
                    waits_for: record.describe(),
                    deadline: record.deadline(),
                    outcome: label.to_string(),
                    value,
                })
            })
            .collect();
        waits.sort_by_key(|w| w.deadline);
        let children = self.children_of(queue, id).await?;
        let batch = match fields.get(fields::BATCH) {
            Some(text) => {
                let producer = fields.get(fields::PRODUCER).map(String::as_str);
                self.batch_of(queue, text, producer).await
            }
            None => None,
        };
        Ok(Timeline {
            runs,
            steps,
            sleeps,
            waits,
            children,
            batch,
        })
    }

    /// The batch a job's `airlock.batch` names, with the jobs its list
    /// holds (at most [`crate::registry::MAX_BATCH_SIZE`]) whose own
    /// `airlock.batch` names it too and whose producer field is the job's
    /// own (the jobs of a batch share their producer; the list is read
    /// from Redis, so it is held to that), each with its state. A list
    /// that cannot be read or parsed lists no job.
    async fn batch_of(
        &self,
        queue: &str,
        field: &str,
        producer: Option<&str>,
    ) -> Option<BatchEntry> {
        let batch = crate::state::runs::BatchRef::parse(field)?;
        let jobs = match self.batch_jobs(queue, &batch.id, field, producer).await {
            Ok(jobs) => jobs,
            Err(e) => {
                tracing::debug!(queue, batch = %batch.id, error = %e, "read a batch's jobs");
                Vec::new()
            }
        };
        Some(BatchEntry {
            id: batch.id,
            size: batch.size,
            jobs,
        })
    }

    /// The listed jobs of batch `id` that ran in it (`field`) with this
    /// producer, each with its state.
    async fn batch_jobs(
        &self,
        queue: &str,
        id: &str,
        field: &str,
        producer: Option<&str>,
    ) -> Result<Vec<BatchSibling>, QueueError> {
        let key = self.store().keys().batch_members(queue, id);
        let mut conn = self.store().conn();
        let listed: Option<String> = redis::AsyncCommands::get(&mut conn, key).await?;
        let ids: Vec<String> = listed
            .and_then(|text| serde_json::from_str::<Vec<String>>(&text).ok())
            .unwrap_or_default()
            .into_iter()
            .take(crate::registry::MAX_BATCH_SIZE as usize)
            .collect();
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut read = redis::pipe();
        for id in &ids {
            let job_key = self.job_key(queue, id);
            read.cmd("HMGET")
                .arg(&job_key)
                .arg(fields::BATCH)
                .arg(fields::PRODUCER)
                .arg("finishedOn");
            read.cmd("HSTRLEN").arg(&job_key).arg("returnvalue");
        }
        let replies: Vec<redis::Value> = read.query_async(&mut conn).await?;
        let mut jobs = Vec::with_capacity(ids.len());
        for (id, pair) in ids.iter().zip(replies.chunks(2)) {
            type Fields = (Option<String>, Option<String>, Option<String>);
            let (ran_in, by, finished): Fields =
                redis::FromRedisValue::from_redis_value(pair[0].clone()).unwrap_or_default();
            let returned: u64 =
                redis::FromRedisValue::from_redis_value(pair[1].clone()).unwrap_or(0);
            if ran_in.as_deref() != Some(field) || by.as_deref() != producer {
                continue;
            }
            let state = match (finished, returned) {
                (None, _) => "unfinished",
                (Some(_), 0) => "failed",
                (Some(_), _) => "completed",
            };
            jobs.push(BatchSibling {
                job_ref: airlock_core::job_ref::join(queue, id),
                state: state.to_string(),
            });
        }
        Ok(jobs)
    }

    /// A flow parent's children, by ref: pending, completed, failed and
    /// ignored or continued past (`:failed`), and failed so that the parent
    /// failed (`:unsuccessful`, at most [`MAX_UNSUCCESSFUL`]).
    async fn children_of(&self, queue: &str, id: &str) -> Result<Vec<ChildEntry>, QueueError> {
        let job_key = self.job_key(queue, id);
        let mut conn = self.store().conn();
        type Hash = std::collections::HashMap<String, String>;
        let (pending, processed, failed, unsuccessful): (Vec<String>, Hash, Hash, Vec<String>) =
            redis::pipe()
                .smembers(format!("{job_key}:dependencies"))
                .hgetall(format!("{job_key}:processed"))
                .hgetall(format!("{job_key}:failed"))
                .zrange(format!("{job_key}:unsuccessful"), 0, MAX_UNSUCCESSFUL - 1)
                .query_async(&mut conn)
                .await?;
        // A child whose failure failed the parent (`failParentOnFailure`):
        // BullMQ keeps it in `:unsuccessful` and its reason on its own hash,
        // maybe in another queue (another cluster slot: one read each).
        // Only a job key of this prefix is read.
        let own = format!("{}:", self.prefix());
        let mut unsuccessful_reasons: Vec<Option<String>> = Vec::with_capacity(unsuccessful.len());
        for key in &unsuccessful {
            let reason: Option<String> = if key.starts_with(&own) {
                redis::AsyncCommands::hget(&mut conn, key, "failedReason").await?
            } else {
                None
            };
            unsuccessful_reasons.push(reason);
        }
        // Child keys are `<prefix>:<queue>:<id>`.
        let as_ref = |key: &str| -> String {
            key.strip_prefix(self.prefix())
                .and_then(|k| k.strip_prefix(':'))
                .unwrap_or(key)
                .to_string()
        };
        let mut children: Vec<ChildEntry> = pending
            .iter()
            .map(|key| ChildEntry {
                job_ref: as_ref(key),
                state: "pending".into(),
                outcome: None,
            })
            .chain(processed.iter().map(|(key, value)| ChildEntry {
                job_ref: as_ref(key),
                state: "completed".into(),
                outcome: Some(value.clone()),
            }))
            .chain(failed.iter().map(|(key, reason)| ChildEntry {
                job_ref: as_ref(key),
                state: "failed".into(),
                outcome: Some(reason.clone()),
            }))
            .chain(
                unsuccessful
                    .iter()
                    .zip(unsuccessful_reasons)
                    .map(|(key, reason)| ChildEntry {
                        job_ref: as_ref(key),
                        state: "failed".into(),
                        outcome: reason.as_deref().map(bounded_reason),
                    }),
            )
            .collect();
        children.sort_by(|a, b| a.job_ref.cmp(&b.job_ref));
        Ok(children)
    }
}
