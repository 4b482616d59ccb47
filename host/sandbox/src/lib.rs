//! The sandbox: compiles handler components once and runs each job in a
//! fresh, limited instance.
//!
//! A run goes through these steps:
//! 1. pick the metered or unmetered engine (does the job run under fuel?);
//! 2. take the handler's pre-instantiated form for that engine, compiling it
//!    on first use (or loading the precompiled artifact from disk);
//! 3. build a new `Store` holding a WASI context with nothing but clocks,
//!    random and captured stdout/stderr, the `wasi:http` hooks of the run
//!    ([`http`]: egress policy, limits, secrets), the memory limiter and the
//!    fuel budget;
//! 4. instantiate from the pooling allocator and call `run`, under the
//!    run's deadline;
//! 5. classify how it ended ([`FailureKind`]) and measure fuel, peak memory,
//!    wall time and HTTP use; the store and instance are dropped, so nothing
//!    leaks into the next job.
//!
//! Runs are async: every import is an async host function, so a guest
//! waiting on Redis or on an HTTP response is a suspended future holding no
//! thread, and a computing guest yields at every epoch tick. Guests run on
//! the sandbox's own runtime ([`Sandbox::run_isolated`]), never on the
//! caller's, so a host full of computing guests still renews its job locks
//! on time.

pub mod bindings;
pub mod cache;
pub mod egress;
mod engine;
pub mod http;
mod http_pool;
pub mod incremental;
pub use airlock_core::limits;
pub mod logs;
pub mod outcome;
pub mod reset;
pub mod secrets;
pub mod services;
mod state;
pub mod stop;
pub mod trace;
pub mod transcript;
pub mod url_path;
mod validate;
pub mod warm;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use wasmtime::component::Component;
use wasmtime::{Store, Trap};

use self::bindings::{Handler, HandlerPre, Job, JobError, JobRef};
use self::cache::ArtifactCache;
pub use self::cache::{ArtifactKey, KeyTooShort, Refused};
use self::engine::{EngineHandle, EngineSettings, EpochTicker};
pub use self::http::HttpSummary;
use self::incremental::IncrementalCache;
pub use self::limits::{HostMaxima, LimitError, Limits, LimitsOverride};
use self::logs::{CapturedStream, LogSink};
pub use self::logs::{LogLevel, LogLine, LogListener};
pub use self::outcome::{Completion, Failure, FailureKind, ParkedOn, RunOutcome};
pub use self::reset::SlotReset;
pub use self::services::{HostServices, LocalServices, Progress, ServiceError};
pub use self::state::{MAX_SLEEP_MS, RunEnv};
use self::state::{RunState, Suspend};
pub use self::stop::{StopHandle, StopSignal, stop_pair};
pub use self::validate::{ComponentInfo, ValidationError};
pub use self::warm::Reuse;
use self::warm::{WarmKey, WarmPool};
use airlock_core::clock::now_ms;
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

/// A handler component, validated and compiled (lazily per engine).
pub struct LoadedComponent {
    /// sha256 of the component bytes, hex.
    pub digest: String,
    /// What the component imports and exports.
    pub info: ComponentInfo,
    bytes: Arc<[u8]>,
    metered: OnceLock<Result<HandlerPre<RunState>, String>>,
    unmetered: OnceLock<Result<HandlerPre<RunState>, String>>,
}

impl std::fmt::Debug for LoadedComponent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedComponent")
            .field("digest", &self.digest)
            .field("size", &self.info.size)
            .finish_non_exhaustive()
    }
}

