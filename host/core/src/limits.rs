//! Resource limits for one job run, and how they combine.
//!
//! Limits come in three layers: the host's [`HostMaxima`] (operator
//! configuration), the queue binding's [`Limits`] (Airlock's defaults with
//! the binding's settings, up or down, within the maxima), and a job's
//! [`LimitsOverride`] (set at enqueue time). A job may lower a limit, never
//! raise it; trying is an error naming the field, not a silent clamp.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Everything that bounds one run of a guest.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    /// CPU budget in fuel units (roughly one per wasm instruction). `None`
    /// runs the guest without fuel metering, bounded by `timeout` alone:
    /// fuel instrumentation costs some throughput on loop-heavy code.
    pub fuel: Option<u64>,
    /// Cap on the guest's linear memory, summed over all its memories.
    pub memory_bytes: u64,
    /// Wall-clock deadline for the whole run, enforced by a timer on the run's
    /// future (the guest yields at every epoch tick so the timer fires)
    /// (JSON: `timeoutMs`).
    #[serde(rename = "timeoutMs", with = "duration_ms")]
    #[schema(value_type = u64)]
    pub timeout: Duration,
    /// Largest accepted return value (JSON text), in bytes.
    pub max_output_bytes: u64,
    /// Log bytes kept per run (guest logs plus stdout/stderr), each line
    /// counting its text plus a fixed overhead; the rest is counted and
    /// dropped so a log flood cannot exhaust host memory or Redis.
    pub max_log_bytes: u64,
    /// Log lines kept per run (empty lines included); the rest is counted
    /// and dropped.
    pub max_log_lines: u32,
    /// Durable steps a single run may record.
    pub max_steps: u32,
    /// Largest recorded step result (or KV value), in bytes.
    pub max_step_bytes: u64,
    /// Outgoing HTTP requests a run may make; the next one is refused.
    pub max_http_requests: u32,
    /// Largest outgoing request body, in bytes; a larger one fails that
    /// request.
    pub max_http_request_bytes: u64,
    /// Largest response body a run reads from one request, in bytes; reading
    /// past it fails that response.
    pub max_http_response_bytes: u64,
    /// Deadline of one outgoing request (connect, first byte, and between
    /// body chunks), within the run's own deadline (JSON: `httpTimeoutMs`).
    #[serde(rename = "httpTimeoutMs", with = "duration_ms")]
    #[schema(value_type = u64)]
    pub http_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            fuel: Some(2_000_000_000),
            memory_bytes: 64 << 20,
            timeout: Duration::from_secs(30),
            max_output_bytes: 1 << 20,
            max_log_bytes: 64 << 10,
            max_log_lines: 1_000,
            max_steps: 1_000,
            max_step_bytes: 1 << 20,
            max_http_requests: 50,
            max_http_request_bytes: 1 << 20,
            max_http_response_bytes: 8 << 20,
            http_timeout: Duration::from_secs(10),
        }
    }
}

/// The operator's ceiling for every limit on this host: no queue binding or
/// job can ask for more.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostMaxima {
    /// Highest fuel budget.
    pub fuel: u64,
    /// Whether queues may run guests without fuel metering; when false, a
    /// run without a fuel budget is refused (`fuel` named).
    pub allow_unmetered: bool,
    /// Largest memory cap (also sizes the instance pool's memory slots).
    pub memory_bytes: u64,
    /// Longest timeout (JSON: `timeoutMs`).
    #[serde(rename = "timeoutMs", with = "duration_ms")]
    #[schema(value_type = u64)]
    pub timeout: Duration,
    /// Largest return value.
    pub max_output_bytes: u64,
    /// Most log bytes per run.
    pub max_log_bytes: u64,
    /// Most log lines per run.
    pub max_log_lines: u32,
    /// Most steps per run.
    pub max_steps: u32,
    /// Largest step result.
    pub max_step_bytes: u64,
    /// Most outgoing HTTP requests per run.
    pub max_http_requests: u32,
    /// Largest outgoing request body.
    pub max_http_request_bytes: u64,
    /// Largest response body read per request.
    pub max_http_response_bytes: u64,
    /// Longest per-request deadline (JSON: `httpTimeoutMs`).
    #[serde(rename = "httpTimeoutMs", with = "duration_ms")]
    #[schema(value_type = u64)]
    pub http_timeout: Duration,
}

