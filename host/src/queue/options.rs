//! Airlock's job options: what a producer may ask for when enqueueing, in
//! BullMQ's JSON spelling, validated before anything reaches Redis.

use serde::{Deserialize, Serialize};

use crate::sandbox::LimitsOverride;

/// How a failed attempt is spaced from the next one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum Backoff {
    /// The same delay every time.
    Fixed {
        /// Delay in milliseconds.
        delay: u64,
    },
    /// `delay * 2^(attempt-1)`: 2 s, 4 s, 8 s... for `delay: 2000`.
    Exponential {
        /// Base delay in milliseconds.
        delay: u64,
    },
}

/// How many finished jobs to keep (BullMQ `removeOnComplete`/`removeOnFail`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum Retention {
    /// `true`: remove at once; `false`: keep forever.
    Remove(bool),
    /// Keep the newest N.
    Count(u64),
    /// Keep by age and/or count.
    Keep {
        /// Keep jobs younger than this many seconds (BullMQ uses seconds here).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        age: Option<u64>,
        /// Keep at most this many.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        count: Option<u64>,
    },
}

/// BullMQ deduplication: while a job with this id exists (or for `ttl` ms),
/// adding another with the same id adds nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Deduplication {
    /// The deduplication id.
    pub id: String,
    /// How long the id blocks duplicates, in milliseconds (absent: until the
    /// job finishes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<u64>,
}

/// Options for one job, in BullMQ's JSON spelling. Absent fields take the
/// queue binding's defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JobOptions {
    /// A custom job id; adding a job whose id exists adds nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_id: Option<String>,
    /// Milliseconds before the job may run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay: Option<u64>,
    /// 1 (highest) to 2,097,152 (lowest); absent means no priority.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<u32>,
    /// Take this job before older waiting ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifo: Option<bool>,
    /// Attempts in total (1: never retried).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempts: Option<u32>,
    /// Delay between attempts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff: Option<Backoff>,
    /// Retention of the job once completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remove_on_complete: Option<Retention>,
    /// Retention of the job once failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remove_on_fail: Option<Retention>,
    /// Log lines to keep for the job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_logs: Option<u32>,
    /// Deduplication by id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deduplication: Option<Deduplication>,
    /// Sandbox limits for this job: may only lower the binding's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<LimitsOverride>,
}

/// An option that cannot be accepted, naming the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{field}`: {message}")]
pub struct OptionError {
    /// The field, in JSON spelling (`opts.priority`).
    pub field: String,
    /// What is wrong.
    pub message: String,
}

fn bad(field: &str, message: impl Into<String>) -> OptionError {
    OptionError {
        field: field.to_string(),
        message: message.into(),
    }
}

/// BullMQ's priority range.
pub const MAX_PRIORITY: u32 = 2_097_152;

impl JobOptions {
    /// These options with the absent fields filled from `defaults`.
    pub fn with_defaults(&self, defaults: &JobOptions) -> JobOptions {
        JobOptions {
            job_id: self.job_id.clone(),
            delay: self.delay.or(defaults.delay),
            priority: self.priority.or(defaults.priority),
            lifo: self.lifo.or(defaults.lifo),
            attempts: self.attempts.or(defaults.attempts),
            backoff: self.backoff.clone().or_else(|| defaults.backoff.clone()),
            remove_on_complete: self
                .remove_on_complete
                .clone()
                .or_else(|| defaults.remove_on_complete.clone()),
            remove_on_fail: self
                .remove_on_fail
                .clone()
                .or_else(|| defaults.remove_on_fail.clone()),
            keep_logs: self.keep_logs.or(defaults.keep_logs),
            deduplication: self.deduplication.clone(),
            limits: self.limits.clone(),
        }
    }

    /// Checks ranges BullMQ would reject or misbehave on.
    pub fn validate(&self) -> Result<(), OptionError> {
        if let Some(id) = &self.job_id {
            if id.is_empty() {
                return Err(bad("jobId", "must not be empty"));
            }
            if id.chars().all(|c| c.is_ascii_digit()) {
                // Generated ids are integers: a custom one could collide.
                return Err(bad("jobId", "cannot be an integer"));
            }
            if id.contains(':') {
                // It would alias other keys of the queue.
                return Err(bad("jobId", "must not contain `:`"));
            }
            if id.len() > 256 {
                return Err(bad("jobId", "is longer than 256 bytes"));
            }
        }
        if let Some(p) = self.priority
            && p > MAX_PRIORITY
        {
            return Err(bad(
                "priority",
                format!("must be between 0 and {MAX_PRIORITY}"),
            ));
        }
        if self.attempts == Some(0) {
            return Err(bad("attempts", "must be at least 1"));
        }
        if let Some(d) = &self.deduplication
            && d.id.is_empty()
        {
            return Err(bad("deduplication.id", "must not be empty"));
        }
        if self.lifo == Some(true) && self.priority.is_some_and(|p| p > 0) {
            return Err(bad("lifo", "cannot be combined with a priority"));
        }
        Ok(())
    }

    /// The BullMQ options these translate to.
    pub(crate) fn to_bullmq(&self) -> bullmq::JobOptions {
        let retention = |r: &Retention| match r {
            Retention::Remove(b) => bullmq::types::RemoveOnFinish::Bool(*b),
            Retention::Count(n) => bullmq::types::RemoveOnFinish::Count(*n as usize),
            Retention::Keep { age, count } => {
                bullmq::types::RemoveOnFinish::Options(bullmq::types::KeepJobs {
                    age: *age,
                    count: count.map(|c| c as usize),
                    limit: None,
                })
            }
        };
        bullmq::JobOptions {
            job_id: self.job_id.clone(),
            delay: self.delay.filter(|d| *d > 0),
            priority: self.priority.filter(|p| *p > 0),
            lifo: self.lifo.filter(|l| *l),
            attempts: self.attempts,
            backoff: self.backoff.as_ref().map(|b| match b {
                Backoff::Fixed { delay } => bullmq::types::BackoffStrategy::Fixed(*delay),
                Backoff::Exponential { delay } => {
                    bullmq::types::BackoffStrategy::Exponential(*delay)
                }
            }),
            remove_on_complete: self.remove_on_complete.as_ref().map(retention),
            remove_on_fail: self.remove_on_fail.as_ref().map(retention),
            keep_logs: self.keep_logs,
            deduplication: self
                .deduplication
                .as_ref()
                .map(|d| bullmq::DeduplicationOptions {
                    id: d.id.clone(),
                    ttl: d.ttl,
                    ..Default::default()
                }),
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_fields_and_bad_ranges_are_named() {
        let err = serde_json::from_str::<JobOptions>(r#"{"atempts":3}"#).unwrap_err();
        assert!(err.to_string().contains("atempts"), "{err}");
        let opts: JobOptions = serde_json::from_str(r#"{"priority":3000000}"#).unwrap();
        assert_eq!(opts.validate().unwrap_err().field, "priority");
        let opts: JobOptions = serde_json::from_str(r#"{"attempts":0}"#).unwrap();
        assert_eq!(opts.validate().unwrap_err().field, "attempts");
    }

    #[test]
    fn defaults_fill_only_absent_fields() {
        let defaults: JobOptions =
            serde_json::from_str(r#"{"attempts":5,"backoff":{"type":"exponential","delay":2000}}"#)
                .unwrap();
        let opts: JobOptions = serde_json::from_str(r#"{"attempts":2}"#).unwrap();
        let merged = opts.with_defaults(&defaults);
        assert_eq!(merged.attempts, Some(2));
        assert_eq!(merged.backoff, Some(Backoff::Exponential { delay: 2000 }));
    }
}