impl LoadedComponent {
    /// Whether the component is compiled for the metered (or unmetered)
    /// engine already.
    fn is_compiled_for(&self, metered: bool) -> bool {
        if metered {
            self.metered.get().is_some()
        } else {
            self.unmetered.get().is_some()
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
    /// own, so that computing guests never hold the threads of the host's
    /// runtime (which renews job locks).
    guests: GuestRuntime,
}

/// sha256 of `bytes`, lowercase hex: a component's identity everywhere.
pub fn digest_of(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
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

    /// Validates `bytes` as an Airlock handler and compiles it for the
    /// metered engine, or returns the cached result for the same digest.
    /// Blocking: compilation takes a while for large components.
    pub fn load(&self, bytes: &[u8]) -> Result<Arc<LoadedComponent>, ValidationError> {
        let digest = digest_of(bytes);
        if let Some(found) = self.loaded.lock().unwrap().get(&digest) {
            return Ok(found.clone());
        }
        let (info, pre) = self.compile(&digest, bytes, &self.metered)?;
        let loaded = Arc::new(LoadedComponent {
            digest: digest.clone(),
            info,
            bytes: Arc::from(bytes),
            metered: OnceLock::from(Ok(pre)),
            unmetered: OnceLock::new(),
        });
        self.loaded
            .lock()
            .unwrap()
            .entry(digest)
            .or_insert(loaded.clone());
        Ok(loaded)
    }

    /// The already-loaded component with this digest, if any.
    pub fn get_loaded(&self, digest: &str) -> Option<Arc<LoadedComponent>> {
        self.loaded.lock().unwrap().get(digest).cloned()
    }

    /// Forgets a loaded component (its compiled code is freed once no run
    /// holds it). The disk artifact stays for a later reload.
    pub fn unload(&self, digest: &str) {
        self.loaded.lock().unwrap().remove(digest);
    }

    /// Validates without keeping anything: what an upload check needs.
    pub fn inspect(&self, bytes: &[u8]) -> Result<ComponentInfo, ValidationError> {
        let digest = digest_of(bytes);
        self.compile(&digest, bytes, &self.metered)
            .map(|(info, _)| info)
    }

    fn compile(
        &self,
        digest: &str,
        bytes: &[u8],
        engine: &EngineHandle,
    ) -> Result<(ComponentInfo, HandlerPre<RunState>), ValidationError> {
        validate::check_header(bytes, self.config.max_component_bytes)?;
        // A refused upload costs a parse, not a compile.
        validate::check_declared(&validate::declared(bytes)?)?;
        let cached = || self.artifacts.as_ref().and_then(|c| c.load(digest, engine));
        // Held until the artifact is stored, so a second load of the same
        // digest waiting here finds it instead of compiling it again.
        let mut _one_at_a_time = None;
        let (component, compiled_here) = match cached() {
            Some(component) => (component, false),
            None => {
                _one_at_a_time = Some(self.compiling.lock().unwrap_or_else(|e| e.into_inner()));
                match cached() {
                    Some(component) => (component, false),
                    None => {
                        self.compilations.fetch_add(1, Ordering::Relaxed);
                        let began = (Instant::now(), self.incremental_counts());
                        // Also where a component that cannot fit in one
                        // pool slot is refused (see `engine::SLOT`).
                        let component = Component::new(&engine.engine, bytes).map_err(|e| {
                            let e = format!("{e:#}");
                            if e.contains("in the pooling allocator") {
                                ValidationError::Invalid(format!(
                                    "it does not fit in one instance slot of the host: {e}"
                                ))
                            } else {
                                ValidationError::Invalid(e)
                            }
                        })?;
                        let (hits, misses, _) = self.incremental_counts();
                        tracing::info!(
                            digest,
                            ms = began.0.elapsed().as_millis() as u64,
                            functions_reused = hits - began.1.0,
                            functions_compiled = misses - began.1.1,
                            "compiled a component"
                        );
                        (component, true)
                    }
                }
            }
        };
        let info = validate::describe(&engine.engine, &component, digest, bytes);
        validate::check_imports(&info)?;
        let instance_pre = engine
            .linker
            .instantiate_pre(&component)
            .map_err(|e| ValidationError::Imports(format!("{e:#}")))?;
        let pre = HandlerPre::new(instance_pre)
            .map_err(|e| ValidationError::Exports(format!("{e:#}")))?;
        // Only a component that passed every check is kept on disk; the
        // cache directory stays within its bound.
        if compiled_here && let Some(cache) = &self.artifacts {
            cache.store(digest, engine, &component);
            let bound = self.config.cache_max_bytes;
            cache.prune(bound / 4 * 3);
            if let Some(incremental) = &self.incremental {
                incremental.prune(bound / 4);
            }
        }
        Ok((info, pre))
    }

    fn handler_pre(
        &self,
        component: &LoadedComponent,
        metered: bool,
    ) -> Result<HandlerPre<RunState>, String> {
        let (slot, engine) = if metered {
            (&component.metered, &self.metered)
        } else {
            (&component.unmetered, &self.unmetered)
        };
        slot.get_or_init(|| {
            self.compile(&component.digest, &component.bytes, engine)
                .map(|(_, pre)| pre)
                .map_err(|e| e.to_string())
        })
        .clone()
    }

    /// Runs one job to completion on this sandbox's guest runtime, blocking
    /// the calling thread until it ends. For callers outside any async
    /// runtime (tests, benchmarks); async code uses [`Sandbox::run_isolated`].
    pub fn run(
        &self,
        component: &LoadedComponent,
        job: JobInput,
        limits: &Limits,
        services: Box<dyn HostServices>,
        log_listener: Option<LogListener>,
    ) -> RunOutcome {
        self.guest_runtime().block_on(self.run_async(
            component,
            job,
            limits,
            services,
            log_listener,
            RunEnv::default(),
        ))
    }

    /// The runtime guests run on (see the module docs).
    pub fn guest_runtime(&self) -> &tokio::runtime::Handle {
        self.guests.handle()
    }

    /// Runs one job on the *current* runtime. A guest waiting on a host
    /// call (Redis, HTTP) is suspended and holds no thread; a guest
    /// computing yields at every epoch tick. The run's deadline is a timer:
    /// past it, the guest is dropped at its next yield — with every request
    /// it has in flight — and the run fails with `timeout`. With
    /// `env.reuse`, the run takes an idle warm instance of its owner if
    /// there is one, and leaves its instance for the next job if the job
    /// completed (see [`warm`]).
    pub async fn run_async(
        &self,
        component: &LoadedComponent,
        job: JobInput,
        limits: &Limits,
        services: Box<dyn HostServices>,
        log_listener: Option<LogListener>,
        mut env: RunEnv,
    ) -> RunOutcome {
        // The component's compiled form for this engine, compiled now if
        // this is its first run here (an unmetered queue's first job):
        // seconds for a JavaScript or Python component, so off the async
        // threads, and before the clock starts — a compile is not the
        // job's time and must not eat its deadline.
        let metered = limits.fuel.is_some();
        let pre = if component.is_compiled_for(metered) {
            self.handler_pre(component, metered)
        } else {
            match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
                Ok(tokio::runtime::RuntimeFlavor::MultiThread) => {
                    tokio::task::block_in_place(|| self.handler_pre(component, metered))
                }
                _ => self.handler_pre(component, metered),
            }
        };
        let started = Instant::now();
        let reuse = env.reuse.take();
        let key = reuse.as_ref().map(|r| WarmKey {
            digest: component.digest.clone(),
            metered,
            owner: r.owner.clone(),
            limits: limits.clone(),
        });
        let warm = key.as_ref().and_then(|k| self.warm.take(k));
        let sink = match &warm {
            Some(w) => {
                let sink = w.store.data().logs.clone();
                sink.lock().unwrap_or_else(|p| p.into_inner()).renew(
                    limits.max_log_bytes,
                    limits.max_log_lines,
                    log_listener,
                );
                sink
            }
            None => Arc::new(Mutex::new(LogSink::new(
                limits.max_log_bytes,
                limits.max_log_lines,
                log_listener,
            ))),
        };
        // The transcript's job and start, when the run records one.
        let recording = env.transcript.clone().map(|recorder| {
            (
                recorder,
                transcript::RecordedJob::from(&job),
                airlock_core::clock::now_ms(),
            )
        });
        let finish = |completion: Completion,
                      fuel_used,
                      peak_memory_bytes,
                      http: http::HttpSummary,
                      sink: &Arc<Mutex<LogSink>>,
                      warm: bool| {
            let transcript = recording.as_ref().map(|(recorder, job, started_at)| {
                let sink = sink.lock().unwrap_or_else(|p| p.into_inner());
                recorder.finish(
                    job.clone(),
                    *started_at,
                    transcript::RecordedOutcome::from(&completion),
                    &|text| sink.redact(&text).unwrap_or(text),
                )
            });
            let (logs, dropped) = sink.lock().unwrap().finish();
            RunOutcome {
                transcript,
                completion,
                fuel_used,
                peak_memory_bytes,
                wall_time: started.elapsed(),
                logs,
                logs_dropped_bytes: dropped.bytes,
                logs_dropped_lines: dropped.lines,
                http,
                warm,
            }
        };
        if let Err(e) = limits.check_within(&self.config.maxima) {
            let failure = Failure::new(FailureKind::Instantiation, e.to_string());
            return finish(
                Completion::Failed(failure),
                None,
                0,
                Default::default(),
                &sink,
                false,
            );
        }

        let pre = match pre {
            Ok(pre) => pre,
            Err(e) => {
                let failure = Failure::new(FailureKind::Instantiation, e);
                return finish(
                    Completion::Failed(failure),
                    None,
                    0,
                    Default::default(),
                    &sink,
                    false,
                );
            }
        };
        let engine = if metered {
            &self.metered
        } else {
            &self.unmetered
        };

        let deadline = started + limits.timeout;
        let stop = env.stop.clone();
        let was_warm = warm.is_some();
        let (mut store, handler, jobs_before) = match warm {
            Some(w) => {
                let mut store = w.store;
                store
                    .data_mut()
                    .begin_job(services, limits.clone(), env, deadline);
                (store, Some(w.handler), w.jobs)
            }
            None => {
                let wasi = state::Wasi::new(|b| {
                    b.stdout(CapturedStream::new(sink.clone(), LogLevel::Stdout))
                        .stderr(CapturedStream::new(sink.clone(), LogLevel::Stderr))
                        .allow_tcp(false)
                        .allow_udp(false)
                        .allow_ip_name_lookup(false);
                });
                let state = RunState::new(
                    wasi,
                    sink.clone(),
                    services,
                    limits.clone(),
                    job.queue.clone(),
                    env,
                    deadline,
                );
                let mut store = Store::new(&engine.engine, state);
                store.limiter(|state| &mut state.limiter);
                (store, None, 0)
            }
        };
        let stats = store.data().http.stats.clone();
        if let Some(fuel) = limits.fuel {
            store
                .set_fuel(fuel)
                .expect("fuel is enabled on the metered engine");
        }
        // Yield to the runtime at every tick: a computing guest shares its
        // thread, and its deadline timer gets to fire.
        store.epoch_deadline_async_yield_and_update(1);

        // The job moves into the guest's view: its data is not copied.
        let wit_job = Job {
            id: job.id,
            queue: job.queue,
            name: job.name,
            data: job.data,
            attempt: job.attempt.max(1),
            max_attempts: job.max_attempts.max(1),
            enqueued_at_ms: job.enqueued_at_ms,
            started_at_ms: now_ms(),
            parent: job.parent.map(|(queue, id)| JobRef { queue, id }),
        };

        // A stop from outside (see [`stop`]) races the run like its
        // deadline: either drops the guest at its next yield.
        let stopped = async {
            match stop {
                Some(mut signal) => signal.stopped().await,
                None => std::future::pending().await,
            }
        };
        let ran = tokio::select! {
            biased;
            failure = stopped => Err(Some(failure)),
            ran = tokio::time::timeout_at(deadline.into(), async {
                let handler = match handler {
                    Some(handler) => handler,
                    None => {
                        let began = std::time::SystemTime::now();
                        let instantiated = self.instantiate(&pre, &mut store).await;
                        let failed = instantiated.as_ref().err().map(|e| format!("{e:#}"));
                        store.data().note_instantiation(began, failed);
                        match instantiated {
                            Ok(handler) => handler,
                            Err(e) => return Err(e),
                        }
                    }
                };
                let result = handler.call_run(&mut store, &wit_job).await;
                Ok((handler, result))
            }) => ran.map_err(|_| None),
        };
        let mut kept_handler = None;
        let completion = match ran {
            Ok(Ok((handler, result))) => {
                kept_handler = Some(handler);
                classify(result, store.data(), limits)
            }
            Ok(Err(e)) => Completion::Failed(classify_instantiation(&e, store.data(), limits)),
            Err(Some(failure)) => Completion::Failed(failure),
            Err(None) => Completion::Failed(Failure::new(
                FailureKind::Timeout,
                format!(
                    "deadline of {} passed",
                    humantime::format_duration(limits.timeout)
                ),
            )),
        };
        // Revealed secrets never leave in the output or a failure reason.
        let completion = match completion {
            Completion::Completed(output) => Completion::Completed(store.data().redact(output)),
            Completion::Failed(mut f) => {
                f.message = store.data().redact(f.message);
                Completion::Failed(f)
            }
            other => other,
        };
        let fuel_used = limits
            .fuel
            .map(|budget| budget - store.get_fuel().unwrap_or(0));
        let peak = store.data().limiter.peak_bytes();
        // Kept for the owner's next job only after a clean completion (see
        // [`warm`]); otherwise dropped here, which resets its pool slot.
        if let (Some(reuse), Some(key), Some(handler)) = (&reuse, key, kept_handler) {
            let state = store.data_mut();
            let clean = matches!(completion, Completion::Completed(_))
                && !state.limiter.limit_hit
                && state.panic_message.is_none()
                && state.service_outage.is_none()
                && state.suspended.is_none()
                && !state.holds_http_resources();
            let jobs = jobs_before + 1;
            if clean && jobs < reuse.max_jobs {
                // The next job's services replace these; the last job's
                // are dropped now, not when the instance is.
                state.begin_job(
                    Box::new(LocalServices::new()),
                    limits.clone(),
                    RunEnv::default(),
                    Instant::now(),
                );
                self.warm.put(
                    key,
                    warm::Warm::new(store, handler, jobs, reuse),
                    reuse.max_kept,
                );
                return finish(
                    completion,
                    fuel_used,
                    peak,
                    stats.summary(),
                    &sink,
                    was_warm,
                );
            }
        }
        drop(store);
        finish(
            completion,
            fuel_used,
            peak,
            stats.summary(),
            &sink,
            was_warm,
        )
    }

    /// Instantiates `pre` in `store`; when the pool is full, idle warm
    /// instances give their slots back first and it is tried once more.
    async fn instantiate(
        &self,
        pre: &HandlerPre<RunState>,
        store: &mut Store<RunState>,
    ) -> wasmtime::Result<Handler> {
        match pre.instantiate_async(&mut *store).await {
            Err(e)
                if e.downcast_ref::<wasmtime::PoolConcurrencyLimitError>()
                    .is_some()
                    && self.warm.evict(8) > 0 =>
            {
                pre.instantiate_async(&mut *store).await
            }
            other => other,
        }
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
            state::Wasi::new(|_| {}),
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

    /// [`Sandbox::run_async`] on the guest runtime, awaited from any
    /// runtime: guests never share threads with the caller's tasks (the
    /// queue host's lock renewals among them).
    pub async fn run_isolated(
        self: &Arc<Self>,
        component: Arc<LoadedComponent>,
        job: JobInput,
        limits: Limits,
        services: Box<dyn HostServices>,
        log_listener: Option<LogListener>,
        env: RunEnv,
    ) -> RunOutcome {
        let sandbox = self.clone();
        let started = Instant::now();
        let run = self.guest_runtime().spawn(async move {
            sandbox
                .run_async(&component, job, &limits, services, log_listener, env)
                .await
        });
        match run.await {
            Ok(outcome) => outcome,
            // Only a bug in the host itself (a panic in the run) can get
            // here; the job still gets a definite outcome rather than
            // vanishing — final, so a host bug is not retried in a loop.
            Err(e) => RunOutcome {
                completion: Completion::Failed(Failure::new(
                    FailureKind::Instantiation,
                    format!("sandbox task failed: {e}"),
                )),
                fuel_used: None,
                peak_memory_bytes: 0,
                wall_time: started.elapsed(),
                logs: Vec::new(),
                logs_dropped_bytes: 0,
                logs_dropped_lines: 0,
                http: Default::default(),
                warm: false,
                transcript: None,
            },
        }
    }
}

/// The runtime guests run on, owned by the sandbox.
struct GuestRuntime {
    runtime: Option<tokio::runtime::Runtime>,
    handle: tokio::runtime::Handle,
}

impl GuestRuntime {
    fn start(threads: usize) -> std::io::Result<GuestRuntime> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads.max(1))
            .thread_name("airlock-guest")
            .enable_all()
            .build()?;
        let handle = runtime.handle().clone();
        Ok(GuestRuntime {
            runtime: Some(runtime),
            handle,
        })
    }

