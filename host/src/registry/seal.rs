//! Registry entries sealed with the fleet key, so a Redis writer cannot
//! decide what runs.
//!
//! Two entries decide what a job runs and what it may reach: a queue's
//! binding (handler, limits, egress rules, flow control) and a handler's
//! current digest (which uploaded component runs). Anyone who can write to
//! Redis can write either. So the host that writes one seals it: an
//! HMAC-SHA256, under a key derived from the fleet's artifact key
//! (`Sandbox::fleet_derived_key`), over the entry's kind, name, version and
//! text. The version is the writer's clock in ms (one past the stored
//! version if that is later), so it grows with every write of the entry,
//! also after a delete. The seal is stored as `VERSION:HEX` — a binding's in
//! `P:{airlock}:binding-seals` (queue → seal), a handler's in its own hash
//! (field `seal`, beside `digest`).
//!
//! A host with the key reads an entry only through its seal
//! ([`Verified`]):
//! - a seal that verifies, of a version at least the newest this host has
//!   verified for the entry, is taken (and remembered);
//! - anything else is refused — no seal (written by another client, or
//!   before seals existed), a forged or altered one, or an older version
//!   than one already seen (a replayed old entry) — logged once per
//!   refused seal and counted (`airlock_registry_refused`); the host goes
//!   on with the last version it verified, or without the entry when it
//!   verified none.
//!
//! A replay is caught only by a host that saw the newer version: a host
//! started after a writer replaced an entry with an older sealed copy
//! takes the copy. A host remembers an entry's newest version also after
//! the entry is deleted, so deleting it first does not open the way to a
//! replay; an entry bound again later carries a later version anyway. A
//! writer can still delete an entry (a queue unbound, a handler gone), as
//! it can delete jobs. Entries written before seals
//! existed are refused by hosts with the key: bind and deploy again
//! (OPERATIONS.md says so). A host without the fleet key verifies nothing
//! and reads entries as they are, as before; it says so when it starts.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use hmac::Mac;

/// What the derived key is for (see `ArtifactKey::derive`).
pub const PURPOSE: &str = "registry-entries";

/// The kinds of sealed entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A queue's binding (its JSON).
    Binding,
    /// A handler's current digest.
    Handler,
    /// A managed API token's record (`crate::access`).
    ApiToken,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Binding => "binding",
            Kind::Handler => "handler",
            Kind::ApiToken => "api-token",
        }
    }
}

/// Seals and checks registry entries; remembers the newest verified version
/// of each entry, and what it refused.
pub struct Verified {
    key: [u8; 32],
    /// (kind, name) → (version, text) of the newest entry verified.
    newest: Mutex<HashMap<(Kind, String), (u64, String)>>,
    /// (kind, name) → the seal last refused since the entry last verified
    /// (a refusal is logged and counted once per seal).
    refused_seen: Mutex<HashMap<(Kind, String), String>>,
    /// Distinct refusals since the host started.
    refused: AtomicU64,
}

impl std::fmt::Debug for Verified {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verified").finish_non_exhaustive()
    }
}

impl Verified {
    /// Entries sealed under `key` (derived for [`PURPOSE`]).
    pub fn new(key: [u8; 32]) -> Self {
        Verified {
            key,
            newest: Mutex::default(),
            refused_seen: Mutex::default(),
            refused: AtomicU64::new(0),
        }
    }

    fn tag(&self, kind: Kind, name: &str, version: u64, text: &str) -> airlock_core::hashing::Hmac {
        let version = version.to_string();
        // Length-prefixed, so no two entries share an input.
        let parts = [kind.as_str(), name, &version, text].map(str::as_bytes);
        airlock_core::hashing::hmac(&self.key, &parts)
    }

    /// The seal of `text` as version `version` of entry (`kind`, `name`):
    /// `VERSION:HEX`.
    pub fn seal(&self, kind: Kind, name: &str, version: u64, text: &str) -> String {
        let tag = self.tag(kind, name, version, text).finalize().into_bytes();
        format!("{version}:{}", hex::encode(tag))
    }

