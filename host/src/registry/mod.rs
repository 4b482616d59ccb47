//! The registry: handler components and queue bindings, kept in Redis so
//! every host of a fleet sees the same ones.
//!
//! A *handler* is a name pointing at the digest (sha256) of its current
//! component; uploading a new version moves the name and keeps the old
//! component, because jobs that started on it stay pinned to it (durable
//! steps must replay against the code that recorded them). A *binding*
//! maps a queue to a handler with its limits, concurrency and default job
//! options. Every change bumps a generation counter that hosts poll, so a
//! new binding or handler version reaches running hosts without a restart.
//! A queue's *secrets* live beside its binding, sealed ([`SecretSpec`]).

mod batch;
mod binding_store;
mod bindings;
mod canary;
mod gate_rules;
mod handlers;
pub mod seal;
mod secrets;
mod starts;
mod versions;
mod warm;

use std::sync::Arc;

use redis::AsyncCommands;

pub use self::batch::{Batch, MAX_BATCH_SIZE};
pub use self::bindings::{Binding, BindingSpec, MAX_CONFIG_ENTRIES, RateLimit, WarmInstances};
pub use self::canary::Canary;
pub use self::gate_rules::{
    CancelOn, Debounce, Fairness, KeyConcurrency, KeyRate, Singleton, SingletonMode, TenantOf,
};
pub use self::handlers::{ComponentError, HandlerDetails, HandlerVersion};
pub use self::secrets::{SecretSpec, SecretView};
pub use self::starts::{OnFailure, Starts};
pub use self::versions::{Promotion, Rollback};
use crate::error::{FieldError, QueueError};
use crate::sandbox::Sandbox;
use crate::store::Store;
use airlock_core::clock::now_ms;

/// Why a registry operation was refused.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// A request field is invalid; names the field.
    #[error(transparent)]
    Invalid(#[from] FieldError),
    /// The component is not an Airlock handler.
    #[error("{0}")]
    Component(#[from] crate::sandbox::ValidationError),
    /// No such handler or binding.
    #[error("{0} not found")]
    NotFound(String),
    /// A binding names a handler that does not exist.
    #[error("handler `{0}` does not exist; deploy it first")]
    MissingHandler(String),
    /// The handler is still bound to queues.
    #[error("handler `{handler}` is bound to queue(s) {queues:?}; unbind them first")]
    InUse {
        /// The handler.
        handler: String,
        /// Queues binding it.
        queues: Vec<String>,
    },
    /// The registry's state does not allow it (a rollback with no earlier
    /// version to go back to).
    #[error("{0}")]
    Conflict(String),
    /// Redis failed.
    #[error("redis: {0}")]
    Redis(#[from] anyhow::Error),
}

impl RegistryError {
    /// A queue without a binding (the API answers a queue outside a scoped
    /// token's scope with the same 404).
    pub fn unbound(queue: &str) -> RegistryError {
        RegistryError::NotFound(format!("binding of queue `{queue}`"))
    }

    /// No handler of the name (the API answers a handler outside a scoped
    /// token's scope with the same 404).
    pub fn no_handler(name: &str) -> RegistryError {
        RegistryError::NotFound(format!("handler `{name}`"))
    }
}

impl From<QueueError> for RegistryError {
    fn from(e: QueueError) -> Self {
        match e {
            QueueError::Invalid(f) => RegistryError::Invalid(f),
            other => RegistryError::Redis(anyhow::anyhow!("{other}")),
        }
    }
}

impl From<redis::RedisError> for RegistryError {
    fn from(e: redis::RedisError) -> Self {
        RegistryError::Redis(e.into())
    }
}

pub(crate) fn invalid(field: &str, message: impl Into<String>) -> RegistryError {
    RegistryError::Invalid(FieldError::new(field, message))
}

/// Handlers and bindings in Redis.
#[derive(Clone)]
pub struct Registry {
    store: Store,
    sandbox: Arc<Sandbox>,
    /// Seals entries this host writes and checks those it reads (see
    /// [`seal`]); `None` on a host without the fleet key, which reads
    /// entries as they are.
    verified: Option<Arc<seal::Verified>>,
}

impl Registry {
    /// A registry over `store`; `sandbox` validates uploads, and its fleet
    /// key (if it has one) seals and checks entries.
    pub fn new(store: Store, sandbox: Arc<Sandbox>) -> Self {
        let verified = sandbox
            .fleet_derived_key(seal::PURPOSE)
            .map(|key| Arc::new(seal::Verified::new(key)));
        Registry {
            store,
            sandbox,
            verified,
        }
    }

    /// Whether this host checks the seals of the entries it reads.
    pub fn verifies_entries(&self) -> bool {
        self.verified.is_some()
    }

    /// Distinct registry entries refused since the host started (see
    /// [`seal`]).
    pub fn entries_refused(&self) -> u64 {
        self.verified.as_ref().map_or(0, |v| v.refused())
    }

    /// What this host may use of entry (`kind`, `name`), given the `text`
    /// Redis holds (`None`: none) and its `seal`.
    pub(crate) fn checked(
        &self,
        kind: seal::Kind,
        name: &str,
        text: Option<String>,
        seal: Option<&str>,
    ) -> Option<String> {
        match (&self.verified, text) {
            (_, None) => None,
            (None, text) => text,
            (Some(v), Some(text)) => v.check(kind, name, &text, seal),
        }
    }

    /// The seal this host puts on a new version of an entry whose stored
    /// seal is `previous` (`None` without the fleet key). The version is
    /// the time in ms, or one past the previous version if that is later:
    /// it grows with every write, also across a delete (which removes the
    /// previous seal), as long as the writers' clocks agree to within the
    /// time between two writes of one entry.
    pub(crate) fn seal_for(
        &self,
        kind: seal::Kind,
        name: &str,
        previous: Option<&str>,
        text: &str,
    ) -> Option<String> {
        let v = self.verified.as_ref()?;
        let version = seal::Verified::version_of(previous)
            .saturating_add(1)
            .max(now_ms());
        Some(v.seal(kind, name, version, text))
    }

    /// The generation counter: changes whenever a handler or binding does.
    pub async fn generation(&self) -> anyhow::Result<u64> {
        let mut conn = self.store.conn();
        let generation: Option<u64> = conn.get(self.store.keys().generation()).await?;
        Ok(generation.unwrap_or(0))
    }

    pub(crate) fn store(&self) -> &Store {
        &self.store
    }

    pub(crate) fn sandbox(&self) -> &Arc<Sandbox> {
        &self.sandbox
    }
}
