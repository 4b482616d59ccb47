//! Handler components: upload (validated, content-addressed), versions,
//! lookup, delete.

use redis::AsyncCommands;
use serde::{Deserialize, Serialize};

use super::seal::Kind;
use super::{Registry, RegistryError, invalid};
use crate::names;
use crate::sandbox::{ComponentInfo, digest_of};
use airlock_core::clock::now_ms;

/// Why a component could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ComponentError {
    /// The stored bytes do not match their digest.
    #[error("{0}")]
    Corrupt(String),
    /// Redis failed.
    #[error("redis: {0}")]
    Redis(anyhow::Error),
}

/// One uploaded version of a handler.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct HandlerVersion {
    /// sha256 of the component, hex.
    pub digest: String,
    /// The uploader's label (`v1.2.0`, a git sha...).
    pub version: Option<String>,
    /// Component size in bytes.
    pub size: usize,
    /// Upload time, ms since the epoch.
    pub uploaded_at: u64,
    /// Uploaded as a candidate: stored, but not made current, so no queue
    /// runs it until a binding names it (a canary, a promote). False for
    /// an upload that became current (and in entries older hosts wrote).
    #[serde(default)]
    pub candidate: bool,
}

/// A handler with its history and what its current component imports and
/// exports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct HandlerDetails {
    /// Handler name.
    pub name: String,
    /// The version new jobs run.
    pub current: HandlerVersion,
    /// Every upload, newest first.
    pub versions: Vec<HandlerVersion>,
    /// Imports and exports of the current component.
    pub component: ComponentInfo,
}

/// How long a published artifact stays in Redis.
const ARTIFACT_TTL_SECS: u64 = 30 * 24 * 60 * 60;

/// What an upload does with the handler's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Upload {
    /// The version becomes current: every queue bound to the handler runs
    /// it from the next registry poll.
    Current,
    /// Stored beside the current one, run only where a binding names it.
    Candidate,
}

impl Registry {
    /// Validates `bytes` as a handler component and makes it the current
    /// version of handler `name`. Uploading the same bytes again only moves
    /// the name back to them.
    pub async fn deploy(
        &self,
        name: &str,
        bytes: Vec<u8>,
        version: Option<String>,
    ) -> Result<HandlerVersion, RegistryError> {
        self.upload(name, bytes, version, Upload::Current).await
    }

    /// Validates `bytes` and stores them as a candidate version of handler
    /// `name`, which must have a current version: the current version and
    /// every binding stay as they are, so no job runs it until a binding
    /// names it (`canary`, `version`).
    pub async fn upload_candidate(
        &self,
        name: &str,
        bytes: Vec<u8>,
        version: Option<String>,
    ) -> Result<HandlerVersion, RegistryError> {
        if self.current_digest(name).await?.is_none() {
            return Err(RegistryError::Conflict(format!(
                "handler `{name}` has no current version for a candidate to be tried against: upload it without `candidate` first"
            )));
        }
        self.upload(name, bytes, version, Upload::Candidate).await
    }

