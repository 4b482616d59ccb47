//! Compiled components on disk, so a restarted host does not recompile —
//! and the authentication that makes loading them safe.
//!
//! A precompiled artifact is native machine code: wasmtime maps it
//! executable and runs it *outside* the sandbox, trusting it to be its own
//! output for this engine configuration. So an artifact is only ever loaded
//! when it carries a valid tag: HMAC-SHA256, under an [`ArtifactKey`] that
//! never leaves the hosts, over the component's digest, the engine's
//! artifact key and the artifact bytes. Only [`ArtifactCache::store`] tags,
//! and only bytes `Component::serialize` just produced. A forged or
//! corrupted artifact (flipped bytes, another handler's artifact under this
//! digest, an artifact for another engine) fails the check, is refused,
//! logged, counted and deleted, and the component is compiled from source
//! instead.
//!
//! The key is the fleet's (`airlock serve --artifact-key-file`, or
//! `AIRLOCK_ARTIFACT_KEY`), shared by every host of the fleet so they can
//! load each other's artifacts through Redis; without one, each host
//! generates a key of its own (in its cache directory, mode 0600), so its
//! disk cache survives restarts but nothing it did not compile itself is
//! ever loaded, and nothing is shared through Redis.
//!
//! An artifact is keyed by the component's sha256 digest, the engine's
//! artifact key (wasmtime version, target and compilation settings) and the
//! id of the key that sealed it ([`ArtifactKey::id`]): hosts with different
//! keys may share one cache directory (a benchmark's host beside the
//! deployer, two fleets on one machine) without refusing and deleting each
//! other's artifacts, each finding only files sealed with its own key.
//! Files are written to a temporary name and renamed, so a crash never
//! leaves a half-written artifact under a real name.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use airlock_core::hashing;
use hmac::Mac;
use wasmtime::component::Component;

use super::engine::EngineHandle;

/// Marks a sealed artifact, and the version of the sealing scheme.
const MAGIC: &[u8; 8] = b"ALART\x001\n";
/// Length of the HMAC-SHA256 tag.
const TAG_LEN: usize = 32;
/// Shortest fleet secret accepted.
pub const MIN_SECRET_LEN: usize = 32;
/// The file a host keeps its own key in, in its cache directory.
const LOCAL_KEY_FILE: &str = "artifact.key";

/// The secret that authenticates precompiled artifacts. Never stored in
/// Redis, never logged.
#[derive(Clone)]
pub struct ArtifactKey {
    secret: Vec<u8>,
    fleet: bool,
}

impl std::fmt::Debug for ArtifactKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArtifactKey")
            .field("fleet", &self.fleet)
            .finish_non_exhaustive()
    }
}

/// A fleet secret that is too short to be a key.
#[derive(Debug, thiserror::Error)]
#[error("the artifact key must be at least {MIN_SECRET_LEN} bytes (got {0})")]
pub struct KeyTooShort(usize);

impl ArtifactKey {
    /// The fleet's key, from its secret (at least 32 bytes; surrounding
    /// whitespace is ignored). Hosts sharing it load each other's
    /// artifacts.
    pub fn fleet(secret: &[u8]) -> Result<Self, KeyTooShort> {
        let secret = secret.trim_ascii();
        if secret.len() < MIN_SECRET_LEN {
            return Err(KeyTooShort(secret.len()));
        }
        Ok(ArtifactKey {
            secret: secret.to_vec(),
            fleet: true,
        })
    }

