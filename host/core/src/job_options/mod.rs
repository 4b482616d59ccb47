//! Airlock's job options: what a producer may ask for when enqueueing, in
//! BullMQ's JSON spelling, validated before anything reaches Redis. The
//! subsets a binding, a flow node and a schedule take are in `subsets.rs`.
//! The API, the CLI, bindings, flows and schedules share them; turning them
//! into the BullMQ port's own options is the queue module's
//! (`queue::options`).

use serde::{Deserialize, Serialize};

#[macro_use]
mod fields;
mod subsets;

pub use self::subsets::{DefaultJobOptions, FlowNodeOptions, ScheduleJobOptions};
use crate::FieldError;
use crate::limits::LimitsOverride;

/// How a failed attempt is spaced from the next one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum Backoff {
    /// The same delay every time.
    Fixed {
        /// Delay in milliseconds (at most a year).
        #[schema(minimum = 0, maximum = 31_536_000_000_u64)]
        #[serde(deserialize_with = "crate::int::one")]
        delay: u64,
    },
    /// `delay × 2^(n − 1)` after the n-th failure: 2 s, 4 s, 8 s... for
    /// `delay: 2000`.
    Exponential {
        /// Base delay in milliseconds (at most a year).
        #[schema(minimum = 0, maximum = 31_536_000_000_u64)]
        #[serde(deserialize_with = "crate::int::one")]
        delay: u64,
    },
}

/// How many finished jobs to keep (BullMQ `removeOnComplete`/`removeOnFail`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum Retention {
    /// `true`: remove at once; `false`: keep forever.
    Remove(bool),
    /// Keep the newest N.
    Count(u64),
    /// Keep by age and/or count.
    Keep(KeepJobs),
}

// serde buffers tagged and untagged enums before it reads them, and its
// buffer fills a struct from an array by position (`["fixed", 5]`,
// `[3600, 10]` for `{age, count}`), out of reach of the API's strict
// reader. The two enums above are read through these twins, after
// `strict::buffered` has refused an array.

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
enum BackoffInput {
    Fixed {
        #[serde(deserialize_with = "crate::int::one")]
        delay: u64,
    },
    Exponential {
        #[serde(deserialize_with = "crate::int::one")]
        delay: u64,
    },
}

impl<'de> Deserialize<'de> for Backoff {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let input: BackoffInput = crate::strict::buffered(d, "an object {type, delay}")?;
        Ok(match input {
            BackoffInput::Fixed { delay } => Backoff::Fixed { delay },
            BackoffInput::Exponential { delay } => Backoff::Exponential { delay },
        })
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RetentionInput {
    Remove(bool),
    Count(#[serde(deserialize_with = "crate::int::one")] u64),
    Keep(KeepJobs),
}

impl<'de> Deserialize<'de> for Retention {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let input: RetentionInput =
            crate::strict::buffered(d, "true, false, a count or an object {age, count}")?;
        Ok(match input {
            RetentionInput::Remove(b) => Retention::Remove(b),
            RetentionInput::Count(n) => Retention::Count(n),
            RetentionInput::Keep(k) => Retention::Keep(k),
        })
    }
}

/// Retention by age and/or count.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct KeepJobs {
    /// Keep jobs younger than this many seconds (BullMQ uses seconds here).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::int::opt"
    )]
    #[schema(minimum = 0, maximum = 1_099_511_627_776_u64)]
    pub age: Option<u64>,
    /// Keep at most this many.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::int::opt"
    )]
    #[schema(minimum = 0, maximum = 1_099_511_627_776_u64)]
    pub count: Option<u64>,
}

/// BullMQ deduplication: while a job with this id exists (or for `ttl` ms),
/// adding another with the same id adds nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Deduplication {
    /// The deduplication id.
    #[schema(min_length = 1, max_length = 256)]
    pub id: String,
    /// How long the id blocks duplicates, in milliseconds, at most a year
    /// (absent: until the job finishes).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::int::opt"
    )]
    #[schema(minimum = 1, maximum = 31_536_000_000_u64)]
    pub ttl: Option<u64>,
    /// A duplicate resets the id's `ttl` (BullMQ's debounce mode, with
    /// `replace`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extend: Option<bool>,
    /// A duplicate replaces the existing job while that one is still
    /// delayed: the last one added wins (BullMQ's debounce mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replace: Option<bool>,
}

