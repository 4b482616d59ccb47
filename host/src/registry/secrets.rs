//! A queue's secrets, as the admin API sees them: set (encrypted here, with
//! the fleet's secrets key), list (names, policies, update times — never a
//! value), delete. Hosts read them per run (`worker/services.rs`) and the
//! sandbox decrypts them (`sandbox::secrets`).
//!
//! Redis holds one hash per queue, `P:{airlock}:secrets:QUEUE`, name →
//! encrypted envelope. A secret's policy (where it may be sent, `reveal`,
//! `inBody`) is encrypted with its value rather than kept in the binding, so
//! a Redis writer can delete a secret but cannot widen where it goes.

use redis::AsyncCommands;
use serde::{Deserialize, Serialize};

use super::{Registry, RegistryError, invalid};
use crate::sandbox::secrets::{self, SecretDestination, SecretPolicy, SecretsKey};
use airlock_core::clock::now_ms;

/// Longest secret name.
pub const MAX_SECRET_NAME: usize = 128;
/// Longest secret value, in characters.
pub const MAX_SECRET_CHARS: usize = 16 << 10;
/// Most secrets per queue.
pub const MAX_SECRETS: usize = 100;
/// Most destinations per secret.
pub const MAX_SECRET_DESTINATIONS: usize = 20;

/// A secret to store.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SecretSpec {
    /// The value (at most 16,384 characters). Never returned by any API.
    #[schema(min_length = 1, max_length = 16384)]
    pub value: String,
    /// Destinations (`scheme://host[:port]`, `*.` for subdomains, each
    /// optionally followed by a path prefix such as `/v3/mail/send`) whose
    /// requests get the value in place of its placeholder; at least one.
    /// With a path, only requests within it (whole segments; a path with a
    /// `.` or `..` segment, also percent-encoded, an encoded `/` or `\`, a
    /// `\`, a `;` or a NUL is within none) get the value.
    #[schema(min_items = 1, max_items = 20, value_type = Vec<SecretDestinationText>)]
    pub allow: Vec<SecretDestination>,
    /// Whether the handler may read the value itself
    /// (`config.reveal-secret`); it is then redacted from the job's logs,
    /// output, step records and failure reason.
    #[serde(default)]
    pub reveal: bool,
    /// Whether the value replaces its placeholder in request bodies too
    /// (headers always).
    #[serde(default)]
    pub in_body: bool,
}

/// Where a secret may be sent, `scheme://host[:port][/path-prefix]` (schema
/// only; the syntax `sandbox::secrets::SecretDestination` parses).
#[derive(utoipa::ToSchema)]
#[schema(
    pattern = r"^https?://(\*\.)?[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*(:(\*|[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?((/([A-Za-z0-9_~!$&'()*+,=:@-]|\.[A-Za-z0-9_~!$&'()*+,=:@-]|\.\.[A-Za-z0-9._~!$&'()*+,=:@-])[A-Za-z0-9._~!$&'()*+,=:@-]*|/)+)?$",
    max_length = 300
)]
pub struct SecretDestinationText(#[allow(dead_code)] String);

/// What a listing shows of one secret.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecretView {
    /// The secret's name.
    pub name: String,
    /// Its destinations.
    pub allow: Vec<String>,
    /// Whether the handler may read it.
    pub reveal: bool,
    /// Whether it is substituted in request bodies.
    pub in_body: bool,
    /// When it was last set (ms since the epoch).
    pub updated_at_ms: u64,
    /// How many times it was set (1: once). Every host uses the newest
    /// from its next run on: hosts read a run's secrets from Redis when
    /// the run asks for them.
    pub version: u64,
    /// False when the stored envelope does not open with this host's key
    /// (set under another key, or altered): runs asking for it fail.
    pub readable: bool,
}

/// Checks a secret name (`names::SECRET_PATTERN`): what a guest may ask
/// for.
pub fn check_name(name: &str) -> Result<(), RegistryError> {
    if name.is_empty()
        || name.len() > MAX_SECRET_NAME
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b))
    {
        return Err(invalid(
            "name",
            format!("must be 1 to {MAX_SECRET_NAME} letters, digits, `_`, `.` or `-`"),
        ));
    }
    Ok(())
}

