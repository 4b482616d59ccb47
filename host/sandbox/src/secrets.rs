//! Secrets: values a handler uses without ever holding them.
//!
//! A secret belongs to a queue binding. Its value and its policy — the
//! destinations it may be sent to, whether the guest may read it
//! (`reveal`), whether it is substituted in request bodies as well as
//! headers — are encrypted together with ChaCha20-Poly1305 (an AEAD) under the fleet's
//! [`SecretsKey`] (hosts get it from their environment or a file; Redis
//! never holds it). The queue and secret name are the associated data, so
//! an envelope moved to another queue or name does not open. Anyone who can
//! write to Redis can delete a secret, or replace it with one encrypted under
//! a key they hold, which does not open either; they cannot read a value or
//! widen where it may go.
//!
//! A guest asks for a secret and gets a [`placeholder`]: random text that
//! stands for the value in this run only. The host puts the value in place
//! of the placeholder in outgoing requests to the secret's destinations,
//! and nowhere else (see `http/placeholders.rs`). Only a secret set with
//! `reveal: true` can be read by the guest, and its value is then redacted
//! from the job's logs, output, step records, KV writes, progress and
//! failure reason — a guard against accidents: a handler that encodes a
//! revealed value can still leak it, so `reveal` is trust in the handler.

use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce};
use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

use crate::egress::EgressPattern;

/// Envelope format version.
const VERSION: u8 = 1;

/// The fleet's key for secrets (32 bytes).
#[derive(Clone)]
pub struct SecretsKey(Zeroizing<[u8; 32]>);

impl std::fmt::Debug for SecretsKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretsKey(..)")
    }
}

/// Why a key was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a secrets key is 32 bytes written as 64 hex digits")]
pub struct BadKey;

impl SecretsKey {
    /// A key from 64 hex digits (surrounding whitespace ignored).
    pub fn from_hex(text: &str) -> Result<SecretsKey, BadKey> {
        let bytes = hex::decode(text.trim()).map_err(|_| BadKey)?;
        let bytes: [u8; 32] = bytes.try_into().map_err(|_| BadKey)?;
        Ok(SecretsKey(Zeroizing::new(bytes)))
    }

    /// A fresh random key (the local runner's, for one process).
    pub fn generate() -> SecretsKey {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).expect("the OS random source");
        SecretsKey(Zeroizing::new(bytes))
    }

    fn cipher(&self) -> ChaCha20Poly1305 {
        ChaCha20Poly1305::new(Key::from_slice(&self.0[..]))
    }

    /// Airlock's seal on who enqueued a job: an HMAC-SHA256, under a key
    /// derived from this one, over the queue, the job id, the producer
    /// token's name and the job's name and data (JSON text), 32 hex digits.
    /// The API writes it beside the job's producer; a host shares a warm
    /// instance between jobs of one producer, and counts a job as its
    /// producer's under fairness by producer, only when the seal verifies
    /// (`ProducerSeal::producer_seal_matches`), since anyone who can write
    /// to Redis can write a producer's name onto a job of their own — but
    /// not this seal, and not onto other data than the producer enqueued.
    pub fn producer_seal(
        &self,
        queue: &str,
        id: &str,
        producer: &str,
        name: &str,
        data: &str,
    ) -> String {
        use airlock_core::hashing;
        use hmac::Mac;
        let key = hashing::derive_key(&self.0[..], &[b"airlock-producer-seal-key-v1"]);
        // Length-prefixed, so no two tuples share an input.
        let parts = [queue, id, producer, name, data].map(str::as_bytes);
        hex::encode(&hashing::hmac(&key, &parts).finalize().into_bytes()[..16])
    }
}

impl airlock_core::seal::ProducerSeal for SecretsKey {
    fn producer_seal(
        &self,
        queue: &str,
        id: &str,
        producer: &str,
        name: &str,
        data: &str,
    ) -> String {
        SecretsKey::producer_seal(self, queue, id, producer, name, data)
    }

