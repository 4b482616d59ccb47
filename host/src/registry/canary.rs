//! A queue's versions beside its handler's current one: a canary
//! ([`Canary`], a share of new jobs to a candidate) and a queue's own version
//! (`Binding::version`, set by a per-queue promote or rollback).

use serde::{Deserialize, Serialize};

/// A canary (`canary`): `percent` of the queue's new jobs run a candidate
/// version of its handler instead of the current one. Which jobs is
/// decided by a hash of the job's queue and id, so a job keeps its side
/// across retries; a job stays on the version its first run pinned, as
/// every job does. `GET /v1/stats?queue=` reports both versions' runs,
/// wall time and fuel side by side (`versions`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Canary {
    /// The candidate: the digest of an uploaded version of the binding's
    /// handler.
    #[schema(pattern = "^[0-9a-f]{64}$")]
    pub digest: String,
    /// The share of new jobs that run it, 1 to 99.
    #[serde(deserialize_with = "airlock_core::int::one")]
    #[schema(minimum = 1, maximum = 99)]
    pub percent: u8,
}

impl Canary {
    /// Whether job `id` of `queue` runs the candidate: its hash's place
    /// among 10,000 is under `percent` hundredths.
    pub fn takes(&self, queue: &str, id: &str) -> bool {
        let hash = airlock_core::hashing::separated(&[queue.as_bytes(), id.as_bytes()]);
        let n = u64::from_be_bytes(hash[..8].try_into().expect("8 bytes"));
        n % 10_000 < u64::from(self.percent) * 100
    }
}
