//! The finish phase: how a run ended, as its record (queued for the
//! recorder) and as BullMQ's result, and the job parked for a durable
//! sleep or wait.

use super::*;

impl Executor {
    /// How the run ended, as the run's record on the job (queued for the
    /// recorder) and as BullMQ's result: a completion, a failure (retried
    /// or not), a requeue, or the job parked for its durable sleep or
    /// wait.
    pub(super) async fn finish<J: RunningJob>(
        &self,
        job: &J,
        resolved: &ResolvedBinding,
        loaded: &Loaded,
        ran: Ran,
        finish_by: Option<u64>,
    ) -> JobResult {
        let Ran {
            outcome,
            traced,
            batch,
            batch_recorded,
        } = ran;
        let (end, reason) = match &outcome.completion {
            Completion::Completed(_) => (RunEnd::Completed, None),
            Completion::Failed(f) => (RunEnd::Failed(f.kind), Some(f.message.clone())),
            Completion::Suspended {
                on: SuspendedOn::Sleep(_),
                ..
            } => (RunEnd::Slept, None),
            Completion::Suspended {
                on: SuspendedOn::Wait(_) | SuspendedOn::Children(_),
                ..
            } => (RunEnd::Waited, None),
            Completion::Later(_) => (RunEnd::Slept, None),
        };
        if let Some((traces, run, events)) = traced {
            self.end_trace(
                &traces,
                run,
                &events,
                job,
                loaded,
                &outcome,
                end,
                reason.as_deref(),
            );
        }
        let record = RunRecord {
            job_key: job.job_key().to_string(),
            pin: loaded
                .unpinned
                .load(Ordering::Relaxed)
                .then(|| loaded.pinned.digest.clone()),
            peak_memory_bytes: outcome.peak_memory_bytes,
            wall_time_ms: outcome.wall_time.as_secs_f64() * 1000.0,
            fuel_used: outcome.fuel_used,
            http: outcome.http,
            run: job.attempts_started(),
            attempt: job.attempt(),
            started_at_ms: now_ms().saturating_sub(outcome.wall_time.as_millis() as u64),
            ready_at_ms: loaded.pinned.first_run.then(|| job.ready_at_ms()),
            host: self.host.host_id.clone(),
            canary_digest: resolved
                .binding
                .canary
                .is_some()
                .then(|| loaded.pinned.digest.clone()),
            transcript: match (&batch, &outcome.transcript) {
                (Some(batch), _) if batch_recorded => {
                    Some(crate::state::meta::TranscriptField::batch(&batch.id))
                }
                (_, Some(t)) => serde_json::to_string(t).ok(),
                _ => None,
            }
            .filter(|_| job.attempts_started() <= MAX_TRANSCRIPT_RUNS),
            batch,
            parked_on: match &outcome.completion {
                Completion::Suspended { on, .. } => Some(on.id().to_string()),
                _ => None,
            },
            end,
            reason,
        };
        // Queued, not awaited: the recorder writes it in its next batch,
        // around the time BullMQ finishes the job (`super::recorder`).
        self.recorder.record(record);

        match outcome.completion {
            Completion::Completed(value) => JobResult::Completed(value),
            Completion::Failed(failure) => Self::fail(failure),
            Completion::Later(later) => self.later(job, resolved, later, finish_by).await,
            Completion::Suspended {
                wake_at_ms,
                on: SuspendedOn::Children(_),
            } => self.wait_for_children(job, wake_at_ms, finish_by).await,
            Completion::Suspended { wake_at_ms, on } => {
                // A sleep past the job's time to finish wakes at it instead,
                // to fail as `timed_out` when it is taken again.
                let wake_at_ms = match finish_by {
                    Some(deadline) => wake_at_ms.min(deadline),
                    None => wake_at_ms,
                };
                let park = || job.park_until(wake_at_ms.max(now_ms()));
                match retrying("park the job", park).await {
                    Ok(()) => {
                        if let Some(wait) = on.wait() {
                            self.wake_if_answered(job, wait).await;
                        }
                        JobResult::Parked
                    }
                    Err(e) => Self::fail(Failure::new(
                        FailureKind::HostUnavailable,
                        format!("could not park the job for its durable sleep: {e:#}"),
                    )),
                }
            }
        }
    }

    /// Parks a job whose invoke started its children until they have
    /// ended: in BullMQ's `waiting-children`, with its deadline (or its
    /// time to finish) noted for the sweep that detaches what is still
    /// running then (`worker::starts`). Children that all ended before
    /// the park leave nothing pending: the job runs again at once.
    async fn wait_for_children<J: RunningJob>(
        &self,
        job: &J,
        deadline: u64,
        finish_by: Option<u64>,
    ) -> JobResult {
        let deadline = match finish_by {
            Some(by) => deadline.min(by),
            None => deadline,
        };
        if deadline != u64::MAX {
            let deadlines = &self.host.queues.state().invoke_deadlines;
            let note = || deadlines.note(job.queue(), job.id(), deadline);
            if let Err(e) = retrying("note the invoke's deadline", note).await {
                return Self::fail(Failure::new(
                    FailureKind::HostUnavailable,
                    format!("could not note the invoke's deadline: {e:#}"),
                ));
            }
        }
        match retrying("wait for the children", || job.park_for_children()).await {
            Ok(true) => JobResult::WaitingChildren,
            Ok(false) => JobResult::Again,
            Err(e) => Self::fail(Failure::new(
                FailureKind::HostUnavailable,
                format!("could not park the job for its children: {e:#}"),
            )),
        }
    }

