//! The handler's key-value store, for idempotency keys and small state.

use std::time::Duration;

use crate::bindings::airlock::job::context as host;
use crate::context::Context;
use crate::error::JobError;

/// A small key-value store, namespaced per handler name, with optional TTL.
///
/// The classic use is idempotency: remember that an e-mail went out under an
/// idempotency key so a duplicate delivery of the same job skips it.
pub struct Kv<'a> {
    _ctx: &'a Context,
}

fn ttl_ms(ttl: Option<Duration>) -> Option<u64> {
    ttl.map(|d| d.as_millis().max(1) as u64)
}

impl<'a> Kv<'a> {
    pub(crate) fn new(ctx: &'a Context) -> Self {
        Kv { _ctx: ctx }
    }

    /// The value under `key`, if any.
    pub fn get(&self, key: &str) -> Result<Option<String>, JobError> {
        host::kv_get(key).map_err(|e| JobError::from_host("kv get", e))
    }

    /// Store `value` under `key`, expiring after `ttl` when given.
    pub fn set(&self, key: &str, value: &str, ttl: Option<Duration>) -> Result<(), JobError> {
        host::kv_set(key, value, ttl_ms(ttl)).map_err(|e| JobError::from_host("kv set", e))
    }

    /// Store `value` only when `key` is absent; `true` when this call stored it.
    pub fn set_if_absent(
        &self,
        key: &str,
        value: &str,
        ttl: Option<Duration>,
    ) -> Result<bool, JobError> {
        host::kv_set_if_absent(key, value, ttl_ms(ttl))
            .map_err(|e| JobError::from_host("kv set-if-absent", e))
    }

    /// Delete `key`; `true` when it existed.
    pub fn delete(&self, key: &str) -> Result<bool, JobError> {
        host::kv_delete(key).map_err(|e| JobError::from_host("kv delete", e))
    }
}
