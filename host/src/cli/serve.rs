//! `airlock serve`: a worker host (and, with `--listen`, the HTTP API).
//!
//! Startup: connect to Redis (retrying until it answers), build the sandbox,
//! start the supervisor that keeps one BullMQ worker per bound queue, and
//! serve HTTP. On SIGTERM or SIGINT: stop fetching, give running jobs
//! `--grace` to finish, exit. Jobs still running then are left locked; their
//! locks expire and another host's stalled check recovers them, unless a
//! host restarted under the same id gives them back first
//! (`worker::recovery::take_over`, before its first heartbeat). A host
//! whose id a later process took over stops its guests and exits with
//! status 3.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use tokio::sync::watch;

use crate::api::auth::Tokens;
use crate::api::{ApiState, BodyLimits};
use crate::fleet::Fleet;
use crate::metrics::Metrics;
use crate::queue::{QueueService, WorkerSettings};
use crate::registry::Registry;
use crate::sandbox::egress::{EgressPattern, OperatorEgress};
use crate::sandbox::secrets::SecretsKey;
use crate::sandbox::{ArtifactKey, Sandbox, SandboxConfig};
use crate::worker::HostContext;
use crate::worker::capacity::Capacity;
use crate::worker::loader::ComponentLoader;
use crate::worker::membership::Membership;
use crate::worker::supervisor::Supervisor;

