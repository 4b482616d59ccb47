//! Managed API tokens: created, rotated and revoked through the API
//! (`/v1/api-tokens`, `airlock token`) while the fleet runs, beside the
//! bootstrap tokens of `--tokens`/`--tokens-file` (`api::auth`), which keep
//! working and cannot be changed here.
//!
//! ## What is where
//! | key | what | written by |
//! |---|---|---|
//! | `P:{airlock}:api-tokens` (hash) | name → `{"entry": TEXT, "seal": "VERSION:HEX"}`: the token's record (JSON [`ManagedToken`]: role, scope, the SHA-256 digest of its secret, who created it and when, its expiry, its revocation) and the record's seal | [`ManagedTokens::create`], [`ManagedTokens::rotate`], [`ManagedTokens::revoke`]; read by every API host every [`REFRESH`] |
//! | `P:{airlock}:api-token-uses` (hash) | name → when an API host last saw the token used (ms), not sealed: it decides nothing | each API host, every [`USES_EVERY`], for the tokens it saw used |
//!
//! The secret (`alt_` and 64 hex digits: 256 random bits) is shown once,
//! by the call that creates or rotates it; Redis holds its digest only.
//! A revoked token keeps its record, marked revoked, so its name shows who
//! it was; the name can be created again.
//!
//! ## Why a Redis writer cannot mint, widen or revive a token
//! Anyone who can write to Redis can write these records. So each is
//! sealed as the registry's entries are (`registry::seal`): an HMAC under
//! a key derived from the fleet's key for this purpose alone, over the
//! token's name, a version (the writer's clock in ms, past the stored one)
//! and the record's text. An API host reads records only through their
//! seals: a record without one, with a forged or altered one (a role
//! widened, a scope widened or dropped, an expiry moved, a revocation undone), or of an older version
//! than one the host has seen (a revoked token's earlier record put back)
//! is refused, logged and counted (`airlock_api_tokens_refused` on
//! `/metrics`), and the host goes on with the last
//! version it verified. As for registry entries, a host started after the
//! revocation never saw the newer version, so it would take an earlier
//! record put back in its place: expiries bound what that can revive. A
//! writer can delete a record, which takes the token away (as it can
//! delete jobs). A host without the fleet's key (`--artifact-key-file`) takes no
//! managed token at all and refuses to create them.
//!
//! ## How fast a change is seen
//! Each API host reads the hash every [`REFRESH`] (one `HGETALL`, off any
//! request's path), so a token created, rotated or revoked on one host is
//! taken or refused by every other within about a quarter of a second. An expiry
//! is checked on every request.

pub mod read_tokens;
mod record;
mod scope;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Duration;

use redis::AsyncCommands;
use subtle::ConstantTimeEq;

use crate::api::auth::{Caller, Role};
use crate::registry::seal::{Kind, Verified};
use crate::store::Store;
use airlock_core::clock::now_ms;

pub use self::record::{ManagedToken, Stored};
pub use self::scope::Scope;

/// What the derived key is for.
pub const PURPOSE: &str = "api-tokens";
/// How often an API host reads the managed tokens.
pub const REFRESH: Duration = Duration::from_millis(250);
/// How often an API host writes when it last saw each token used.
pub const USES_EVERY: Duration = Duration::from_secs(10);

/// Why a change of a managed token was not made.
#[derive(Debug, thiserror::Error)]
pub enum AccessError {
    /// A live token has the name.
    #[error("a token named `{0}` exists")]
    Exists(String),
    /// No live managed token has the name.
    #[error("no managed token is named `{0}`")]
    NotFound(String),
    /// Redis failed.
    #[error(transparent)]
    Redis(#[from] redis::RedisError),
}

/// A token a host takes: its name, role, secret's digest and expiry.
#[derive(Clone)]
struct Usable {
    name: String,
    role: Role,
    scope: Option<Arc<Scope>>,
    digest: [u8; 32],
    expires_at: Option<u64>,
}

/// The managed tokens as one API host sees them.
pub struct ManagedTokens {
    store: Store,
    seals: Verified,
    /// The live tokens as last read and verified.
    usable: RwLock<Arc<Vec<Usable>>>,
    /// When this host last saw each token used, not written yet.
    uses: Mutex<HashMap<String, u64>>,
}

impl std::fmt::Debug for ManagedTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ManagedTokens").finish_non_exhaustive()
    }
}

