//! `airlock queue bind`: every field of a binding (`PUT /v1/queues/{queue}`)
//! as a flag, built into the API's own [`BindingSpec`] type, so the CLI
//! cannot drift from what the route accepts. Scalars take plain values
//! (`--concurrency 4`, `--timeout 30s`); the structured flow-control fields
//! take the API's JSON object. A value the CLI cannot parse, and a field
//! the server refuses, are reported against the flag that set it.

use std::collections::BTreeMap;

use anyhow::Context as _;
use clap::Args;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::client::ApiFailure;
use super::limits::{self, LimitFlags};
use crate::queue::{Backoff, DefaultJobOptions, Retention};
use crate::registry::{BindingSpec, RateLimit};
use crate::sandbox::egress::EgressRule;

/// `airlock queue bind`.
#[derive(Debug, Args)]
pub struct BindArgs {
    /// Queue name.
    pub queue: String,
    /// Handler name.
    #[arg(long)]
    pub handler: String,
    /// Jobs at once per host.
    #[arg(long)]
    pub concurrency: Option<usize>,
    /// Per-job limits (over the host's defaults, up to its maxima).
    #[command(flatten)]
    pub limits: LimitFlags,
    /// Default attempts.
    #[arg(long)]
    pub attempts: Option<u32>,
    /// Default backoff: `exponential:2000` or `fixed:500` (ms).
    #[arg(long)]
    pub backoff: Option<String>,
    /// Default delay before a job's first run, e.g. `10s`.
    #[arg(long)]
    pub delay: Option<String>,
    /// Default priority (1 runs first; absent: no priority).
    #[arg(long)]
    pub priority: Option<u32>,
    /// Default: take new jobs last in, first out.
    #[arg(long)]
    pub lifo: bool,
    /// Default removeOnComplete: `true`, `false`, a count or
    /// `{"age":3600,"count":100}`.
    #[arg(long)]
    pub remove_on_complete: Option<String>,
    /// Default removeOnFail: `true`, `false`, a count or
    /// `{"age":3600,"count":100}`.
    #[arg(long)]
    pub remove_on_fail: Option<String>,
    /// Event names that enqueue jobs here (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub events: Vec<String>,
    /// Jobs active at once across the whole fleet.
    #[arg(long)]
    pub global_concurrency: Option<u64>,
    /// Fleet-wide rate limit: `100/1s` (jobs per window).
    #[arg(long)]
    pub rate_limit: Option<String>,
    /// A configuration value the handler can read, `KEY=VALUE` (repeatable).
    #[arg(long = "config", value_name = "KEY=VALUE")]
    pub config: Vec<String>,
    /// A destination the handler may send HTTP requests to,
    /// `scheme://host[:port]`, or a rule
    /// `{"url":"https://api.example.com","methods":["POST"],"pathPrefix":"/v1/"}`
    /// (repeatable; `*.` for subdomains; the host's `--egress-allow` must
    /// allow it too).
    #[arg(long = "egress", value_name = "RULE")]
    pub egress: Vec<String>,
    /// A job's time to finish across all its attempts, sleeps and waits,
    /// e.g. `1h`; past it the job fails as `timed_out`.
    #[arg(long)]
    pub finish_timeout: Option<String>,
    /// An event that cancels matching started jobs (repeatable):
    /// `{"event":"order.cancelled","match":"$.orderId"}`, optionally with
    /// `"eventMatch"`.
    #[arg(long = "cancel-on", value_name = "JSON")]
    pub cancel_on: Vec<String>,
    /// At most `limit` jobs of one key at once across the fleet:
    /// `{"key":"$.customerId","limit":2}`.
    #[arg(long, value_name = "JSON")]
    pub key_concurrency: Option<String>,
    /// Starts per period per key; a job over the rate waits:
    /// `{"key":"$.customerId","limit":10,"periodMs":60000,"burst":2}`.
    #[arg(long, value_name = "JSON")]
    pub key_throttle: Option<String>,
    /// Starts per period per key; a job over the rate fails as
    /// `rate_limited`: `{"key":"$.customerId","limit":10,"periodMs":60000}`.
    #[arg(long, value_name = "JSON")]
    pub key_rate_limit: Option<String>,
    /// Of one key's jobs added less than `periodMs` apart only the last runs:
    /// `{"key":"$.userId","periodMs":5000,"maxWaitMs":60000}`.
    #[arg(long, value_name = "JSON")]
    pub debounce: Option<String>,
    /// One running job per key: `{"key":"$.accountId","mode":"skip"}`
    /// (`skip` or `cancel`).
    #[arg(long, value_name = "JSON")]
    pub singleton: Option<String>,
    /// Share the queue's `--global-concurrency` between tenants by weight;
    /// a tenant is the API token that enqueued a job or a value in
    /// its data: `{"tenant":"producer","weights":{"web":3}}`,
    /// `{"tenant":"$.tenantId"}`.
    #[arg(long, value_name = "JSON")]
    pub fairness: Option<String>,
    /// Reuse a completed job's instance for the next job of the same producer:
    /// `{"maxJobs":100,"idleMs":60000}`.
    #[arg(long, value_name = "JSON")]
    pub warm_instances: Option<String>,
    /// Put the run's W3C `traceparent` on the handler's outbound requests
    /// (on hosts that export traces).
    #[arg(long)]
    pub propagate_trace: bool,
    /// Record each run's transcript into its job, for `airlock replay`.
    #[arg(long)]
    pub record_transcripts: bool,
    /// Send a share of new jobs to a candidate version of the handler:
    /// `{"digest":"<64 hex>","percent":10}`.
    #[arg(long, value_name = "JSON")]
    pub canary: Option<String>,
    /// What the handler may start: `{"queues":["emails*"],"events":["order.*"]}`.
    #[arg(long, value_name = "JSON")]
    pub starts: Option<String>,
    /// Announce jobs that failed for good: `{"queue":"dead-letters","event":"job.failed"}`.
    #[arg(long, value_name = "JSON")]
    pub on_failure: Option<String>,
    /// Run jobs in batches (a batch handler's `run-batch`):
    /// `{"size":50,"minSize":10,"timeoutMs":1000,"key":"$.accountId"}`.
    #[arg(long, value_name = "JSON")]
    pub batch: Option<String>,
}