impl Default for HostMaxima {
    fn default() -> Self {
        HostMaxima {
            fuel: 1_000_000_000_000,
            allow_unmetered: true,
            memory_bytes: 1 << 30,
            timeout: Duration::from_secs(15 * 60),
            max_output_bytes: 16 << 20,
            max_log_bytes: 1 << 20,
            max_log_lines: 100_000,
            max_steps: 10_000,
            max_step_bytes: 4 << 20,
            max_http_requests: 10_000,
            max_http_request_bytes: 64 << 20,
            max_http_response_bytes: 256 << 20,
            http_timeout: Duration::from_secs(15 * 60),
        }
    }
}

/// Limits to set; `None` keeps the inherited value. Two uses: a binding's
/// `limits` replace Airlock's defaults ([`Limits::default`]), up or down,
/// checked against the host maxima ([`Limits::with_settings`],
/// [`Limits::check_within`]); a job's `opts.limits` may only lower its
/// binding's ([`Limits::lowered_by`]) — on an unmetered binding a job may
/// set any fuel budget, which a host whose maximum it exceeds refuses at
/// run time. Zero is refused either way. The schema's maxima are the
/// default host maxima ([`HostMaxima::default`], what `airlock serve` runs
/// with).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LimitsOverride {
    /// Lower fuel budget.
    #[schema(minimum = 1, maximum = 1_000_000_000_000_u64)]
    #[serde(default, deserialize_with = "crate::int::opt")]
    pub fuel: Option<u64>,
    /// Lower memory cap, in bytes.
    #[schema(minimum = 1, maximum = 1_073_741_824_u64)]
    #[serde(default, deserialize_with = "crate::int::opt")]
    pub memory_bytes: Option<u64>,
    /// Shorter timeout, in milliseconds.
    #[schema(minimum = 1, maximum = 900_000)]
    #[serde(default, deserialize_with = "crate::int::opt")]
    pub timeout_ms: Option<u64>,
    /// Smaller output cap.
    #[schema(minimum = 1, maximum = 16_777_216)]
    #[serde(default, deserialize_with = "crate::int::opt")]
    pub max_output_bytes: Option<u64>,
    /// Smaller log cap.
    #[schema(minimum = 1, maximum = 1_048_576)]
    #[serde(default, deserialize_with = "crate::int::opt")]
    pub max_log_bytes: Option<u64>,
    /// Fewer log lines.
    #[schema(minimum = 1, maximum = 100_000)]
    #[serde(default, deserialize_with = "crate::int::opt")]
    pub max_log_lines: Option<u32>,
    /// Fewer steps.
    #[schema(minimum = 1, maximum = 10_000)]
    #[serde(default, deserialize_with = "crate::int::opt")]
    pub max_steps: Option<u32>,
    /// Smaller step results.
    #[schema(minimum = 1, maximum = 4_194_304)]
    #[serde(default, deserialize_with = "crate::int::opt")]
    pub max_step_bytes: Option<u64>,
    /// Fewer outgoing HTTP requests.
    #[schema(minimum = 1, maximum = 10_000)]
    #[serde(default, deserialize_with = "crate::int::opt")]
    pub max_http_requests: Option<u32>,
    /// Smaller outgoing request bodies.
    #[schema(minimum = 1, maximum = 67_108_864)]
    #[serde(default, deserialize_with = "crate::int::opt")]
    pub max_http_request_bytes: Option<u64>,
    /// Smaller response bodies.
    #[schema(minimum = 1, maximum = 268_435_456)]
    #[serde(default, deserialize_with = "crate::int::opt")]
    pub max_http_response_bytes: Option<u64>,
    /// Shorter per-request deadline, in milliseconds.
    #[schema(minimum = 1, maximum = 900_000)]
    #[serde(default, deserialize_with = "crate::int::opt")]
    pub http_timeout_ms: Option<u64>,
}

