//! A job's handler digest: the pin a run reads (with the limits and
//! producer it was enqueued with) before it starts, and the repin that
//! moves it to another digest.

use airlock_core::limits::LimitsOverride;

use super::{Meta, PIN, Producer};
use crate::error::QueueError;
use crate::state::fields;

/// What a job's hash (and pending hash) say before it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pinned {
    /// The digest the job runs.
    pub digest: String,
    /// Its per-job limits, if any.
    pub limits: Option<LimitsOverride>,
    /// Who it says enqueued it.
    pub producer: Producer,
    /// Whether no run pinned it before: this is its first run (the
    /// queue's enqueue→start tally counts it). A job whose earlier run left
    /// its pin to the recorder's next batch, and that is taken again before
    /// the batch lands, is counted twice.
    pub first_run: bool,
}

impl Meta {
    /// Pins the job to `current` unless it already has a digest, and reads
    /// its per-job limits — moving them over from its pending hash first
    /// when the add's commit has not landed yet. One round trip, one
    /// script; `None` when the job no longer exists (removed while it was
    /// being fetched), in which case nothing is written.
    pub async fn pin(
        &self,
        queue: &str,
        id: &str,
        current: &str,
    ) -> Result<Option<Pinned>, QueueError> {
        let mut invocation = PIN.key(self.job_key(queue, id));
        invocation.key(self.pending_key(queue, id)).arg(current);
        let mut conn = self.store.conn();
        type Reply = (
            Option<String>,
            Option<String>,
            Option<String>,
            Option<String>,
            i64,
        );
        let reply: Option<Reply> = invocation.invoke_async(&mut conn).await?;
        let Some((digest, limits, producer, seal, first)) = reply else {
            return Ok(None);
        };
        let limits = match limits {
            // Anything read from Redis is untrusted: a malformed value is
            // an error, not a silent "no limits".
            Some(text) => Some(serde_json::from_str(&text).map_err(|e| {
                QueueError::Internal(format!("job {queue}:{id} has unreadable limits: {e}"))
            })?),
            None => None,
        };
        Ok(Some(Pinned {
            digest: digest.unwrap_or_else(|| current.to_string()),
            limits,
            producer: Producer {
                name: producer,
                seal,
            },
            first_run: first == 1,
        }))
    }

    /// Moves a job to another handler digest (its next run uses it).
    pub async fn repin(&self, queue: &str, id: &str, digest: &str) -> Result<bool, QueueError> {
        self.set_if_exists(&self.job_key(queue, id), &[(fields::DIGEST, digest)])
            .await
    }
}