impl BindArgs {
    /// The binding the flags describe.
    pub fn spec(&self) -> anyhow::Result<BindingSpec> {
        let limits = self.limits.request()?;
        let mut spec = BindingSpec {
            handler: self.handler.clone(),
            limits: limits.limits,
            metered: limits.unmetered.then_some(false),
            concurrency: self.concurrency,
            default_job_options: self.defaults()?,
            events: self.events.clone(),
            global_concurrency: self.global_concurrency,
            rate_limit: self.rate_limit.as_deref().map(rate_limit).transpose()?,
            finish_timeout_ms: limits::millis("--finish-timeout", &self.finish_timeout)?,
            propagate_trace: self.propagate_trace,
            record_transcripts: self.record_transcripts,
            ..BindingSpec::default()
        };
        spec.config = self.config()?;
        spec.egress = self
            .egress
            .iter()
            .map(|rule| egress_rule(rule))
            .collect::<anyhow::Result<_>>()?;
        spec.cancel_on = self
            .cancel_on
            .iter()
            .map(|text| object("--cancel-on", text))
            .collect::<anyhow::Result<_>>()?;
        spec.key_concurrency = opt_object("--key-concurrency", &self.key_concurrency)?;
        spec.key_throttle = opt_object("--key-throttle", &self.key_throttle)?;
        spec.key_rate_limit = opt_object("--key-rate-limit", &self.key_rate_limit)?;
        spec.debounce = opt_object("--debounce", &self.debounce)?;
        spec.singleton = opt_object("--singleton", &self.singleton)?;
        spec.fairness = opt_object("--fairness", &self.fairness)?;
        spec.warm_instances = opt_object("--warm-instances", &self.warm_instances)?;
        spec.canary = opt_object("--canary", &self.canary)?;
        spec.starts = opt_object("--starts", &self.starts)?;
        spec.on_failure = opt_object("--on-failure", &self.on_failure)?;
        spec.batch = opt_object("--batch", &self.batch)?;
        Ok(spec)
    }

    fn defaults(&self) -> anyhow::Result<DefaultJobOptions> {
        Ok(DefaultJobOptions {
            attempts: self.attempts,
            backoff: self.backoff.as_deref().map(backoff).transpose()?,
            delay: limits::millis("--delay", &self.delay)?,
            priority: self.priority,
            lifo: self.lifo.then_some(true),
            remove_on_complete: self
                .remove_on_complete
                .as_deref()
                .map(|t| retention("--remove-on-complete", t))
                .transpose()?,
            remove_on_fail: self
                .remove_on_fail
                .as_deref()
                .map(|t| retention("--remove-on-fail", t))
                .transpose()?,
        })
    }

    fn config(&self) -> anyhow::Result<BTreeMap<String, String>> {
        self.config
            .iter()
            .map(|item| {
                item.split_once('=')
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .with_context(|| format!("--config: expected KEY=VALUE, got `{item}`"))
            })
            .collect()
    }
}

/// The body for `PUT /v1/queues/{queue}`: the spec without its absent
/// fields, so the server's defaults apply to them.
pub fn body(spec: &BindingSpec) -> anyhow::Result<Value> {
    fn prune(v: &mut Value) {
        if let Value::Object(map) = v {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(prune);
        }
    }
    let mut body = serde_json::to_value(spec)?;
    prune(&mut body);
    Ok(body)
}

