//! Compiled components on disk, so a restarted host does not recompile.
//!
//! An artifact is keyed by the component's sha256 digest and the engine's
//! artifact key (wasmtime version, target and compilation settings). Files
//! are written to a temporary name and renamed, so a crash never leaves a
//! half-written artifact under a real name.

use std::path::{Path, PathBuf};

use wasmtime::component::Component;

use super::engine::EngineHandle;

/// A directory of precompiled components.
#[derive(Debug, Clone)]
pub struct ArtifactCache {
    dir: PathBuf,
}

impl ArtifactCache {
    /// A cache in `dir`, created if missing.
    pub fn open(dir: &Path) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        Ok(ArtifactCache {
            dir: dir.to_path_buf(),
        })
    }

    fn path(&self, digest: &str, engine: &EngineHandle) -> PathBuf {
        self.dir
            .join(format!("{digest}-{}.cwasm", engine.artifact_key))
    }

    /// The precompiled component, if this cache has a usable one.
    pub fn load(&self, digest: &str, engine: &EngineHandle) -> Option<Component> {
        let path = self.path(digest, engine);
        if !path.exists() {
            return None;
        }
        // SAFETY: only this cache writes files under these names, from
        // `Component::serialize` of the same engine configuration; wasmtime
        // still checks the header and refuses an incompatible artifact.
        match unsafe { Component::deserialize_file(&engine.engine, &path) } {
            Ok(component) => Some(component),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "discarding unusable artifact");
                let _ = std::fs::remove_file(&path);
                None
            }
        }
    }

    /// Whether an artifact for this digest and engine is on disk.
    pub fn contains(&self, digest: &str, engine: &EngineHandle) -> bool {
        self.path(digest, engine).exists()
    }

    /// The raw artifact bytes, to share with other hosts.
    pub fn read(&self, digest: &str, engine: &EngineHandle) -> Option<Vec<u8>> {
        std::fs::read(self.path(digest, engine)).ok()
    }

    /// Stores artifact bytes fetched from another host (atomically). They
    /// are checked by wasmtime when loaded, like any artifact.
    pub fn write(&self, digest: &str, engine: &EngineHandle, bytes: &[u8]) -> std::io::Result<()> {
        let path = self.path(digest, engine);
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&tmp, bytes)?;
        std::fs::rename(&tmp, &path)
    }

    /// Saves a compiled component. Failures only cost a recompile later.
    pub fn store(&self, digest: &str, engine: &EngineHandle, component: &Component) {
        let path = self.path(digest, engine);
        let result = component
            .serialize()
            .map_err(anyhow::Error::from)
            .and_then(|bytes| {
                let tmp = path.with_extension(format!("tmp{}", std::process::id()));
                std::fs::write(&tmp, bytes)?;
                std::fs::rename(&tmp, &path)?;
                Ok(())
            });
        if let Err(e) = result {
            tracing::warn!(path = %path.display(), error = %e, "could not cache compiled component");
        }
    }
}
