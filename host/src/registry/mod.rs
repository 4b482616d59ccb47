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

mod binding_store;
mod bindings;
mod flow_rules;
mod handlers;
mod secrets;

use std::sync::Arc;

use redis::AsyncCommands;

pub use self::bindings::{Binding, BindingSpec, MAX_CONFIG_ENTRIES, RateLimit, WarmInstances};
pub use self::flow_rules::{CancelOn, Debounce, KeyConcurrency, KeyRate, Singleton, SingletonMode};
pub use self::handlers::{ComponentError, HandlerDetails, HandlerVersion};
pub use self::secrets::{SecretSpec, SecretView};
use crate::error::{FieldError, QueueError};
use crate::sandbox::Sandbox;
use crate::store::Store;

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
    /// Redis failed.
    #[error("redis: {0}")]
    Redis(#[from] anyhow::Error),
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
}

impl Registry {
    /// A registry over `store`; `sandbox` validates uploads.
    pub fn new(store: Store, sandbox: Arc<Sandbox>) -> Self {
        Registry { store, sandbox }
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
