//! Per-key concurrency (a binding's `keyConcurrency`): at most `limit`
//! jobs of one key — the value at a path into the job's data, a customer
//! id say — run at once across the fleet, and a key with a deep backlog
//! does not hold up the jobs of the others.
//!
//! **Slots are leases.** A key's slots are a sorted set of job ids scored
//! by lease expiry (`<prefix>:<queue>:airlock:kc:<key hash>:slots`). A run
//! takes a slot before its guest starts ([`KeyLimits::acquire`])
//! and renews it while it runs; it gives it back when the job finishes,
//! fails, sleeps or is put back ([`KeyLimits::release`]). A
//! host that dies holding a slot has it given back by a live host as soon
//! as the fleet knows it dead (`worker::recovery`), else when the lease
//! runs out — never later than one lease (the worker lock duration) —
//! because every script here first sweeps expired leases. A job recovered after its host
//! died finds its own lease (its id) and keeps the slot, so a crash never
//! lets a key run more than its limit.
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
//! looked at yet.
//!
//! Crash windows: a job's parking begins in the same script that finds its
//! key full (`…:kc:<key hash>:parking`, scored by time) and ends when it
//! joins the line; a job whose parking began more than a lease ago without
//! ending (its host died between BullMQ's `moveToDelayed` and joining the
//! line) is put in the line by the next sweep. [`PARK_MS`] is the last
//! safety net: a parked job no script knows of wakes then and is gated
//! again. Between a
//! reservation and its promote, the job is parked holding a reserved slot:
//! when that lease expires, the sweep finds the job still delayed and puts
//! it back at the head of its line. A line may hold an id twice (a job
//! parked, woken by its safety net and parked again); a reservation skips
//! ids that are not parked. Each host's pump ([`KeyLimits::fill_lines`])
//! refills every non-empty line once per half lease, for the releases a
//! crash swallowed.
//!
//! A slot whose holder finished (its hash has `finishedOn`) or is gone
//! is stale: the run gives it back once BullMQ has recorded the end
//! (`flow::recorded`), and a host that died in between leaves it held. A
//! script that finds the key full drops such holders first.
//!
//! Cost per governed job, in Redis round trips: one to take the slot, one
//! to give it back, one lease renewal per third of a lease it runs; a job
//! that has to wait, one more to park (plus BullMQ's `moveToDelayed`) and
//! two to promote it (read it, promote it).
//!
//! Like every Redis key, these are untrusted input: a forged line or slot
//! can delay or release a key's jobs — no more than deleting them could.

use std::sync::LazyLock;

use airlock_core::clock::SharedClock;
use redis::AsyncCommands;

use crate::error::QueueError;
use crate::store::Store;

/// How long a parked job sleeps before it wakes on its own, if no release
/// promotes it first: the safety net for a job a crash left out of its
/// line.
pub const PARK_MS: u64 = 60 * 60 * 1000;

/// The sweep every script starts with: expired leases go, and an expired
/// one whose job is still parked (a reservation whose promote was lost)
/// puts the job back at the head of the line; a job whose parking began
/// more than a lease ago without joining the line (its host died in
/// between) joins it now.
const SWEEP: &str = "\
local function sweep(slots, line, lines, delayed, parking, now, lease, keyhash) \
  local expired = redis.call('ZRANGEBYSCORE', slots, '-inf', now) \
  for _, id in ipairs(expired) do \
    redis.call('ZREM', slots, id) \
    if redis.call('ZSCORE', delayed, id) then \
      redis.call('LPUSH', line, id) \
      redis.call('SADD', lines, keyhash) \
    end \
  end \
  local stale = redis.call('ZRANGEBYSCORE', parking, '-inf', now - lease) \
  for _, id in ipairs(stale) do \
    redis.call('ZREM', parking, id) \
    redis.call('RPUSH', line, id) \
    redis.call('SADD', lines, keyhash) \
  end \
end \
local function drop_finished(slots, jobs) \
  for _, id in ipairs(redis.call('ZRANGE', slots, 0, -1)) do \
    if string.sub(id, 1, 8) ~= 'enqueue:' then \
      local job = jobs .. id \
      if redis.call('EXISTS', job) == 0 or redis.call('HEXISTS', job, 'finishedOn') == 1 then \
        redis.call('ZREM', slots, id) \
      end \
    end \
  end \
end \
local function fill(slots, line, lines, delayed, parking, now, lease, limit, keyhash) \
  local out = {} \
  while redis.call('ZCARD', slots) < limit do \
    local id = redis.call('LPOP', line) \
    if not id then break end \
    if redis.call('ZSCORE', delayed, id) and not redis.call('ZSCORE', slots, id) then \
      redis.call('ZADD', slots, now + lease, id) \
      table.insert(out, id) \
    end \
  end \
  if redis.call('LLEN', line) == 0 and redis.call('ZCARD', parking) == 0 then \
    redis.call('SREM', lines, keyhash) \
  end \
  return out \
end ";