job_options! {
    /// Options for one job, in BullMQ's JSON spelling. Absent fields take the
    /// queue binding's defaults.
    pub struct JobOptions {
        job_id,
        delay,
        priority,
        lifo,
        attempts,
        backoff,
        remove_on_complete,
        remove_on_fail,
        deduplication,
        limits,
    }
}

fn bad(field: &str, message: impl Into<String>) -> FieldError {
    FieldError::new(field, message)
}

/// BullMQ's priority range.
pub const MAX_PRIORITY: u32 = 2_097_152;

/// Longest `delay`, backoff wait or deduplication TTL: a year. Beyond it
/// BullMQ's delayed-set scores lose millisecond precision, and a wait that
/// long is a mistake (a schedule is the tool for far-off work).
pub const MAX_DELAY_MS: u64 = 365 * 24 * 60 * 60 * 1000;

/// Most attempts a job may have.
pub const MAX_ATTEMPTS: u32 = 10_000;

pub use crate::names::MAX_ID_LEN;

/// The priority a job added through Airlock gets when its key has no room
/// for it (BullMQ's lowest): it waits in the prioritized set, behind every
/// ready job, instead of in the FIFO wait list ahead of other keys' jobs;
/// a worker parks it in its key's line (`state::key_limits`) once nothing
/// else is ready, and its release puts it on the wait list. A job given
/// this priority by its producer is treated the same way.
pub const HELD_BACK_PRIORITY: u32 = MAX_PRIORITY;

/// Largest retention count or age (seconds) BullMQ's scripts handle exactly.
pub const MAX_RETENTION: u64 = 1 << 40;

/// The longest wait exponential backoff asks for: BullMQ waits
/// `delay × 2^(n − 1)` after the n-th failure, and the last retry follows
/// failure `attempts − 1`. Saturates instead of overflowing.
pub fn exponential_wait(delay: u64, attempts: u32) -> u64 {
    if attempts < 2 || delay == 0 {
        return 0;
    }
    let shift = attempts - 2;
    if shift >= 64 {
        return u64::MAX;
    }
    delay.saturating_mul(1u64 << shift)
}

/// How exponential backoff's delay is capped: by the attempts rounded up
/// to a multiple of [`BACKOFF_TIER`], so the OpenAPI document can state
/// the rule exactly with a handful of cases (`api::openapi`). With `n`
/// attempts the longest wait is then at most a year whatever the delay
/// the tier allows.
pub const BACKOFF_TIER: u32 = 8;

/// The largest exponential-backoff delay allowed with `attempts`.
pub fn max_exponential_delay(attempts: u32) -> u64 {
    if attempts < 2 {
        return MAX_DELAY_MS;
    }
    let tier = attempts.div_ceil(BACKOFF_TIER) * BACKOFF_TIER;
    MAX_DELAY_MS.checked_shr(tier - 2).unwrap_or(0)
}

impl Retention {
    fn validate(&self, field: &str) -> Result<(), FieldError> {
        let too_big = match self {
            Retention::Remove(_) => false,
            Retention::Count(n) => *n > MAX_RETENTION,
            Retention::Keep(KeepJobs { age, count }) => {
                age.is_some_and(|a| a > MAX_RETENTION) || count.is_some_and(|c| c > MAX_RETENTION)
            }
        };
        if too_big {
            return Err(bad(
                field,
                format!("counts and ages must be at most {MAX_RETENTION}"),
            ));
        }
        Ok(())
    }
}

