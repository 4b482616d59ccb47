//! The wasmtime engines and the epoch ticker that makes running guests
//! yield.
//!
//! Airlock keeps two engines: a *metered* one that compiles fuel checks into
//! guest code (the CPU budget every job runs under by default) and an
//! *unmetered* one for queues that opt out of fuel and rely on the run's
//! deadline alone. Fuel is compiled in, so the two cannot share compiled code.

use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use wasmtime::component::{HasSelf, Linker};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, OptLevel, PoolingAllocationConfig};

use super::bindings::{Handler, v0_1, v0_2, v0_3, v0_4, v0_5};
use super::run_state::RunState;

/// Engine-wide settings.
#[derive(Debug, Clone)]
pub struct EngineSettings {
    /// Live instances per engine (the pooling allocator's slot count).
    pub max_instances: u32,
    /// Largest linear memory any guest may have (pool slot size).
    pub max_memory_bytes: u64,
    /// Wasm stack limit; deep recursion traps with `stack_overflow`.
    pub max_wasm_stack: usize,
    /// Most bytes of each linear memory kept resident and reset in place
    /// between jobs instead of handed back to the kernel (see SandboxConfig).
    pub memory_keep_resident: usize,
    /// How a slot's memory is reset between instances.
    pub slot_reset: crate::reset::SlotReset,
    /// Cranelift's per-function cache, when there is a cache directory
    /// (see `crate::incremental`).
    pub incremental: Option<Arc<crate::incremental::IncrementalCache>>,
}

/// What one instance slot of the pool holds: the most core instances,
/// memories and tables one handler component may contain. The pool has
/// `max_instances` slots of this size, and a component that needs more than
/// one slot is refused when it is compiled (at upload), so any mix of
/// accepted handlers fits `max_instances` live instances: the worker's
/// permits count exactly what fits, and a run never fails with `capacity`
/// while a permit says there is room.
///
/// Sized for the languages Airlock supports, with room to spare (counted in
/// the example builds with `jco print`): a Rust component has 3 core
/// instances, 1 memory and 2 tables; StarlingMonkey 4, 1 and 2; QuickJS 8,
/// 2 and 2; componentize-py 14, 1 and 2. Memories and tables cost address
/// space reserved once, not resident memory.
pub struct SlotBudget {
    /// Core module instances per component.
    pub core_instances: u32,
    /// Linear memories per component.
    pub memories: u32,
    /// Tables per component.
    pub tables: u32,
}

/// See [`SlotBudget`].
pub const SLOT: SlotBudget = SlotBudget {
    core_instances: 16,
    memories: 4,
    tables: 8,
};

/// One engine with its linker and the key of its compiled-code format.
pub struct EngineHandle {
    /// The engine.
    pub engine: Engine,
    /// Linker with WASI, `wasi:http` and the Airlock imports of every
    /// contract version, all async.
    pub linker: Linker<RunState>,
    /// Identifies this engine's compiled-code format (wasmtime version,
    /// target, flags, fuel...): part of the on-disk artifact key so a stale
    /// artifact is never loaded into an incompatible engine.
    pub artifact_key: String,
}

impl EngineHandle {
    /// Builds an engine (`metered` or not) and its linker.
    pub fn new(settings: &EngineSettings, metered: bool) -> anyhow::Result<Self> {
        let mut pool = PoolingAllocationConfig::default();
        let n = settings.max_instances.max(1);
        pool.total_component_instances(n)
            .max_core_instances_per_component(SLOT.core_instances)
            .max_memories_per_component(SLOT.memories)
            .max_tables_per_component(SLOT.tables)
            .total_core_instances(n * SLOT.core_instances)
            .total_memories(n * SLOT.memories)
            .total_tables(n * SLOT.tables)
            // Every live instance runs on a fiber stack of its own.
            .total_stacks(n)
            .async_stack_keep_resident(16 << 10)
            .max_memory_size(settings.max_memory_bytes as usize);
        settings
            .slot_reset
            .configure(&mut pool, settings.memory_keep_resident);

        let mut config = Config::new();
        config
            .wasm_component_model(true)
            .consume_fuel(metered)
            .epoch_interruption(true)
            .max_wasm_stack(settings.max_wasm_stack)
            // The fiber a guest runs on: its wasm stack plus room for the
            // host calls it makes.
            .async_stack_size(settings.max_wasm_stack + (512 << 10))
            .cranelift_opt_level(OptLevel::Speed)
            .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        if let Some(cache) = &settings.incremental {
            config.enable_incremental_compilation(cache.clone())?;
        }
        let engine = Engine::new(&config)?;

        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)?;
        Handler::add_to_linker::<RunState, HasSelf<RunState>>(&mut linker, |state| state)?;
        v0_5::Handler::add_to_linker::<RunState, HasSelf<RunState>>(&mut linker, |state| state)?;
        v0_4::Handler::add_to_linker::<RunState, HasSelf<RunState>>(&mut linker, |state| state)?;
        v0_3::Handler::add_to_linker::<RunState, HasSelf<RunState>>(&mut linker, |state| state)?;
        v0_2::Handler::add_to_linker::<RunState, HasSelf<RunState>>(&mut linker, |state| state)?;
        v0_1::Handler::add_to_linker::<RunState, HasSelf<RunState>>(&mut linker, |state| state)?;

        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        let compatibility = hasher.finish().to_le_bytes();
        let artifact_key = hex::encode(&airlock_core::hashing::separated(&[&compatibility])[..8]);

        Ok(EngineHandle {
            engine,
            linker,
            artifact_key,
        })
    }
}

/// Advances the engines' epoch on a fixed tick; a running guest yields to
/// its runtime at every tick (its deadline is a timer on that runtime).
/// Stops when dropped.
pub struct EpochTicker {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl EpochTicker {
    /// Starts ticking `engines` every `tick`.
    pub fn start(engines: Vec<Engine>, tick: Duration) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("airlock-epoch".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(tick);
                    for engine in &engines {
                        engine.increment_epoch();
                    }
                }
            })
            .expect("spawn epoch ticker thread");
        EpochTicker {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
