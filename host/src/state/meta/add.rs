//! Adding a job with state of its own (see the module docs of
//! [`super`]): the claim on its id before BullMQ's add, the commit of its
//! pending state after it, the release of a claim not followed by an add,
//! and the producer of a job with a fresh BullMQ-generated id.

use std::time::Duration;

use airlock_core::limits::LimitsOverride;
use redis::AsyncCommands;

use super::{CLAIM, COMMIT, HSETNX_IF_EXISTS, Meta, query_scripts};
use crate::error::QueueError;
use crate::state::fields;

/// How long a pending hash waits for its job (see the module docs of
/// `state::meta`).
const PENDING_TTL: Duration = Duration::from_secs(7 * 24 * 60 * 60);

/// The claimant of an add without a producer (an operator's own tooling).
const NO_PRODUCER: &str = "-";

/// What a job brings along when it is added through Airlock.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pending {
    /// The API token that enqueued it.
    pub producer: Option<String>,
    /// Airlock's seal on the producer ([`Meta::seal`]), when there is one.
    pub seal: Option<String>,
    /// Its per-job limits.
    pub limits: Option<LimitsOverride>,
    /// The trace its runs continue (`crate::traces`).
    pub trace: Option<String>,
}

impl Pending {
    /// Whether there is anything to carry.
    pub fn is_empty(&self) -> bool {
        self.producer.is_none() && self.limits.is_none() && self.trace.is_none()
    }

    fn claimant(&self) -> &str {
        self.producer.as_deref().unwrap_or(NO_PRODUCER)
    }

    fn fields(&self) -> Result<Vec<(&'static str, String)>, QueueError> {
        let mut out = Vec::new();
        if let Some(p) = &self.producer {
            out.push((fields::PRODUCER, p.clone()));
            if let Some(seal) = &self.seal {
                out.push((fields::PRODUCER_SEAL, seal.clone()));
            }
        }
        if let Some(l) = &self.limits {
            out.push((fields::LIMITS, serde_json::to_string(l)?));
        }
        if let Some(t) = &self.trace {
            out.push((fields::TRACE, t.clone()));
        }
        Ok(out)
    }
}

/// Outcome of [`Meta::claim`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// The id is free and now claimed: go on with the add.
    Mine,
    /// A job with this id exists: the add is a duplicate.
    Exists,
    /// Another producer is adding a job with this id right now.
    Taken,
}

impl Meta {
    /// Claims the ids of jobs about to be added (one round trip for all).
    pub async fn claim(
        &self,
        queue: &str,
        jobs: &[(&str, &Pending)],
    ) -> Result<Vec<Claim>, QueueError> {
        if jobs.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        for (id, pending) in jobs {
            let mut invocation = CLAIM.key(self.job_key(queue, id));
            invocation
                .key(self.pending_key(queue, id))
                .arg(pending.claimant())
                .arg(PENDING_TTL.as_millis() as u64);
            for (field, value) in pending.fields()? {
                invocation.arg(field).arg(value);
            }
            pipe.invoke_script(&invocation);
        }
        let mut conn = self.store.conn();
        let codes: Vec<i64> = query_scripts(&mut conn, &pipe, &[&CLAIM]).await?;
        Ok(codes
            .into_iter()
            .map(|c| match c {
                1 => Claim::Mine,
                2 => Claim::Taken,
                _ => Claim::Exists,
            })
            .collect())
    }

    /// Moves the pending state of these jobs into their hashes (one round
    /// trip for all).
    pub async fn commit(&self, queue: &str, ids: &[&str]) -> Result<(), QueueError> {
        if ids.is_empty() {
            return Ok(());
        }
        let mut pipe = redis::pipe();
        for id in ids {
            let mut invocation = COMMIT.key(self.job_key(queue, id));
            invocation.key(self.pending_key(queue, id));
            pipe.invoke_script(&invocation).ignore();
        }
        let mut conn = self.store.conn();
        query_scripts::<()>(&mut conn, &pipe, &[&COMMIT]).await
    }

    /// Withdraws claims that were not followed by an add.
    pub async fn release(&self, queue: &str, ids: &[&str]) -> Result<(), QueueError> {
        if ids.is_empty() {
            return Ok(());
        }
        let keys: Vec<String> = ids.iter().map(|id| self.pending_key(queue, id)).collect();
        let mut conn = self.store.conn();
        let _: i64 = conn.del(keys).await?;
        Ok(())
    }

    /// Records the producer of jobs that got fresh BullMQ-generated ids
    /// (no other add can share such an id, so there is nothing to claim).
    /// With each id, its producer's seal when there is one: written only
    /// beside a producer this call wrote (a seal of another producer would
    /// not verify anyway).
    pub async fn set_producer(
        &self,
        queue: &str,
        ids: &[(&str, Option<String>)],
        producer: &str,
    ) -> Result<(), QueueError> {
        if ids.is_empty() {
            return Ok(());
        }
        let mut pipe = redis::pipe();
        for (id, seal) in ids {
            let mut invocation = HSETNX_IF_EXISTS.key(self.job_key(queue, id));
            invocation.arg(fields::PRODUCER).arg(producer);
            pipe.invoke_script(&invocation).ignore();
            if let Some(seal) = seal {
                let mut invocation = HSETNX_IF_EXISTS.key(self.job_key(queue, id));
                invocation.arg(fields::PRODUCER_SEAL).arg(seal);
                pipe.invoke_script(&invocation).ignore();
            }
        }
        let mut conn = self.store.conn();
        query_scripts::<()>(&mut conn, &pipe, &[&HSETNX_IF_EXISTS]).await
    }
}
