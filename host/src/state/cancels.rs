//! The cancel stream and the cancel-on-event index: Airlock's keys for
//! cancels. How a cancel runs — BullMQ's deferred-failure mark, then this
//! stream, then bringing a waiting job forward — is `queue::cancel`'s;
//! `worker::cancels` follows the stream on every host.
//!
//! **The stream** (`P:{airlock}:cancels`, capped at about
//! [`CANCEL_STREAM_LEN`] entries) carries `{queue, id, reason, at}`. Like
//! every Redis key it is untrusted input: whoever can write to it can
//! cancel jobs — no more than a writer of Redis can do by deleting them.
//! Hosts bound what they read ([`CancelRequest::from_fields`]).
//!
//! **The cancel-on-event index** (a binding's `cancelOn`): which started jobs hold which
//! value, so an event finds the jobs it cancels without scanning a queue.
//!
//! A run of a queue with `cancelOn` rules adds its job id, before the guest
//! starts, to one set per rule whose path finds a value in the job's data:
//! `<prefix>:<queue>:airlock:cancel-on:<sha256 of event name and value>`
//! (in the queue's hash tag), and takes it out when the job finishes — one
//! round trip each. A host that dies in between leaves the id behind; the
//! next matching event finds the job finished or gone and takes it out then.
//! A job that has not started is in no set: an event cancels jobs that run,
//! sleep or wait for a retry.

use std::collections::HashMap;

use redis::AsyncCommands;

use crate::error::QueueError;
use crate::store::Store;

/// About how many entries the cancel stream keeps (`XADD MAXLEN ~`): hosts
/// read it within milliseconds, so this is hours of cancels.
pub const CANCEL_STREAM_LEN: usize = 10_000;

/// Longest reason kept, in characters.
pub const MAX_REASON_CHARS: usize = 500;

/// One cancel as the fleet hears it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CancelRequest {
    /// The job's queue.
    pub queue: String,
    /// The job's id.
    pub id: String,
    /// Why, in words: becomes the `failedReason` after `cancelled: `.
    pub reason: String,
    /// When it was asked for, ms since the epoch.
    pub at_ms: u64,
}

impl CancelRequest {
    /// The `failedReason` of a job this request cancels.
    pub fn failed_reason(&self) -> String {
        format!("cancelled: {}", self.reason)
    }

    /// A request read back from the stream, if its fields make one: a
    /// queue name and a job id of sane length, a reason cut to
    /// [`MAX_REASON_CHARS`]. Anything else is skipped.
    pub fn from_fields(fields: &HashMap<String, redis::Value>) -> Option<CancelRequest> {
        let text = |name: &str| -> Option<String> {
            match fields.get(name)? {
                redis::Value::BulkString(b) => String::from_utf8(b.clone()).ok(),
                redis::Value::SimpleString(s) => Some(s.clone()),
                _ => None,
            }
        };
        let queue = text("queue")?;
        let id = text("id")?;
        crate::names::queue("queue", &queue).ok()?;
        if id.is_empty() || id.len() > airlock_core::names::MAX_ID_LEN {
            return None;
        }
        let reason: String = text("reason")
            .unwrap_or_default()
            .chars()
            .take(MAX_REASON_CHARS)
            .collect();
        let at_ms = text("at").and_then(|t| t.parse().ok()).unwrap_or(0);
        Some(CancelRequest {
            queue,
            id,
            reason,
            at_ms,
        })
    }
}

/// The cancel stream and cancel-on-event index on one Redis.
#[derive(Clone)]
pub struct Cancels {
    store: Store,
}

impl Cancels {
    /// The cancels on `store`'s Redis.
    pub fn new(store: Store) -> Self {
        Cancels { store }
    }

    /// Appends `request` to the fleet's cancel stream.
    pub async fn publish(&self, request: &CancelRequest) -> Result<(), QueueError> {
        let mut conn = self.store.conn();
        let _: String = conn
            .xadd_maxlen(
                self.store.keys().cancels(),
                redis::streams::StreamMaxlen::Approx(CANCEL_STREAM_LEN),
                "*",
                &[
                    ("queue", request.queue.as_str()),
                    ("id", request.id.as_str()),
                    ("reason", request.reason.as_str()),
                    ("at", request.at_ms.to_string().as_str()),
                ],
            )
            .await?;
        Ok(())
    }

    fn index_key(&self, queue: &str, event: &str, value: &serde_json::Value) -> String {
        let value = serde_json::to_string(value).unwrap_or_default();
        let digest = hex::encode(airlock_core::hashing::separated(&[
            event.as_bytes(),
            value.as_bytes(),
        ]));
        self.store.keys().cancel_on(queue, &digest)
    }

    /// Adds (`add`) or takes out job `id` of `queue` from the sets of
    /// `matches` (event name, value), in one round trip.
    pub async fn index(
        &self,
        queue: &str,
        id: &str,
        matches: &[(String, serde_json::Value)],
        add: bool,
    ) -> Result<(), QueueError> {
        if matches.is_empty() {
            return Ok(());
        }
        let mut pipe = redis::pipe();
        for (event, value) in matches {
            let key = self.index_key(queue, event, value);
            if add {
                pipe.sadd(key, id).ignore();
            } else {
                pipe.srem(key, id).ignore();
            }
        }
        let mut conn = self.store.conn();
        pipe.query_async::<()>(&mut conn).await?;
        Ok(())
    }

    /// The ids in `queue`'s set for `event` holding `value`.
    pub async fn indexed(
        &self,
        queue: &str,
        event: &str,
        value: &serde_json::Value,
    ) -> Result<Vec<String>, QueueError> {
        let mut conn = self.store.conn();
        Ok(conn.smembers(self.index_key(queue, event, value)).await?)
    }

    /// Takes `ids` (cancelled, finished or gone) out of that set.
    pub async fn unindex(
        &self,
        queue: &str,
        event: &str,
        value: &serde_json::Value,
        ids: &[String],
    ) -> Result<(), QueueError> {
        if ids.is_empty() {
            return Ok(());
        }
        let mut conn = self.store.conn();
        let _: i64 = conn.srem(self.index_key(queue, event, value), ids).await?;
        Ok(())
    }
}
