//! A managed token's record and how it is stored beside its seal.

use serde::{Deserialize, Serialize};

use super::Scope;
use crate::api::auth::Role;
use airlock_core::clock::now_ms;

/// A managed token's record (its secret's digest, never the secret).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ManagedToken {
    /// Its name: the caller's name, as `--tokens` names are (the producer
    /// of the jobs it enqueues).
    pub name: String,
    /// What it may do.
    pub role: Role,
    /// The queues and handlers it is limited to (none: the whole fleet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<Scope>,
    /// The SHA-256 digest of its secret, hex.
    pub digest: String,
    /// When it was created (or last rotated), ms since the epoch.
    pub created_at: u64,
    /// The token that created (or last rotated) it.
    pub created_by: String,
    /// When it stops working, ms since the epoch.
    #[serde(default)]
    pub expires_at: Option<u64>,
    /// When it was revoked.
    #[serde(default)]
    pub revoked_at: Option<u64>,
    /// The token that revoked it.
    #[serde(default)]
    pub revoked_by: Option<String>,
}

impl ManagedToken {
    /// A new record for `secret`.
    pub fn new(
        name: &str,
        role: Role,
        scope: Option<Scope>,
        secret: &str,
        expires_at: Option<u64>,
        by: &str,
    ) -> Self {
        ManagedToken {
            name: name.to_string(),
            role,
            scope,
            digest: digest_of(secret),
            created_at: now_ms(),
            created_by: by.to_string(),
            expires_at,
            revoked_at: None,
            revoked_by: None,
        }
    }

    /// The record with `secret` instead of its old one, rotated by `by`.
    pub fn rotate(&mut self, secret: &str, by: &str) {
        self.digest = digest_of(secret);
        self.created_at = now_ms();
        self.created_by = by.to_string();
    }

    /// Its JSON text (what is sealed).
    pub fn encode(&self) -> String {
        serde_json::to_string(self).expect("a token record serializes")
    }

    /// A record from its JSON text (untrusted: `None` when it is not one).
    pub fn parse(text: &str) -> Option<ManagedToken> {
        serde_json::from_str(text).ok()
    }

    /// The digest's bytes (`None` when it is not 64 hex digits).
    pub fn digest_bytes(&self) -> Option<[u8; 32]> {
        hex::decode(&self.digest).ok()?.try_into().ok()
    }
}

/// A record as the hash holds it: its text and its seal.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stored {
    /// The record's JSON text, as sealed.
    pub entry: String,
    /// `VERSION:HEX` (`registry::seal::Verified::seal`).
    pub seal: String,
}

impl Stored {
    /// The hash field's value.
    pub fn encode(&self) -> String {
        serde_json::to_string(self).expect("a stored token serializes")
    }

    /// A field's value (untrusted: `None` when it is not one).
    pub fn parse(text: &str) -> Option<Stored> {
        serde_json::from_str(text).ok()
    }
}

/// A new secret: `alt_` and 64 hex digits (256 random bits).
pub fn new_secret() -> String {
    format!(
        "alt_{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

/// The hex SHA-256 digest a secret is kept as (as `--tokens` secrets are
/// compared: `airlock_core::hashing::separated`).
fn digest_of(secret: &str) -> String {
    hex::encode(airlock_core::hashing::separated(&[secret.as_bytes()]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_keeps_the_digest_never_the_secret() {
        let secret = new_secret();
        assert_eq!(secret.len(), 68);
        let token = ManagedToken::new("team-a", Role::Producer, None, &secret, None, "ops");
        let text = token.encode();
        assert!(!text.contains(&secret[4..]), "{text}");
        assert_eq!(ManagedToken::parse(&text), Some(token.clone()));
        assert_eq!(
            token.digest_bytes(),
            Some(airlock_core::hashing::separated(&[secret.as_bytes()]))
        );
        assert_eq!(ManagedToken::parse("{\"name\":\"x\"}"), None);
    }
}
