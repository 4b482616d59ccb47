//! Schedules: BullMQ job schedulers (cron patterns with a time zone, or
//! fixed intervals). BullMQ creates each tick's job with an id derived from
//! the scheduler and the tick time, so however many hosts serve the queue,
//! a tick yields exactly one job.

use serde::{Deserialize, Serialize};

use super::options::ToBullmq;
use super::{QueueError, QueueService, ScheduleJobOptions};
use crate::error::FieldError;

/// A schedule as requested.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScheduleSpec {
    /// Cron pattern (`0 3 * * *`; six fields for seconds). Exclusive with `every`.
    #[serde(default)]
    pub pattern: Option<String>,
    /// Interval in milliseconds (at most a year). Exclusive with `pattern`.
    #[serde(default, deserialize_with = "airlock_core::int::opt")]
    #[schema(minimum = 1, maximum = 31_536_000_000_u64)]
    pub every: Option<u64>,
    /// IANA time zone of the pattern (`Europe/Paris`; default UTC).
    #[serde(default)]
    pub tz: Option<String>,
    /// Name of the jobs created (default: the schedule's id).
    #[serde(default)]
    #[schema(min_length = 1, max_length = 256)]
    pub name: Option<String>,
    /// Data of the jobs created.
    #[serde(default)]
    #[schema(value_type = Value)]
    pub data: serde_json::Value,
    /// Options of the jobs created (attempts, backoff, retention).
    #[serde(default)]
    pub opts: ScheduleJobOptions,
    /// Stop after this many runs.
    #[serde(default, deserialize_with = "airlock_core::int::opt")]
    #[schema(minimum = 1, maximum = 1_000_000_000_000_u64)]
    pub limit: Option<u64>,
}

/// A schedule as stored, with its next run.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleView {
    /// The schedule's id.
    pub id: String,
    /// The queue.
    pub queue: String,
    /// Name of the jobs it creates.
    pub name: String,
    /// Cron pattern.
    pub pattern: Option<String>,
    /// Interval (ms).
    pub every: Option<u64>,
    /// Time zone.
    pub tz: Option<String>,
    /// Next run, ms since the epoch.
    pub next_run_at: Option<u64>,
    /// Runs so far.
    pub iterations: u64,
    /// Run limit.
    pub limit: Option<u64>,
    /// Job data.
    #[schema(value_type = Value)]
    pub data: Option<serde_json::Value>,
}

fn bad(field: &str, message: impl Into<String>) -> FieldError {
    FieldError::new(field, message)
}

impl ScheduleSpec {
    /// Checks the spec: exactly one of pattern/every, a parsable pattern, a
    /// known time zone, valid options.
    pub fn validate(&self) -> Result<(), FieldError> {
        if let Some(tz) = &self.tz
            && tz.parse::<chrono_tz::Tz>().is_err()
        {
            return Err(bad("tz", format!("unknown time zone `{tz}`")));
        }
        match (&self.pattern, self.every) {
            (Some(_), Some(_)) => {
                return Err(bad("every", "give either `pattern` or `every`, not both"));
            }
            (None, None) => {
                return Err(bad(
                    "pattern",
                    "give a cron `pattern` or an `every` interval",
                ));
            }
            (None, Some(e)) if e == 0 || e > super::MAX_DELAY_MS => {
                return Err(bad("every", "must be 1 ms to a year"));
            }
            (Some(p), None) => {
                let tz = self.tz.as_deref();
                bullmq::job_scheduler::next_cron_millis(p, 0, tz, None)
                    .map_err(|e| bad("pattern", format!("`{p}` is not a cron pattern: {e}")))?;
            }
            (None, Some(_)) => {}
        }
        if let Some(name) = &self.name
            && (name.is_empty() || name.len() > 256)
        {
            return Err(bad("name", "must be 1 to 256 characters"));
        }
        if self.limit == Some(0) || self.limit.is_some_and(|l| l > 1_000_000_000_000) {
            return Err(bad("limit", "must be 1 to 1000000000000"));
        }
        self.opts.validate().map_err(|e| e.under("opts"))?;
        Ok(())
    }
}

fn view(queue: &str, s: bullmq::job_scheduler::JobSchedulerJson) -> ScheduleView {
    ScheduleView {
        id: s.key,
        queue: queue.to_string(),
        name: s.name,
        pattern: s.pattern,
        every: s.every,
        tz: s.tz,
        next_run_at: s.next,
        iterations: s.iteration_count,
        limit: s.limit,
        data: s.data,
    }
}

impl QueueService {
    /// Creates or replaces schedule `id` of `queue`.
    pub async fn upsert_schedule(
        &self,
        queue: &str,
        id: &str,
        spec: &ScheduleSpec,
    ) -> Result<ScheduleView, QueueError> {
        spec.validate()?;
        let q = self.queue(queue).await?;
        let repeat = bullmq::job_scheduler::RepeatOptions {
            pattern: spec.pattern.clone(),
            every: spec.every,
            tz: spec.tz.clone(),
            limit: spec.limit,
            ..Default::default()
        };
        q.upsert_job_scheduler(
            id,
            repeat,
            Some(spec.name.as_deref().unwrap_or(id)),
            Some(spec.data.clone()),
            Some(spec.opts.to_job_options().to_bullmq()),
        )
        .await?;
        self.schedule(queue, id).await?.ok_or_else(|| {
            QueueError::Internal(format!("schedule {id} vanished right after it was written"))
        })
    }

    /// Schedule `id` of `queue`.
    pub async fn schedule(
        &self,
        queue: &str,
        id: &str,
    ) -> Result<Option<ScheduleView>, QueueError> {
        let q = self.queue(queue).await?;
        Ok(q.get_job_scheduler(id).await?.map(|s| view(queue, s)))
    }

    /// Every schedule of `queue`, soonest first.
    pub async fn schedules(&self, queue: &str) -> Result<Vec<ScheduleView>, QueueError> {
        let q = self.queue(queue).await?;
        Ok(q.get_job_schedulers(0, -1, true)
            .await?
            .into_iter()
            .map(|s| view(queue, s))
            .collect())
    }

    /// Deletes schedule `id`; whether it existed.
    pub async fn remove_schedule(&self, queue: &str, id: &str) -> Result<bool, QueueError> {
        let q = self.queue(queue).await?;
        Ok(q.remove_job_scheduler(id).await?)
    }

    /// The id of a job of schedule `id` — a tick (`repeat:<id>:…`) or an
    /// on-demand run (`trigger-<id>-…`) — in BullMQ's active list, if any.
    /// It scans every active job of the queue and matches by id prefix, so
    /// a run of a schedule whose id extends `<id>-` (or any job with such
    /// an id) also counts; a run parked in a durable sleep or wait, a key
    /// line or a retry backoff is not active and does not.
    pub async fn schedule_running(
        &self,
        queue: &str,
        id: &str,
    ) -> Result<Option<String>, QueueError> {
        let q = self.queue(queue).await?;
        let active = q.get_active(0, -1).await?;
        let tick = format!("repeat:{id}:");
        let manual = format!("trigger-{id}-");
        Ok(active
            .iter()
            .map(|j| j.id().to_string())
            .find(|job_id| job_id.starts_with(&tick) || job_id.starts_with(&manual)))
    }
}