/// The flag that sets a field the server named (`limits.memoryBytes` →
/// `--memory`, `keyConcurrency.limit` → `--key-concurrency`).
pub fn flag_of(field: &str) -> Option<String> {
    let top = field.split(['.', '[']).next().unwrap_or(field);
    let rest = field
        .strip_prefix(top)
        .and_then(|r| r.strip_prefix('.'))
        .map(|r| r.split(['.', '[']).next().unwrap_or(r));
    let flag = match (top, rest) {
        ("limits", Some(limit)) => return limits::flag_of(limit).map(String::from),
        ("metered", _) => "--fuel".into(),
        ("finishTimeoutMs", _) => "--finish-timeout".into(),
        ("defaultJobOptions", Some(option)) => kebab(option),
        ("body" | "limits" | "defaultJobOptions", _) => return None,
        (top, _) => kebab(top),
    };
    Some(flag)
}

fn kebab(camel: &str) -> String {
    let mut flag = String::from("--");
    for c in camel.chars() {
        if c.is_ascii_uppercase() {
            flag.push('-');
            flag.push(c.to_ascii_lowercase());
        } else {
            flag.push(c);
        }
    }
    flag
}

/// An API refusal of a bind, reported against the flag that set the
/// field; other errors unchanged.
pub fn name_the_flag(e: anyhow::Error) -> anyhow::Error {
    let Some(failure) = e.downcast_ref::<ApiFailure>() else {
        return e;
    };
    match failure.field.as_deref().and_then(flag_of) {
        Some(flag) => {
            let field = failure.field.clone().unwrap_or_default();
            let message = failure.message.clone();
            e.context(format!("{flag}: {message} (field `{field}`)"))
        }
        None => e,
    }
}

fn object<T: DeserializeOwned>(flag: &str, text: &str) -> anyhow::Result<T> {
    airlock_core::strict::from_slice(text.as_bytes())
        .map_err(|e| anyhow::anyhow!("{flag}: {e}: `{text}`"))
}

fn opt_object<T: DeserializeOwned>(flag: &str, text: &Option<String>) -> anyhow::Result<Option<T>> {
    text.as_deref().map(|t| object(flag, t)).transpose()
}

fn backoff(text: &str) -> anyhow::Result<Backoff> {
    if text.trim_start().starts_with('{') {
        return object("--backoff", text);
    }
    let expected =
        || format!("--backoff: expected `exponential:2000` or `fixed:500`, got `{text}`");
    let (kind, delay) = text.split_once(':').with_context(expected)?;
    let delay: u64 = delay
        .parse()
        .with_context(|| format!("--backoff: `{delay}` is not milliseconds"))?;
    match kind {
        "fixed" => Ok(Backoff::Fixed { delay }),
        "exponential" => Ok(Backoff::Exponential { delay }),
        _ => anyhow::bail!(expected()),
    }
}

fn retention(flag: &str, text: &str) -> anyhow::Result<Retention> {
    object(flag, text).map_err(|_| {
        anyhow::anyhow!(
            "{flag}: expected true, false, a count or {{\"age\":3600,\"count\":100}}, got `{text}`"
        )
    })
}

fn rate_limit(text: &str) -> anyhow::Result<RateLimit> {
    let (max, window) = text
        .split_once('/')
        .with_context(|| format!("--rate-limit: expected `100/1s`, got `{text}`"))?;
    let max = max
        .parse()
        .with_context(|| format!("--rate-limit: `{max}` is not a count"))?;
    let window = humantime::parse_duration(window)
        .with_context(|| format!("--rate-limit: `{window}` is not a duration"))?;
    Ok(RateLimit {
        max,
        duration_ms: window.as_millis() as u64,
    })
}

fn egress_rule(text: &str) -> anyhow::Result<EgressRule> {
    if text.trim_start().starts_with('{') {
        return object("--egress", text);
    }
    serde_json::from_value(Value::String(text.to_string()))
        .map_err(|e| anyhow::anyhow!("--egress: `{text}`: {e}"))
}

#[cfg(test)]
mod tests {
    use clap::Parser;
    use serde_json::json;

    use super::*;

    #[derive(Parser)]
    struct Cmd {
        #[command(flatten)]
        args: BindArgs,
    }

    fn spec(args: &[&str]) -> anyhow::Result<Value> {
        let cmd = Cmd::try_parse_from([&["bind", "q", "--handler", "h"], args].concat())?;
        body(&cmd.args.spec()?)
    }

