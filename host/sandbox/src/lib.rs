//! The sandbox: compiles handler components once and runs each job in a
//! limited instance — a fresh one, unless the caller lets the run share a
//! warm one ([`warm`]).
//!
//! A run goes through these steps (`run/`):
//! 1. pick the metered or unmetered engine (does the job run under fuel?);
//! 2. take the handler's pre-instantiated form for that engine, compiling it
//!    on first use (or loading the precompiled artifact from disk);
//! 3. take an idle warm instance of the run's owner, or build a new `Store`
//!    holding a WASI context with nothing but clocks, random and captured
//!    stdout/stderr, the `wasi:http` hooks of the run ([`http`]: egress
//!    policy, limits, secrets), the memory limiter and the fuel budget;
//! 4. instantiate a fresh instance from the pooling allocator and call
//!    `run`, under the run's deadline and stop;
//! 5. classify how it ended ([`FailureKind`]; a completed run's output is
//!    parsed once, here) and measure fuel, peak memory, wall time and HTTP
//!    use; the instance is kept for its owner's next job after a clean
//!    completion on a run that may share it, else dropped — which resets
//!    its pool slot to the component's image ([`reset`], proven clean at
//!    start-up). A warm instance keeps the guest's own memory between its
//!    jobs by design ([`warm`] says what persists and what does not).
//!
//! Runs are async: every import is an async host function, so a guest
//! waiting on Redis or on an HTTP response is a suspended future holding no
//! thread, and a computing guest yields at every epoch tick. A run starts
//! on the caller's runtime and, unless it ended by its first yield, goes on
//! on the sandbox's own ([`Sandbox::run_isolated`]): a computing guest holds
//! a caller's thread for one epoch tick at most, so a host full of
//! computing guests still renews its job locks on time, while a small job
//! pays no hand-off between threads.

pub mod bindings;
pub mod cache;
pub mod egress;
mod engine;
mod guest_runtime;
pub mod http;
mod http_pool;
pub mod incremental;
pub use airlock_core::limits;
mod load;
pub mod logs;
pub mod outcome;
pub mod reset;
mod run;
mod run_state;
pub mod secrets;
pub mod services;
pub mod stop;
pub mod trace;
pub mod transcript;
pub mod url_path;
mod validate;
pub mod warm;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use self::cache::ArtifactCache;
pub use self::cache::{ArtifactKey, KeyTooShort, Refused};
use self::engine::{EngineHandle, EngineSettings, EpochTicker};
use self::guest_runtime::GuestRuntime;
pub use self::http::HttpSummary;
use self::incremental::IncrementalCache;
pub use self::limits::{HostMaxima, LimitError, Limits, LimitsOverride};
pub use self::load::LoadedComponent;
pub use self::logs::{LogLevel, LogLine, LogListener};
pub use self::outcome::{Completion, Failure, FailureKind, Later, RunOutcome, SuspendedOn};
pub use self::reset::SlotReset;
pub use self::run::{BatchOutcome, RUN_BATCH};
pub use self::run_state::{MAX_INVOKE_JOBS, MAX_LATER_MS, MAX_RETRY_AFTERS};
pub use self::run_state::{MAX_SLEEP_MS, RunEnv};
pub use self::services::{HostServices, LocalServices, Progress, ServiceError};
pub use self::stop::{StopHandle, StopSignal, stop_pair};
pub use self::validate::{ComponentInfo, Declared, ValidationError, declared};
pub use self::warm::Reuse;
use self::warm::WarmPool;
pub use airlock_core::run::JobInput;

