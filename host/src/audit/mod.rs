//! The audit log: every change made through the API — deploys, bindings,
//! rollbacks, canaries, migrations, secrets (never a value), schedules,
//! tokens, retries, cleans, drains, obliterations, host drains — with who
//! made it (the token's name and role), what, on what, when and from where.
//!
//! ## What is where
//! | key | what | written by |
//! |---|---|---|
//! | `P:{airlock}:audit` (stream) | one entry per change: field `e`, the entry's JSON ([`AuditEntry`]), and `s`, its seal (hex HMAC) | [`Audit::record`], after the change succeeded |
//! | `P:{airlock}:audit-seq` (string) | the last entry's number (`INCR`) | [`Audit::record`] |
//!
//! ## Why an entry cannot be forged or altered unnoticed
//! Anyone who can write to Redis can write to the stream. So each entry is
//! sealed: an HMAC under a key derived from the fleet key for this purpose
//! alone, over the entry's text, which holds its number. A reader sees
//! each entry's `sealed`: an entry added or altered by hand does not
//! verify. Numbers are consecutive, so an entry deleted from the middle
//! shows as a gap ([`AuditListing::gaps`]) between the kept ones around it
//! (trimming removes only the oldest, which leaves no gap). A host without
//! the fleet key writes entries unsealed, and every entry reads as not
//! sealed there.
//!
//! ## Bounds
//! At each write the stream is trimmed to about [`MAX_ENTRIES`] entries
//! and to the last [`MAX_AGE`] (by Redis's clock: the stream's ids).
//!
//! ## Crash window
//! An entry is written after its change succeeded: a host that dies
//! between the two loses the entry, and the change stands. A failed write
//! is logged and counted ([`Audit::failed`], `airlock_audit_write_failures`
//! on `/metrics`); it never fails or undoes the change.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use hmac::Mac;
use redis::AsyncCommands;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::api::auth::{Caller, Role};
use crate::store::Store;
use airlock_core::clock::now_ms;

/// What the derived key is for.
pub const PURPOSE: &str = "audit-log";
/// About how many entries are kept.
pub const MAX_ENTRIES: usize = 100_000;
/// How long an entry is kept: 90 days.
pub const MAX_AGE: Duration = Duration::from_secs(90 * 24 * 60 * 60);
/// Most entries one listing reads (newest first) before filtering.
pub const MAX_SCANNED: usize = 10_000;

/// One change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuditEntry {
    /// Its number: consecutive across the fleet.
    pub seq: u64,
    /// When, ms since the epoch (the writing host's clock).
    pub at: u64,
    /// The token's name.
    pub who: String,
    /// Its role.
    pub role: Role,
    /// What was done, e.g. `queue.bind`, `handler.deploy`, `secret.set`.
    pub action: String,
    /// What it was done to: a queue, a handler, a token, a host, a job
    /// (`<queue>:<id>`).
    pub target: String,
    /// The caller's address, as the host saw it (a proxy's, behind one).
    pub from: Option<String>,
    /// What the change was, in brief (never a secret's value).
    #[schema(value_type = Object)]
    pub details: Value,
}

/// What to list.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Only this token's changes.
    pub who: Option<String>,
    /// Only actions starting with this (`queue.`, `secret.set`).
    pub action: Option<String>,
    /// Only changes to this.
    pub target: Option<String>,
    /// Not before, ms.
    pub since: Option<u64>,
    /// Not after, ms.
    pub until: Option<u64>,
    /// At most this many, newest first.
    pub limit: usize,
}

/// An entry as listed.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListedEntry {
    /// The entry.
    #[serde(flatten)]
    pub entry: AuditEntry,
    /// Whether its seal verifies under the fleet key (`false` for an
    /// entry written or altered by hand, or on a host without the key).
    pub sealed: bool,
}

/// A run of missing numbers: entries removed from the middle of the log.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuditGap {
    /// The first missing number.
    pub from_seq: u64,
    /// The last missing number.
    pub to_seq: u64,
}

/// A listing.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuditListing {
    /// The entries that match, newest first.
    pub entries: Vec<ListedEntry>,
    /// Numbers missing among the entries read (whether they match or not).
    pub gaps: Vec<AuditGap>,
    /// Entries whose text is not an entry at all (written by hand).
    pub unreadable: usize,
}

/// The fleet's audit log on one Redis.
pub struct Audit {
    store: Store,
    /// The seal key (derived from the fleet key); `None`: unsealed.
    key: Option<[u8; 32]>,
    failed: AtomicU64,
}

impl std::fmt::Debug for Audit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Audit").finish_non_exhaustive()
    }
}

impl Audit {
    /// The log on `store`, sealed under `key` (derived for [`PURPOSE`]).
    pub fn new(store: Store, key: Option<[u8; 32]>) -> Audit {
        Audit {
            store,
            key,
            failed: AtomicU64::new(0),
        }
    }