    #[test]
    fn every_flow_control_field_has_a_flag() {
        let body = spec(&[
            "--finish-timeout",
            "1h",
            "--cancel-on",
            r#"{"event":"order.cancelled","match":"$.orderId"}"#,
            "--key-concurrency",
            r#"{"key":"$.customerId","limit":2}"#,
            "--key-throttle",
            r#"{"key":"$.customerId","limit":10,"periodMs":60000,"burst":2}"#,
            "--key-rate-limit",
            r#"{"key":"$.customerId","limit":5,"periodMs":1000}"#,
            "--debounce",
            r#"{"key":"$.userId","periodMs":5000}"#,
            "--singleton",
            r#"{"key":"$.accountId","mode":"skip"}"#,
            "--fairness",
            r#"{"tenant":"$.tenantId","weights":{"acme":3}}"#,
            "--warm-instances",
            r#"{"maxJobs":100,"idleMs":60000}"#,
            "--max-http-requests",
            "3",
            "--http-timeout",
            "2s",
            "--egress",
            r#"{"url":"https://api.example.com","methods":["POST"]}"#,
            "--egress",
            "https://*.example.org",
            "--remove-on-fail",
            r#"{"age":3600,"count":10}"#,
            "--starts",
            r#"{"queues":["emails*"],"events":["order.*"]}"#,
            "--on-failure",
            r#"{"queue":"dead-letters"}"#,
            "--batch",
            r#"{"size":50,"minSize":10,"timeoutMs":1000,"key":"$.accountId"}"#,
        ])
        .unwrap();
        assert_eq!(body["starts"]["queues"], json!(["emails*"]));
        assert_eq!(body["onFailure"]["queue"], json!("dead-letters"));
        assert_eq!(
            body["batch"],
            json!({"size": 50, "minSize": 10, "timeoutMs": 1000, "key": "$.accountId"})
        );
        assert_eq!(body["finishTimeoutMs"], json!(3_600_000));
        assert_eq!(body["cancelOn"][0]["match"], json!("$.orderId"));
        assert_eq!(
            body["keyConcurrency"],
            json!({"key": "$.customerId", "limit": 2})
        );
        assert_eq!(body["keyThrottle"]["burst"], json!(2));
        assert_eq!(body["keyRateLimit"]["periodMs"], json!(1000));
        assert_eq!(body["debounce"]["periodMs"], json!(5000));
        assert_eq!(body["singleton"]["mode"], json!("skip"));
        assert_eq!(body["fairness"]["weights"]["acme"], json!(3));
        assert_eq!(body["warmInstances"]["maxJobs"], json!(100));
        assert_eq!(
            body["limits"],
            json!({"maxHttpRequests": 3, "httpTimeoutMs": 2000})
        );
        assert_eq!(body["egress"][0]["methods"], json!(["POST"]));
        assert_eq!(body["egress"][1], json!("https://*.example.org"));
        assert_eq!(
            body["defaultJobOptions"]["removeOnFail"],
            json!({"age": 3600, "count": 10})
        );
        // What was not asked for is absent, so the server's defaults apply.
        assert!(body.get("metered").is_none() && body.get("rateLimit").is_none());
    }

    #[test]
    fn fairness_takes_producers_or_a_path() {
        let body = spec(&["--fairness", r#"{"tenant":"producer","weights":{"web":3}}"#]).unwrap();
        assert_eq!(
            body["fairness"],
            json!({"tenant": "producer", "weights": {"web": 3}})
        );
    }

    #[test]
    fn errors_name_the_flag() {
        let err = spec(&["--key-concurrency", r#"["$.a", 2]"#]).unwrap_err();
        assert!(err.to_string().starts_with("--key-concurrency: "), "{err}");
        let err = spec(&["--singleton", r#"{"key":"$.a","mode":"never"}"#]).unwrap_err();
        assert!(err.to_string().starts_with("--singleton: "), "{err}");
        let err = spec(&["--finish-timeout", "soon"]).unwrap_err();
        assert!(err.to_string().starts_with("--finish-timeout: "), "{err}");
        let err = spec(&["--fairness", r#"{"tenant":"producers"}"#]).unwrap_err();
        assert!(err.to_string().starts_with("--fairness: "), "{err}");
        assert!(err.to_string().contains("or `producer`"), "{err}");
        assert_eq!(flag_of("limits.memoryBytes").as_deref(), Some("--memory"));
        assert_eq!(
            flag_of("keyThrottle.periodMs").as_deref(),
            Some("--key-throttle")
        );
        assert_eq!(flag_of("cancelOn[1].match").as_deref(), Some("--cancel-on"));
        assert_eq!(
            flag_of("defaultJobOptions.removeOnFail").as_deref(),
            Some("--remove-on-fail")
        );
        assert_eq!(flag_of("egress[0]").as_deref(), Some("--egress"));
        assert_eq!(
            flag_of("fairness.weights.acme").as_deref(),
            Some("--fairness")
        );
        assert_eq!(
            flag_of("finishTimeoutMs").as_deref(),
            Some("--finish-timeout")
        );
    }
}