/// How the sandbox is set up; fixed for the life of the process.
#[derive(Debug, Clone)]
pub struct SandboxConfig {
    /// The ceiling for every limit.
    pub maxima: HostMaxima,
    /// Live instances per engine (pool slots). Runs beyond this wait for
    /// nothing: they fail with `capacity`, so callers bound their
    /// concurrency below it (the queue host's permits do).
    pub max_instances: u32,
    /// Wasm stack limit in bytes.
    pub max_wasm_stack: usize,
    /// Where compiled components are kept between restarts (`None`: memory only).
    pub cache_dir: Option<PathBuf>,
    /// How much the cache directory may hold: three quarters for
    /// precompiled artifacts, a quarter for Cranelift's incremental cache;
    /// past either, the least recently used files go (after a compile).
    pub cache_max_bytes: u64,
    /// The fleet's key for precompiled artifacts: with it, this host loads
    /// artifacts other hosts of the fleet compiled (and shares its own);
    /// without it, only artifacts this host compiled itself (see [`cache`]).
    pub fleet_key: Option<ArtifactKey>,
    /// Epoch tick: how long a computing guest runs before it yields its
    /// thread to other guests (and to its deadline timer).
    pub epoch_tick: Duration,
    /// Threads of the guest runtime (default: one per CPU).
    pub guest_threads: usize,
    /// Largest component accepted, in bytes.
    pub max_component_bytes: usize,
    /// Most bytes of each linear memory the pooling allocator keeps
    /// resident between jobs, copying them back from the component's image
    /// in place ([`SlotReset::Prefix`]: the first bytes; [`SlotReset::Scan`]:
    /// the pages `PAGEMAP_SCAN` reports written). Whatever does not fit is
    /// handed back to the kernel (`madvise`), which makes the next job
    /// page-fault it back in (copy-on-write faults on the data segment
    /// included) and shoots down TLBs on every other core of a busy host.
    /// The default, 16 MiB, is what StarlingMonkey and Python jobs needed to
    /// stop page-faulting in the languages benchmark (docs/BENCHMARKS.md).
    /// Costs RSS: up to this much per used pool slot. Not used by
    /// [`SlotReset::Decommit`].
    pub memory_keep_resident: usize,
    /// How a pool slot's memory is reset between instances: the mode the
    /// sandbox tries first; it starts with it only if a reused slot proves
    /// clean, else with the next mode that does ([`reset`]).
    pub slot_reset: SlotReset,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        SandboxConfig {
            maxima: HostMaxima::default(),
            max_instances: 256,
            max_wasm_stack: 512 << 10,
            cache_dir: None,
            cache_max_bytes: 8 << 30,
            fleet_key: None,
            epoch_tick: Duration::from_millis(2),
            guest_threads: std::thread::available_parallelism().map_or(2, |n| n.get()),
            max_component_bytes: 32 << 20,
            memory_keep_resident: 16 << 20,
            slot_reset: SlotReset::Prefix,
        }
    }
}

/// Compiles and runs handler components. Share it (`Arc`) across threads.
pub struct Sandbox {
    config: SandboxConfig,
    /// How its pools reset slots: the configured mode, or the fallback the
    /// start-up proof chose.
    slot_reset: SlotReset,
    metered: EngineHandle,
    unmetered: EngineHandle,
    artifacts: Option<ArtifactCache>,
    /// Cranelift's per-function cache, beside the artifacts.
    incremental: Option<Arc<IncrementalCache>>,
    loaded: Mutex<HashMap<String, Arc<LoadedComponent>>>,
    /// Components compiled from source (not loaded from the artifact cache)
    /// since start: how the tests see that a restart did not recompile.
    compilations: AtomicU64,
    /// Held while a component compiles: one compile at a time per host. A
    /// JavaScript or Python component takes seconds and ~450 MiB to compile,
    /// on every core (parallel compilation); two at once double the memory
    /// and finish no sooner. Runs of loaded components never wait on it.
    compiling: Mutex<()>,
    _ticker: EpochTicker,
    /// Idle warm instances (see [`warm`]).
    warm: WarmPool,
    /// Where guests run: a multi-threaded tokio runtime of the sandbox's
    /// own, so that a computing guest holds a thread of the host's runtime
    /// (which renews job locks) for its first slice at most
    /// ([`Sandbox::run_isolated`]).
    guests: GuestRuntime,
}

/// sha256 of `bytes`, lowercase hex: a component's identity everywhere.
pub fn digest_of(bytes: &[u8]) -> String {
    airlock_core::hashing::sha256_hex(bytes)
}