    fn handle(&self) -> &tokio::runtime::Handle {
        &self.handle
    }
}

impl Drop for GuestRuntime {
    fn drop(&mut self) {
        // A runtime may not be dropped (blocking) inside another's context.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// Turns the raw result of a run into a [`Completion`], naming the true
/// reason a guest was stopped.
fn classify(
    result: wasmtime::Result<Result<String, JobError>>,
    state: &RunState,
    limits: &Limits,
) -> Completion {
    match result {
        Ok(Ok(output)) => {
            if output.len() as u64 > limits.max_output_bytes {
                return Completion::Failed(Failure::new(
                    FailureKind::OutputTooLarge,
                    format!(
                        "output is {} bytes, the limit is {}",
                        output.len(),
                        limits.max_output_bytes
                    ),
                ));
            }
            match serde_json::from_str::<serde::de::IgnoredAny>(&output) {
                Ok(_) => Completion::Completed(output),
                Err(e) => Completion::Failed(Failure::new(
                    FailureKind::InvalidOutput,
                    format!("output is not valid JSON: {e}"),
                )),
            }
        }
        Ok(Err(JobError::Retry(message))) => {
            if state.service_outage.is_some() {
                return Completion::Failed(Failure::new(FailureKind::HostUnavailable, message));
            }
            // A guest whose runtime turns a refused growth into an error it
            // returns (StarlingMonkey's "out of memory", Python's
            // MemoryError) hit its cap as surely as one that traps: a retry
            // under the same cap would only hit it again.
            if state.limiter.limit_hit {
                return Completion::Failed(Failure::new(
                    FailureKind::MemoryLimit,
                    format!(
                        "guest tried to grow its memory past the {} cap (peak {}), then \
                         failed: {message}",
                        bytesize::ByteSize(limits.memory_bytes),
                        bytesize::ByteSize(state.limiter.peak_bytes())
                    ),
                ));
            }
            Completion::Failed(Failure::new(FailureKind::GuestRetry, message))
        }
        Ok(Err(JobError::Fatal(message))) => {
            Completion::Failed(Failure::new(FailureKind::GuestFatal, message))
        }
        Err(err) => {
            if err.downcast_ref::<Suspend>().is_some()
                && let Some((wake_at_ms, on)) = state.suspended.clone()
            {
                return Completion::Suspended { wake_at_ms, on };
            }
            Completion::Failed(classify_trap(&err, state, limits))
        }
    }
}

fn classify_instantiation(err: &wasmtime::Error, state: &RunState, limits: &Limits) -> Failure {
    if err
        .downcast_ref::<wasmtime::PoolConcurrencyLimitError>()
        .is_some()
    {
        return Failure::new(
            FailureKind::Capacity,
            format!("the instance pool of this host is full: {err}"),
        );
    }
    if state.limiter.limit_hit {
        return Failure::new(
            FailureKind::MemoryLimit,
            format!(
                "the component's initial memory does not fit the {} cap",
                bytesize::ByteSize(limits.memory_bytes)
            ),
        );
    }
    classify_trap(err, state, limits)
}

fn classify_trap(err: &wasmtime::Error, state: &RunState, limits: &Limits) -> Failure {
    let trap = err.downcast_ref::<Trap>().copied();
    if state.limiter.limit_hit && trap != Some(Trap::OutOfFuel) {
        return Failure::new(
            FailureKind::MemoryLimit,
            format!(
                "guest tried to grow its memory past the {} cap (peak {})",
                bytesize::ByteSize(limits.memory_bytes),
                bytesize::ByteSize(state.limiter.peak_bytes())
            ),
        );
    }
    match trap {
        Some(Trap::OutOfFuel) => Failure::new(
            FailureKind::FuelExhausted,
            format!(
                "fuel budget of {} exhausted",
                limits.fuel.unwrap_or_default()
            ),
        ),
        Some(Trap::StackOverflow) => {
            Failure::new(FailureKind::StackOverflow, "wasm call stack exhausted")
        }
        Some(Trap::MemoryOutOfBounds) => Failure::new(
            FailureKind::MemoryFault,
            "out-of-bounds memory access (often a shadow-stack overflow)",
        ),
        _ => match &state.panic_message {
            Some(message) => Failure::new(FailureKind::GuestRetry, format!("panicked: {message}")),
            None => Failure::new(FailureKind::Trap, format!("{err}")),
        },
    }
}