    /// This host's own key, kept in `dir` (created on first use, readable
    /// by this user only).
    pub fn local(dir: &Path) -> std::io::Result<Self> {
        let path = dir.join(LOCAL_KEY_FILE);
        match std::fs::read(&path) {
            Ok(secret) if secret.len() >= MIN_SECRET_LEN => {
                return Ok(ArtifactKey {
                    secret,
                    fleet: false,
                });
            }
            Ok(_) => {
                tracing::warn!(path = %path.display(), "artifact key file is too short; making a new one");
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        let mut secret = vec![0u8; 32];
        getrandom::fill(&mut secret).map_err(std::io::Error::other)?;
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        {
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create(true).truncate(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
            let mut file = options.open(&tmp)?;
            file.write_all(&secret)?;
            file.sync_all()?;
        }
        std::fs::rename(&tmp, &path)?;
        Ok(ArtifactKey {
            secret,
            fleet: false,
        })
    }

    /// Whether this is the fleet's key (artifacts may be shared).
    pub fn is_fleet(&self) -> bool {
        self.fleet
    }

    /// A public name for this key (16 hex digits of a hash of the secret,
    /// which says nothing of the secret itself): part of every artifact's
    /// file name, so caches sealed with different keys never collide.
    pub fn id(&self) -> String {
        let named = [b"airlock-artifact-key-id-v1".as_slice(), &self.secret].concat();
        hex::encode(&hashing::separated(&[&named])[..8])
    }

    /// A key for another purpose derived from this one (HMAC-SHA256 of the
    /// purpose under the secret): what else the fleet seals with its key
    /// (registry entries) never shares a key with artifacts.
    pub fn derive(&self, purpose: &str) -> [u8; 32] {
        hashing::derive_key(
            &self.secret,
            &[b"airlock-derived-key-v1\0", purpose.as_bytes()],
        )
    }

    fn mac(&self, digest: &str, engine: &str, artifact: &[u8]) -> hashing::Hmac {
        // Length-prefixed, so no two (digest, engine, bytes) triples share
        // an input; the artifact's bytes last.
        let mut mac = hashing::hmac(
            &self.secret,
            &[b"airlock-artifact-v1", digest.as_bytes(), engine.as_bytes()],
        );
        mac.update(artifact);
        mac
    }

    /// `artifact` sealed for (`digest`, `engine`): magic, tag, bytes.
    pub fn seal(&self, digest: &str, engine: &str, artifact: &[u8]) -> Vec<u8> {
        let tag = self.mac(digest, engine, artifact).finalize().into_bytes();
        let mut out = Vec::with_capacity(MAGIC.len() + TAG_LEN + artifact.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&tag);
        out.extend_from_slice(artifact);
        out
    }

    /// The artifact inside `sealed`, if its tag is valid for (`digest`,
    /// `engine`) under this key (compared in constant time).
    pub fn open<'a>(&self, digest: &str, engine: &str, sealed: &'a [u8]) -> Option<&'a [u8]> {
        let rest = sealed.strip_prefix(MAGIC.as_slice())?;
        if rest.len() < TAG_LEN {
            return None;
        }
        let (tag, artifact) = rest.split_at(TAG_LEN);
        self.mac(digest, engine, artifact)
            .verify_slice(tag)
            .ok()
            .map(|()| artifact)
    }
}

/// A directory of sealed precompiled components.
#[derive(Debug)]
pub struct ArtifactCache {
    dir: PathBuf,
    key: ArtifactKey,
    /// `key`'s id, computed once (see [`ArtifactKey::id`]).
    key_id: String,
    /// Artifacts refused because their tag did not verify.
    refused: AtomicU64,
}

impl ArtifactCache {
    /// A cache in `dir`, created if missing, sealing with `key` (this
    /// host's own key in `dir` when `None`).
    pub fn open(dir: &Path, key: Option<ArtifactKey>) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let key = match key {
            Some(k) => k,
            None => ArtifactKey::local(dir)?,
        };
        Ok(ArtifactCache {
            dir: dir.to_path_buf(),
            key_id: key.id(),
            key,
            refused: AtomicU64::new(0),
        })
    }

    /// The key artifacts are sealed with.
    pub fn key(&self) -> &ArtifactKey {
        &self.key
    }

