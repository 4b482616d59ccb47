//! `airlock run`: a handler author's local test loop.
//!
//! Runs one job without Redis: steps, sleeps and the KV store live in
//! memory for the duration of the command. A durable sleep is honoured for
//! real (the job is re-run after the wake-up time, replaying its steps), or
//! skipped with `--skip-sleeps`. `--config`, `--egress` and `--secret` give
//! the job what a queue binding would: configuration, where its HTTP
//! requests may go, and secrets (encrypted with a key of this process's own).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use clap::Args;

use super::limits::{LimitFlags, flag_of};
use crate::sandbox::egress::{EgressPolicy, EgressRule};
use crate::sandbox::secrets::{self, SecretDestination, SecretPolicy, SecretsKey};
use crate::sandbox::{
    Completion, FailureKind, HostServices, JobInput, Limits, LocalServices, RunEnv, RunOutcome,
    Sandbox, SandboxConfig,
};
use airlock_core::clock::now_ms;

/// Arguments of `airlock run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The handler component (`.wasm`).
    pub handler: PathBuf,
    /// The job's data, as JSON.
    #[arg(long, default_value = "{}")]
    pub data: String,
    /// The job name.
    #[arg(long, default_value = "local")]
    pub name: String,
    /// The job's limits (over the sandbox defaults, up to its maxima).
    #[command(flatten)]
    pub limits: LimitFlags,
    /// Which attempt to report to the handler.
    #[arg(long, default_value_t = 1)]
    pub attempt: u32,
    /// Run the job this many times with the same in-memory state (shows
    /// idempotency: the second run of the e-mail handler skips).
    #[arg(long, default_value_t = 1)]
    pub repeat: u32,
    /// Do not wait out durable sleeps: wake the job at once.
    #[arg(long)]
    pub skip_sleeps: bool,
    /// Print the outcome as JSON.
    #[arg(long)]
    pub json: bool,
    /// A configuration value for the job, `KEY=VALUE` (repeatable).
    #[arg(long = "config", value_name = "KEY=VALUE")]
    pub config: Vec<String>,
    /// A destination the job may send HTTP requests to,
    /// `scheme://host[:port]` (repeatable; `*.example.com` for subdomains).
    #[arg(long = "egress", value_name = "PATTERN")]
    pub egress: Vec<String>,
    /// A non-public network the job may reach, e.g. `127.0.0.1/32` for a
    /// local mock (repeatable).
    #[arg(long = "egress-allow-network", value_name = "CIDR")]
    pub egress_networks: Vec<String>,
    /// A secret for the job, its value taken from the environment variable
    /// of the same name; sent only to the `--egress` destinations. Append
    /// `:reveal` to let the handler read the value (repeatable).
    #[arg(long = "secret", value_name = "NAME[:reveal]")]
    pub secrets: Vec<String>,
}

/// The binding-like environment of a local run, from the flags.
fn env_from(args: &RunArgs, services: &LocalServices) -> anyhow::Result<RunEnv> {
    let mut config = std::collections::BTreeMap::new();
    for item in &args.config {
        let (k, v) = item
            .split_once('=')
            .with_context(|| format!("--config: `{item}` is not KEY=VALUE"))?;
        config.insert(k.to_string(), v.to_string());
    }
    // The flags are both the operator's list and the binding's.
    let operator = super::serve::parse_egress(
        "--egress",
        args.egress.iter().map(String::as_str),
        args.egress_networks.iter().map(String::as_str),
    )?;
    let patterns = operator.allow.clone();
    let egress = (!patterns.is_empty()).then(|| EgressPolicy {
        operator: Arc::new(operator),
        rules: patterns.iter().cloned().map(EgressRule::Pattern).collect(),
    });
    let key = SecretsKey::generate();
    for item in &args.secrets {
        let (name, reveal) = match item.strip_suffix(":reveal") {
            Some(name) => (name, true),
            None => (item.as_str(), false),
        };
        let value = std::env::var(name).with_context(|| {
            format!("--secret {item}: set the environment variable `{name}` to its value")
        })?;
        let policy = SecretPolicy {
            allow: patterns
                .iter()
                .map(|pattern| SecretDestination {
                    pattern: pattern.clone(),
                    path: None,
                })
                .collect(),
            reveal,
            in_body: false,
        };
        let envelope = secrets::encrypt(&key, "local", name, &value, &policy, now_ms());
        services
            .store()
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .secrets
            .insert(name.to_string(), envelope);
    }
    Ok(RunEnv {
        config: Arc::new(config),
        egress,
        secrets_key: Some(key),
        http_pool: Some(Arc::new(crate::sandbox::http::HttpPool::default())),
        secrets_seen: Some(Arc::default()),
        ..RunEnv::default()
    })
}

