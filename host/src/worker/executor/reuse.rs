//! Which warm instances a job may run in: only those of its own verified
//! producer (or of jobs that carry none), never another producer's; the
//! same verified owner keeps batches apart (`batched.rs`).

use super::*;

impl Executor {
    /// How a run of a binding with warm instances may share its instance:
    /// with jobs of the same queue, binding resolution and producer — the
    /// API token that enqueued it when Airlock's seal on that verifies
    /// (the producer fields are read from the job hash, where anyone who
    /// can write to Redis can write them; the seal they cannot write), or
    /// "no producer" for jobs that carry none (what BullMQ's own producers
    /// add). A job whose producer is not sealed, or not verifiably (this
    /// host has no secrets key, or the seal is wrong), gets a fresh
    /// instance of its own. `known` is the producer the pin read, if it
    /// ran; otherwise it is read here (one `HMGET`).
    pub(super) async fn reuse<J: RunningJob>(
        &self,
        job: &J,
        resolved: &ResolvedBinding,
        warm: &WarmInstances,
        known: Producer,
        pinned: bool,
    ) -> Option<Reuse> {
        let producer_part = self
            .verified_owner(job, &job.input(), known, pinned)
            .await?;
        Some(Reuse {
            owner: format!(
                "{}\n{producer_part}\n{}",
                resolved.binding.queue, resolved.resolution
            ),
            max_jobs: warm.max_jobs,
            max_idle: Duration::from_millis(warm.idle_ms),
            max_kept: resolved.binding.concurrency,
        })
    }

    /// Whom a job's run may share an instance or a batch with, by its
    /// producer: `-` for a job that carries none, `p:<name>` for one whose
    /// seal verifies, `None` for one whose producer does not verify or
    /// cannot be read (it shares with no one). `known` is the producer the
    /// pin read, when it ran (`pinned`); otherwise it is read here (one
    /// `HMGET`).
    pub(super) async fn verified_owner<J: RunningJob>(
        &self,
        job: &J,
        input: &airlock_core::run::JobInput,
        known: Producer,
        pinned: bool,
    ) -> Option<String> {
        let meta = &self.host.queues.state().meta;
        let producer = if pinned {
            known
        } else {
            match meta.producer(job.job_key()).await {
                Ok(p) => p,
                Err(e) => {
                    tracing::debug!(error = %e, "read the job's producer; it shares with no other job");
                    return None;
                }
            }
        };
        if producer.name.is_none() {
            return Some("-".to_string());
        }
        let name = meta.verified(&producer, job.queue(), job.id(), &input.name, &input.data)?;
        Some(format!("p:{name}"))
    }
}
