//! Per-key concurrency (a binding's `keyConcurrency`): at most `limit`
//! jobs of one key — the value at a path into the job's data, a customer
//! id say — run at once across the fleet, and a key with a deep backlog
//! does not hold up the jobs of the others. A `singleton` key's slot
//! (limit 1) and a tenant's slots under `fairness` (`gate::fairness`,
//! the tenant's share as the limit) are slots of the same kind, under
//! hashes of their own ([`KeySlot::singleton`], [`KeySlot::tenant`]).
//!
//! **Slots are leases.** A key's slots are a sorted set of job ids scored
//! by lease expiry (`<prefix>:<queue>:airlock:kc:<key hash>:slots`). A run
//! takes a slot before its guest starts ([`KeyLimits::acquire`])
//! and renews it while it runs; it gives it back when the job finishes,
//! fails, sleeps or is put back ([`KeyLimits::release`]). The lease is the
//! worker lock duration. An expired lease is dropped by the next script
//! that sweeps its key: a take that finds the key full, a release that
//! finds jobs in the key's line, and every parking, refill and
//! reservation sweep it; a take that finds room or its own live lease,
//! and a release with an empty line, take the short way without sweeping
//! (see `state/lua/key_ops.lua`).
//!
//! **Over the limit, a job waits in its key's line**: the worker parks it
//! as BullMQ-delayed (for [`PARK_MS`], a safety net) and appends its id to
//! the key's list (`…:kc:<key hash>:line`, oldest first; keys with a
//! non-empty line are in `…:kc:lines`). Whenever a slot frees, the same
//! script reserves it for the head of the line (a lease, like a running
//! job's) and answers the id ([`Released`]), which the host then promotes
//! (BullMQ's `promote`, by the queue module: this one owns Airlock's keys
//! only): the job goes to the wait list and is run when a worker takes
//! it. The wait list so holds at most `limit` jobs of each key that got
//! that far, so a new key's first job waits behind at most the others'
//! released jobs — round-robin between keys — plus jobs no worker has
//! looked at yet. A job's parking begins in the same script that finds
//! its key full (`…:kc:<key hash>:parking`, scored by time) and ends when
//! it joins the line. A line may hold an id twice (a job parked, woken by
//! its safety net and parked again); a reservation skips ids that are not
//! parked.
//!
//! A job that completed or failed keeps its slots until BullMQ has
//! recorded its end (`gate::recorded`). At enqueue through Airlock
//! (`gate::enqueue`), a ready job whose key has room reserves a slot
//! before BullMQ's add (`enqueue:<token>`), handed over to the job after
//! it.
//!
//! Crash windows (the same for singleton and tenant slots):
//! - A host that dies holding a slot: once the fleet knows it dead, a
//!   live host gives the slot back, refilling the key's line, and only
//!   then moves the job back to waiting (`worker::recovery`, through
//!   `gate::admission::release_slots_of`; a tenant's line is refilled by
//!   `gate::fairness`' next refresh, which knows the share). Until that
//!   move the job's lock is the dead worker's, so it runs nowhere; taken
//!   again, it takes a slot like any job. What recovery misses (see
//!   `worker::recovery`) is left to the lease: it runs out, like the job's
//!   lock, within one lock duration of the death, and BullMQ's stalled
//!   check puts the job back once its lock has; a job so recovered while
//!   its lease is still live finds it (its id) and keeps the slot. Either
//!   way a crash never lets a key run more than its limit.
//! - A host that dies between parking a job (BullMQ's `moveToDelayed`)
//!   and its joining the line: a parking that began more than a lease ago
//!   is put in the line by the next sweep.
//! - A host that dies between a reservation for the head of a line and
//!   its promote: the job is parked holding a reserved slot; when that
//!   lease expires, the sweep finds the job still delayed and puts it back
//!   at the head of its line.
//! - Releases a crash swallowed: each host's pump
//!   ([`KeyLimits::fill_lines`], `gate::pump`) refills every non-empty
//!   line once per half lease (a tenant's line: `gate::fairness`'
//!   refresh).
//! - A host that dies between BullMQ's recorded end of a job and the
//!   release: the job is finished, so no recovery moves it; a take, or a
//!   parking, release or refill with jobs in line, that finds the key full
//!   first drops holders that have finished (`finishedOn`) or are gone;
//!   else the lease runs out.
//! - A host that dies between an enqueue's reservation and BullMQ's add:
//!   the reservation expires with its lease. Between the add and the
//!   hand-over: the job, when it starts, takes a free slot, or, with its
//!   key full, the place of a reservation not handed over (one reservation
//!   is one slot either way); a reservation left over expires with its
//!   lease, as does, at the latest, one whose job is cancelled or removed
//!   before it starts.
//! - [`PARK_MS`] is the last safety net: a parked job no script knows of
//!   wakes then and is gated again.
//!
//! Cost per governed job: its take and its release are operations of the
//! host's batches (`state::key_batches`: one script call per queue for
//! whatever the host's jobs asked meanwhile, so under load a loop turn of a
//! shared call each); one lease renewal per third of a lease it runs; a
//! job that has to wait, one more operation to park (plus BullMQ's
//! `moveToDelayed`) and two round trips to promote it (read it, promote
//! it). An enqueue request makes one reservation call and one hand-over
//! call for all its jobs.
//!
//! Like every Redis key, these are untrusted input: a forged line or slot
//! can delay or release a key's jobs — no more than deleting them could.

