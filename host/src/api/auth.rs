//! Bearer-token authentication with roles.
//!
//! Bootstrap tokens come from configuration (a JSON file or
//! `AIRLOCK_TOKENS`); managed tokens are created through the API and kept,
//! sealed, in Redis (`crate::access`). Both are kept only as SHA-256
//! digests, compared in constant time against every token (no early exit
//! that would leak which one matched or how much of it), and never
//! logged.

use std::path::Path;
use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::StatusCode;
use axum::http::request::Parts;
use serde::{Deserialize, Serialize};
use subtle::ConstantTimeEq;

use super::ApiState;
use super::error::ApiError;
use crate::access::Scope;
use crate::registry::RegistryError;

/// What a token may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Everything: handlers, bindings, schedules, destructive actions,
    /// tokens, the audit log, hosts.
    Admin,
    /// Upload and delete handlers; bind, unbind, roll back, canary and
    /// promote; manage secrets and schedules; pause, resume, drain, clean,
    /// retry and obliterate queues; and all a producer, a reader and a cron
    /// token may do.
    /// Not tokens, the audit log or hosts. A scoped token does it within
    /// its scope only.
    Deployer,
    /// Enqueue jobs, flows and events; read handlers and bindings; read,
    /// retry, remove, cancel and promote the jobs it enqueued; list the
    /// events it sent.
    Producer,
    /// Read everything but secrets; change nothing.
    Reader,
    /// Trigger schedules on demand (the `CRON_SECRET` pattern).
    Cron,
}

impl Role {
    /// A role from its name (`admin`, `deployer`, `producer`, `reader`,
    /// `cron`).
    pub fn parse(s: &str) -> Option<Role> {
        match s {
            "admin" => Some(Role::Admin),
            "deployer" => Some(Role::Deployer),
            "producer" => Some(Role::Producer),
            "reader" => Some(Role::Reader),
            "cron" => Some(Role::Cron),
            _ => None,
        }
    }
}

/// One configured token, as a digest.
#[derive(Clone)]
struct Token {
    name: String,
    role: Role,
    digest: [u8; 32],
}

/// A token entry of the tokens file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TokenEntry {
    name: String,
    role: Role,
    token: String,
}

/// The configured tokens.
#[derive(Clone, Default)]
pub struct Tokens {
    tokens: Vec<Token>,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Names and roles only: never the secrets (or their digests).
        f.debug_list()
            .entries(self.tokens.iter().map(|t| (&t.name, t.role)))
            .finish()
    }
}

/// Shortest accepted token: a guessable token is no token.
const MIN_TOKEN_LEN: usize = 16;

impl Tokens {
    fn push(&mut self, name: String, role: Role, secret: &str) -> anyhow::Result<()> {
        if secret.len() < MIN_TOKEN_LEN {
            anyhow::bail!("token `{name}` is shorter than {MIN_TOKEN_LEN} characters");
        }
        self.tokens.push(Token {
            name,
            role,
            digest: airlock_core::hashing::separated(&[secret.as_bytes()]),
        });
        Ok(())
    }

    /// Parses `role:name:token` entries separated by commas
    /// (`AIRLOCK_TOKENS=admin:ops:s3cret...,producer:web:...`).
    pub fn parse_list(list: &str) -> anyhow::Result<Tokens> {
        let mut tokens = Tokens::default();
        for (i, entry) in list
            .split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .enumerate()
        {
            let mut parts = entry.splitn(3, ':');
            let (Some(role), Some(name), Some(secret)) = (parts.next(), parts.next(), parts.next())
            else {
                anyhow::bail!("AIRLOCK_TOKENS entry {} is not `role:name:token`", i + 1);
            };
            let role = Role::parse(role).ok_or_else(|| {
                anyhow::anyhow!("AIRLOCK_TOKENS entry {}: unknown role `{role}`", i + 1)
            })?;
            tokens.push(name.to_string(), role, secret)?;
        }
        Ok(tokens)
    }

    /// Reads a JSON file `[{"name": "ops", "role": "admin", "token": "..."}]`.
    pub fn from_file(path: &Path) -> anyhow::Result<Tokens> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("cannot read tokens file {}: {e}", path.display()))?;
        let entries: Vec<TokenEntry> = serde_json::from_str(&text)
            .map_err(|e| anyhow::anyhow!("tokens file {}: {e}", path.display()))?;
        let mut tokens = Tokens::default();
        for entry in entries {
            tokens.push(entry.name, entry.role, &entry.token)?;
        }
        Ok(tokens)
    }

    /// Merges two sets.
    pub fn extend(&mut self, other: Tokens) {
        self.tokens.extend(other.tokens);
    }

    /// Each configured token's name and role.
    pub fn names(&self) -> Vec<(String, Role)> {
        self.tokens
            .iter()
            .map(|t| (t.name.clone(), t.role))
            .collect()
    }

    /// Whether any token is configured.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// The caller a presented token belongs to, if any. Every configured
    /// token is compared, always.
    pub fn authenticate(&self, presented: &str) -> Option<Caller> {
        let digest = airlock_core::hashing::separated(&[presented.as_bytes()]);
        let mut found: Option<Caller> = None;
        for token in &self.tokens {
            let matches: bool = token.digest.ct_eq(&digest).into();
            if matches && found.is_none() {
                found = Some(Caller {
                    name: token.name.clone(),
                    role: token.role,
                    scope: None,
                    from: None,
                });
            }
        }
        found
    }
}