impl ManagedTokens {
    /// The managed tokens of `store`'s fleet, sealed under `key` (derived
    /// for [`PURPOSE`]), read now and then every [`REFRESH`] on a task of
    /// their own (which ends when the last handle is dropped).
    pub async fn start(store: Store, key: [u8; 32]) -> Arc<ManagedTokens> {
        let tokens = Arc::new(ManagedTokens {
            store,
            seals: Verified::new(key),
            usable: RwLock::default(),
            uses: Mutex::default(),
        });
        if let Err(e) = tokens.refresh().await {
            tracing::warn!(error = %e, "read the managed API tokens; retrying");
        }
        tokio::spawn(Self::follow(Arc::downgrade(&tokens)));
        tokens
    }

    async fn follow(tokens: Weak<ManagedTokens>) {
        let mut uses_at = tokio::time::Instant::now() + USES_EVERY;
        loop {
            tokio::time::sleep(REFRESH).await;
            let Some(tokens) = tokens.upgrade() else {
                return;
            };
            if let Err(e) = tokens.refresh().await {
                tracing::debug!(error = %e, "read the managed API tokens");
            }
            if tokio::time::Instant::now() >= uses_at {
                uses_at += USES_EVERY;
                tokens.write_uses().await;
            }
        }
    }

    /// Reads every record and keeps those whose seals verify, not revoked.
    async fn refresh(&self) -> redis::RedisResult<()> {
        let stored = self.store.hgetall(&self.store.keys().api_tokens()).await?;
        let usable = stored
            .iter()
            .filter_map(|(name, text)| self.verified(name, text))
            .filter(|t| t.revoked_at.is_none())
            .filter_map(|t| {
                Some(Usable {
                    digest: t.digest_bytes()?,
                    name: t.name,
                    role: t.role,
                    scope: t.scope.map(Arc::new),
                    expires_at: t.expires_at,
                })
            })
            .collect();
        *self.usable.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(usable);
        Ok(())
    }

    /// The record stored under `name` (`text`, as Redis holds it) as this
    /// host may use it: through its seal ([`Verified::check`]).
    fn verified(&self, name: &str, text: &str) -> Option<ManagedToken> {
        let stored = Stored::parse(text);
        let entry = stored.as_ref().map_or("", |s| s.entry.as_str());
        let seal = stored.as_ref().map(|s| s.seal.as_str());
        let text = self.seals.check(Kind::ApiToken, name, entry, seal)?;
        ManagedToken::parse(&text).filter(|t| t.name == name)
    }

    /// The caller `presented` (a secret) belongs to, if it is a live,
    /// unexpired managed token. Every token is compared, always.
    pub fn authenticate(&self, presented: &str) -> Option<Caller> {
        let digest = airlock_core::hashing::separated(&[presented.as_bytes()]);
        let usable = self
            .usable
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let mut found: Option<&Usable> = None;
        for token in usable.iter() {
            let matches: bool = token.digest.ct_eq(&digest).into();
            if matches && found.is_none() {
                found = Some(token);
            }
        }
        let token = found?;
        let now = now_ms();
        if token.expires_at.is_some_and(|at| at <= now) {
            return None;
        }
        self.uses
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(token.name.clone(), now);
        Some(Caller {
            name: token.name.clone(),
            role: token.role,
            scope: token.scope.clone(),
            from: None,
        })
    }

    /// Writes when this host last saw each token used (one `HSET`).
    async fn write_uses(&self) {
        let uses: Vec<(String, u64)> =
            std::mem::take(&mut *self.uses.lock().unwrap_or_else(|p| p.into_inner()))
                .into_iter()
                .collect();
        if uses.is_empty() {
            return;
        }
        let key = self.store.keys().api_token_uses();
        let written: redis::RedisResult<()> = self.store.conn().hset_multiple(key, &uses).await;
        if let Err(e) = written {
            tracing::debug!(error = %e, "write the API tokens' last uses");
        }
    }