mod batch;
mod reserve;

use std::sync::{Arc, OnceLock};

use airlock_core::clock::SharedClock;
use redis::AsyncCommands;

use self::batch::BATCH;
pub(super) use self::batch::{KeyOp, run_batch};
use self::reserve::{HAND_OVER, RESERVE};
use super::key_batches::{Batches, MAX_BATCH};
use crate::error::QueueError;
use crate::store::Store;

/// How long a parked job sleeps before it wakes on its own, if no release
/// promotes it first: the safety net for a job a crash left out of its
/// line.
pub const PARK_MS: u64 = 60 * 60 * 1000;

/// Airlock's per-key scripts by name, with their SHA1s (for benchmarks).
pub fn script_hashes() -> Vec<(&'static str, String)> {
    [
        ("key_batch", &BATCH),
        ("key_reserve", &RESERVE),
        ("key_hand_over", &HAND_OVER),
    ]
    .into_iter()
    .map(|(name, script)| (name, script.get_hash().to_string()))
    .collect()
}

/// One key of one queue, as its Redis keys name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeySlot {
    /// The queue.
    pub queue: String,
    /// sha256 of the key's JSON value (24 hex digits; `s` before them for
    /// a singleton slot): any value, any length, one fixed-size Redis key.
    pub hash: String,
}

/// What sets a singleton key's slot apart from a `keyConcurrency` slot of
/// the same value: `s` before the hash.
const SINGLETON_MARK: &str = "s";

/// Each refill of a line whose rule the binding no longer has reserves up
/// to this many slots: such a line is emptied.
pub const RULE_GONE_LIMIT: u64 = 100_000;

/// The line limits a queue's binding has now, for the pump's refill
/// ([`KeyLimits::fill_lines`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LineLimits {
    /// Its `keyConcurrency` limit, if it has one.
    pub key: Option<u64>,
    /// Whether it has a `singleton`.
    pub singleton: bool,
    /// Whether it has `fairness` (its tenants' lines are `gate::fairness`'
    /// to refill).
    pub fairness: bool,
}

/// What sets a tenant's slots (`fairness`, `gate::fairness`) apart from a
/// key's of the same value: `t` before the hash.
pub const TENANT_MARK: &str = "t";

impl KeySlot {
    /// The slot of `value` (the key's JSON value) in `queue`.
    pub fn of(queue: &str, value: &serde_json::Value) -> KeySlot {
        let value = serde_json::to_string(value).unwrap_or_default();
        let digest = airlock_core::hashing::separated(&[value.as_bytes()]);
        KeySlot {
            queue: queue.to_string(),
            hash: hex::encode(&digest[..12]),
        }
    }

    /// The same key's slot under a `singleton` rule (its own set and line,
    /// limit 1).
    pub fn singleton(&self) -> KeySlot {
        KeySlot {
            queue: self.queue.clone(),
            hash: format!("{SINGLETON_MARK}{}", self.hash),
        }
    }

    /// Whether these are a tenant's slots ([`KeySlot::tenant`]).
    pub fn is_tenant(&self) -> bool {
        self.hash.starts_with(TENANT_MARK)
    }

    /// The slots of a tenant of this value under a `fairness` rule (its
    /// own set and line; its limit is the tenant's share).
    pub fn tenant(&self) -> KeySlot {
        KeySlot {
            queue: self.queue.clone(),
            hash: format!("{TENANT_MARK}{}", self.hash),
        }
    }
}

/// A key's counts, for "why is this job waiting" and fairness's view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyCounts {
    /// Slots held (running or reserved jobs), after expired leases.
    pub held: u64,
    /// Jobs in its line, or on their way into it.
    pub queued: u64,
}