/// `KEYS` slots, line, lines, BullMQ delayed, parking; `ARGV` id, now,
/// lease, limit, key hash, `park` (or anything else: the job will not wait
/// in line), the queue's job key prefix (a full key first drops holders
/// that finished or are gone). 1: the job holds a slot (it already held one,
/// took a free one, or took a reservation made at enqueue that was not
/// handed to its job yet — the job may well be that one, started before
/// the hand-over; one reservation is one slot either way); 0: the key is
/// at its limit — and the job's parking has begun (recorded, so a crash
/// before it joins the line is repaired).
///
/// A job that takes a slot it did not hold has its `processedOn` moved on
/// to `now` (never back): it was taken before this check, maybe while the
/// key was full, and the slot it got may have freed only since. BullMQ's
/// "when it was processed" then says when it could run, so no job's span
/// from `processedOn` to `finishedOn` starts before the end of the run
/// whose slot it took.
static ACQUIRE: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(&format!(
        "{SWEEP} \
         local now, lease, limit = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]) \
         local function take() \
           redis.call('ZADD', KEYS[1], now + lease, ARGV[1]) \
           local job = ARGV[7] .. ARGV[1] \
           local taken = tonumber(redis.call('HGET', job, 'processedOn')) \
           if taken and taken < now then redis.call('HSET', job, 'processedOn', now) end \
           return 1 \
         end \
         sweep(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], now, lease, ARGV[5]) \
         if redis.call('ZSCORE', KEYS[1], ARGV[1]) then \
           redis.call('ZADD', KEYS[1], now + lease, ARGV[1]) return 1 \
         end \
         if redis.call('ZCARD', KEYS[1]) >= limit then drop_finished(KEYS[1], ARGV[7]) end \
         if redis.call('ZCARD', KEYS[1]) < limit then return take() end \
         for _, member in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do \
           if string.sub(member, 1, 8) == 'enqueue:' then \
             redis.call('ZREM', KEYS[1], member) \
             return take() \
           end \
         end \
         if ARGV[6] == 'park' then \
           redis.call('ZADD', KEYS[5], now, ARGV[1]) \
           redis.call('SADD', KEYS[3], ARGV[5]) \
         end \
         return 0"
    ))
});

/// `KEYS` slots, line, lines, BullMQ delayed, parking; `ARGV` id (or
/// `""`), now, lease, limit, key hash, mode, the queue's job key prefix.
/// Mode `park`: the (now BullMQ-delayed) job joins the line, its parking
/// done; `release`: gives its slot back; `fill`: only refills. Then, with
/// jobs in line and no slot free, drops holders that finished or are gone,
/// reserves free slots for the head of the line and answers the ids to
/// promote.
static LINE: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(&format!(
        "{SWEEP} \
         local now, lease, limit = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]) \
         if ARGV[6] == 'park' then \
           redis.call('RPUSH', KEYS[2], ARGV[1]) redis.call('ZREM', KEYS[5], ARGV[1]) \
           redis.call('SADD', KEYS[3], ARGV[5]) \
         elseif ARGV[6] == 'release' then \
           redis.call('ZREM', KEYS[1], ARGV[1]) \
         end \
         sweep(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], now, lease, ARGV[5]) \
         if redis.call('LLEN', KEYS[2]) > 0 and redis.call('ZCARD', KEYS[1]) >= limit then \
           drop_finished(KEYS[1], ARGV[7]) \
         end \
         return fill(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], now, lease, limit, ARGV[5])"
    ))
});

