//! The run phase of a job of a queue bound with `batch`: the job joins its
//! group ([`crate::worker::batches`]) and waits for its batch's end — or
//! for a stop, which takes it out of a group still gathering — and its
//! outcome becomes the run's, with its share of the batch's measurements.
//! On a host that exports traces, the job's run span is begun and ended as
//! a run of its own's is, and linked to its batch's span.

use super::*;
use crate::registry::Batch;
use crate::state::runs::BatchRef;
use crate::worker::batches::{GroupKey, Joined, Member, RunWith};

impl Executor {
    /// Runs the job in a batch. Progress and logs are in BullMQ when this
    /// returns, as for a run of its own.
    pub(super) async fn run_in_batch<J: RunningJob>(
        &self,
        job: &J,
        resolved: &ResolvedBinding,
        rule: &Batch,
        loaded: &Loaded,
        stop: &StopSignal,
    ) -> Ran {
        let reporter = Reporter::start(job.clone());
        if let Some(stopped) = stop.current() {
            let outcome = BatchOutcome::failed(stopped).run;
            return self
                .ran_in_batch(reporter, outcome, None, None, false)
                .await;
        }
        let traced = match &self.host.traces {
            Some(traces) => Some(
                self.begin_trace(traces, job, &loaded.pinned, &reporter)
                    .await,
            ),
            None => None,
        };
        let input = job.input();
        let key = GroupKey {
            resolution: resolved.resolution,
            digest: loaded.pinned.digest.clone(),
            owner: self.batch_owner(job, &input, loaded).await,
            limits: loaded.limits.clone(),
            // Jobs without a value at the key share the empty key.
            key: rule.key.as_ref().map(|path| {
                serde_json::from_str(&input.data)
                    .ok()
                    .and_then(|data| path.get(&data).map(|v| v.to_string()))
                    .unwrap_or_default()
            }),
        };
        let member = Member::new(
            input,
            reporter.progress_sender(),
            reporter.log_listener(),
            job.job_key().to_string(),
            job.ready_at_ms(),
            traced.as_ref().map(|(_, run, _)| run.span_context()),
        );
        let mut env = resolved.env.clone();
        if resolved.binding.record_transcripts {
            env.transcript = Some(Arc::default());
        }
        let with = RunWith {
            component: loaded.component.clone(),
            env,
            handler: resolved.binding.handler.clone(),
            limits: loaded.limits.clone(),
            starts: resolved.starts.clone(),
            propagate_trace: resolved.binding.propagate_trace,
        };
        let (mut joined, ticket) = self.batches.join(key, rule, with, member);
        let mut signal = stop.clone();
        let mut stopped: Option<Failure> = None;
        let mut streaming = false;
        let stream_at = tokio::time::Instant::now() + super::super::reporter::STREAM_AFTER;
        let joined: Option<Joined> = loop {
            tokio::select! {
                biased;
                joined = &mut joined => break joined.ok(),
                failure = signal.stopped(), if stopped.is_none() => {
                    if self.batches.leave(&ticket) {
                        let outcome = BatchOutcome::failed(failure).run;
                        return self.ran_in_batch(reporter, outcome, traced, None, false).await;
                    }
                    // Its batch runs: the job ends stopped when it has.
                    stopped = Some(failure);
                }
                () = tokio::time::sleep_until(stream_at), if !streaming => {
                    reporter.stream();
                    streaming = true;
                }
            }
        };
        let Some(joined) = joined else {
            let outcome = BatchOutcome::failed(Failure::new(
                FailureKind::HostUnavailable,
                "the job's batch ended without an outcome (the host is stopping)",
            ))
            .run;
            return self
                .ran_in_batch(reporter, outcome, traced, None, false)
                .await;
        };
        let mut outcome = share(&joined);
        if let Some(failure) = stopped {
            outcome.completion = Completion::Failed(failure);
        }
        if let Some((_, run, _)) = &traced {
            run.ran_in_batch(&joined.batch.id, joined.batch.trace.clone());
        }
        let batch = BatchRef {
            id: joined.batch.id.clone(),
            size: joined.batch.size as u32,
        };
        let recorded = joined.batch.outcome.run.transcript.is_some();
        self.ran_in_batch(reporter, outcome, traced, Some(batch), recorded)
            .await
    }

    /// The end of a job's run in a batch, as [`Executor::run_guest`] ends
    /// one of its own: a summary in the log of a run that did not
    /// complete, the reports written, the metrics. `recorded`: the batch
    /// kept a transcript.
    async fn ran_in_batch<J: RunningJob>(
        &self,
        reporter: Reporter<J>,
        outcome: RunOutcome,
        traced: Option<(Arc<Traces>, RunTrace, Arc<RunSpans>)>,
        batch: Option<BatchRef>,
        recorded: bool,
    ) -> Ran {
        if !matches!(outcome.completion, Completion::Completed(_)) {
            reporter.log(summary(&outcome));
        }
        reporter.finish().await;
        self.metrics.record(&outcome);
        Ran {
            outcome,
            traced,
            batch,
            batch_recorded: recorded,
        }
    }

    /// Whom the job's batch belongs to ([`GroupKey::owner`]): its verified
    /// producer, `-` for a job without one, as a warm instance's owner
    /// ([`Executor::verified_owner`]); the job alone when its producer does
    /// not verify or cannot be read. An API job added while its queue was
    /// bound without `batch` has a BullMQ integer id, whose fields the run
    /// did not read: its producer is read then.
    async fn batch_owner<J: RunningJob>(
        &self,
        job: &J,
        input: &airlock_core::run::JobInput,
        loaded: &Loaded,
    ) -> String {
        let known = loaded.pinned.producer.clone();
        self.verified_owner(job, input, known, loaded.carries_state)
            .await
            .unwrap_or_else(|| format!("j:{}", job.id()))
    }
}

/// Job `joined.index`'s view of its batch's run: its own outcome; fuel and
/// wall time split evenly between the batch's jobs; the instance's peak
/// memory; the batch's HTTP counts on its first job only (so a queue's
/// sums stay true). Its logs were the batch's, streamed to it as they came.
fn share(joined: &Joined) -> RunOutcome {
    let run = &joined.batch.outcome.run;
    let jobs = joined.batch.size.max(1);
    RunOutcome {
        completion: joined.batch.completion(joined.index),
        fuel_used: run.fuel_used.map(|f| f / jobs as u64),
        peak_memory_bytes: run.peak_memory_bytes,
        wall_time: run.wall_time / jobs as u32,
        logs: Vec::new(),
        logs_dropped_bytes: run.logs_dropped_bytes,
        logs_dropped_lines: run.logs_dropped_lines,
        http: if joined.index == 0 {
            run.http
        } else {
            Default::default()
        },
        warm: false,
        transcript: None,
    }
}
