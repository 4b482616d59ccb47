//! The subsets of [`JobOptions`] other places take: a binding's defaults,
//! a flow node's options, a schedule's job template. Each refuses the
//! fields it cannot honour (`deny_unknown_fields`) and is checked by
//! turning it into [`JobOptions`] and validating that.

use serde::{Deserialize, Serialize};

use super::{Backoff, JobOptions, Retention};
use crate::FieldError;

job_options! {
    /// The job options a queue binding can set as defaults: everything but the
    /// per-job ones (`jobId`, `deduplication`, `limits`, which a binding sets
    /// otherwise or not at all).
    pub struct DefaultJobOptions subset {
        delay,
        priority,
        lifo,
        attempts,
        backoff,
        remove_on_complete,
        remove_on_fail,
    }
}

job_options! {
    /// The job options of a flow node: BullMQ flows take no deduplication,
    /// and Airlock no per-job limits inside a flow.
    pub struct FlowNodeOptions subset {
        job_id,
        delay,
        priority,
        lifo,
        attempts,
        backoff,
        remove_on_complete,
        remove_on_fail,
    }
}

job_options! {
    /// The options of the jobs a schedule creates (their ids and times are the
    /// scheduler's; per-job limits are the binding's).
    pub struct ScheduleJobOptions subset {
        priority,
        lifo,
        attempts,
        backoff,
        remove_on_complete,
        remove_on_fail,
    }
}