impl SecretSpec {
    fn validate(&self) -> Result<(), RegistryError> {
        if self.value.is_empty() || self.value.chars().count() > MAX_SECRET_CHARS {
            return Err(invalid(
                "value",
                format!("must be 1 to {MAX_SECRET_CHARS} characters"),
            ));
        }
        if self.allow.is_empty() || self.allow.len() > MAX_SECRET_DESTINATIONS {
            return Err(invalid(
                "allow",
                format!(
                    "must list 1 to {MAX_SECRET_DESTINATIONS} destinations the secret may be sent to"
                ),
            ));
        }
        Ok(())
    }
}

impl Registry {
    /// Encrypts and stores secret `name` of `queue` (replacing it).
    pub async fn set_secret(
        &self,
        key: &SecretsKey,
        queue: &str,
        name: &str,
        spec: &SecretSpec,
    ) -> Result<SecretView, RegistryError> {
        check_name(name)?;
        spec.validate()?;
        let policy = SecretPolicy {
            allow: spec.allow.clone(),
            reveal: spec.reveal,
            in_body: spec.in_body,
        };
        let secrets_key = self.store().keys().secrets(queue);
        let mut conn = self.store().conn();
        let count: usize = conn.hlen(&secrets_key).await?;
        let current: Option<String> = conn.hget(&secrets_key, name).await?;
        if current.is_none() && count >= MAX_SECRETS {
            return Err(invalid(
                "name",
                format!("queue `{queue}` already has {MAX_SECRETS} secrets; delete one first"),
            ));
        }
        // The next version after the one stored: the encrypted one when it
        // decrypts, else what the envelope says (a secret set under another
        // key is replaced, and counts on from there).
        let version = current.as_deref().map_or(0, |stored| {
            secrets::decrypt(key, queue, name, stored)
                .map(|s| s.version)
                .ok()
                .or_else(|| secrets::clear_version(stored))
                .unwrap_or(0)
        }) + 1;
        let now = now_ms();
        let envelope =
            secrets::encrypt_version(key, queue, name, &spec.value, &policy, now, version);
        let _: () = conn.hset(&secrets_key, name, envelope).await?;
        Ok(view(name, Some(&policy), now, version))
    }

    /// The secrets of `queue`, by name: policies and update times only.
    /// `key` opens the policies; without it (or for an envelope that does
    /// not open) the entry is listed as unreadable.
    pub async fn secrets(
        &self,
        key: Option<&SecretsKey>,
        queue: &str,
    ) -> Result<Vec<SecretView>, RegistryError> {
        let mut conn = self.store().conn();
        let stored: std::collections::BTreeMap<String, String> =
            conn.hgetall(self.store().keys().secrets(queue)).await?;
        Ok(stored
            .iter()
            .map(|(name, envelope)| {
                let opened = key.and_then(|k| secrets::decrypt(k, queue, name, envelope).ok());
                let updated = secrets::updated_at_ms(envelope).unwrap_or(0);
                let version = match &opened {
                    Some(secret) => secret.version,
                    None => secrets::clear_version(envelope).unwrap_or(0),
                };
                view(name, opened.as_ref().map(|s| &s.policy), updated, version)
            })
            .collect())
    }

    /// Deletes secret `name` of `queue`; whether it existed.
    pub async fn delete_secret(&self, queue: &str, name: &str) -> Result<bool, RegistryError> {
        check_name(name)?;
        let mut conn = self.store().conn();
        let removed: usize = conn.hdel(self.store().keys().secrets(queue), name).await?;
        Ok(removed > 0)
    }
}

fn view(name: &str, policy: Option<&SecretPolicy>, updated_at_ms: u64, version: u64) -> SecretView {
    SecretView {
        name: name.to_string(),
        allow: policy
            .map(|p| p.allow.iter().map(|a| a.to_string()).collect())
            .unwrap_or_default(),
        reveal: policy.is_some_and(|p| p.reveal),
        in_body: policy.is_some_and(|p| p.in_body),
        updated_at_ms,
        version,
        readable: policy.is_some(),
    }
}