impl Sandbox {
    /// Builds both engines and starts the epoch ticker.
    pub fn new(config: SandboxConfig) -> anyhow::Result<Self> {
        let artifacts = match &config.cache_dir {
            Some(dir) => Some(ArtifactCache::open(dir, config.fleet_key.clone())?),
            None => None,
        };
        // Sealed with the artifacts' key: its entries are native code too.
        let incremental = match (&config.cache_dir, &artifacts) {
            (Some(dir), Some(artifacts)) => Some(Arc::new(IncrementalCache::new(
                dir.join("incremental"),
                artifacts.key().clone(),
            ))),
            _ => None,
        };
        let guests = GuestRuntime::start(config.guest_threads)?;
        let (slot_reset, metered, unmetered) =
            Self::proven_engines(&config, incremental.clone(), guests.handle())?;
        let ticker = EpochTicker::start(
            vec![metered.engine.clone(), unmetered.engine.clone()],
            config.epoch_tick,
        );
        let warm = WarmPool::new((config.max_instances as usize / 2).max(1));
        Ok(Sandbox {
            config,
            slot_reset,
            metered,
            unmetered,
            artifacts,
            incremental,
            loaded: Mutex::new(HashMap::new()),
            compilations: AtomicU64::new(0),
            compiling: Mutex::new(()),
            _ticker: ticker,
            warm,
            guests,
        })
    }

    /// Both engines, resetting slots with the first mode of
    /// `config.slot_reset`'s fallbacks whose reused slots prove clean on
    /// both ([`reset::prove_clean`]); an error naming what each mode
    /// left behind when none does.
    fn proven_engines(
        config: &SandboxConfig,
        incremental: Option<Arc<IncrementalCache>>,
        runtime: &tokio::runtime::Handle,
    ) -> anyhow::Result<(SlotReset, EngineHandle, EngineHandle)> {
        let mut refused = Vec::new();
        for &mode in config.slot_reset.fallbacks() {
            let settings = EngineSettings {
                max_instances: config.max_instances,
                max_memory_bytes: config.maxima.memory_bytes,
                max_wasm_stack: config.max_wasm_stack,
                memory_keep_resident: config.memory_keep_resident,
                slot_reset: mode,
                incremental: incremental.clone(),
            };
            let metered = EngineHandle::new(&settings, true)?;
            let unmetered = EngineHandle::new(&settings, false)?;
            // On a thread of its own: the caller may be inside a runtime,
            // where blocking on another is refused.
            let proven = std::thread::scope(|scope| {
                scope
                    .spawn(|| {
                        reset::prove_clean(&metered.engine, true, runtime, mode)?;
                        reset::prove_clean(&unmetered.engine, false, runtime, mode)
                    })
                    .join()
                    .unwrap_or_else(|_| Err(reset::Unproven::Probe("it panicked".into())))
            });
            match proven {
                Ok(()) => {
                    if mode != config.slot_reset {
                        tracing::warn!(
                            configured = %config.slot_reset,
                            using = %mode,
                            refused = ?refused,
                            "slot reset: the configured mode did not leave reused slots clean; using a mode that clears them"
                        );
                    } else {
                        tracing::debug!(mode = %mode, "slot reset proven clean");
                    }
                    return Ok((mode, metered, unmetered));
                }
                Err(why) => {
                    tracing::warn!(mode = %mode, "slot reset not proven clean: {why}");
                    refused.push(format!("{mode}: {why}"));
                }
            }
        }
        anyhow::bail!(
            "no slot reset mode leaves a reused instance slot clean on this machine, so no job can run safely here ({})",
            refused.join("; ")
        )
    }

    /// How this sandbox's pools reset a slot between instances: the
    /// configured mode, or the fallback the start-up proof chose.
    pub fn slot_reset(&self) -> SlotReset {
        self.slot_reset
    }

    /// Functions Cranelift's incremental cache served, compiled, and
    /// refused (bad seal) since start; zeros without a cache directory.
    pub fn incremental_counts(&self) -> (u64, u64, u64) {
        self.incremental.as_ref().map_or((0, 0, 0), |c| c.counts())
    }

    /// How many components this sandbox compiled from source (artifact
    /// cache misses).
    pub fn compilations(&self) -> u64 {
        self.compilations.load(Ordering::Relaxed)
    }

    /// The key of the metered engine's compiled-code format: artifacts are
    /// only shared between hosts with the same key.
    pub fn artifact_key(&self) -> &str {
        &self.metered.artifact_key
    }

    /// Whether a precompiled artifact for `digest` is on this host's disk.
    pub fn has_artifact(&self, digest: &str) -> bool {
        self.artifacts
            .as_ref()
            .is_some_and(|c| c.contains(digest, &self.metered))
    }

