//! Cranelift's incremental compilation cache, on disk: the machine code of
//! every function compiled before, keyed by a hash of the function's IR and
//! the compiler's settings, so a component rebuilt after a small change
//! recompiles only the functions that changed.
//!
//! A JavaScript or Python handler is mostly its engine (StarlingMonkey,
//! CPython), identical from one build of the handler to the next; only the
//! data segments holding the handler's own code change. Without this cache
//! every rebuild compiled the whole engine again (an 11.7 MiB
//! StarlingMonkey component: 9–13 s on two cores); with it, most functions
//! are a lookup (the same component rebuilt: ~18,800 of ~19,400 functions
//! read back, the rest compiled, 1.7–1.9 s). `airlock run` and hosts use it
//! whenever they have a cache directory.
//!
//! Some functions miss although they did not change, a varying number from
//! one compile to the next: Cranelift 0.137's `DataFlowGraph::clear` keeps
//! the exception tables left by the function a pooled compiler context
//! compiled before, and they are part of the cache key, so a function's
//! key depends on which compiler thread took it (a Rust guest rebuilt:
//! 64–129 of 954 functions compiled again with two threads, 59 with one).
//!
//! The entries are native code, run outside the sandbox like a precompiled
//! artifact, so they are sealed the same way ([`crate::cache`]): each value
//! carries an HMAC-SHA256 tag under the host's artifact key (the fleet's,
//! or the host's own) over the entry's key and bytes, and an entry whose
//! tag does not verify is refused, counted and compiled afresh. Storage is
//! one file per entry, named by the entry's key (a hash already) under a
//! directory per first byte, written to a temporary name and renamed, so
//! processes sharing the directory never read half an entry. (A
//! content-addressed store such as `cacache` was tried first: its index
//! and its own integrity hash, on top of the seal, made a warm rebuild of
//! a StarlingMonkey handler take 2.7 s, against 1.9–2.4 s this way.)

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use super::cache::ArtifactKey;

/// What the seal's "engine" part says for these entries: no other sealed
/// bytes (an artifact) verify as an entry, nor the reverse.
const SEAL_DOMAIN: &str = "cranelift-incremental-v1";

/// Cranelift's function cache in a directory, sealed with a key.
pub struct IncrementalCache {
    dir: PathBuf,
    key: ArtifactKey,
    /// Functions found in the cache, compiled, and refused (bad tag).
    hits: AtomicU64,
    misses: AtomicU64,
    refused: AtomicU64,
}

impl std::fmt::Debug for IncrementalCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IncrementalCache")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl IncrementalCache {
    /// The cache in `dir`, sealing with `key`.
    pub fn new(dir: PathBuf, key: ArtifactKey) -> Self {
        IncrementalCache {
            dir,
            key,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            refused: AtomicU64::new(0),
        }
    }

    /// Functions served from the cache, compiled (not in it), and refused
    /// (their seal did not verify) since start.
    pub fn counts(&self) -> (u64, u64, u64) {
        (
            self.hits.load(Ordering::Relaxed),
            self.misses.load(Ordering::Relaxed),
            self.refused.load(Ordering::Relaxed),
        )
    }
}

impl IncrementalCache {
    /// Deletes the least recently used entries past `max_bytes` (an
    /// engine's functions, used by every build, stay); the bytes deleted.
    pub fn prune(&self, max_bytes: u64) -> u64 {
        super::cache::prune(&self.dir, max_bytes, |p| {
            p.extension()
                .is_none_or(|e| !e.to_string_lossy().starts_with("tmp"))
        })
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(&name[..2]).join(&name[2..])
    }
}

impl wasmtime::CacheStore for IncrementalCache {
    fn get(&self, key: &[u8]) -> Option<Cow<'_, [u8]>> {
        let name = hex::encode(key);
        let path = self.path(&name);
        let Ok(sealed) = std::fs::read(&path) else {
            self.misses.fetch_add(1, Ordering::Relaxed);
            return None;
        };
        match self.key.open(&name, SEAL_DOMAIN, &sealed) {
            Some(value) => {
                self.hits.fetch_add(1, Ordering::Relaxed);
                super::cache::touch(&path);
                Some(Cow::Owned(value.to_vec()))
            }
            None => {
                self.refused.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(
                    entry = name,
                    "refused an incremental compilation cache entry: its tag does not verify; compiling the function instead"
                );
                None
            }
        }
    }

    fn insert(&self, key: &[u8], value: Vec<u8>) -> bool {
        let name = hex::encode(key);
        if name.len() < 4 {
            return false;
        }
        let sealed = self.key.seal(&name, SEAL_DOMAIN, &value);
        let path = self.path(&name);
        let written = (|| {
            std::fs::create_dir_all(path.parent().expect("a directory per first byte"))?;
            super::cache::write_atomically(&path, &sealed)
        })();
        if let Err(e) = &written {
            tracing::debug!(error = %e, "could not store an incremental compilation cache entry");
        }
        written.is_ok()
    }
}
