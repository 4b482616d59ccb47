//! The subsets of [`JobOptions`] other places take: a binding's defaults,
//! a flow node's options, a schedule's job template. Each refuses the
//! fields it cannot honour (`deny_unknown_fields`) and is checked by
//! turning it into [`JobOptions`] and validating that.

use serde::{Deserialize, Serialize};

use super::{Backoff, JobOptions, Retention};
use crate::FieldError;

/// The job options a queue binding can set as defaults: everything but the
/// per-job ones (`jobId`, `deduplication`, `limits`, which a binding sets
/// otherwise or not at all).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DefaultJobOptions {
    /// Milliseconds before the job may run (at most a year).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::int::opt"
    )]
    #[schema(minimum = 0, maximum = 31_536_000_000_u64)]
    pub delay: Option<u64>,
    /// 1 (highest) to 2,097,152 (lowest); absent or 0 means no priority.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::int::opt"
    )]
    #[schema(minimum = 0, maximum = 2_097_152)]
    pub priority: Option<u32>,
    /// Take this job before older waiting ones (not with a priority).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifo: Option<bool>,
    /// Attempts in total (1: never retried), at most 10,000.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::int::opt"
    )]
    #[schema(minimum = 1, maximum = 10_000)]
    pub attempts: Option<u32>,
    /// Delay between attempts. With `exponential`, the delay is capped by
    /// the attempts (so the longest wait stays within a year): a year
    /// divided by 2^(t − 2), t being the attempts rounded up to a multiple
    /// of 8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff: Option<Backoff>,
    /// Retention of the job once completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remove_on_complete: Option<Retention>,
    /// Retention of the job once failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remove_on_fail: Option<Retention>,
}

impl DefaultJobOptions {
    /// These options with absent fields filled from a binding's defaults.
    pub fn with_defaults(&self, defaults: &DefaultJobOptions) -> Self {
        let merged = self.to_job_options().with_defaults(defaults);
        DefaultJobOptions {
            delay: merged.delay,
            priority: merged.priority,
            lifo: merged.lifo,
            attempts: merged.attempts,
            backoff: merged.backoff,
            remove_on_complete: merged.remove_on_complete,
            remove_on_fail: merged.remove_on_fail,
        }
    }

    /// Checks the options as [`JobOptions::validate`] does.
    pub fn validate(&self) -> Result<(), FieldError> {
        self.to_job_options().validate()
    }

    /// The same options as [`JobOptions`].
    pub fn to_job_options(&self) -> JobOptions {
        JobOptions {
            delay: self.delay,
            priority: self.priority,
            lifo: self.lifo,
            attempts: self.attempts,
            backoff: self.backoff.clone(),
            remove_on_complete: self.remove_on_complete.clone(),
            remove_on_fail: self.remove_on_fail.clone(),
            ..JobOptions::default()
        }
    }
}

/// The job options of a flow node: BullMQ flows take no deduplication,
/// and Airlock no per-job limits inside a flow.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FlowNodeOptions {
    /// A custom job id (not an integer, no `:`): adding a job whose id
    /// exists adds nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(min_length = 1, max_length = 256, pattern = r"^[^:]*[^0-9:][^:]*$")]
    pub job_id: Option<String>,
    /// Milliseconds before the job may run (at most a year).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::int::opt"
    )]
    #[schema(minimum = 0, maximum = 31_536_000_000_u64)]
    pub delay: Option<u64>,
    /// 1 (highest) to 2,097,152 (lowest); absent or 0 means no priority.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::int::opt"
    )]
    #[schema(minimum = 0, maximum = 2_097_152)]
    pub priority: Option<u32>,
    /// Take this job before older waiting ones (not with a priority).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifo: Option<bool>,
    /// Attempts in total (1: never retried), at most 10,000.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::int::opt"
    )]
    #[schema(minimum = 1, maximum = 10_000)]
    pub attempts: Option<u32>,
    /// Delay between attempts. With `exponential`, the delay is capped by
    /// the attempts (so the longest wait stays within a year): a year
    /// divided by 2^(t − 2), t being the attempts rounded up to a multiple
    /// of 8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff: Option<Backoff>,
    /// Retention of the job once completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remove_on_complete: Option<Retention>,
    /// Retention of the job once failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remove_on_fail: Option<Retention>,
}

impl FlowNodeOptions {
    /// These options with absent fields filled from a binding's defaults.
    pub fn with_defaults(&self, defaults: &DefaultJobOptions) -> Self {
        let merged = self.to_job_options().with_defaults(defaults);
        FlowNodeOptions {
            job_id: merged.job_id,
            delay: merged.delay,
            priority: merged.priority,
            lifo: merged.lifo,
            attempts: merged.attempts,
            backoff: merged.backoff,
            remove_on_complete: merged.remove_on_complete,
            remove_on_fail: merged.remove_on_fail,
        }
    }

    /// Checks the options as [`JobOptions::validate`] does.
    pub fn validate(&self) -> Result<(), FieldError> {
        self.to_job_options().validate()
    }

    /// The same options as [`JobOptions`].
    pub fn to_job_options(&self) -> JobOptions {
        JobOptions {
            job_id: self.job_id.clone(),
            delay: self.delay,
            priority: self.priority,
            lifo: self.lifo,
            attempts: self.attempts,
            backoff: self.backoff.clone(),
            remove_on_complete: self.remove_on_complete.clone(),
            remove_on_fail: self.remove_on_fail.clone(),
            ..JobOptions::default()
        }
    }
}

/// The options of the jobs a schedule creates (their ids and times are the
/// scheduler's; per-job limits are the binding's).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScheduleJobOptions {
    /// 1 (highest) to 2,097,152 (lowest); absent or 0 means no priority.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::int::opt"
    )]
    #[schema(minimum = 0, maximum = 2_097_152)]
    pub priority: Option<u32>,
    /// Take this job before older waiting ones (not with a priority).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifo: Option<bool>,
    /// Attempts in total (1: never retried), at most 10,000.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::int::opt"
    )]
    #[schema(minimum = 1, maximum = 10_000)]
    pub attempts: Option<u32>,
    /// Delay between attempts. With `exponential`, the delay is capped by
    /// the attempts (so the longest wait stays within a year): a year
    /// divided by 2^(t − 2), t being the attempts rounded up to a multiple
    /// of 8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff: Option<Backoff>,
    /// Retention of the job once completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remove_on_complete: Option<Retention>,
    /// Retention of the job once failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remove_on_fail: Option<Retention>,
}

impl ScheduleJobOptions {
    /// These options with absent fields filled from a binding's defaults.
    pub fn with_defaults(&self, defaults: &DefaultJobOptions) -> Self {
        let merged = self.to_job_options().with_defaults(defaults);
        ScheduleJobOptions {
            priority: merged.priority,
            lifo: merged.lifo,
            attempts: merged.attempts,
            backoff: merged.backoff,
            remove_on_complete: merged.remove_on_complete,
            remove_on_fail: merged.remove_on_fail,
        }
    }

    /// Checks the options as [`JobOptions::validate`] does.
    pub fn validate(&self) -> Result<(), FieldError> {
        self.to_job_options().validate()
    }

    /// The same options as [`JobOptions`].
    pub fn to_job_options(&self) -> JobOptions {
        JobOptions {
            priority: self.priority,
            lifo: self.lifo,
            attempts: self.attempts,
            backoff: self.backoff.clone(),
            remove_on_complete: self.remove_on_complete.clone(),
            remove_on_fail: self.remove_on_fail.clone(),
            ..JobOptions::default()
        }
    }
}