    fn producer_seal_matches(
        &self,
        seal: &str,
        queue: &str,
        id: &str,
        producer: &str,
        name: &str,
        data: &str,
    ) -> bool {
        use subtle::ConstantTimeEq;
        let want = SecretsKey::producer_seal(self, queue, id, producer, name, data);
        want.len() == seal.len() && bool::from(want.as_bytes().ct_eq(seal.as_bytes()))
    }
}

/// Where a secret may be sent: `scheme://host[:port]` (`*.` for
/// subdomains, as an egress pattern; 300 characters at most, path included),
/// optionally followed by a path prefix
/// (`https://api.sendgrid.com/v3/mail/send`): then only requests whose path
/// is within it, whole segments at a time, get the value
/// ([`crate::url_path`]: a path with a dot segment or another ambiguous
/// spelling is within none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretDestination {
    /// Scheme, host and port.
    pub pattern: EgressPattern,
    /// The path prefix; `None`: any path.
    pub path: Option<String>,
}

impl SecretDestination {
    /// Whether a request to `dest` may carry the secret.
    pub fn matches(&self, dest: &crate::egress::Destination) -> bool {
        self.pattern.matches(dest)
            && self
                .path
                .as_deref()
                .is_none_or(|p| crate::url_path::within(p, &dest.path))
    }
}

impl std::str::FromStr for SecretDestination {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        if text.len() > crate::egress::MAX_PATTERN_LEN {
            return Err(format!(
                "a secret's destination is at most {} characters, its path included",
                crate::egress::MAX_PATTERN_LEN
            ));
        }
        let authority_at = text.find("://").map_or(0, |i| i + 3);
        let (pattern, path) = match text[authority_at..].find('/') {
            Some(slash) => text.split_at(authority_at + slash),
            None => (text, ""),
        };
        let pattern: EgressPattern =
            pattern.parse().map_err(|e: crate::egress::PatternError| {
                format!("{e}, optionally followed by a path prefix such as /v3/mail/send")
            })?;
        let path = if path.is_empty() {
            None
        } else {
            crate::url_path::check_prefix(path)
                .map_err(|e| format!("the path of `{text}`: {e}"))?;
            Some(path.to_string())
        };
        Ok(SecretDestination { pattern, path })
    }
}

impl std::fmt::Display for SecretDestination {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}{}", self.pattern, self.path.as_deref().unwrap_or(""))
    }
}

impl Serialize for SecretDestination {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for SecretDestination {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// What a secret may do, encrypted with its value.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SecretPolicy {
    /// Destinations (`scheme://host[:port]` patterns, each optionally with
    /// a path prefix) whose requests get the value in place of the
    /// placeholder. Requests elsewhere carry the placeholder unchanged.
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<String>))]
    pub allow: Vec<SecretDestination>,
    /// Whether the guest may read the value itself (to sign a payload, say).
    #[serde(default)]
    pub reveal: bool,
    /// Whether the value is also substituted in request bodies (headers
    /// always are).
    #[serde(default)]
    pub in_body: bool,
}

/// A secret as a host holds it during a run.
#[derive(Clone)]
pub struct Secret {
    /// The value.
    pub value: Zeroizing<String>,
    /// Its policy.
    pub policy: SecretPolicy,
    /// How many times it was set (1: once), encrypted with it.
    pub version: u64,
    /// When it was set (ms since the epoch), encrypted with it.
    pub set_at_ms: u64,
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Secret")
            .field("value", &"<hidden>")
            .field("policy", &self.policy)
            .field("version", &self.version)
            .finish()
    }
}

#[derive(Serialize, Deserialize)]
/// What an envelope encrypts.
struct Plaintext {
    value: String,
    /// Absent in envelopes written before versions were kept: 1.
    #[serde(default = "first_version")]
    version: u64,
    /// When it was set (ms), encrypted: what a host compares to refuse an
    /// older envelope written back (absent before: 0).
    #[serde(default)]
    set_at_ms: u64,
    #[serde(flatten)]
    policy: SecretPolicy,
}