/// Arguments of `airlock serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Where Redis is: --redis, its TLS and credentials.
    #[command(flatten)]
    pub redis: super::redis::RedisArgs,
    /// Key prefix of the BullMQ queues (`{bull}` style hash tags for Cluster).
    #[arg(long, env = "AIRLOCK_PREFIX", default_value = "bull")]
    pub prefix: String,
    /// Serve only these queues (comma-separated); default: every bound queue.
    #[arg(long, value_delimiter = ',')]
    pub queues: Option<Vec<String>>,
    /// This host's id (default: hostname and a random suffix).
    #[arg(long, env = "AIRLOCK_HOST_ID")]
    pub host_id: Option<String>,
    /// Address for the HTTP API, e.g. `127.0.0.1:8080`.
    #[arg(long, env = "AIRLOCK_LISTEN")]
    pub listen: Option<SocketAddr>,
    /// Run no workers: serve only the HTTP API.
    #[arg(long)]
    pub no_workers: bool,
    /// Job lock duration; renewed at half of it while a job runs.
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
    pub lock_duration: Duration,
    /// How often to look for stalled jobs (lock expired).
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
    pub stalled_interval: Duration,
    /// Times a job may stall before it fails.
    #[arg(long, default_value_t = 1)]
    pub max_stalled_count: u32,
    /// On shutdown, how long running jobs get to finish.
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
    pub grace: Duration,
    /// How often to check the registry for changed bindings and handlers.
    #[arg(long, default_value = "500ms", value_parser = humantime::parse_duration)]
    pub poll: Duration,
    /// Instance pool size per engine.
    #[arg(long, default_value_t = 256)]
    pub max_instances: u32,
    /// Most bytes of each guest's linear memory kept resident in its pool
    /// slot between jobs and reset in place (see --slot-reset) instead of
    /// handed back to the kernel, so the next job on the slot takes no page
    /// faults for them. Costs up to this much RSS per used slot.
    #[arg(long, default_value = "16MiB")]
    pub memory_keep_resident: bytesize::ByteSize,
    /// How a guest's pool slot is reset for the next job: `prefix` (the
    /// first --memory-keep-resident bytes of its memory are copied back
    /// from the component's image), `scan` (the pages Linux's
    /// `PAGEMAP_SCAN` reports written are, up to --memory-keep-resident;
    /// on Linux 6.18 every page of each 2 MiB range a job touched is
    /// reported) or `decommit` (everything handed back to the kernel; the
    /// next job page-faults in what it touches); memory past
    /// --memory-keep-resident is decommitted in every mode. `prefix` costs least
    /// for Rust and QuickJS guests, `scan` for Python ones
    /// (docs/BENCHMARKS.md). At start-up the host proves that a reused slot
    /// comes back clean; if this mode's does not, it logs why and uses the
    /// next mode that clears (scan, then prefix, then decommit), and if none
    /// does it refuses to start.
    #[arg(long, default_value = "prefix", value_parser = parse_slot_reset)]
    pub slot_reset: crate::sandbox::SlotReset,
    /// Directory for compiled components.
    #[arg(long, env = "AIRLOCK_CACHE_DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Most the cache directory may hold (three quarters precompiled
    /// components, a quarter Cranelift's per-function cache); past it the
    /// least recently used files are deleted.
    #[arg(long, default_value = "8GiB")]
    pub cache_max_size: bytesize::ByteSize,
    /// A file holding the fleet's artifact key (at least 32 bytes): hosts
    /// with the same key share precompiled artifacts through Redis, each
    /// checking the others' with it. Without a key a host loads only
    /// artifacts it compiled itself.
    #[arg(
        long,
        env = "AIRLOCK_ARTIFACT_KEY_FILE",
        conflicts_with = "artifact_key"
    )]
    pub artifact_key_file: Option<PathBuf>,
    /// The fleet's artifact key itself (prefer `--artifact-key-file`).
    #[arg(long, env = "AIRLOCK_ARTIFACT_KEY", hide_env_values = true)]
    pub artifact_key: Option<String>,
    /// API tokens file: `[{"name": "ops", "role": "admin", "token": "..."}]`.
    #[arg(long, env = "AIRLOCK_TOKENS_FILE")]
    pub tokens_file: Option<PathBuf>,
    /// API tokens as `role:name:token,...` (roles: admin, deployer,
    /// producer, reader, cron).
    #[arg(long, env = "AIRLOCK_TOKENS", hide_env_values = true)]
    pub tokens: Option<String>,
    /// An origin (`https://app.example.com`) whose web pages may open a
    /// job's event stream with a read token (CORS: `GET` only, never with
    /// an `Authorization` header); repeat, or separate with commas.
    /// Without one, no CORS headers are sent.
    #[arg(
        long = "cors-origin",
        env = "AIRLOCK_CORS_ORIGINS",
        value_name = "ORIGIN",
        value_delimiter = ',',
        value_parser = parse_origin
    )]
    pub cors_origins: Vec<axum::http::HeaderValue>,
    /// Largest job data accepted by the API, e.g. `1MiB`.
    #[arg(long, default_value = "1MiB")]
    pub max_job_bytes: bytesize::ByteSize,
    /// Memory the guests of this host may use together (the sum of their
    /// memory limits), e.g. `8GiB`.
    #[arg(long, default_value = "8GiB")]
    pub memory_budget: bytesize::ByteSize,
    /// How often this host announces itself to the fleet.
    #[arg(long, default_value = "1s", value_parser = humantime::parse_duration)]
    pub heartbeat: Duration,
    /// Destinations guests of this host may send HTTP requests to, as
    /// `scheme://host[:port]` patterns (`https://*.sendgrid.net` for
    /// subdomains; comma-separated or repeated). A binding's `egress` list
    /// can only narrow this; without it no guest reaches anything.
    #[arg(
        long,
        env = "AIRLOCK_EGRESS_ALLOW",
        value_delimiter = ',',
        value_name = "PATTERN"
    )]
    pub egress_allow: Vec<String>,
    /// Non-public networks guests may reach although the address check
    /// refuses them, e.g. `127.0.0.1/32` for a local gateway (comma-separated
    /// or repeated).
    #[arg(
        long,
        env = "AIRLOCK_EGRESS_ALLOW_NETWORK",
        value_delimiter = ',',
        value_name = "CIDR"
    )]
    pub egress_allow_network: Vec<String>,
    /// A file holding the fleet's secrets key (64 hex digits): the key that
    /// seals queue secrets in Redis. Without it the host runs no job that
    /// asks for a secret and the API refuses to store one.
    #[arg(long, env = "AIRLOCK_SECRETS_KEY_FILE", conflicts_with = "secrets_key")]
    pub secrets_key_file: Option<PathBuf>,
    /// The fleet's secrets key itself (prefer `--secrets-key-file`).
    #[arg(long, env = "AIRLOCK_SECRETS_KEY", hide_env_values = true)]
    pub secrets_key: Option<String>,
}

