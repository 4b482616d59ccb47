//! The limit flags `airlock run` and `airlock queue bind` share, one flag
//! per [`LimitsOverride`] field, parsed once: sizes like `64MiB`, durations
//! like `30s`, errors naming the flag.

use clap::Args;

use crate::sandbox::LimitsOverride;

/// Per-job limits, as flags.
#[derive(Debug, Default, Args)]
pub struct LimitFlags {
    /// Fuel budget per job (`off` to run without fuel metering, bounded by
    /// the timeout only).
    #[arg(long)]
    pub fuel: Option<String>,
    /// Memory cap, e.g. `64MiB`.
    #[arg(long)]
    pub memory: Option<String>,
    /// Wall-clock deadline per run, e.g. `30s`, `500ms`.
    #[arg(long)]
    pub timeout: Option<String>,
    /// Largest return value, e.g. `1MiB`.
    #[arg(long)]
    pub max_output: Option<String>,
    /// Log bytes kept per run, e.g. `256KiB`.
    #[arg(long)]
    pub max_log: Option<String>,
    /// Log lines kept per run.
    #[arg(long)]
    pub max_log_lines: Option<u32>,
    /// Durable steps a run may record.
    #[arg(long)]
    pub max_steps: Option<u32>,
    /// Largest recorded step result, e.g. `1MiB`.
    #[arg(long)]
    pub max_step_size: Option<String>,
    /// Outgoing HTTP requests per run.
    #[arg(long)]
    pub max_http_requests: Option<u32>,
    /// Largest outgoing request body, e.g. `1MiB`.
    #[arg(long)]
    pub max_http_request_size: Option<String>,
    /// Largest response body a run may read, e.g. `8MiB`.
    #[arg(long)]
    pub max_http_response_size: Option<String>,
    /// Deadline of one outgoing request, e.g. `10s`.
    #[arg(long)]
    pub http_timeout: Option<String>,
}

/// What the flags ask for.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct LimitRequest {
    /// `--fuel off`.
    pub unmetered: bool,
    /// Every other limit flag.
    pub limits: LimitsOverride,
}

impl LimitFlags {
    /// The limits the flags name; an unparsable value is an error naming
    /// its flag. Ranges are checked where the limits are applied (the
    /// binding route, or `airlock run` against the host maxima).
    pub fn request(&self) -> anyhow::Result<LimitRequest> {
        let mut req = LimitRequest::default();
        match self.fuel.as_deref() {
            None => {}
            Some("off") => req.unmetered = true,
            Some(text) => {
                let fuel = text
                    .replace('_', "")
                    .parse()
                    .map_err(|_| anyhow::anyhow!("--fuel: `{text}` is not a number or `off`"))?;
                req.limits.fuel = Some(fuel);
            }
        }
        let l = &mut req.limits;
        l.memory_bytes = size("--memory", &self.memory)?;
        l.timeout_ms = millis("--timeout", &self.timeout)?;
        l.max_output_bytes = size("--max-output", &self.max_output)?;
        l.max_log_bytes = size("--max-log", &self.max_log)?;
        l.max_log_lines = self.max_log_lines;
        l.max_steps = self.max_steps;
        l.max_step_bytes = size("--max-step-size", &self.max_step_size)?;
        l.max_http_requests = self.max_http_requests;
        l.max_http_request_bytes = size("--max-http-request-size", &self.max_http_request_size)?;
        l.max_http_response_bytes = size("--max-http-response-size", &self.max_http_response_size)?;
        l.http_timeout_ms = millis("--http-timeout", &self.http_timeout)?;
        Ok(req)
    }
}

/// The flag of a limit field in the API's spelling (`memoryBytes` →
/// `--memory`), for errors the server or the sandbox name by field.
pub fn flag_of(field: &str) -> Option<&'static str> {
    Some(match field {
        "fuel" => "--fuel",
        "memoryBytes" => "--memory",
        "timeoutMs" => "--timeout",
        "maxOutputBytes" => "--max-output",
        "maxLogBytes" => "--max-log",
        "maxLogLines" => "--max-log-lines",
        "maxSteps" => "--max-steps",
        "maxStepBytes" => "--max-step-size",
        "maxHttpRequests" => "--max-http-requests",
        "maxHttpRequestBytes" => "--max-http-request-size",
        "maxHttpResponseBytes" => "--max-http-response-size",
        "httpTimeoutMs" => "--http-timeout",
        _ => return None,
    })
}

fn size(flag: &str, text: &Option<String>) -> anyhow::Result<Option<u64>> {
    text.as_deref()
        .map(|t| {
            t.parse::<bytesize::ByteSize>()
                .map(|s| s.as_u64())
                .map_err(|e| anyhow::anyhow!("{flag}: `{t}` is not a size like 64MiB: {e}"))
        })
        .transpose()
}

/// A duration flag in milliseconds.
pub fn millis(flag: &str, text: &Option<String>) -> anyhow::Result<Option<u64>> {
    text.as_deref()
        .map(|t| {
            humantime::parse_duration(t)
                .map(|d| d.as_millis() as u64)
                .map_err(|e| anyhow::anyhow!("{flag}: `{t}` is not a duration like 5s: {e}"))
        })
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_flag_lands_in_its_field() {
        let flags = LimitFlags {
            fuel: Some("1_000_000".into()),
            memory: Some("64MiB".into()),
            timeout: Some("30s".into()),
            max_output: Some("1KiB".into()),
            max_log: Some("2KiB".into()),
            max_log_lines: Some(10),
            max_steps: Some(5),
            max_step_size: Some("3KiB".into()),
            max_http_requests: Some(7),
            max_http_request_size: Some("4KiB".into()),
            max_http_response_size: Some("5KiB".into()),
            http_timeout: Some("2s".into()),
        };
        let req = flags.request().unwrap();
        assert!(!req.unmetered);
        let l = req.limits;
        assert_eq!(l.fuel, Some(1_000_000));
        assert_eq!(l.memory_bytes, Some(64 << 20));
        assert_eq!(l.timeout_ms, Some(30_000));
        assert_eq!(l.max_output_bytes, Some(1024));
        assert_eq!(l.max_log_bytes, Some(2048));
        assert_eq!(l.max_log_lines, Some(10));
        assert_eq!(l.max_steps, Some(5));
        assert_eq!(l.max_step_bytes, Some(3072));
        assert_eq!(l.max_http_requests, Some(7));
        assert_eq!(l.max_http_request_bytes, Some(4096));
        assert_eq!(l.max_http_response_bytes, Some(5120));
        assert_eq!(l.http_timeout_ms, Some(2000));
    }

    #[test]
    fn errors_name_the_flag() {
        let flags = LimitFlags {
            max_http_response_size: Some("lots".into()),
            ..Default::default()
        };
        let err = flags.request().unwrap_err().to_string();
        assert!(err.starts_with("--max-http-response-size: `lots`"), "{err}");
        let off = LimitFlags {
            fuel: Some("off".into()),
            ..Default::default()
        };
        assert!(off.request().unwrap().unmetered);
    }
}