    /// The version a stored seal names (0 when there is none to read): the
    /// next write seals a later one. Not authenticated by itself.
    pub fn version_of(seal: Option<&str>) -> u64 {
        seal.and_then(|s| s.split_once(':'))
            .and_then(|(v, _)| v.parse().ok())
            .unwrap_or(0)
    }

    /// The entry (`kind`, `name`) as this host may use it, given what Redis
    /// holds (`text` and its `seal`): the stored text when its seal
    /// verifies and is not older than the newest verified; otherwise the
    /// newest verified text (or `None`), the refusal logged and counted.
    pub fn check(&self, kind: Kind, name: &str, text: &str, seal: Option<&str>) -> Option<String> {
        let id = (kind, name.to_string());
        let mut newest = self.newest.lock().unwrap_or_else(|p| p.into_inner());
        let known = newest.get(&id).cloned();
        let why = match seal.and_then(|s| s.split_once(':')) {
            None => "it carries no seal",
            Some((version, tag)) => match (version.parse::<u64>(), hex::decode(tag)) {
                (Ok(version), Ok(tag))
                    if self
                        .tag(kind, name, version, text)
                        .verify_slice(&tag)
                        .is_ok() =>
                {
                    match &known {
                        Some((seen, _)) if version < *seen => {
                            "it is an older version than one this host has seen (replayed)"
                        }
                        _ => {
                            self.refused_seen
                                .lock()
                                .unwrap_or_else(|p| p.into_inner())
                                .remove(&id);
                            newest.insert(id, (version, text.to_string()));
                            return Some(text.to_string());
                        }
                    }
                }
                _ => "its seal does not verify under the fleet key",
            },
        };
        drop(newest);
        let shown = seal.unwrap_or("").to_string();
        let mut seen = self.refused_seen.lock().unwrap_or_else(|p| p.into_inner());
        if seen.get(&id) != Some(&shown) {
            seen.insert(id, shown);
            self.refused.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(
                kind = kind.as_str(),
                name,
                keeping = if known.is_some() {
                    "the last verified version"
                } else {
                    "nothing"
                },
                "registry entry refused: {why}"
            );
        }
        known.map(|(_, text)| text)
    }

    /// Distinct entries refused since the host started.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forged_unsealed_and_replayed_entries_are_refused() {
        let v = Verified::new([7; 32]);
        let one = v.seal(Kind::Binding, "mail", 1, "{\"a\":1}");
        assert_eq!(
            v.check(Kind::Binding, "mail", "{\"a\":1}", Some(&one))
                .as_deref(),
            Some("{\"a\":1}")
        );
        // Altered text, no seal, another key, another name or kind.
        assert_eq!(
            v.check(Kind::Binding, "mail", "{\"a\":2}", Some(&one))
                .as_deref(),
            Some("{\"a\":1}")
        );
        assert_eq!(
            v.check(Kind::Binding, "mail", "{\"a\":2}", None).as_deref(),
            Some("{\"a\":1}")
        );
        let other = Verified::new([8; 32]).seal(Kind::Binding, "mail", 2, "{\"a\":2}");
        assert_eq!(
            v.check(Kind::Binding, "mail", "{\"a\":2}", Some(&other))
                .as_deref(),
            Some("{\"a\":1}")
        );
        assert_eq!(v.check(Kind::Binding, "web", "{\"a\":1}", Some(&one)), None);
        assert_eq!(
            v.check(Kind::Handler, "mail", "{\"a\":1}", Some(&one)),
            None
        );
        // A newer version is taken; the older one is then a replay.
        let two = v.seal(Kind::Binding, "mail", 2, "{\"a\":2}");
        assert_eq!(
            v.check(Kind::Binding, "mail", "{\"a\":2}", Some(&two))
                .as_deref(),
            Some("{\"a\":2}")
        );
        assert_eq!(
            v.check(Kind::Binding, "mail", "{\"a\":1}", Some(&one))
                .as_deref(),
            Some("{\"a\":2}")
        );
        assert_eq!(v.refused(), 6);
        // Refusing the same text again is not counted again.
        v.check(Kind::Binding, "mail", "{\"a\":1}", Some(&one));
        assert_eq!(v.refused(), 6);
        assert_eq!(Verified::version_of(Some(&two)), 2);
        assert_eq!(Verified::version_of(None), 0);
    }
}