/// Jobs a freed slot was just reserved for, to promote (BullMQ-delayed →
/// wait list): the caller hands them to the queue, which promotes them.
/// Dropping them unpromoted loses nothing (the reservation expires and the
/// sweep puts them back at the head of their line), but delays them a
/// lease.
#[must_use = "promote the released jobs (QueueService::promote_released)"]
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Released {
    /// Their queue.
    pub queue: String,
    /// Their ids, in line order.
    pub ids: Vec<String>,
    /// Whether they go to the front of the wait list (a tenant's turn,
    /// `gate::fairness`: a reservation held while the job waits behind a
    /// backlog would keep the tenant's slot idle) rather than its back (a
    /// key's turn, behind the other keys' ready jobs).
    pub to_front: bool,
}

/// The per-key slots, lines and parking of every queue on one Redis.
#[derive(Clone)]
pub struct KeyLimits {
    store: Store,
    /// Stamps leases and parking; paused in tests of lease expiry.
    clock: SharedClock,
    /// Takes, parkings and releases of this host, written in batches
    /// ([`super::key_batches`]); started on first use.
    batches: Arc<OnceLock<Batches>>,
}

impl KeyLimits {
    /// The key limits on `store`'s Redis, leases timed by `clock`.
    pub fn new(store: Store, clock: SharedClock) -> Self {
        KeyLimits {
            store,
            clock,
            batches: Arc::default(),
        }
    }

    fn key_keys(&self, slot: &KeySlot) -> [String; 5] {
        key_keys(&self.store, slot)
    }

    /// `op` in the host's next batch of key operations.
    async fn op(&self, op: KeyOp, lease_ms: u64) -> Result<Vec<String>, QueueError> {
        let batches = self
            .batches
            .get_or_init(|| Batches::start(self.store.clone(), self.clock.clone()));
        batches.run(op, lease_ms).await
    }

    /// Takes (or keeps) a slot of `slot` for job `id`, for `lease_ms`;
    /// false when the key is at `limit` — and, with `park`, the job's
    /// parking has begun: park it and [`KeyLimits::join_line`].
    /// `processed_on` is the job's `processedOn` as its worker fetched it:
    /// a take moves it on to now (see `state/lua/key_ops.lua`); `None` leaves it alone.
    pub async fn acquire(
        &self,
        slot: &KeySlot,
        (id, processed_on): (&str, Option<u64>),
        limit: u64,
        lease_ms: u64,
        park: bool,
    ) -> Result<bool, QueueError> {
        let kind = if park { "acquire-park" } else { "acquire" };
        let mut op = KeyOp::new(slot, id, limit, kind);
        op.processed_on = processed_on;
        let got = self.op(op, lease_ms).await?;
        Ok(!got.is_empty())
    }

    /// The jobs holding `slot`'s slots now (reservations made at enqueue
    /// left out).
    pub async fn holders(&self, slot: &KeySlot) -> Result<Vec<String>, QueueError> {
        let [slots, ..] = self.key_keys(slot);
        let mut conn = self.store.conn();
        let now = self.clock.now_ms();
        let ids: Vec<String> = conn.zrangebyscore(slots, format!("({now}"), "+inf").await?;
        Ok(ids
            .into_iter()
            .filter(|id| !id.starts_with("enqueue:"))
            .collect())
    }

    /// Extends job `id`'s lease on `slot` (only if it still holds it).
    pub async fn renew(&self, slot: &KeySlot, id: &str, lease_ms: u64) -> Result<(), QueueError> {
        let [slots, ..] = self.key_keys(slot);
        let mut conn = self.store.conn();
        let _: i64 = redis::cmd("ZADD")
            .arg(slots)
            .arg("XX")
            .arg(self.clock.now_ms() + lease_ms)
            .arg(id)
            .query_async(&mut conn)
            .await?;
        Ok(())
    }

    async fn line(
        &self,
        slot: &KeySlot,
        id: &str,
        limit: u64,
        lease_ms: u64,
        mode: &'static str,
    ) -> Result<Released, QueueError> {
        let ids = self.op(KeyOp::new(slot, id, limit, mode), lease_ms).await?;
        Ok(Released {
            queue: slot.queue.clone(),
            ids,
            to_front: slot.is_tenant(),
        })
    }

    /// Appends job `id`, already parked, to its key's line, and answers
    /// whoever a slot freed for meanwhile — the job itself, maybe.
    pub async fn join_line(
        &self,
        slot: &KeySlot,
        id: &str,
        limit: u64,
        lease_ms: u64,
    ) -> Result<Released, QueueError> {
        self.line(slot, id, limit, lease_ms, "park").await
    }

    /// Gives job `id`'s slot back, and answers the head of the line the
    /// slot is now reserved for.
    pub async fn release(
        &self,
        slot: &KeySlot,
        id: &str,
        limit: u64,
        lease_ms: u64,
    ) -> Result<Released, QueueError> {
        self.line(slot, id, limit, lease_ms, "release").await
    }