/// Exit code for a failure kind: 0 is success, 1 a usage or load error.
pub fn exit_code(kind: FailureKind) -> i32 {
    match kind {
        FailureKind::GuestRetry => 2,
        FailureKind::GuestFatal => 3,
        FailureKind::FuelExhausted => 4,
        FailureKind::MemoryLimit => 5,
        FailureKind::Timeout => 6,
        FailureKind::StackOverflow => 7,
        FailureKind::MemoryFault => 8,
        FailureKind::Trap => 9,
        FailureKind::InvalidOutput => 10,
        FailureKind::OutputTooLarge => 11,
        FailureKind::Instantiation => 12,
        FailureKind::HostUnavailable => 13,
        FailureKind::Capacity => 14,
        FailureKind::Cancelled => 15,
        FailureKind::TimedOut => 16,
        FailureKind::RateLimited => 17,
        FailureKind::Skipped => 18,
    }
}

/// The limits `flags` set over the sandbox defaults, checked against the
/// host maxima (an error names the flag). The local runners — `airlock
/// run`, `replay` and `test` — set limits directly: it is the author's own
/// machine, there is no queue binding to stay under.
pub fn local_limits(flags: &LimitFlags) -> anyhow::Result<Limits> {
    let request = flags.request()?;
    let mut limits = Limits::default().with_settings(&request.limits);
    if request.unmetered {
        limits.fuel = None;
    }
    limits
        .check_within(&SandboxConfig::default().maxima)
        .map_err(|e| match flag_of(e.field) {
            Some(flag) => anyhow::anyhow!("{flag}: {}", e.message),
            None => anyhow::anyhow!("{e}"),
        })?;
    Ok(limits)
}

/// A local sandbox (compiled code cached in [`super::default_cache_dir`])
/// and the handler component at `path`, loaded (compiled off the async
/// threads when it is not cached yet).
pub async fn local_component(
    path: &std::path::Path,
) -> anyhow::Result<(Arc<Sandbox>, Arc<crate::sandbox::LoadedComponent>)> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let sandbox = Arc::new(Sandbox::new(SandboxConfig {
        max_instances: 4,
        cache_dir: Some(super::default_cache_dir()),
        ..SandboxConfig::default()
    })?);
    let component = {
        let sandbox = sandbox.clone();
        tokio::task::spawn_blocking(move || sandbox.load(&bytes)).await?
    }
    .with_context(|| format!("{} is not a usable handler", path.display()))?;
    Ok((sandbox, component))
}

/// Runs the command; returns the exit code.
pub async fn execute(args: RunArgs) -> anyhow::Result<i32> {
    serde_json::from_str::<serde::de::IgnoredAny>(&args.data)
        .with_context(|| format!("--data: not valid JSON: {}", args.data))?;
    let limits = local_limits(&args.limits)?;
    let (sandbox, component) = local_component(&args.handler).await?;

    let services = LocalServices::new();
    let env = env_from(&args, &services)?;
    let job = JobInput {
        id: format!("local-{}", now_ms()),
        queue: "local".into(),
        name: args.name.clone(),
        data: args.data.clone(),
        attempt: args.attempt,
        max_attempts: args.attempt.max(1),
        enqueued_at_ms: now_ms(),
        parent: None,
    };

    let mut last = None;
    for repetition in 1..=args.repeat.max(1) {
        if args.repeat > 1 && !args.json {
            println!("── run {repetition} of {} ──", args.repeat);
        }
        last =
            Some(run_until_done(&sandbox, &component, &job, &limits, &services, &env, &args).await);
    }
    let outcome = last.expect("at least one run");
    Ok(match &outcome.completion {
        Completion::Completed(_) => 0,
        Completion::Failed(f) => exit_code(f.kind),
        Completion::Suspended { .. } | Completion::Later(_) => 0,
    })
}