/// A limit that was asked to go up instead of down, or past a maximum.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("limit `{field}`: {message}")]
pub struct LimitError {
    /// The offending field, in the JSON spelling (`memoryBytes`, ...).
    pub field: &'static str,
    /// What was wrong with it.
    pub message: String,
}

fn lower<T: PartialOrd + std::fmt::Display + Copy + Default>(
    field: &'static str,
    current: T,
    requested: Option<T>,
) -> Result<T, LimitError> {
    match requested {
        None => Ok(current),
        // As the binding route refuses it (`check_within`): a zero limit
        // can never run.
        Some(r) if r == T::default() => Err(LimitError {
            field,
            message: "must be greater than zero".into(),
        }),
        Some(r) if r <= current => Ok(r),
        Some(r) => Err(LimitError {
            field,
            message: format!("{r} is above the allowed {current}; a job may only lower limits"),
        }),
    }
}

impl Limits {
    /// These limits with the fields set in `settings` replaced (raising is
    /// allowed: this is how a queue binding configures its limits; check the
    /// result with [`Limits::check_within`]).
    pub fn with_settings(&self, settings: &LimitsOverride) -> Limits {
        Limits {
            fuel: settings.fuel.or(self.fuel),
            memory_bytes: settings.memory_bytes.unwrap_or(self.memory_bytes),
            timeout: settings
                .timeout_ms
                .map(Duration::from_millis)
                .unwrap_or(self.timeout),
            max_output_bytes: settings.max_output_bytes.unwrap_or(self.max_output_bytes),
            max_log_bytes: settings.max_log_bytes.unwrap_or(self.max_log_bytes),
            max_log_lines: settings.max_log_lines.unwrap_or(self.max_log_lines),
            max_steps: settings.max_steps.unwrap_or(self.max_steps),
            max_step_bytes: settings.max_step_bytes.unwrap_or(self.max_step_bytes),
            max_http_requests: settings.max_http_requests.unwrap_or(self.max_http_requests),
            max_http_request_bytes: settings
                .max_http_request_bytes
                .unwrap_or(self.max_http_request_bytes),
            max_http_response_bytes: settings
                .max_http_response_bytes
                .unwrap_or(self.max_http_response_bytes),
            http_timeout: settings
                .http_timeout_ms
                .map(Duration::from_millis)
                .unwrap_or(self.http_timeout),
        }
    }

    /// These limits tightened by `request`; raising any limit is an error.
    pub fn lowered_by(&self, request: &LimitsOverride) -> Result<Limits, LimitError> {
        let fuel = match (self.fuel, request.fuel) {
            (current, None) => current,
            // An unmetered queue accepts a job that wants a fuel budget.
            (None, Some(f)) => Some(lower("fuel", u64::MAX, Some(f))?),
            (Some(current), Some(f)) => Some(lower("fuel", current, Some(f))?),
        };
        let timeout_ms = lower(
            "timeoutMs",
            self.timeout.as_millis() as u64,
            request.timeout_ms,
        )?;
        Ok(Limits {
            fuel,
            memory_bytes: lower("memoryBytes", self.memory_bytes, request.memory_bytes)?,
            timeout: Duration::from_millis(timeout_ms),
            max_output_bytes: lower(
                "maxOutputBytes",
                self.max_output_bytes,
                request.max_output_bytes,
            )?,
            max_log_bytes: lower("maxLogBytes", self.max_log_bytes, request.max_log_bytes)?,
            max_log_lines: lower("maxLogLines", self.max_log_lines, request.max_log_lines)?,
            max_steps: lower("maxSteps", self.max_steps, request.max_steps)?,
            max_step_bytes: lower("maxStepBytes", self.max_step_bytes, request.max_step_bytes)?,
            max_http_requests: lower(
                "maxHttpRequests",
                self.max_http_requests,
                request.max_http_requests,
            )?,
            max_http_request_bytes: lower(
                "maxHttpRequestBytes",
                self.max_http_request_bytes,
                request.max_http_request_bytes,
            )?,
            max_http_response_bytes: lower(
                "maxHttpResponseBytes",
                self.max_http_response_bytes,
                request.max_http_response_bytes,
            )?,
            http_timeout: Duration::from_millis(lower(
                "httpTimeoutMs",
                self.http_timeout.as_millis() as u64,
                request.http_timeout_ms,
            )?),
        })
    }