fn first_version() -> u64 {
    1
}

/// What Redis holds for one secret: the encrypted value, policy and version
/// (`sealed`, the field's name since the first envelope),
/// and the time of the last change and the version again in the clear
/// (readable without the key, for listings; the encrypted version is the one
/// a host with the key shows).
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Envelope {
    v: u8,
    nonce: String,
    sealed: String,
    updated_at_ms: u64,
    #[serde(default = "first_version")]
    version: u64,
}

/// Why an envelope did not decrypt.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecryptError {
    /// Not an envelope of this format.
    #[error("the stored secret is malformed")]
    Malformed,
    /// Encrypted under another key, for another queue or name, or altered.
    #[error(
        "the stored secret does not open with this host's secrets key (another key, another queue or name, or altered)"
    )]
    Refused,
}

fn associated_data(queue: &str, name: &str) -> Vec<u8> {
    format!("airlock-secret/{VERSION}\0{queue}\0{name}").into_bytes()
}

/// Encrypts `value` and `policy` for secret `name` of `queue` as its first
/// version: the text to store.
pub fn encrypt(
    key: &SecretsKey,
    queue: &str,
    name: &str,
    value: &str,
    policy: &SecretPolicy,
    now_ms: u64,
) -> String {
    encrypt_version(key, queue, name, value, policy, now_ms, 1)
}

/// [`encrypt`], as the secret's `version`-th setting.
pub fn encrypt_version(
    key: &SecretsKey,
    queue: &str,
    name: &str,
    value: &str,
    policy: &SecretPolicy,
    now_ms: u64,
    version: u64,
) -> String {
    let plain = Zeroizing::new(
        serde_json::to_vec(&Plaintext {
            value: value.to_string(),
            version,
            set_at_ms: now_ms,
            policy: policy.clone(),
        })
        .expect("a secret serializes"),
    );
    let mut nonce = [0u8; 12];
    getrandom::fill(&mut nonce).expect("the OS random source");
    let aad = associated_data(queue, name);
    let sealed = key
        .cipher()
        .encrypt(
            Nonce::from_slice(&nonce),
            Payload {
                msg: &plain,
                aad: &aad,
            },
        )
        .expect("sealing cannot fail");
    serde_json::to_string(&Envelope {
        v: VERSION,
        nonce: hex::encode(nonce),
        sealed: hex::encode(sealed),
        updated_at_ms: now_ms,
        version,
    })
    .expect("an envelope serializes")
}

/// Decrypts what [`encrypt`] stored for secret `name` of `queue`.
pub fn decrypt(
    key: &SecretsKey,
    queue: &str,
    name: &str,
    stored: &str,
) -> Result<Secret, DecryptError> {
    let envelope: Envelope = serde_json::from_str(stored).map_err(|_| DecryptError::Malformed)?;
    if envelope.v != VERSION {
        return Err(DecryptError::Malformed);
    }
    let nonce = hex::decode(&envelope.nonce).map_err(|_| DecryptError::Malformed)?;
    if nonce.len() != 12 {
        return Err(DecryptError::Malformed);
    }
    let sealed = hex::decode(&envelope.sealed).map_err(|_| DecryptError::Malformed)?;
    let aad = associated_data(queue, name);
    let plain = Zeroizing::new(
        key.cipher()
            .decrypt(
                Nonce::from_slice(&nonce),
                Payload {
                    msg: &sealed,
                    aad: &aad,
                },
            )
            .map_err(|_| DecryptError::Refused)?,
    );
    let opened: Plaintext = serde_json::from_slice(&plain).map_err(|_| DecryptError::Malformed)?;
    Ok(Secret {
        value: Zeroizing::new(opened.value),
        policy: opened.policy,
        version: opened.version,
        set_at_ms: opened.set_at_ms,
    })
}