    /// A key for `purpose` derived from the fleet's artifact key
    /// ([`ArtifactKey::derive`]); `None` on a host without it (or without
    /// a cache directory, which holds the key).
    pub fn fleet_derived_key(&self, purpose: &str) -> Option<[u8; 32]> {
        let cache = self.artifacts.as_ref().filter(|c| c.key().is_fleet())?;
        Some(cache.key().derive(purpose))
    }

    /// Whether this host shares precompiled artifacts with its fleet (it
    /// has the fleet's artifact key and a cache directory).
    pub fn shares_artifacts(&self) -> bool {
        self.artifacts.as_ref().is_some_and(|c| c.key().is_fleet())
    }

    /// The sealed precompiled artifact for `digest`, to publish for other
    /// hosts of the fleet (`None` without a fleet key).
    pub fn export_artifact(&self, digest: &str) -> Option<Vec<u8>> {
        let cache = self.artifacts.as_ref().filter(|c| c.key().is_fleet())?;
        cache.read(digest, &self.metered)
    }

    /// Stores a sealed artifact published by another host, so the next load
    /// of `digest` skips compilation — only if its tag verifies under the
    /// fleet key; otherwise it is refused (and counted).
    pub fn import_artifact(&self, digest: &str, sealed: &[u8]) -> Result<(), Refused> {
        match self.artifacts.as_ref().filter(|c| c.key().is_fleet()) {
            Some(cache) => cache.import(digest, &self.metered, sealed),
            None => Err(Refused),
        }
    }

    /// Precompiled artifacts refused since start because their tag did not
    /// verify (from the disk cache or from another host).
    pub fn artifacts_refused(&self) -> u64 {
        self.artifacts.as_ref().map_or(0, |c| c.refused())
    }

    /// The configuration this sandbox was built with.
    pub fn config(&self) -> &SandboxConfig {
        &self.config
    }

    /// The runtime guests run on (see the module docs).
    pub fn guest_runtime(&self) -> &tokio::runtime::Handle {
        self.guests.handle()
    }

    /// Drops warm instances idle for longer than their binding allows; how
    /// many. The queue host calls it on a timer.
    pub fn sweep_warm(&self) -> usize {
        self.warm.sweep()
    }

    /// Idle warm instances this sandbox holds.
    pub fn warm_instances(&self) -> usize {
        self.warm.len()
    }

    /// Instantiates `component` without running it and keeps the instance
    /// alive until the returned value is dropped: lets benchmarks measure
    /// the memory a live instance costs, and tests hold a pool slot. Only
    /// with the `test-hooks` feature (the tests and benchmarks turn it on;
    /// `cargo build -p airlock` leaves it out).
    #[cfg(feature = "test-hooks")]
    pub fn instantiate_idle(
        &self,
        component: &LoadedComponent,
        limits: &Limits,
    ) -> anyhow::Result<Box<dyn std::any::Any + Send>> {
        use crate::logs::LogSink;
        use crate::run_state::RunState;
        use std::time::Instant;
        use wasmtime::Store;

        let pre = self
            .handler_pre(component, limits.fuel.is_some())
            .map_err(anyhow::Error::msg)?;
        let engine = if limits.fuel.is_some() {
            &self.metered
        } else {
            &self.unmetered
        };
        let sink = Arc::new(Mutex::new(LogSink::new(
            limits.max_log_bytes,
            limits.max_log_lines,
            None,
        )));
        let state = RunState::new(
            run_state::Wasi::new(|_| {}),
            sink,
            Box::new(LocalServices::new()),
            limits.clone(),
            String::new(),
            RunEnv::default(),
            Instant::now() + limits.timeout,
        );
        let mut store = Store::new(&engine.engine, state);
        store.limiter(|state| &mut state.limiter);
        if let Some(fuel) = limits.fuel {
            store.set_fuel(fuel)?;
        }
        store.epoch_deadline_async_yield_and_update(1);
        // On a thread of its own, so this may be called from inside a
        // runtime (a test holding a slot) as well as from plain code.
        let runtime = self.guest_runtime();
        let instance = std::thread::scope(|scope| {
            scope
                .spawn(|| runtime.block_on(pre.instantiate_async(&mut store)))
                .join()
                .map_err(|_| anyhow::anyhow!("instantiation panicked"))
        })??;
        Ok(Box::new((store, instance)))
    }
}