impl JobOptions {
    /// These options with the absent fields filled from `defaults`.
    pub fn with_defaults(&self, defaults: &DefaultJobOptions) -> JobOptions {
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
            deduplication: self.deduplication.clone(),
            limits: self.limits.clone(),
        }
    }

    /// Checks ranges BullMQ would reject or misbehave on, naming the field.
    pub fn validate(&self) -> Result<(), FieldError> {
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
            if id.len() > MAX_ID_LEN {
                return Err(bad("jobId", format!("is longer than {MAX_ID_LEN} bytes")));
            }
        }
        if let Some(d) = self.delay
            && d > MAX_DELAY_MS
        {
            return Err(bad(
                "delay",
                format!("must be at most {MAX_DELAY_MS} ms (a year)"),
            ));
        }
        if let Some(p) = self.priority
            && p > MAX_PRIORITY
        {
            return Err(bad(
                "priority",
                format!("must be between 0 and {MAX_PRIORITY}"),
            ));
        }
        match self.attempts {
            Some(0) => return Err(bad("attempts", "must be at least 1")),
            Some(a) if a > MAX_ATTEMPTS => {
                return Err(bad("attempts", format!("must be at most {MAX_ATTEMPTS}")));
            }
            _ => {}
        }
        if let Some(backoff) = &self.backoff {
            let delay = match backoff {
                Backoff::Fixed { delay } | Backoff::Exponential { delay } => *delay,
            };
            if delay > MAX_DELAY_MS {
                return Err(bad(
                    "backoff.delay",
                    format!("must be at most {MAX_DELAY_MS} ms (a year)"),
                ));
            }
            if let Backoff::Exponential { delay } = backoff {
                let attempts = self.attempts.unwrap_or(1);
                let max = max_exponential_delay(attempts);
                if *delay > max {
                    return Err(bad(
                        "backoff.delay",
                        format!(
                            "with {attempts} attempts an exponential backoff's delay may be at most {max} ms \
                             (so the longest wait stays within a year)"
                        ),
                    ));
                }
            }
        }
        if let Some(r) = &self.remove_on_complete {
            r.validate("removeOnComplete")?;
        }
        if let Some(r) = &self.remove_on_fail {
            r.validate("removeOnFail")?;
        }
        if let Some(d) = &self.deduplication {
            if d.id.is_empty() || d.id.len() > MAX_ID_LEN {
                return Err(bad(
                    "deduplication.id",
                    format!("must be 1 to {MAX_ID_LEN} bytes"),
                ));
            }
            if let Some(ttl) = d.ttl
                && (ttl == 0 || ttl > MAX_DELAY_MS)
            {
                return Err(bad(
                    "deduplication.ttl",
                    format!("must be between 1 and {MAX_DELAY_MS} ms (a year)"),
                ));
            }
        }
        if self.lifo == Some(true) && self.priority.is_some_and(|p| p > 0) {
            return Err(bad("lifo", "cannot be combined with a priority"));
        }
        Ok(())
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
        let defaults: DefaultJobOptions =
            serde_json::from_str(r#"{"attempts":5,"backoff":{"type":"exponential","delay":2000}}"#)
                .unwrap();
        let opts: JobOptions = serde_json::from_str(r#"{"attempts":2}"#).unwrap();
        let merged = opts.with_defaults(&defaults);
        assert_eq!(merged.attempts, Some(2));
        assert_eq!(merged.backoff, Some(Backoff::Exponential { delay: 2000 }));
    }

    #[test]
    fn a_subset_refuses_the_options_it_cannot_honour() {
        for (json, field) in [
            (r#"{"jobId":"x"}"#, "jobId"),
            (r#"{"limits":{"fuel":1}}"#, "limits"),
            (r#"{"deduplication":{"id":"d"}}"#, "deduplication"),
        ] {
            let err = serde_json::from_str::<DefaultJobOptions>(json).unwrap_err();
            assert!(err.to_string().contains(field), "{json}: {err}");
        }
        let err = serde_json::from_str::<FlowNodeOptions>(r#"{"limits":{}}"#).unwrap_err();
        assert!(err.to_string().contains("limits"), "{err}");
        let err = serde_json::from_str::<ScheduleJobOptions>(r#"{"delay":5}"#).unwrap_err();
        assert!(err.to_string().contains("delay"), "{err}");
        // Integral floats are integers, as the schema says.
        let opts: JobOptions = serde_json::from_str(r#"{"delay":5.0,"attempts":3.0}"#).unwrap();
        assert_eq!((opts.delay, opts.attempts), (Some(5), Some(3)));
    }
}
