//! Every hash and HMAC Airlock computes over several parts, in one place,
//! so no two inputs can share a framing by accident. Each framing here is
//! written into names and seals already stored in Redis (key names, dedup
//! ids, registry and artifact seals): changing one orphans what it named,
//! so a new use picks one of these and none is changed in place.
//!
//! - [`sha256_hex`]: SHA-256 of bytes, in hex (a component's digest).
//! - [`separated`]: SHA-256 of parts with a NUL between them (the
//!   idempotency dedup id, a canary's share, `cancelOn`'s index, a key's
//!   slot; of one part, plain SHA-256: an API token's digest, the engine's
//!   artifact key, an artifact key's public id).
//! - [`terminated`]: SHA-256 of parts each ended by a NUL (the waits'
//!   index and token keys, an event's record).
//! - [`Hmac`] / [`hmac`]: HMAC-SHA256 of parts, each prefixed by its
//!   length (registry seals, artifact seals, producer seals).
//! - [`derive_key`]: a key for one purpose, HMAC-SHA256 of a label under
//!   the fleet's secret, so no two purposes share a key.

use hmac::Mac;
use sha2::{Digest, Sha256};

/// HMAC-SHA256, ready for more input.
pub type Hmac = hmac::Hmac<Sha256>;

/// SHA-256 of `bytes`, in hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// SHA-256 of `parts` with a NUL between each two.
pub fn separated(parts: &[&[u8]]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            hasher.update([0]);
        }
        hasher.update(part);
    }
    hasher.finalize().into()
}

/// SHA-256 of `parts`, each ended by a NUL, in hex.
pub fn terminated(parts: &[&str]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part.as_bytes());
        hasher.update([0]);
    }
    hex::encode(hasher.finalize())
}

/// HMAC-SHA256 under `key` of `parts`, each prefixed by its length (eight
/// bytes, little-endian), so no two lists of parts share an input; more
/// may follow with `update`.
pub fn hmac(key: &[u8], parts: &[&[u8]]) -> Hmac {
    let mut mac = Hmac::new_from_slice(key).expect("HMAC takes keys of any length");
    for part in parts {
        mac.update(&(part.len() as u64).to_le_bytes());
        mac.update(part);
    }
    mac
}

/// The key for the purpose `label` names, derived from `secret`:
/// HMAC-SHA256 of the label under the secret.
pub fn derive_key(secret: &[u8], label: &[&[u8]]) -> [u8; 32] {
    let mut mac = Hmac::new_from_slice(secret).expect("HMAC takes keys of any length");
    for piece in label {
        mac.update(piece);
    }
    mac.finalize().into_bytes().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The framings are fixed: stored names and seals depend on them.
    #[test]
    fn each_framing_is_what_was_stored_before() {
        let sep = separated(&[b"a", b"b"]);
        assert_eq!(sep.as_slice(), Sha256::digest(b"a\0b").as_slice());
        assert_eq!(terminated(&["a", "b"]), sha256_hex(b"a\0b\0"));
        let mut plain = Hmac::new_from_slice(b"k").unwrap();
        plain.update(&1u64.to_le_bytes());
        plain.update(b"a");
        plain.update(&2u64.to_le_bytes());
        plain.update(b"bc");
        assert_eq!(
            hmac(b"k", &[b"a", b"bc"]).finalize().into_bytes(),
            plain.finalize().into_bytes()
        );
        let mut derived = Hmac::new_from_slice(b"s").unwrap();
        derived.update(b"label\0purpose");
        assert_eq!(
            derive_key(b"s", &[b"label\0", b"purpose"]),
            <[u8; 32]>::from(derived.finalize().into_bytes())
        );
    }
}