    /// Validates and stores `bytes` as a version of `name`, current or a
    /// candidate (`how`).
    async fn upload(
        &self,
        name: &str,
        bytes: Vec<u8>,
        version: Option<String>,
        how: Upload,
    ) -> Result<HandlerVersion, RegistryError> {
        names::handler("name", name)?;
        if let Some(v) = &version
            && (v.is_empty() || v.len() > 128)
        {
            return Err(invalid("version", "must be 1 to 128 characters"));
        }
        // Compiling validates the component (and warms this host's cache);
        // it is CPU-heavy, so it runs off the async workers.
        let sandbox = self.sandbox().clone();
        let (info, bytes) = tokio::task::spawn_blocking(move || {
            sandbox
                .load(&bytes)
                .map(|loaded| (loaded.info.clone(), bytes))
        })
        .await
        .map_err(|e| RegistryError::Redis(anyhow::anyhow!("validation thread failed: {e}")))??;

        let entry = HandlerVersion {
            digest: info.digest.clone(),
            version,
            size: bytes.len(),
            uploaded_at: now_ms(),
            candidate: how == Upload::Candidate,
        };
        // The artifact goes out before the name points at the digest: a
        // host that sees the new version loads this compile instead of
        // compiling it again (a fleet compiles each version once). If this
        // host dies between the two, the artifact only expires unused.
        self.publish_artifact(&info.digest).await;
        let keys = self.store().keys();
        let entry_json = serde_json::to_string(&entry).map_err(anyhow::Error::from)?;
        let info_json = serde_json::to_string(&info).map_err(anyhow::Error::from)?;
        let mut conn = self.store().bulk_conn().await?;
        // One transaction: a reader never sees a name or a version pointing
        // at a digest whose bytes are not stored yet.
        let mut write = redis::pipe();
        write
            .atomic()
            .cmd("SET")
            .arg(keys.component(&info.digest))
            .arg(bytes)
            .ignore()
            .cmd("SET")
            .arg(keys.component_info(&info.digest))
            .arg(&info_json)
            .ignore();
        if how == Upload::Candidate {
            write
                .cmd("LPUSH")
                .arg(keys.handler_versions(name))
                .arg(&entry_json)
                .ignore()
                .query_async::<()>(&mut conn)
                .await?;
            tracing::info!(handler = name, digest = %entry.digest, "candidate uploaded");
            return Ok(entry);
        }
        let previous: Option<String> = conn.hget(keys.handler(name), "seal").await?;
        let seal = self.seal_for(Kind::Handler, name, previous.as_deref(), &entry.digest);
        write
            .cmd("HSET")
            .arg(keys.handler(name))
            .arg("digest")
            .arg(&entry.digest)
            .arg("entry")
            .arg(&entry_json)
            .ignore()
            // Unsealed (no fleet key here): hosts with the key refuse it.
            .cmd(if seal.is_some() { "HSET" } else { "HDEL" })
            .arg(keys.handler(name))
            .arg("seal")
            .arg(seal.as_slice())
            .ignore()
            .cmd("LPUSH")
            .arg(keys.handler_versions(name))
            .arg(&entry_json)
            .ignore()
            .cmd("SADD")
            .arg(keys.handlers())
            .arg(name)
            .ignore()
            .cmd("INCR")
            .arg(keys.generation())
            .ignore()
            .query_async::<()>(&mut conn)
            .await?;
        tracing::info!(handler = name, digest = %entry.digest, "handler deployed");
        Ok(entry)
    }

    /// Publishes this host's precompiled artifact of `digest` for the rest
    /// of the fleet (same wasmtime, target and settings only: the key says
    /// which), sealed with the fleet's artifact key. Nothing is published
    /// without that key. Best effort: a miss only costs another host a
    /// compile.
    pub async fn publish_artifact(&self, digest: &str) {
        let Some(sealed) = self.sandbox().export_artifact(digest) else {
            return;
        };
        let key = self
            .store()
            .keys()
            .artifact(digest, self.sandbox().artifact_key());
        let mut conn = match self.store().bulk_conn().await {
            Ok(conn) => conn,
            Err(e) => {
                tracing::debug!(digest, error = %e, "could not share the compiled artifact");
                return;
            }
        };
        let published: redis::RedisResult<()> = conn.set_ex(&key, sealed, ARTIFACT_TTL_SECS).await;
        if let Err(e) = published {
            tracing::debug!(digest, error = %e, "could not share the compiled artifact");
        }
    }

    /// Fetches a precompiled artifact of `digest` published by another host
    /// into this host's cache; whether this host now has one. Anyone who can
    /// write to Redis can write that key, so the artifact is only taken when
    /// its tag verifies under the fleet key (see `sandbox::cache`); a
    /// refused one is logged and counted, and this host compiles instead
    /// (then publishes its own over it).
    pub async fn fetch_artifact(&self, digest: &str) -> bool {
        if self.sandbox().has_artifact(digest) {
            return true;
        }
        if !self.sandbox().shares_artifacts() {
            return false;
        }
        let key = self
            .store()
            .keys()
            .artifact(digest, self.sandbox().artifact_key());
        let Ok(mut conn) = self.store().bulk_conn().await else {
            return false;
        };
        let bytes: Option<Vec<u8>> = conn.get(&key).await.ok().flatten();
        match bytes {
            Some(bytes) => self.sandbox().import_artifact(digest, &bytes).is_ok(),
            None => false,
        }
    }

