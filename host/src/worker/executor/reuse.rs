//! Which warm instances a job may run in: only those of its own verified
//! producer (or of jobs that carry none), never another producer's.

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
        let producer = if pinned {
            known
        } else {
            match self.host.queues.state().meta.producer(job.job_key()).await {
                Ok(p) => p,
                Err(e) => {
                    tracing::debug!(error = %e, "read the job's producer; running it in a fresh instance");
                    return None;
                }
            }
        };
        let producer_part = match &producer.name {
            None => "-".to_string(),
            Some(_) => {
                let input = job.input();
                let meta = &self.host.queues.state().meta;
                let name =
                    meta.verified(&producer, job.queue(), job.id(), &input.name, &input.data)?;
                format!("p:{name}")
            }
        };
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
}