    /// Artifacts refused so far (bad tag), from disk or from other hosts.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    fn path(&self, digest: &str, engine: &EngineHandle) -> PathBuf {
        self.dir.join(format!(
            "{digest}-{}-{}.sealed",
            engine.artifact_key, self.key_id
        ))
    }

    fn refuse(&self, digest: &str, source: &str) {
        self.refused.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(
            digest,
            source,
            "refused a precompiled artifact: its authentication tag does not verify \
             (forged, corrupted, or sealed with another key); compiling from source instead"
        );
    }

    /// The precompiled component, if this cache has a usable one.
    pub fn load(&self, digest: &str, engine: &EngineHandle) -> Option<Component> {
        let path = self.path(digest, engine);
        let sealed = std::fs::read(&path).ok()?;
        touch(&path);
        let Some(artifact) = self.key.open(digest, &engine.artifact_key, &sealed) else {
            self.refuse(digest, "disk cache");
            let _ = std::fs::remove_file(&path);
            return None;
        };
        // SAFETY: `Component::deserialize` requires bytes that wasmtime's
        // own `serialize` produced for an engine with this configuration;
        // wrong bytes are native code run outside the sandbox. These bytes
        // carry a valid HMAC-SHA256 tag under `self.key` — a secret held by
        // this host (or this fleet's hosts) and never written to Redis —
        // over this digest, this engine's artifact key and the bytes
        // themselves. Tags are only ever made by `store` below, right after
        // `serialize` of this component on an engine with the same
        // artifact key. So these are exactly the bytes such a `serialize`
        // produced, for this component and this engine configuration.
        match unsafe { Component::deserialize(&engine.engine, artifact) } {
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

    /// The sealed artifact, to share with other hosts of the fleet.
    pub fn read(&self, digest: &str, engine: &EngineHandle) -> Option<Vec<u8>> {
        std::fs::read(self.path(digest, engine)).ok()
    }

    /// Stores a sealed artifact fetched from another host, if its tag
    /// verifies under this cache's key; refused (and counted) otherwise.
    pub fn import(
        &self,
        digest: &str,
        engine: &EngineHandle,
        sealed: &[u8],
    ) -> Result<(), Refused> {
        if self
            .key
            .open(digest, &engine.artifact_key, sealed)
            .is_none()
        {
            self.refuse(digest, "shared by another host");
            return Err(Refused);
        }
        if let Err(e) = write_atomically(&self.path(digest, engine), sealed) {
            tracing::warn!(digest, error = %e, "could not cache a shared artifact");
        }
        Ok(())
    }

    /// Deletes the least recently used artifacts past `max_bytes` (see
    /// [`prune`]); the bytes deleted.
    pub fn prune(&self, max_bytes: u64) -> u64 {
        prune(&self.dir, max_bytes, |p| {
            p.extension().is_some_and(|e| e == "sealed")
        })
    }

    /// Saves (sealed) a component this host just compiled. Failures only
    /// cost a recompile later.
    pub fn store(&self, digest: &str, engine: &EngineHandle, component: &Component) {
        let path = self.path(digest, engine);
        let result = component
            .serialize()
            .map_err(anyhow::Error::from)
            .and_then(|bytes| {
                let sealed = self.key.seal(digest, &engine.artifact_key, &bytes);
                Ok(write_atomically(&path, &sealed)?)
            });
        if let Err(e) = result {
            tracing::warn!(path = %path.display(), error = %e, "could not cache compiled component");
        }
    }
}

/// An artifact whose tag did not verify.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the artifact's authentication tag does not verify")]
pub struct Refused;

/// Marks `path` as just used (its modification time), for [`prune`].
pub(crate) fn touch(path: &Path) {
    if let Ok(file) = std::fs::File::options().append(true).open(path) {
        let _ = file.set_modified(std::time::SystemTime::now());
    }
}

/// Keeps the files under `dir` accepted by `keep_candidate` within
/// `max_bytes`: the least recently used (oldest modification time; loads
/// touch theirs) are deleted first, down to three quarters of the bound,
/// so pruning runs rarely. A file another process deletes meanwhile is
/// skipped. Returns the bytes deleted.
pub(crate) fn prune(dir: &Path, max_bytes: u64, keep_candidate: impl Fn(&Path) -> bool) -> u64 {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() {
                stack.push(path);
            } else if keep_candidate(&path) {
                let used = meta.modified().unwrap_or(std::time::UNIX_EPOCH);
                files.push((used, meta.len(), path));
            }
        }
    }
    let mut total: u64 = files.iter().map(|(_, len, _)| len).sum();
    if total <= max_bytes {
        return 0;
    }
    files.sort_by_key(|(used, _, _)| *used);
    let mut deleted = 0;
    for (_, len, path) in files {
        if total <= max_bytes / 4 * 3 {
            break;
        }
        if std::fs::remove_file(&path).is_ok() {
            total -= len;
            deleted += len;
        }
    }
    deleted
}