    /// The digest new jobs of handler `name` run, if the handler exists
    /// (through its seal, on a host with the fleet key: see
    /// `registry::seal`).
    pub async fn current_digest(&self, name: &str) -> Result<Option<String>, RegistryError> {
        let mut conn = self.store().conn();
        let (digest, seal): (Option<String>, Option<String>) = redis::cmd("HMGET")
            .arg(self.store().keys().handler(name))
            .arg("digest")
            .arg("seal")
            .query_async(&mut conn)
            .await?;
        Ok(self.checked(Kind::Handler, name, digest, seal.as_deref()))
    }

    /// The stored bytes of a component, verified against its digest.
    pub async fn component_bytes(&self, digest: &str) -> Result<Option<Vec<u8>>, ComponentError> {
        let mut conn = self
            .store()
            .bulk_conn()
            .await
            .map_err(ComponentError::Redis)?;
        let bytes: Option<Vec<u8>> = conn
            .get(self.store().keys().component(digest))
            .await
            .map_err(|e| ComponentError::Redis(e.into()))?;
        match bytes {
            Some(b) if digest_of(&b) == digest => Ok(Some(b)),
            Some(_) => Err(ComponentError::Corrupt(format!(
                "component {digest} is corrupt in Redis (digest mismatch)"
            ))),
            None => Ok(None),
        }
    }

    /// A handler with its history.
    pub async fn handler(&self, name: &str) -> Result<HandlerDetails, RegistryError> {
        let keys = self.store().keys();
        let mut conn = self.store().conn();
        let entry: Option<String> = conn.hget(keys.handler(name), "entry").await?;
        let Some(entry) = entry else {
            return Err(RegistryError::no_handler(name));
        };
        let current: HandlerVersion = serde_json::from_str(&entry).map_err(anyhow::Error::from)?;
        let history: Vec<String> = conn.lrange(keys.handler_versions(name), 0, -1).await?;
        let versions = history
            .iter()
            .filter_map(|v| serde_json::from_str(v).ok())
            .collect();
        let info: Option<String> = conn.get(keys.component_info(&current.digest)).await?;
        let component = info
            .and_then(|i| serde_json::from_str(&i).ok())
            .unwrap_or_else(|| ComponentInfo {
                digest: current.digest.clone(),
                size: current.size,
                imports: Vec::new(),
                exports: Vec::new(),
                built_with: Vec::new(),
            });
        Ok(HandlerDetails {
            name: name.to_string(),
            current,
            versions,
            component,
        })
    }

    /// Every handler, by name.
    pub async fn handlers(&self) -> Result<Vec<HandlerDetails>, RegistryError> {
        let mut conn = self.store().conn();
        let mut names: Vec<String> = conn.smembers(self.store().keys().handlers()).await?;
        names.sort();
        let mut out = Vec::with_capacity(names.len());
        for name in names {
            match self.handler(&name).await {
                Ok(h) => out.push(h),
                Err(RegistryError::NotFound(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    /// Deletes a handler name and its history, refused while a queue binds
    /// it. Components stay: jobs may still be pinned to them.
    pub async fn delete_handler(&self, name: &str) -> Result<(), RegistryError> {
        let bound: Vec<String> = self
            .bindings()
            .await?
            .into_iter()
            .filter(|b| b.handler == name)
            .map(|b| b.queue)
            .collect();
        if !bound.is_empty() {
            return Err(RegistryError::InUse {
                handler: name.to_string(),
                queues: bound,
            });
        }
        let keys = self.store().keys();
        let mut conn = self.store().conn();
        let removed: i64 = conn.srem(keys.handlers(), name).await?;
        if removed == 0 {
            return Err(RegistryError::no_handler(name));
        }
        redis::pipe()
            .atomic()
            .del(keys.handler(name))
            .ignore()
            .del(keys.handler_versions(name))
            .ignore()
            .incr(keys.generation(), 1)
            .ignore()
            .query_async::<()>(&mut conn)
            .await?;
        Ok(())
    }
}