/// Runs the job, re-running it after each durable sleep as a queue host
/// would, and reports every run.
async fn run_until_done(
    sandbox: &Arc<Sandbox>,
    component: &Arc<crate::sandbox::LoadedComponent>,
    job: &JobInput,
    limits: &Limits,
    services: &LocalServices,
    env: &RunEnv,
    args: &RunArgs,
) -> RunOutcome {
    loop {
        let outcome = sandbox
            .run_isolated(
                component.clone(),
                job.clone(),
                limits.clone(),
                Box::new(services.clone()) as Box<dyn HostServices>,
                None,
                env.clone(),
            )
            .await;
        report(&outcome, services, args);
        let Completion::Suspended { wake_at_ms, .. } = outcome.completion else {
            return outcome;
        };
        let wait = Duration::from_millis(wake_at_ms.saturating_sub(now_ms()));
        if args.skip_sleeps {
            eprintln!(
                "durable sleep of {} skipped (--skip-sleeps); resuming",
                humantime::format_duration(wait)
            );
            services.wake_sleeps_now();
        } else {
            eprintln!(
                "durable sleep: resuming in {} (use --skip-sleeps to skip)",
                humantime::format_duration(wait)
            );
            tokio::time::sleep(wait).await;
        }
    }
}

fn report(outcome: &RunOutcome, services: &LocalServices, args: &RunArgs) {
    let progress: Vec<serde_json::Value> = services
        .store()
        .lock()
        .map(|mut s| s.progress.drain(..).map(|p| p.to_json()).collect())
        .unwrap_or_default();
    if args.json {
        let (status, result, failure) = match &outcome.completion {
            Completion::Completed(output) => ("completed", output.clone(), None),
            Completion::Failed(f) => ("failed", serde_json::Value::Null, Some(f.clone())),
            Completion::Suspended { .. } => ("suspended", serde_json::Value::Null, None),
            Completion::Later(_) => ("later", serde_json::Value::Null, None),
        };
        let doc = serde_json::json!({
            "status": status,
            "result": result,
            "failure": failure,
            "progress": progress,
            "logs": outcome.logs,
            "logsDroppedBytes": outcome.logs_dropped_bytes,
            "logsDroppedLines": outcome.logs_dropped_lines,
            "fuelUsed": outcome.fuel_used,
            "peakMemoryBytes": outcome.peak_memory_bytes,
            "wallTimeMs": outcome.wall_time.as_secs_f64() * 1000.0,
        });
        println!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
        return;
    }
    for p in &progress {
        println!("progress  {p}");
    }
    for line in &outcome.logs {
        println!("log       {}", line.render());
    }
    if outcome.logs_dropped_lines > 0 {
        println!(
            "log       ... {} more lines ({} bytes) dropped (log cap reached)",
            outcome.logs_dropped_lines, outcome.logs_dropped_bytes
        );
    }
    match &outcome.completion {
        Completion::Completed(output) => println!("result    {output}"),
        Completion::Failed(f) => println!("failed    {}: {}", f.kind, f.message),
        Completion::Suspended { wake_at_ms, .. } => println!("suspended until {wake_at_ms}"),
        Completion::Later(later) => println!("later     {later:?}"),
    }
    println!(
        "measured  fuel {}  memory {}  time {:.3} ms",
        outcome
            .fuel_used
            .map(|f| f.to_string())
            .unwrap_or_else(|| "unmetered".into()),
        bytesize::ByteSize(outcome.peak_memory_bytes),
        outcome.wall_time.as_secs_f64() * 1000.0
    );
}