/// `KEYS` slots, line, lines, BullMQ delayed, parking; `ARGV` token, now,
/// lease, limit, key hash. 1: a free slot is reserved under `token` (no job
/// of the key waits in line or on its way there); 0: none.
static RESERVE: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(&format!(
        "{SWEEP} \
         local now, lease, limit = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]) \
         sweep(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], now, lease, ARGV[5]) \
         if redis.call('LLEN', KEYS[2]) == 0 and redis.call('ZCARD', KEYS[5]) == 0 \
            and redis.call('ZCARD', KEYS[1]) < limit then \
           redis.call('ZADD', KEYS[1], now + lease, ARGV[1]) return 1 \
         end \
         return 0"
    ))
});

/// `KEYS[1]` slots; `ARGV` token, job id: the reservation made under the
/// token passes to the job, with its lease — unless a starting job took it
/// already (see [`ACQUIRE`]).
static HAND_OVER: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(
        "local score = redis.call('ZSCORE', KEYS[1], ARGV[1]) \
         if score then \
           redis.call('ZREM', KEYS[1], ARGV[1]) \
           redis.call('ZADD', KEYS[1], score, ARGV[2]) \
         end \
         return 0",
    )
});

/// Airlock's per-key scripts by name, with their SHA1s (for benchmarks).
pub fn script_hashes() -> Vec<(&'static str, String)> {
    [
        ("key_acquire", &ACQUIRE),
        ("key_line", &LINE),
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

impl KeySlot {
    /// The slot of `value` (the key's JSON value) in `queue`.
    pub fn of(queue: &str, value: &serde_json::Value) -> KeySlot {
        use sha2::{Digest, Sha256};
        let digest = Sha256::digest(serde_json::to_string(value).unwrap_or_default().as_bytes());
        KeySlot {
            queue: queue.to_string(),
            hash: digest.iter().take(12).map(|b| format!("{b:02x}")).collect(),
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
}

/// A key's state, for "why is this job waiting".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyState {
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
}

/// The per-key slots, lines and parking of every queue on one Redis.
#[derive(Clone)]
pub struct KeyLimits {
    store: Store,
    /// Stamps leases and parking; paused in tests of lease expiry.
    clock: SharedClock,
}

impl KeyLimits {
    /// The key limits on `store`'s Redis, leases timed by `clock`.
    pub fn new(store: Store, clock: SharedClock) -> Self {
        KeyLimits { store, clock }
    }

    fn key_keys(&self, slot: &KeySlot) -> [String; 5] {
        let (keys, queue, hash) = (self.store.keys(), &slot.queue, &slot.hash);
        [
            keys.key_slots(queue, hash),
            keys.key_line(queue, hash),
            keys.key_lines(queue),
            keys.bullmq(queue, "delayed"),
            keys.key_parking(queue, hash),
        ]
    }

    /// `script` invoked on `slot`'s five keys (slots, line, lines, BullMQ
    /// delayed, parking: the order every script here takes them in).
    fn key_script<'a>(
        &self,
        script: &'a redis::Script,
        slot: &KeySlot,
    ) -> redis::ScriptInvocation<'a> {
        let mut invocation = script.prepare_invoke();
        for key in self.key_keys(slot) {
            invocation.key(key);
        }
        invocation
    }

    /// Takes (or keeps) a slot of `slot` for job `id`, for `lease_ms`;
    /// false when the key is at `limit` — and, with `park`, the job's
    /// parking has begun: park it and [`KeyLimits::join_line`].
    pub async fn acquire(
        &self,
        slot: &KeySlot,
        id: &str,
        limit: u64,
        lease_ms: u64,
        park: bool,
    ) -> Result<bool, QueueError> {
        let mut conn = self.store.conn();
        let got: i64 = self
            .key_script(&ACQUIRE, slot)
            .arg(id)
            .arg(self.clock.now_ms())
            .arg(lease_ms)
            .arg(limit)
            .arg(&slot.hash)
            .arg(if park { "park" } else { "no" })
            .arg(self.store.keys().job(&slot.queue, ""))
            .invoke_async(&mut conn)
            .await?;
        Ok(got == 1)
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
        mode: &str,
    ) -> Result<Released, QueueError> {
        let mut conn = self.store.conn();
        let released: Vec<String> = self
            .key_script(&LINE, slot)
            .arg(id)
            .arg(self.clock.now_ms())
            .arg(lease_ms)
            .arg(limit)
            .arg(&slot.hash)
            .arg(mode)
            .arg(self.store.keys().job(&slot.queue, ""))
            .invoke_async(&mut conn)
            .await?;
        Ok(Released {
            queue: slot.queue.clone(),
            ids: released,
        })
    }

    /// For jobs about to be added through Airlock (`keys[i]` the key slot
    /// and limit of job `i`, `None` when it has none): reserves a free slot
    /// for each job its key has room for, and answers the reservation
    /// tokens (`None`: held back — the job is added at BullMQ's lowest
    /// priority, `queue::HELD_BACK_PRIORITY`). Hand the
    /// reservations to the added jobs with [`KeyLimits::hand_over`].
    pub async fn reserve(
        &self,
        keys: &[Option<(KeySlot, u64)>],
        lease_ms: u64,
    ) -> Result<Vec<Option<String>>, QueueError> {
        let now = self.clock.now_ms();
        let mut conn = self.store.conn();
        let mut tokens = Vec::with_capacity(keys.len());
        for key in keys {
            let Some((slot, limit)) = key else {
                tokens.push(None);
                continue;
            };
            let token = format!("enqueue:{}", uuid::Uuid::new_v4().simple());
            let got: i64 = self
                .key_script(&RESERVE, slot)
                .arg(&token)
                .arg(now)
                .arg(lease_ms)
                .arg(*limit)
                .arg(&slot.hash)
                .invoke_async(&mut conn)
                .await?;
            tokens.push((got == 1).then_some(token));
        }
        Ok(tokens)
    }

    /// Passes each reservation (`token`) to the job it was made for.
    pub async fn hand_over(
        &self,
        handovers: &[(KeySlot, String, String)],
    ) -> Result<(), QueueError> {
        let mut conn = self.store.conn();
        for (slot, token, id) in handovers {
            let [slots, ..] = self.key_keys(slot);
            let _: i64 = HAND_OVER
                .key(slots)
                .arg(token)
                .arg(id)
                .invoke_async(&mut conn)
                .await?;
        }
        Ok(())
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
    /// crash swallowed, and expired reservations): `keyConcurrency` keys'
    /// with their `limit` (when the binding has one), singleton keys' with 1.
    /// Answers the jobs the refills reserved slots for.
    pub async fn fill_lines(
        &self,
        queue: &str,
        limit: Option<u64>,
        lease_ms: u64,
    ) -> Result<Released, QueueError> {
        let mut conn = self.store.conn();
        let hashes: Vec<String> = conn.smembers(self.store.keys().key_lines(queue)).await?;
        let mut released = Released {
            queue: queue.to_string(),
            ids: Vec::new(),
        };
        for hash in hashes {
            let (digits, limit) = match hash.strip_prefix(SINGLETON_MARK) {
                Some(digits) => (digits, Some(1)),
                None => (hash.as_str(), limit),
            };
            let Some(limit) = limit else { continue };
            if digits.len() != 24 || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
                continue;
            }
            let slot = KeySlot {
                queue: queue.to_string(),
                hash: hash.clone(),
            };
            let mut more = self.line(&slot, "", limit, lease_ms, "fill").await?;
            released.ids.append(&mut more.ids);
        }
        Ok(released)
    }

    /// How many slots `slot` holds now and how many jobs wait in its line.
    pub async fn state(&self, slot: &KeySlot) -> Result<KeyState, QueueError> {
        let [slots, line, _, _, parking] = self.key_keys(slot);
        let mut conn = self.store.conn();
        let now = self.clock.now_ms();
        let (held, in_line, parking): (u64, u64, u64) = redis::pipe()
            .zcount(slots, format!("({now}"), "+inf")
            .llen(line)
            .zcard(parking)
            .query_async(&mut conn)
            .await?;
        Ok(KeyState {
            held,
            queued: in_line + parking,
        })
    }
}