    /// The HMAC over an entry's text, on a host with the key.
    fn tag(&self, text: &str) -> Option<airlock_core::hashing::Hmac> {
        let key = self.key.as_ref()?;
        Some(airlock_core::hashing::hmac(
            key,
            &[PURPOSE.as_bytes(), text.as_bytes()],
        ))
    }

    fn seal(&self, text: &str) -> Option<String> {
        Some(hex::encode(self.tag(text)?.finalize().into_bytes()))
    }

    fn verifies(&self, text: &str, seal: &str) -> bool {
        match (self.tag(text), hex::decode(seal)) {
            (Some(tag), Ok(seal)) => tag.verify_slice(&seal).is_ok(),
            _ => false,
        }
    }

    /// Records that `caller` did `action` to `target` (`details`: what,
    /// never a secret's value). A failure is logged and counted, never
    /// returned: the change it records was made.
    pub async fn record(&self, caller: &Caller, action: &str, target: &str, details: Value) {
        if let Err(e) = self.write(caller, action, target, details).await {
            self.failed.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(action, target, error = %e, "write an audit entry");
        }
    }

    async fn write(
        &self,
        caller: &Caller,
        action: &str,
        target: &str,
        details: Value,
    ) -> redis::RedisResult<()> {
        let keys = self.store.keys();
        let mut conn = self.store.conn();
        let seq: u64 = conn.incr(keys.audit_seq(), 1).await?;
        let entry = AuditEntry {
            seq,
            at: now_ms(),
            who: caller.name.clone(),
            role: caller.role,
            action: action.to_string(),
            target: target.to_string(),
            from: caller.from.clone(),
            details,
        };
        let text = serde_json::to_string(&entry).expect("an audit entry serializes");
        let mut fields = vec![("e", text.clone())];
        if let Some(seal) = self.seal(&text) {
            fields.push(("s", seal));
        }
        let oldest = now_ms().saturating_sub(MAX_AGE.as_millis() as u64);
        let stream = keys.audit();
        let _: () = redis::pipe()
            .cmd("XADD")
            .arg(&stream)
            .arg("MAXLEN")
            .arg("~")
            .arg(MAX_ENTRIES)
            .arg("*")
            .arg(&fields)
            .ignore()
            .cmd("XTRIM")
            .arg(&stream)
            .arg("MINID")
            .arg("~")
            .arg(oldest)
            .ignore()
            .query_async(&mut conn)
            .await?;
        Ok(())
    }

    /// The entries that match `filter`, newest first, from the newest
    /// [`MAX_SCANNED`] in its time range; with the gaps among those read.
    pub async fn list(&self, filter: &Filter) -> redis::RedisResult<AuditListing> {
        let end = filter
            .until
            .map_or("+".to_string(), |ms| format!("{ms}-18446744073709551615"));
        let start = filter.since.map_or("-".to_string(), |ms| format!("{ms}-0"));
        let read: Vec<(String, Vec<(String, String)>)> = self
            .store
            .conn()
            .xrevrange_count(self.store.keys().audit(), end, start, MAX_SCANNED)
            .await
            .map(|reply: redis::streams::StreamRangeReply| {
                reply
                    .ids
                    .into_iter()
                    .map(|id| {
                        let fields = id
                            .map
                            .into_iter()
                            .filter_map(|(k, v)| {
                                Some((k, redis::from_redis_value::<String>(v).ok()?))
                            })
                            .collect();
                        (id.id, fields)
                    })
                    .collect()
            })?;
        let mut listing = AuditListing {
            entries: Vec::new(),
            gaps: Vec::new(),
            unreadable: 0,
        };
        let mut previous: Option<u64> = None;
        for (_, fields) in read {
            let field = |name: &str| {
                fields
                    .iter()
                    .find(|(k, _)| k == name)
                    .map(|(_, v)| v.as_str())
            };
            let Some(entry) = field("e").and_then(|t| serde_json::from_str::<AuditEntry>(t).ok())
            else {
                listing.unreadable += 1;
                continue;
            };
            if let Some(newer) = previous
                && newer > entry.seq + 1
            {
                listing.gaps.push(AuditGap {
                    from_seq: entry.seq + 1,
                    to_seq: newer - 1,
                });
            }
            previous = Some(entry.seq);
            let sealed = match (field("e"), field("s")) {
                (Some(text), Some(seal)) => self.verifies(text, seal),
                _ => false,
            };
            if filter.matches(&entry) && listing.entries.len() < filter.limit {
                listing.entries.push(ListedEntry { entry, sealed });
            }
        }
        Ok(listing)
    }

    /// Entries this host failed to write since it started.
    pub fn failed(&self) -> u64 {
        self.failed.load(Ordering::Relaxed)
    }
}

impl Filter {
    fn matches(&self, entry: &AuditEntry) -> bool {
        self.who.as_ref().is_none_or(|w| *w == entry.who)
            && self
                .action
                .as_ref()
                .is_none_or(|a| entry.action.starts_with(a.as_str()))
            && self.target.as_ref().is_none_or(|t| *t == entry.target)
    }
}