    /// A job whose handler asked to run again later: delayed
    /// (`retry-after`), or back to waiting with its queue paused
    /// (`rate-limit`, where the binding has a `rateLimit` for BullMQ to
    /// read; delayed like a retry-after elsewhere). No attempt is used.
    async fn later<J: RunningJob>(
        &self,
        job: &J,
        resolved: &ResolvedBinding,
        later: crate::sandbox::Later,
        finish_by: Option<u64>,
    ) -> JobResult {
        use crate::sandbox::Later;
        let delay_ms = match later {
            Later::RateLimit { duration_ms, .. } if resolved.binding.rate_limit.is_some() => {
                let pause = || self.host.queues.pause_for(job.queue(), duration_ms);
                return match retrying("pause the queue", pause).await {
                    Ok(()) => JobResult::Again,
                    Err(e) => Self::fail(Failure::new(
                        FailureKind::HostUnavailable,
                        format!("could not pause the queue: {e:#}"),
                    )),
                };
            }
            Later::RateLimit { duration_ms, .. } => {
                let line = format!(
                    "[airlock] queue `{}` has no rateLimit in its binding, so BullMQ reads no limiter: this job alone waits {duration_ms} ms",
                    job.queue()
                );
                if let Err(e) = job.log(&line).await {
                    tracing::debug!(error = %e, "log a rate limit without a limiter");
                }
                duration_ms
            }
            Later::RetryAfter { delay_ms, .. } => delay_ms,
        };
        let mut wake_at_ms = now_ms().saturating_add(delay_ms);
        if let Some(deadline) = finish_by {
            wake_at_ms = wake_at_ms.min(deadline);
        }
        match retrying("delay the job", || job.park_until(wake_at_ms)).await {
            Ok(()) => JobResult::Parked,
            Err(e) => Self::fail(Failure::new(
                FailureKind::HostUnavailable,
                format!("could not delay the job: {e:#}"),
            )),
        }
    }

    /// After parking a job for wait `wait`: an outcome that came while it
    /// still ran found it not delayed yet, so wake it now (crash window: a
    /// host that dies before this leaves the job to find the outcome at
    /// its deadline; see `state::waits`).
    pub(super) async fn wake_if_answered<J: RunningJob>(&self, job: &J, wait: &str) {
        let waits = Waits::new(
            self.host.queues.store().clone(),
            job.queue(),
            job.id(),
            job.job_key(),
        );
        let answered = match waits.outcome(wait).await {
            Ok(outcome) => outcome.is_some(),
            Err(e) => {
                tracing::warn!(queue = job.queue(), id = job.id(), error = %e, "read a wait's outcome after parking");
                false
            }
        };
        if answered && let Err(e) = self.host.queues.wake_waiting(job.queue(), job.id()).await {
            tracing::warn!(queue = job.queue(), id = job.id(), error = %e, "wake a waiting job");
        }
    }
}

pub(super) fn summary(outcome: &RunOutcome) -> String {
    let ending = match &outcome.completion {
        Completion::Completed(_) => "completed".to_string(),
        Completion::Failed(f) => format!("failed ({})", f.kind),
        Completion::Suspended {
            wake_at_ms,
            on: SuspendedOn::Sleep(_),
        } => format!("suspended until {wake_at_ms}"),
        Completion::Suspended {
            wake_at_ms,
            on: SuspendedOn::Wait(wait),
        } => format!("waiting (`{wait}`) until {wake_at_ms}"),
        Completion::Suspended {
            on: SuspendedOn::Children(step),
            ..
        } => format!("waiting for the children of `{step}`"),
        Completion::Later(crate::sandbox::Later::RetryAfter { delay_ms, reason }) => {
            format!("to run again in {delay_ms} ms ({reason})")
        }
        Completion::Later(crate::sandbox::Later::RateLimit {
            duration_ms,
            reason,
        }) => format!("rate limited for {duration_ms} ms ({reason})"),
    };
    let fuel = outcome
        .fuel_used
        .map(|f| f.to_string())
        .unwrap_or_else(|| "unmetered".into());
    let mut line = format!(
        "[airlock] run {ending}: fuel {fuel}, peak memory {} bytes, wall time {:.3} ms",
        outcome.peak_memory_bytes,
        outcome.wall_time.as_secs_f64() * 1000.0
    );
    if outcome.logs_dropped_lines > 0 {
        line.push_str(&format!(
            ", {} log lines ({} bytes) dropped (cap)",
            outcome.logs_dropped_lines, outcome.logs_dropped_bytes
        ));
    }
    line
}