/// Writes `bytes` to `path` through a temporary file renamed into place, so
/// a reader (or a crash) never sees half of it.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    // Unique per process and write: compiler threads may write at once.
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let n = WRITES.fetch_add(1, Ordering::Relaxed);
    let tmp = path.with_extension(format!("tmp{}-{n}", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> ArtifactKey {
        ArtifactKey::fleet(&[7u8; 32]).unwrap()
    }

    #[test]
    fn a_sealed_artifact_opens_only_for_its_digest_engine_and_key() {
        let sealed = key().seal("d1", "e1", b"machine code");
        assert_eq!(key().open("d1", "e1", &sealed), Some(&b"machine code"[..]));
        assert_eq!(key().open("d2", "e1", &sealed), None, "another digest");
        assert_eq!(key().open("d1", "e2", &sealed), None, "another engine");
        let other = ArtifactKey::fleet(&[8u8; 32]).unwrap();
        assert_eq!(other.open("d1", "e1", &sealed), None, "another key");
        let mut flipped = sealed.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert_eq!(key().open("d1", "e1", &flipped), None, "a flipped byte");
        assert_eq!(key().open("d1", "e1", b"machine code"), None, "unsealed");
    }

    #[test]
    fn pruning_deletes_the_least_recently_used_files_first() {
        let dir = tempfile::tempdir().unwrap();
        let now = std::time::SystemTime::now();
        for (i, name) in ["a.sealed", "b.sealed", "c.sealed", "d.sealed"]
            .iter()
            .enumerate()
        {
            let path = dir.path().join(name);
            std::fs::write(&path, vec![0u8; 1000]).unwrap();
            let file = std::fs::File::options().append(true).open(&path).unwrap();
            // a is the oldest, d the newest...
            file.set_modified(now - std::time::Duration::from_secs(100 - i as u64 * 10))
                .unwrap();
        }
        std::fs::write(dir.path().join("other.key"), vec![0u8; 5000]).unwrap();
        // ...but a was just used.
        touch(&dir.path().join("a.sealed"));
        let sealed = |p: &Path| p.extension().is_some_and(|e| e == "sealed");
        assert_eq!(prune(dir.path(), 4000, sealed), 0, "within the bound");
        // Over 2,000 bytes: down to 1,500, the two least recently used go.
        assert_eq!(prune(dir.path(), 2000, sealed), 3000);
        let left: Vec<bool> = ["a", "b", "c", "d"]
            .iter()
            .map(|n| dir.path().join(format!("{n}.sealed")).exists())
            .collect();
        assert_eq!(left, [true, false, false, false]);
        assert!(dir.path().join("other.key").exists(), "only candidates go");
    }

    #[test]
    fn fleet_secrets_must_be_long_and_local_keys_persist() {
        assert!(ArtifactKey::fleet(b"short").is_err());
        let dir = tempfile::tempdir().unwrap();
        let a = ArtifactKey::local(dir.path()).unwrap();
        let b = ArtifactKey::local(dir.path()).unwrap();
        assert!(!a.is_fleet());
        let sealed = a.seal("d", "e", b"x");
        assert!(
            b.open("d", "e", &sealed).is_some(),
            "the same key after a restart"
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join(LOCAL_KEY_FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o077, 0, "the key file is private");
        }
        assert!(!format!("{a:?}").contains("secret"));
    }
}
