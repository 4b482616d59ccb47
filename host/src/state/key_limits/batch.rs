//! The batch script and its operations: every take, parking, release and
//! refill of a key's slots is one operation of a script call that runs a
//! queue's operations in order ([`run_batch`]), after the sweep every
//! script starts with. `state::key_batches` groups a host's operations
//! into these calls.

use std::sync::LazyLock;

use super::{KeySlot, own_keys};
use crate::error::QueueError;
use crate::store::Store;

/// The sweep every script starts with: expired leases go, and an expired
/// one whose job is still parked (a reservation whose promote was lost)
/// puts the job back at the head of the line; a job whose parking began
/// more than a lease ago without joining the line (its host died in
/// between) joins it now.
pub(super) const SWEEP: &str = include_str!("../lua/key_sweep.lua");

/// The two operations every batch is made of, after [`SWEEP`]'s helpers.
///
/// Both take the short way when they can: a job holding an unexpired lease
/// renews it, and a job that finds at most `limit` slots held once it
/// added its own (expired leases included, so never more than it would
/// find after sweeping) keeps it, without sweeping; a release with nobody
/// in the key's line only gives its slot back (a job on its way into the
/// line fills the line's free slots itself when it joins). What a sweep
/// would have found waits for the next full operation on the key or the
/// pump, at most half a lease: both are leftovers of a crash.
///
/// `acquire(…, id, …, park, jobs, taken, expiry, stamp)`: 1 when job `id`
/// holds a slot (it already held one, took a free one, or took a
/// reservation made at enqueue that was not handed to its job yet — the job
/// may well be that one, started before the hand-over; one reservation is
/// one slot either way); 0 when the key is at its limit — and, with `park`,
/// the job's parking has begun (recorded, so a crash before it joins the
/// line is repaired). A full key first drops holders that finished or are
/// gone. A job that takes a slot it did not hold has its `processedOn`
/// moved on to `now` (`stamp`; never back: `taken` is the `processedOn`
/// its worker's fetch wrote and read, nil when unknown, and then the hash
/// is left alone): it was taken before this check, maybe while the key was
/// full, and the slot it got may have freed only since. BullMQ's "when it
/// was processed" then says when it could run, so no job's span from
/// `processedOn` to `finishedOn` starts before the end of the run whose
/// slot it took. `expiry` and `stamp` are `now + lease` and `now` as the
/// host wrote them: Redis takes them as they are, where a Lua number would
/// be formatted again for each command.
///
/// `line_op(…, id, …, mode)`: mode `park`: the (now BullMQ-delayed) job
/// joins the line, its parking done; `release`: gives its slot back;
/// `fill`: only refills. Then, with jobs in line and no slot free, drops
/// holders that finished or are gone, reserves free slots for the head of
/// the line and answers the ids to promote.
const OPS: &str = include_str!("../lua/key_ops.lua");

/// A batch of key operations of one queue, in order: `KEYS` lines, BullMQ
/// delayed, then each operation's slots, line and parking; `ARGV` now,
/// lease, the queue's job key prefix, `now + lease`, then five per
/// operation: its kind (`acquire`, `acquire-park`, or a [`OPS`] `line_op`
/// mode), job id (or `""`), limit, key hash and, for an acquire, the job's
/// `processedOn` as its worker fetched it (or `""`). Answers one array per
/// operation: an acquire's `{"1"}` (taken) or `{}`, a line operation's ids
/// to promote.
pub(super) static BATCH: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(&[SWEEP, OPS, include_str!("../lua/key_batch.lua")].join("\n"))
});

/// One operation of a batch ([`BATCH`]): `kind` on job `id`'s slot of
/// `slot` (a key of `limit`).
#[derive(Debug, Clone)]
pub(in crate::state) struct KeyOp {
    slot: KeySlot,
    id: String,
    limit: u64,
    kind: &'static str,
    /// An acquire's job's `processedOn` as its worker fetched it.
    pub(super) processed_on: Option<u64>,
}

impl KeyOp {
    pub(super) fn new(slot: &KeySlot, id: &str, limit: u64, kind: &'static str) -> KeyOp {
        KeyOp {
            slot: slot.clone(),
            id: id.to_string(),
            limit,
            kind,
            processed_on: None,
        }
    }

    /// The queue whose keys it touches: one batch is one queue's (its keys
    /// share a cluster slot).
    pub(in crate::state) fn queue(&self) -> &str {
        &self.slot.queue
    }
}

/// Runs `ops`, all of one queue, in one script call at `now`; answers each
/// one's reply (see [`BATCH`]).
pub(in crate::state) async fn run_batch(
    store: &Store,
    now: u64,
    lease_ms: u64,
    ops: &[KeyOp],
) -> Result<Vec<Vec<String>>, QueueError> {
    let Some(first) = ops.first() else {
        return Ok(Vec::new());
    };
    let queue = first.queue();
    let keys = store.keys();
    let mut invocation = BATCH.prepare_invoke();
    invocation
        .key(keys.key_lines(queue))
        .key(keys.bullmq(queue, "delayed"))
        .arg(now)
        .arg(lease_ms)
        .arg(keys.job(queue, ""))
        .arg(now + lease_ms);
    for op in ops {
        debug_assert_eq!(op.queue(), queue, "a batch is one queue's");
        let [slots, line, parking] = own_keys(store, &op.slot);
        invocation.key(slots).key(line).key(parking);
        invocation
            .arg(op.kind)
            .arg(&op.id)
            .arg(op.limit)
            .arg(&op.slot.hash);
        match op.processed_on {
            Some(ms) => invocation.arg(ms),
            None => invocation.arg(""),
        };
    }
    let mut conn = store.conn();
    let replies: Vec<Vec<String>> = invocation.invoke_async(&mut conn).await?;
    if replies.len() != ops.len() {
        return Err(QueueError::Internal(format!(
            "the key batch script answered {} replies for {} operations",
            replies.len(),
            ops.len()
        )));
    }
    Ok(replies)
}
