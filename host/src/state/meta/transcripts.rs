//! Run transcripts on a job: each run's own in its field
//! (`airlock.transcript:<n>`), or, for a run in a batch, a pointer to the
//! batch's one transcript (`P:QUEUE:airlock:batch:ID:transcript`), which
//! the batch keeps before its jobs finish — so a pointer a reader finds
//! names a transcript already written (until it expires).

use redis::AsyncCommands;
use serde::{Deserialize, Serialize};

use super::Meta;
use crate::error::QueueError;
use crate::state::fields;

/// What a run's `airlock.transcript:<n>` field points to, when it is not
/// the transcript itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TranscriptField {
    /// The batch whose transcript the run shares.
    pub batch: String,
}

impl TranscriptField {
    /// The field's value for a run in batch `id`.
    pub fn batch(id: &str) -> String {
        serde_json::to_string(&TranscriptField {
            batch: id.to_string(),
        })
        .unwrap_or_default()
    }

    /// The batch a field's value points to, when it is a pointer.
    pub fn parse(text: &str) -> Option<TranscriptField> {
        serde_json::from_str(text).ok()
    }
}

impl Meta {
    /// The transcripts a job's runs left, as Redis holds them (untrusted
    /// text), by run, oldest first: a run's own, or its batch's (one `GET`
    /// per batch pointed to). A pointer whose batch transcript expired is
    /// left out.
    pub async fn transcripts(
        &self,
        queue: &str,
        id: &str,
    ) -> Result<Vec<(u32, String)>, QueueError> {
        let fields = self.store.hgetall(&self.job_key(queue, id)).await?;
        let mut runs: Vec<(u32, String)> = fields
            .into_iter()
            .filter_map(|(name, text)| {
                let run = name.strip_prefix(fields::TRANSCRIPT_PREFIX)?.parse().ok()?;
                Some((run, text))
            })
            .collect();
        runs.sort_by_key(|(run, _)| *run);
        let mut resolved = Vec::with_capacity(runs.len());
        for (run, text) in runs {
            let Some(pointer) = TranscriptField::parse(&text) else {
                resolved.push((run, text));
                continue;
            };
            let key = self.store.keys().batch_transcript(queue, &pointer.batch);
            let batch: Option<String> = self.store.conn().get(key).await?;
            if let Some(batch) = batch {
                resolved.push((run, batch));
            }
        }
        Ok(resolved)
    }

    /// Keeps batch `id`'s transcript (`transcript`, JSON) for its jobs'
    /// runs to point to, for `ttl`.
    pub async fn keep_batch_transcript(
        &self,
        queue: &str,
        id: &str,
        transcript: &str,
        ttl: std::time::Duration,
    ) -> Result<(), QueueError> {
        let key = self.store.keys().batch_transcript(queue, id);
        let _: () = self
            .store
            .conn()
            .set_ex(key, transcript, ttl.as_secs())
            .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pointer_is_told_from_a_transcript() {
        let pointer = TranscriptField::batch("h-1a2b3c4d-7");
        assert_eq!(pointer, r#"{"batch":"h-1a2b3c4d-7"}"#);
        assert_eq!(
            TranscriptField::parse(&pointer).map(|p| p.batch),
            Some("h-1a2b3c4d-7".to_string())
        );
        let transcript = r#"{"job":{"id":"1"},"batch":"x","calls":[]}"#;
        assert_eq!(TranscriptField::parse(transcript), None);
    }
}
