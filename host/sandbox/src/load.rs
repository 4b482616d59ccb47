//! Loading handler components: [`LoadedComponent`], and the [`Sandbox`]
//! methods that validate an upload, compile it (one compile at a time,
//! or a load from the artifact cache) and keep its compiled form per
//! engine. Apart from the crate root, which sets the sandbox up.

use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use wasmtime::component::Component;

use crate::bindings::HandlerPre;
use crate::engine::EngineHandle;
use crate::run_state::RunState;
use crate::validate::{self, ComponentInfo, ValidationError};
use crate::{Sandbox, digest_of};

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
    pub(crate) fn is_compiled_for(&self, metered: bool) -> bool {
        if metered {
            self.metered.get().is_some()
        } else {
            self.unmetered.get().is_some()
        }
    }
}

impl Sandbox {
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

    pub(crate) fn handler_pre(
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
}
