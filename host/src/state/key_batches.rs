//! Group commit for a host's key-slot operations (`state::key_limits`):
//! takes, parkings and releases submitted while a batch is on its way to
//! Redis wait for the next one, which runs them in one script call per
//! queue, in the order they were submitted. At idle that is one call per
//! operation, one channel hop later than a call of its own; under load it
//! is one call for many, so a governed job costs Redis a loop turn of the
//! script, not a round trip and a script call of its own, for its take and
//! for its release.
//!
//! Nothing changes in what each operation does or when it counts: an
//! operation's caller learns its outcome only after the script that ran it
//! returned, exactly as with a call of its own. A host that dies with
//! operations waiting here dies before making them, which every crash
//! window of `state::key_limits` already covers; a batch whose call fails
//! fails each of its operations, which their callers retry like any
//! failed call.

use std::collections::HashMap;

use airlock_core::clock::SharedClock;
use tokio::sync::{mpsc, oneshot};

use super::key_limits::{KeyOp, run_batch};
use crate::error::QueueError;
use crate::store::Store;

/// Most operations in one script call: a longer script would hold up
/// Redis's other clients (each operation is a handful of commands).
pub(super) const MAX_BATCH: usize = 128;

type Reply = oneshot::Sender<Result<Vec<String>, QueueError>>;

/// An operation waiting for its batch.
struct Pending {
    op: KeyOp,
    lease_ms: u64,
    reply: Reply,
}

/// The channel into the writer task; the task ends when this is dropped.
pub(super) struct Batches {
    tx: mpsc::UnboundedSender<Pending>,
}

impl Batches {
    /// Starts the writer (inside a Tokio runtime).
    pub(super) fn start(store: Store, clock: SharedClock) -> Batches {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(write(store, clock, rx));
        Batches { tx }
    }

    /// Runs `op` (leases of `lease_ms`) in the next batch; answers its
    /// reply.
    pub(super) async fn run(&self, op: KeyOp, lease_ms: u64) -> Result<Vec<String>, QueueError> {
        let (reply, answer) = oneshot::channel();
        let pending = Pending {
            op,
            lease_ms,
            reply,
        };
        if self.tx.send(pending).is_err() {
            return Err(QueueError::Internal(
                "the key batch writer has stopped".into(),
            ));
        }
        answer
            .await
            .unwrap_or_else(|_| Err(QueueError::Internal("a key batch was dropped".into())))
    }
}

async fn write(store: Store, clock: SharedClock, mut rx: mpsc::UnboundedReceiver<Pending>) {
    while let Some(first) = rx.recv().await {
        // What came while the previous batch was under way, by queue and
        // lease (one script call each), in submission order.
        let mut taken = Vec::new();
        crate::tasks::take_queued(&mut rx, first, MAX_BATCH, &mut taken);
        let mut groups: Vec<Vec<Pending>> = Vec::new();
        let mut group_of: HashMap<(String, u64), usize> = HashMap::new();
        for pending in taken {
            let key = (pending.op.queue().to_string(), pending.lease_ms);
            let index = *group_of.entry(key).or_insert_with(|| {
                groups.push(Vec::new());
                groups.len() - 1
            });
            groups[index].push(pending);
        }
        let now = clock.now_ms();
        let calls = groups
            .into_iter()
            .map(|group| run_group(&store, now, group));
        futures::future::join_all(calls).await;
    }
}

/// One queue's operations in one call; each caller gets its reply.
async fn run_group(store: &Store, now: u64, group: Vec<Pending>) {
    let lease_ms = group[0].lease_ms;
    let (ops, replies): (Vec<KeyOp>, Vec<Reply>) =
        group.into_iter().map(|p| (p.op, p.reply)).unzip();
    match run_batch(store, now, lease_ms, &ops).await {
        Ok(answers) => {
            for (reply, answer) in replies.into_iter().zip(answers) {
                let _ = reply.send(Ok(answer));
            }
        }
        Err(e) => {
            for reply in replies {
                let _ = reply.send(Err(copy(&e)));
            }
        }
    }
}

/// A batch's error, for each of its operations.
fn copy(e: &QueueError) -> QueueError {
    match e {
        QueueError::Internal(m) => QueueError::Internal(m.clone()),
        QueueError::Unavailable(m) => QueueError::Unavailable(m.clone()),
        other => QueueError::Unavailable(other.to_string()),
    }
}