/// The newest setting of each secret a binding's runs on this host
/// decrypted (by name, [`Secret::set_at_ms`]): an envelope set earlier than
/// one already used is an old one written back (it decrypts: it was
/// encrypted with the key) and is refused, so a rotated-out value stays out
/// on this host. A host that never decrypted the newer one takes the older.
#[derive(Debug, Default)]
pub struct SecretsSeen {
    newest: std::sync::Mutex<std::collections::HashMap<String, u64>>,
}

impl SecretsSeen {
    /// Whether `secret`, opened as `name`, may be used: not set earlier
    /// than the newest this binding's runs used (which it then becomes).
    pub fn admit(&self, name: &str, secret: &Secret) -> bool {
        let mut newest = self.newest.lock().unwrap_or_else(|p| p.into_inner());
        let seen = newest.entry(name.to_string()).or_insert(0);
        if secret.set_at_ms < *seen {
            return false;
        }
        *seen = secret.set_at_ms;
        true
    }
}

/// When a stored secret last changed (no key needed).
pub fn updated_at_ms(stored: &str) -> Option<u64> {
    serde_json::from_str::<Envelope>(stored)
        .ok()
        .map(|e| e.updated_at_ms)
}

/// A stored secret's version as its envelope says in the clear (no key
/// needed; not authenticated: [`decrypt`] gives the encrypted one).
pub fn clear_version(stored: &str) -> Option<u64> {
    serde_json::from_str::<Envelope>(stored)
        .ok()
        .map(|e| e.version)
}

/// A fresh placeholder: what a guest holds instead of a secret's value.
/// Unguessable, and plain enough to travel in a header, a URL or JSON.
pub fn placeholder() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the OS random source");
    format!("airlock-secret-{}", hex::encode(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> SecretPolicy {
        SecretPolicy {
            allow: vec!["https://api.stripe.com".parse().unwrap()],
            reveal: false,
            in_body: false,
        }
    }

    #[test]
    fn an_encrypted_secret_decrypts_only_for_its_queue_and_name_under_its_key() {
        let key = SecretsKey::generate();
        let stored = encrypt(&key, "payments", "STRIPE_KEY", "sk_live_123", &policy(), 7);
        assert!(!stored.contains("sk_live_123"));
        assert!(
            !stored.contains("stripe.com"),
            "the policy is encrypted too"
        );
        let opened = decrypt(&key, "payments", "STRIPE_KEY", &stored).unwrap();
        assert_eq!(opened.value.as_str(), "sk_live_123");
        assert_eq!(opened.policy, policy());
        assert_eq!(updated_at_ms(&stored), Some(7));
        assert_eq!(
            decrypt(&key, "other", "STRIPE_KEY", &stored).unwrap_err(),
            DecryptError::Refused
        );
        assert_eq!(
            decrypt(&key, "payments", "OTHER", &stored).unwrap_err(),
            DecryptError::Refused
        );
        assert_eq!(
            decrypt(&SecretsKey::generate(), "payments", "STRIPE_KEY", &stored).unwrap_err(),
            DecryptError::Refused
        );
        let mut tampered: serde_json::Value = serde_json::from_str(&stored).unwrap();
        let sealed = tampered["sealed"].as_str().unwrap().to_string();
        let flipped = format!(
            "{}{}",
            if sealed.starts_with('0') { "1" } else { "0" },
            &sealed[1..]
        );
        tampered["sealed"] = flipped.into();
        assert_eq!(
            decrypt(&key, "payments", "STRIPE_KEY", &tampered.to_string()).unwrap_err(),
            DecryptError::Refused
        );
        assert_eq!(
            decrypt(&key, "payments", "STRIPE_KEY", "{}").unwrap_err(),
            DecryptError::Malformed
        );
    }

    #[test]
    fn keys_are_64_hex_digits() {
        assert!(SecretsKey::from_hex(&"ab".repeat(32)).is_ok());
        assert!(SecretsKey::from_hex("abcd").is_err());
        assert!(SecretsKey::from_hex(&"zz".repeat(32)).is_err());
        assert_ne!(placeholder(), placeholder());
    }
}