    /// Checks these limits against the host's maxima, naming the first field
    /// over its maximum. Zero limits are refused too: they can never run.
    pub fn check_within(&self, max: &HostMaxima) -> Result<(), LimitError> {
        fn within<T: PartialOrd + std::fmt::Display + Default>(
            field: &'static str,
            value: T,
            max: T,
        ) -> Result<(), LimitError> {
            if value == T::default() {
                return Err(LimitError {
                    field,
                    message: "must be greater than zero".into(),
                });
            }
            if value > max {
                return Err(LimitError {
                    field,
                    message: format!("{value} is above this host's maximum of {max}"),
                });
            }
            Ok(())
        }
        match self.fuel {
            Some(f) => within("fuel", f, max.fuel)?,
            None if !max.allow_unmetered => {
                return Err(LimitError {
                    field: "fuel",
                    message: "this host does not allow running without fuel metering".into(),
                });
            }
            None => {}
        }
        within("memoryBytes", self.memory_bytes, max.memory_bytes)?;
        within(
            "timeoutMs",
            self.timeout.as_millis() as u64,
            max.timeout.as_millis() as u64,
        )?;
        within(
            "maxOutputBytes",
            self.max_output_bytes,
            max.max_output_bytes,
        )?;
        within("maxLogBytes", self.max_log_bytes, max.max_log_bytes)?;
        within("maxLogLines", self.max_log_lines, max.max_log_lines)?;
        within("maxSteps", self.max_steps, max.max_steps)?;
        within("maxStepBytes", self.max_step_bytes, max.max_step_bytes)?;
        within(
            "maxHttpRequests",
            self.max_http_requests,
            max.max_http_requests,
        )?;
        within(
            "maxHttpRequestBytes",
            self.max_http_request_bytes,
            max.max_http_request_bytes,
        )?;
        within(
            "maxHttpResponseBytes",
            self.max_http_response_bytes,
            max.max_http_response_bytes,
        )?;
        within(
            "httpTimeoutMs",
            self.http_timeout.as_millis() as u64,
            max.http_timeout.as_millis() as u64,
        )?;
        Ok(())
    }
}

/// Durations travel as whole milliseconds in JSON (`"timeout": 30000`).
mod duration_ms {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_millis() as u64)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_millis(u64::deserialize(d)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_may_lower_but_never_raise() {
        let base = Limits::default();
        let lowered = base
            .lowered_by(&LimitsOverride {
                memory_bytes: Some(1 << 20),
                timeout_ms: Some(100),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(lowered.memory_bytes, 1 << 20);
        assert_eq!(lowered.timeout, Duration::from_millis(100));
        assert_eq!(lowered.fuel, base.fuel);

        let err = base
            .lowered_by(&LimitsOverride {
                fuel: Some(base.fuel.unwrap() + 1),
                ..Default::default()
            })
            .unwrap_err();
        assert_eq!(err.field, "fuel");
    }

    #[test]
    fn limits_over_the_host_maxima_name_the_field() {
        let max = HostMaxima {
            memory_bytes: 32 << 20,
            ..Default::default()
        };
        let err = Limits::default().check_within(&max).unwrap_err();
        assert_eq!(err.field, "memoryBytes");
        let unmetered = Limits {
            fuel: None,
            ..Default::default()
        };
        let strict = HostMaxima {
            allow_unmetered: false,
            ..Default::default()
        };
        assert_eq!(unmetered.check_within(&strict).unwrap_err().field, "fuel");
    }
}