    /// Every managed token's record that verifies, revoked ones too, with
    /// when a host last saw it used.
    pub async fn list(&self) -> Result<Vec<(ManagedToken, Option<u64>)>, AccessError> {
        let keys = self.store.keys();
        let stored = self.store.hgetall(&keys.api_tokens()).await?;
        let uses = self.store.hgetall(&keys.api_token_uses()).await?;
        let mut tokens: Vec<(ManagedToken, Option<u64>)> = stored
            .iter()
            .filter_map(|(name, text)| self.verified(name, text))
            .map(|t| {
                let used = uses.get(&t.name).and_then(|ms| ms.parse().ok());
                (t, used)
            })
            .collect();
        tokens.sort_by(|a, b| a.0.name.cmp(&b.0.name));
        Ok(tokens)
    }

    /// Creates token `name` with `role` within `scope`, expiring at
    /// `expires_at`, by `by`: its record and its secret (shown once). A
    /// live token of the name is not replaced.
    pub async fn create(
        &self,
        name: &str,
        role: Role,
        scope: Option<Scope>,
        expires_at: Option<u64>,
        by: &str,
    ) -> Result<(ManagedToken, String), AccessError> {
        let (current, version) = self.current(name).await?;
        if current.is_some_and(|t| t.revoked_at.is_none()) {
            return Err(AccessError::Exists(name.to_string()));
        }
        let secret = record::new_secret();
        let token = ManagedToken::new(name, role, scope, &secret, expires_at, by);
        self.write(&token, version).await?;
        Ok((token, secret))
    }

    /// Gives live token `name` a new secret (the old one stops working);
    /// its record and the new secret.
    pub async fn rotate(
        &self,
        name: &str,
        by: &str,
    ) -> Result<(ManagedToken, String), AccessError> {
        let (mut token, version) = self.live(name).await?;
        let secret = record::new_secret();
        token.rotate(&secret, by);
        self.write(&token, version).await?;
        Ok((token, secret))
    }

    /// Revokes live token `name`: its record stays, marked revoked.
    pub async fn revoke(&self, name: &str, by: &str) -> Result<ManagedToken, AccessError> {
        let (mut token, version) = self.live(name).await?;
        token.revoked_at = Some(now_ms());
        token.revoked_by = Some(by.to_string());
        self.write(&token, version).await?;
        Ok(token)
    }

    /// The verified record of live (not revoked) token `name`, and the
    /// stored seal's version; `NotFound` when there is none.
    async fn live(&self, name: &str) -> Result<(ManagedToken, u64), AccessError> {
        let (current, version) = self.current(name).await?;
        let token = current
            .filter(|t| t.revoked_at.is_none())
            .ok_or_else(|| AccessError::NotFound(name.to_string()))?;
        Ok((token, version))
    }

    /// The verified record of `name`, and the version the stored seal
    /// names (a write seals a later one).
    async fn current(&self, name: &str) -> Result<(Option<ManagedToken>, u64), AccessError> {
        let text: Option<String> = self
            .store
            .conn()
            .hget(self.store.keys().api_tokens(), name)
            .await?;
        let Some(text) = text else {
            return Ok((None, 0));
        };
        let version = Verified::version_of(Stored::parse(&text).as_ref().map(|s| s.seal.as_str()));
        Ok((self.verified(name, &text), version))
    }

    /// Seals and writes `token`'s record, as a version past `stored`.
    async fn write(&self, token: &ManagedToken, stored: u64) -> Result<(), AccessError> {
        let entry = token.encode();
        let version = now_ms().max(stored.saturating_add(1));
        let seal = self
            .seals
            .seal(Kind::ApiToken, &token.name, version, &entry);
        let value = Stored { entry, seal }.encode();
        let _: () = self
            .store
            .conn()
            .hset(self.store.keys().api_tokens(), &token.name, value)
            .await?;
        // This host takes the change at once; the others at their next
        // read.
        self.refresh().await?;
        Ok(())
    }

    /// Distinct records refused since the host started.
    pub fn refused(&self) -> u64 {
        self.seals.refused()
    }
}