/// The operator's egress rules, from `--egress-allow` and
/// `--egress-allow-network` (empty items of a comma list are skipped).
pub fn operator_egress(patterns: &[String], networks: &[String]) -> anyhow::Result<OperatorEgress> {
    parse_egress("--egress-allow", listed(patterns), listed(networks))
}

/// The non-empty items of a comma-separated flag, trimmed.
fn listed(items: &[String]) -> impl Iterator<Item = &str> {
    items.iter().map(|i| i.trim()).filter(|i| !i.is_empty())
}

/// Egress rules from flag values: destination patterns given with
/// `pattern_flag`, networks with `--egress-allow-network`; an error names
/// the flag and the value. Shared with `airlock run`.
pub(super) fn parse_egress<'a>(
    pattern_flag: &str,
    patterns: impl IntoIterator<Item = &'a str>,
    networks: impl IntoIterator<Item = &'a str>,
) -> anyhow::Result<OperatorEgress> {
    let allow = patterns
        .into_iter()
        .map(|p| {
            p.parse()
                .map_err(|e| anyhow::anyhow!("{pattern_flag}: {e}"))
        })
        .collect::<anyhow::Result<Vec<EgressPattern>>>()?;
    let networks = networks
        .into_iter()
        .map(|n| {
            n.parse().map_err(|_| {
                anyhow::anyhow!(
                    "--egress-allow-network: `{n}` is not a CIDR network (e.g. 127.0.0.1/32)"
                )
            })
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(OperatorEgress { allow, networks })
}

/// The fleet's secrets key, from `--secrets-key-file` or
/// `AIRLOCK_SECRETS_KEY`.
fn secrets_key(args: &ServeArgs) -> anyhow::Result<Option<SecretsKey>> {
    let text = match (&args.secrets_key_file, &args.secrets_key) {
        (Some(path), _) => std::fs::read_to_string(path).map_err(|e| {
            anyhow::anyhow!("--secrets-key-file: cannot read {}: {e}", path.display())
        })?,
        (None, Some(text)) => text.clone(),
        (None, None) => return Ok(None),
    };
    SecretsKey::from_hex(text.trim())
        .map(Some)
        .map_err(|e| anyhow::anyhow!("--secrets-key-file / AIRLOCK_SECRETS_KEY: {e}"))
}

fn load_tokens(args: &ServeArgs) -> anyhow::Result<Tokens> {
    let mut tokens = Tokens::default();
    if let Some(list) = &args.tokens {
        tokens.extend(Tokens::parse_list(list)?);
    }
    if let Some(file) = &args.tokens_file {
        tokens.extend(Tokens::from_file(file)?);
    }
    Ok(tokens)
}

/// The fleet's artifact key, from `--artifact-key-file` or
/// `AIRLOCK_ARTIFACT_KEY`.
fn fleet_key(args: &ServeArgs) -> anyhow::Result<Option<ArtifactKey>> {
    let secret = match (&args.artifact_key_file, &args.artifact_key) {
        (Some(path), _) => std::fs::read(path).map_err(|e| {
            anyhow::anyhow!("--artifact-key-file: cannot read {}: {e}", path.display())
        })?,
        (None, Some(secret)) => secret.as_bytes().to_vec(),
        (None, None) => return Ok(None),
    };
    ArtifactKey::fleet(&secret)
        .map(Some)
        .map_err(|e| anyhow::anyhow!("--artifact-key-file / AIRLOCK_ARTIFACT_KEY: {e}"))
}

/// An origin as a browser sends it: `http(s)://host[:port]`, no path.
fn parse_origin(origin: &str) -> Result<axum::http::HeaderValue, String> {
    let rest = origin
        .strip_prefix("https://")
        .or_else(|| origin.strip_prefix("http://"))
        .ok_or_else(|| {
            format!("`{origin}` is not an origin: it starts with http:// or https://")
        })?;
    if rest.is_empty() || rest.contains(['/', '?', '#', '*', ' ']) {
        return Err(format!(
            "`{origin}` is not an origin: scheme, host and port only, e.g. https://app.example.com"
        ));
    }
    axum::http::HeaderValue::from_str(origin).map_err(|e| format!("`{origin}`: {e}"))
}

fn parse_slot_reset(mode: &str) -> Result<crate::sandbox::SlotReset, String> {
    mode.parse()
}

fn default_host_id() -> String {
    let host = std::fs::read_to_string("/etc/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "host".into());
    let suffix = uuid::Uuid::new_v4().simple().to_string();
    format!("{host}-{}", &suffix[..8])
}

/// Runs the command until a shutdown signal.
pub async fn execute(args: ServeArgs) -> anyhow::Result<i32> {
    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    let stop = shutdown_tx.clone();
    tokio::spawn(async move {
        wait_for_signal().await;
        tracing::info!("shutdown signal received");
        let _ = shutdown_tx.send(true);
    });

    // Bad token or key configuration fails at once, before connecting
    // anywhere.
    load_tokens(&args)?;
    let fleet_key = fleet_key(&args)?;
    if fleet_key.is_none() {
        tracing::info!(
            "no fleet artifact key (--artifact-key-file): this host loads only artifacts it compiled itself and shares none"
        );
    }
    let egress = operator_egress(&args.egress_allow, &args.egress_allow_network)?;
    let secrets_key = secrets_key(&args)?;
    let host_id = args.host_id.clone().unwrap_or_else(default_host_id);
    let access = args.redis.access()?;
    let store = super::redis::connect(&access, &args.prefix, &shutdown_rx).await?;
    let seal = secrets_key
        .clone()
        .map(|key| Arc::new(key) as Arc<dyn airlock_core::seal::ProducerSeal>);
    let queues = Arc::new(QueueService::new(store.clone()).with_seal_key(seal));
    let sandbox = Arc::new(Sandbox::new(SandboxConfig {
        max_instances: args.max_instances,
        cache_dir: Some(
            args.cache_dir
                .clone()
                .unwrap_or_else(super::default_cache_dir),
        ),
        fleet_key,
        memory_keep_resident: args.memory_keep_resident.as_u64() as usize,
        slot_reset: args.slot_reset,
        cache_max_bytes: args.cache_max_size.as_u64(),
        ..SandboxConfig::default()
    })?);
    tracing::info!(
        slot_reset = %sandbox.slot_reset(),
        "a reused instance slot proved clean"
    );
    let registry = Registry::new(store.clone(), sandbox.clone());
    if !registry.verifies_entries() {
        tracing::info!(
            "no fleet artifact key: registry entries (bindings, handler versions) are neither sealed nor checked on this host"
        );
    }
    let metrics = Arc::new(Metrics::new());
    let traces = crate::traces::Traces::from_env()?.map(Arc::new);
    if traces.is_some() {
        tracing::info!("exporting traces over OTLP (OTEL_EXPORTER_OTLP_*)");
    }
    let host = Arc::new(HostContext {
        host_id: host_id.clone(),
        sandbox: sandbox.clone(),
        registry: registry.clone(),
        queues: queues.clone(),
        loader: ComponentLoader::new(sandbox.clone(), registry.clone()),
        metrics: metrics.clone(),
        capacity: Capacity::new(args.max_instances as usize, args.memory_budget.as_u64()),
        running: std::sync::atomic::AtomicUsize::new(0),
        applied_generation: std::sync::atomic::AtomicU64::new(crate::worker::NO_GENERATION),
        fleet: Fleet::new(store.clone(), args.heartbeat * 5),
        egress: Arc::new(egress),
        runs_jobs: !args.no_workers,
        secrets_key,
        cancels: Default::default(),
        traces: traces.clone(),
        worker_settings: WorkerSettings {
            concurrency: 1,
            lock_duration: args.lock_duration,
            stalled_interval: args.stalled_interval,
            max_stalled_count: args.max_stalled_count,
            name: host_id.clone(),
        },
    });

    let mut api_address = None;
    let api = match args.listen {
        Some(addr) => {
            let tokens = load_tokens(&args)?;
            if tokens.is_empty() {
                tracing::warn!(
                    "no API tokens configured (--tokens / --tokens-file): every API request but /healthz and /readyz will be refused"
                );
            }
            let limits = BodyLimits {
                max_job_data_bytes: args.max_job_bytes.as_u64() as usize,
                ..BodyLimits::default()
            };
            let listener = tokio::net::TcpListener::bind(addr).await?;
            let bound = listener.local_addr()?;
            api_address = Some(format!("http://{bound}"));
            let managed = match host.sandbox.fleet_derived_key(crate::access::PURPOSE) {
                Some(key) => Some(
                    crate::access::ManagedTokens::start(host.queues.store().clone(), key).await,
                ),
                None => {
                    tracing::info!(
                        "no fleet key: managed API tokens are neither taken nor created here (--tokens only)"
                    );
                    None
                }
            };
            let state = ApiState::new(host.clone(), tokens, managed, limits)
                .with_cors_origins(args.cors_origins.clone());
            let router = crate::api::router(state);
            let mut stop = shutdown_rx.clone();
            tracing::info!(%bound, "HTTP API listening");
            // Printed on stdout so scripts and tests can find an ephemeral port.
            println!("listening on http://{bound}");
            Some(tokio::spawn(async move {
                let service = router.into_make_service_with_connect_info::<std::net::SocketAddr>();
                axum::serve(listener, service)
                    .with_graceful_shutdown(async move {
                        let _ = stop.wait_for(|s| *s).await;
                    })
                    .await
            }))
        }
        None => None,
    };

    tracing::info!(host = %host_id, "host started");
    let superseded = Arc::new(std::sync::atomic::AtomicBool::new(false));
    if args.no_workers {
        let mut stop = shutdown_rx.clone();
        let _ = stop.wait_for(|s| *s).await;
    } else {
        let only: Option<HashSet<String>> = args.queues.map(|q| q.into_iter().collect());
        // Before the first heartbeat: an earlier process under this id
        // (a restart) has its jobs given back as soon as it must have
        // stopped, not after their locks run out.
        crate::worker::recovery::take_over(&host, args.heartbeat).await;
        let membership = Membership {
            fleet: host.fleet.clone(),
            heartbeat: args.heartbeat,
            address: api_address,
            stop,
            superseded: superseded.clone(),
        };
        Supervisor::new(host.clone(), only, Some(membership), args.grace)
            .run(args.poll, shutdown_rx.clone())
            .await;
    }
    if let Some(api) = api {
        let _ = api.await;
    }
    if let Some(traces) = traces {
        // The exporter's flush blocks on its own thread's answer.
        let _ = tokio::task::spawn_blocking(move || traces.shutdown()).await;
    }
    if superseded.load(std::sync::atomic::Ordering::Acquire) {
        tracing::error!("host stopped: a later process took its id over");
        return Ok(3);
    }
    tracing::info!("host stopped");
    Ok(0)
}

async fn wait_for_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    let mut int = signal(SignalKind::interrupt()).expect("SIGINT handler");
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}
