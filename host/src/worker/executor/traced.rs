//! The run's trace: its span begun before the guest starts (after a span
//! of what the job waited for) and ended with what the run did, and the
//! job's trace context read from its hash. Only for a host that exports
//! traces: a host without them calls none of this.

use super::*;

impl Executor {
    /// The run's span, begun now (its ids go into the job's log), after a
    /// span of what the job waited for since it was added or since the run
    /// before ended; and the spans the sandbox notes under it.
    pub(super) async fn begin_trace<J: RunningJob>(
        &self,
        traces: &Arc<Traces>,
        job: &J,
        pinned: &Pinned,
        reporter: &Reporter<J>,
    ) -> (Arc<Traces>, RunTrace, Arc<RunSpans>) {
        let this_run = job.attempts_started();
        let previous = (!pinned.first_run && this_run > 1).then(|| this_run - 1);
        let (parent, previous_entry) = self.trace_fields(job, previous).await;
        let before = if pinned.first_run {
            Some(traces::Before::FirstRun {
                added_ms: job.enqueued_at_ms(),
                ready_ms: job.ready_at_ms(),
            })
        } else {
            previous_entry.and_then(|text| traces::Before::after(&text, this_run))
        };
        if let Some(before) = &before {
            traces.before_run(job.queue(), job.id(), parent.as_deref(), before);
        }
        let run = traces.start_run(job.queue(), job.id(), parent.as_deref());
        if let Some(line) = run.log_line() {
            reporter.log(line);
        }
        (traces.clone(), run, Arc::new(RunSpans::default()))
    }

    /// Ends the run's span with what the run did.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn end_trace<J: RunningJob>(
        &self,
        traces: &Traces,
        run: RunTrace,
        spans: &RunSpans,
        job: &J,
        loaded: &Loaded,
        outcome: &RunOutcome,
        end: RunEnd,
        reason: Option<&str>,
    ) {
        let (spans, spans_dropped) = spans.take();
        let failure_kind = match &end {
            RunEnd::Failed(kind) => Some(kind.as_str()),
            _ => None,
        };
        let input = job.input();
        let flow_parent = input
            .parent
            .as_ref()
            .map(|(q, id)| airlock_core::job_ref::join(q, id));
        traces.end_run(
            run,
            RunEnded {
                name: &input.name,
                flow_parent: flow_parent.as_deref(),
                run: job.attempts_started(),
                attempt: job.attempt(),
                digest: &loaded.pinned.digest,
                host: &self.host.host_id,
                fuel_used: outcome.fuel_used,
                peak_memory_bytes: outcome.peak_memory_bytes,
                end: end.as_str(),
                failure_kind,
                reason,
                spans,
                spans_dropped,
            },
        );
    }

    /// The trace context the job carries, as metadata (see `crate::traces`):
    /// its `airlock.trace`, else the `tm` of its BullMQ options; `None`
    /// when it has neither (or they cannot be read: the run's span then
    /// starts a trace of its own).
    pub(super) async fn trace_context<J: RunningJob>(&self, job: &J) -> Option<String> {
        self.trace_fields(job, None).await.0
    }

    /// The job's trace context (as [`Self::trace_context`]) and, with
    /// `previous_run`, that run's history entry as Redis holds it; read
    /// together.
    pub(super) async fn trace_fields<J: RunningJob>(
        &self,
        job: &J,
        previous_run: Option<u32>,
    ) -> (Option<String>, Option<String>) {
        let meta = &self.host.queues.state().meta;
        match meta.trace(job.job_key(), previous_run).await {
            Ok(read) => {
                let context = read
                    .context
                    .filter(|m| traces::context_of_metadata(m).is_some())
                    .or_else(|| read.opts.as_deref().and_then(traces::context_in_opts));
                (context, read.previous_run)
            }
            Err(e) => {
                tracing::debug!(queue = job.queue(), id = job.id(), error = %e, "read the job's trace context");
                (None, None)
            }
        }
    }
}
