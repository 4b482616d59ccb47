//! What a job runs, before its run: its pin (digest, per-job limits,
//! producer), read only for a job that may carry state of its own (see the
//! module docs of [`super`]).

use super::*;

impl Executor {
    /// What the job runs: for a job that may carry state of its own (see
    /// the module docs), its Airlock fields, read and pinned in one script;
    /// otherwise the binding's digest for it, and nothing read. With
    /// whether the fields were read.
    pub(super) async fn pinned<J: RunningJob>(
        &self,
        job: &J,
        resolved: &ResolvedBinding,
    ) -> Result<(Pinned, bool), JobResult> {
        let carries_state =
            job.attempts_started() > 1 || !job.id().bytes().all(|b| b.is_ascii_digit());
        // The version a job not pinned yet runs (a canary's share runs
        // its candidate); a pinned job keeps its own.
        let unpinned_digest = resolved.digest_for(job.queue(), job.id());
        if !carries_state {
            return Ok((
                Pinned {
                    digest: unpinned_digest.to_string(),
                    limits: None,
                    producer: Producer::default(),
                    // A first start of a BullMQ integer id.
                    first_run: true,
                },
                false,
            ));
        }
        let meta = &self.host.queues.state().meta;
        let pin = || meta.pin(job.queue(), job.id(), unpinned_digest);
        match retrying("pin the job", pin).await {
            Ok(Some(pinned)) => Ok((pinned, true)),
            Ok(None) => Err(JobResult::Failed {
                reason: "the job was removed while it was being started".into(),
                retry: false,
            }),
            Err(e) => Err(Self::fail(Failure::new(
                FailureKind::HostUnavailable,
                format!("could not read the job's Airlock fields: {e:#}"),
            ))),
        }
    }
}
