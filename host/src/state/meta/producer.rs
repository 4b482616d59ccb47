//! Who enqueued a job: its producer fields as Redis holds them
//! (untrusted), and Airlock's seal on them, written by a host with the
//! fleet's secrets key and checked before the producer is trusted.

use super::Meta;
use crate::error::QueueError;
use crate::state::fields;

/// The producer fields of a job hash, as read: untrusted (anyone who can
/// write to Redis can write them) until the seal is checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Producer {
    /// `airlock.producer`.
    pub name: Option<String>,
    /// `airlock.producerSeal`.
    pub seal: Option<String>,
}

impl Meta {
    /// Airlock's seal on `producer` having enqueued job `id` of `queue`
    /// with this name and data ([`airlock_core::seal::ProducerSeal::producer_seal`]), or `None`
    /// without the key.
    pub fn seal(
        &self,
        queue: &str,
        id: &str,
        producer: &str,
        name: &str,
        data: &serde_json::Value,
    ) -> Option<String> {
        let key = self.seal_key.as_ref()?;
        let data = serde_json::to_string(data).ok()?;
        Some(key.producer_seal(queue, id, producer, name, &data))
    }

    /// Who enqueued a job, as its hash says (untrusted until its seal is
    /// checked): one `HMGET`, for jobs [`Meta::pin`] does not read.
    pub async fn producer(&self, job_key: &str) -> Result<Producer, QueueError> {
        let mut conn = self.store.conn();
        let (name, seal): (Option<String>, Option<String>) = redis::cmd("HMGET")
            .arg(job_key)
            .arg(fields::PRODUCER)
            .arg(fields::PRODUCER_SEAL)
            .query_async(&mut conn)
            .await?;
        Ok(Producer { name, seal })
    }

    /// Who enqueued job `id` of `queue`, as Redis holds it (untrusted until
    /// [`Meta::verified`] checks the seal): the job hash's producer fields,
    /// or, when the add's commit has not moved them there yet, its pending
    /// hash's. One round trip.
    pub async fn producer_of(&self, queue: &str, id: &str) -> Result<Producer, QueueError> {
        let read = |key: String| {
            let mut command = redis::cmd("HMGET");
            command
                .arg(key)
                .arg(fields::PRODUCER)
                .arg(fields::PRODUCER_SEAL);
            command
        };
        let mut pipe = redis::pipe();
        pipe.add_command(read(self.job_key(queue, id)))
            .add_command(read(self.pending_key(queue, id)));
        type Pair = (Option<String>, Option<String>);
        let ((name, seal), (pending_name, pending_seal)): (Pair, Pair) =
            pipe.query_async(&mut self.store.conn()).await?;
        Ok(match name {
            Some(name) => Producer {
                name: Some(name),
                seal,
            },
            None => Producer {
                name: pending_name,
                seal: pending_seal,
            },
        })
    }

    /// The producers of jobs `ids` of `queue` as [`Meta::producer_of`]
    /// reads them, names only (unchecked: for ordering decisions, never
    /// for trust). One round trip.
    pub async fn producer_names(
        &self,
        queue: &str,
        ids: &[String],
    ) -> Result<Vec<Option<String>>, QueueError> {
        let mut pipe = redis::pipe();
        for id in ids {
            pipe.hget(self.job_key(queue, id), fields::PRODUCER)
                .hget(self.pending_key(queue, id), fields::PRODUCER);
        }
        let names: Vec<Option<String>> = pipe.query_async(&mut self.store.conn()).await?;
        Ok(names
            .chunks(2)
            .map(|pair| pair[0].clone().or_else(|| pair[1].clone()))
            .collect())
    }

    /// The producer's name when `producer`'s seal is Airlock's on it having
    /// enqueued job `id` of `queue` with this name and data (JSON text as
    /// BullMQ holds it); `None` when it has no producer, no seal, a wrong
    /// one, or this host has no secrets key to tell.
    pub fn verified(
        &self,
        producer: &Producer,
        queue: &str,
        id: &str,
        name: &str,
        data: &str,
    ) -> Option<String> {
        let (who, seal) = (producer.name.as_ref()?, producer.seal.as_ref()?);
        let key = self.seal_key.as_ref()?;
        key.producer_seal_matches(seal, queue, id, who, name, data)
            .then(|| who.clone())
    }

    /// The producer a job's children and announcements inherit: with the
    /// fleet's secrets key, only the one Airlock sealed on the job
    /// ([`Meta::verified`]); without it, the field as the API reads it
    /// for access (a host without the key seals nothing, so there is no
    /// seal to hold the field to).
    pub fn inherited(
        &self,
        producer: &Producer,
        queue: &str,
        id: &str,
        name: &str,
        data: &str,
    ) -> Option<String> {
        match &self.seal_key {
            Some(_) => self.verified(producer, queue, id, name, data),
            None => producer.name.clone(),
        }
    }
}
