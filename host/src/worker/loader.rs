//! Gets the compiled component for a digest: from the sandbox's memory,
//! else this host's disk cache, else a precompiled artifact another host
//! published in Redis, else the component's bytes from Redis (compiled here,
//! and the artifact published for the rest of the fleet). Concurrent jobs
//! needing the same digest wait for one load instead of compiling it N
//! times.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::OnceCell;

use crate::registry::{ComponentError, Registry};
use crate::sandbox::{LoadedComponent, Sandbox};

/// Why a component could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// Not stored, corrupt, or not a valid handler: no retry helps.
    #[error("{0}")]
    Permanent(String),
    /// Redis unreachable: try again later.
    #[error("{0}")]
    Unavailable(String),
}

/// Loads components by digest, once.
pub struct ComponentLoader {
    sandbox: Arc<Sandbox>,
    registry: Registry,
    loading: Mutex<HashMap<String, Arc<OnceCell<Arc<LoadedComponent>>>>>,
}

impl ComponentLoader {
    /// A loader fetching missing components through `registry`.
    pub fn new(sandbox: Arc<Sandbox>, registry: Registry) -> Self {
        ComponentLoader {
            sandbox,
            registry,
            loading: Mutex::new(HashMap::new()),
        }
    }

    /// The component with this digest if it is in memory already: no
    /// Redis, no disk, no compile.
    pub fn loaded(&self, digest: &str) -> Option<Arc<LoadedComponent>> {
        self.sandbox.get_loaded(digest)
    }

    /// The component with this digest, ready to run.
    pub async fn get(&self, digest: &str) -> Result<Arc<LoadedComponent>, LoadError> {
        if let Some(found) = self.loaded(digest) {
            return Ok(found);
        }
        let cell = self
            .loading
            .lock()
            .unwrap()
            .entry(digest.to_string())
            .or_default()
            .clone();
        let loaded = cell
            .get_or_try_init(|| async {
                let bytes = self
                    .registry
                    .component_bytes(digest)
                    .await
                    .map_err(|e| match e {
                        ComponentError::Corrupt(m) => LoadError::Permanent(m),
                        ComponentError::Redis(e) => LoadError::Unavailable(format!("{e:#}")),
                    })?
                    .ok_or_else(|| {
                        LoadError::Permanent(format!("handler component {digest} is not in Redis"))
                    })?;
                let shared = self.registry.fetch_artifact(digest).await;
                let sandbox = self.sandbox.clone();
                let compiled_before = sandbox.compilations();
                let loaded = tokio::task::spawn_blocking(move || sandbox.load(&bytes))
                    .await
                    .map_err(|e| LoadError::Unavailable(format!("loader thread failed: {e}")))?
                    .map_err(|e| LoadError::Permanent(e.to_string()))?;
                if !shared && self.sandbox.compilations() > compiled_before {
                    self.registry.publish_artifact(digest).await;
                }
                Ok(loaded)
            })
            .await?
            .clone();
        self.loading.lock().unwrap().remove(digest);
        Ok(loaded)
    }
}