    /// Refills every non-empty line of `queue` (the pump: for releases a
    /// crash swallowed, and expired reservations), under the limits the
    /// binding has now (`limits`): `keyConcurrency` keys' with their limit,
    /// singleton keys' with 1. Tenants' lines are left to `gate::fairness`,
    /// which knows their shares. A line whose rule the binding no longer
    /// has is emptied ([`RULE_GONE_LIMIT`] per call), its jobs sent to the
    /// back of the wait list. Answers the jobs the refills reserved slots
    /// for.
    pub async fn fill_lines(
        &self,
        queue: &str,
        limits: LineLimits,
        lease_ms: u64,
    ) -> Result<Released, QueueError> {
        let mut conn = self.store.conn();
        let hashes: Vec<String> = conn.smembers(self.store.keys().key_lines(queue)).await?;
        let mut fills = Vec::new();
        for hash in hashes {
            let (digits, limit) = if let Some(digits) = hash.strip_prefix(TENANT_MARK) {
                if limits.fairness {
                    continue;
                }
                (digits, RULE_GONE_LIMIT)
            } else if let Some(digits) = hash.strip_prefix(SINGLETON_MARK) {
                (digits, if limits.singleton { 1 } else { RULE_GONE_LIMIT })
            } else {
                (hash.as_str(), limits.key.unwrap_or(RULE_GONE_LIMIT))
            };
            if digits.len() != 24 || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
                continue;
            }
            let slot = KeySlot {
                queue: queue.to_string(),
                hash: hash.clone(),
            };
            fills.push((slot, limit));
        }
        self.fill(queue, &fills, lease_ms, false).await
    }

    /// Refills the lines of `slots` (each up to its limit), of `queue`:
    /// answers the jobs the refills reserved slots for, to go to the front
    /// of the wait list with `to_front` (see [`Released::to_front`]).
    pub async fn fill(
        &self,
        queue: &str,
        slots: &[(KeySlot, u64)],
        lease_ms: u64,
        to_front: bool,
    ) -> Result<Released, QueueError> {
        let fills: Vec<KeyOp> = slots
            .iter()
            .map(|(slot, limit)| KeyOp::new(slot, "", *limit, "fill"))
            .collect();
        let mut released = Released {
            queue: queue.to_string(),
            ids: Vec::new(),
            to_front,
        };
        for chunk in fills.chunks(MAX_BATCH) {
            let now = self.clock.now_ms();
            for mut ids in run_batch(&self.store, now, lease_ms, chunk).await? {
                released.ids.append(&mut ids);
            }
        }
        Ok(released)
    }

    /// [`KeyLimits::counts`] of each of `slots`, in one round trip.
    pub async fn counts_of(&self, slots: &[KeySlot]) -> Result<Vec<KeyCounts>, QueueError> {
        let now = self.clock.now_ms();
        let mut pipe = redis::pipe();
        for slot in slots {
            let [held, line, _, _, parking] = self.key_keys(slot);
            pipe.zcount(held, format!("({now}"), "+inf")
                .llen(line)
                .zcard(parking);
        }
        let mut conn = self.store.conn();
        let counts: Vec<u64> = pipe.query_async(&mut conn).await?;
        Ok(counts
            .chunks(3)
            .map(|c| KeyCounts {
                held: c[0],
                queued: c[1] + c[2],
            })
            .collect())
    }

    /// How many slots `slot` holds now and how many jobs wait in its line.
    pub async fn counts(&self, slot: &KeySlot) -> Result<KeyCounts, QueueError> {
        let [slots, line, _, _, parking] = self.key_keys(slot);
        let mut conn = self.store.conn();
        let now = self.clock.now_ms();
        let (held, in_line, parking): (u64, u64, u64) = redis::pipe()
            .zcount(slots, format!("({now}"), "+inf")
            .llen(line)
            .zcard(parking)
            .query_async(&mut conn)
            .await?;
        Ok(KeyCounts {
            held,
            queued: in_line + parking,
        })
    }
}

/// `slot`'s five keys: slots, line, lines, BullMQ delayed, parking.
fn key_keys(store: &Store, slot: &KeySlot) -> [String; 5] {
    let [slots, line, parking] = own_keys(store, slot);
    let keys = store.keys();
    [
        slots,
        line,
        keys.key_lines(&slot.queue),
        keys.bullmq(&slot.queue, "delayed"),
        parking,
    ]
}

/// The three of them that are the key's own (slots, line, parking): a
/// batch passes the queue's two once.
fn own_keys(store: &Store, slot: &KeySlot) -> [String; 3] {
    let (keys, queue, hash) = (store.keys(), &slot.queue, &slot.hash);
    [
        keys.key_slots(queue, hash),
        keys.key_line(queue, hash),
        keys.key_parking(queue, hash),
    ]
}