/// An authenticated caller.
#[derive(Debug, Clone)]
pub struct Caller {
    /// The token's name (recorded as the producer of jobs it enqueues).
    pub name: String,
    /// Its role.
    pub role: Role,
    /// The queues and handlers it is limited to (`None`: the whole fleet).
    pub scope: Option<Arc<Scope>>,
    /// The address the request came from, as this host saw it (for the
    /// audit log).
    pub from: Option<String>,
}

impl Caller {
    /// Refuses (403) unless the caller has one of `roles` (admin always
    /// may; a deployer may what a producer, a reader or a cron token may).
    pub fn require(&self, roles: &[Role]) -> Result<(), ApiError> {
        let deploys = self.role == Role::Deployer
            && roles
                .iter()
                .any(|r| matches!(r, Role::Reader | Role::Producer | Role::Cron));
        if self.role == Role::Admin || roles.contains(&self.role) || deploys {
            return Ok(());
        }
        Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            format!(
                "a {:?} token may not do this; it needs one of {:?}",
                self.role, roles
            )
            .to_lowercase(),
        ))
    }

    /// Whether the caller may read any job of the queues it sees (not
    /// only its own).
    pub fn reads_everything(&self) -> bool {
        matches!(self.role, Role::Admin | Role::Deployer | Role::Reader)
    }

    /// Whose events alone the caller sends for and lists (`/v1/events`):
    /// its own, for a producer or a scoped token — its events cancel and
    /// resume only the jobs it enqueued, and it sees only the events it
    /// sent —; `None` for a token of the whole fleet that reads everything.
    pub fn events_producer(&self) -> Option<&str> {
        (!self.reads_everything() || self.scope.is_some()).then_some(self.name.as_str())
    }

    /// Whether queue `name` is within the caller's scope (every queue is,
    /// for a token without one).
    pub fn sees_queue(&self, name: &str) -> bool {
        self.scope.as_ref().is_none_or(|s| s.has_queue(name))
    }

    /// Whether handler `name` is within the caller's scope.
    pub fn sees_handler(&self, name: &str) -> bool {
        self.scope.as_ref().is_none_or(|s| s.has_handler(name))
    }

    /// Refuses a handler outside the caller's scope with the 404 of a
    /// handler that does not exist.
    pub fn require_handler(&self, name: &str) -> Result<(), ApiError> {
        if self.sees_handler(name) {
            Ok(())
        } else {
            Err(RegistryError::no_handler(name).into())
        }
    }

    /// Refuses (403) a scoped token a route about the whole fleet (hosts,
    /// metrics).
    pub fn require_fleet(&self) -> Result<(), ApiError> {
        if self.scope.is_none() {
            return Ok(());
        }
        Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            "a scoped token sees only its queues and handlers, not the whole fleet",
        ))
    }
}

impl FromRequestParts<ApiState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &ApiState) -> Result<Self, ApiError> {
        let unauthorized = |m: &str| ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", m);
        let header = parts
            .headers
            .get(axum::http::header::AUTHORIZATION)
            .ok_or_else(|| unauthorized("missing `Authorization: Bearer <token>` header"))?;
        let value = header
            .to_str()
            .map_err(|_| unauthorized("malformed Authorization header"))?;
        let token = value
            .strip_prefix("Bearer ")
            .ok_or_else(|| unauthorized("the Authorization header must be `Bearer <token>`"))?;
        let token = token.trim();
        let bootstrap = state.tokens().authenticate(token);
        let managed = state
            .managed_tokens()
            .and_then(|managed| managed.authenticate(token));
        let mut caller = bootstrap
            .or(managed)
            .ok_or_else(|| unauthorized("unknown, revoked or expired token"))?;
        caller.from = parts
            .extensions
            .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
            .map(|info| info.0.ip().to_string());
        Ok(caller)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_parse_and_authenticate() {
        let tokens =
            Tokens::parse_list("admin:ops:aaaaaaaaaaaaaaaaaaaa, producer:web:bbbbbbbbbbbbbbbbbbbb")
                .unwrap();
        let caller = tokens.authenticate("bbbbbbbbbbbbbbbbbbbb").unwrap();
        assert_eq!(caller.name, "web");
        assert_eq!(caller.role, Role::Producer);
        assert!(tokens.authenticate("cccccccccccccccccccc").is_none());
        assert!(Tokens::parse_list("admin:ops:short").is_err());
        assert!(Tokens::parse_list("boss:ops:aaaaaaaaaaaaaaaaaaaa").is_err());
        assert!(!format!("{tokens:?}").contains("aaaa"));
    }
}
