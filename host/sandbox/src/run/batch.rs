//! A batch run: one fresh instance, one call of the `batch-handler`
//! world's `run-batch` export with many jobs, under one deadline, one
//! fuel budget and one memory cap, and one outcome per job when the call
//! answered one per job. The phases are a single run's ([`super`]): the
//! store, the call raced against its deadline and stop, how it ended, the
//! instance dropped (a batch never keeps a warm instance).
//!
//! How the batch ends for each job:
//! - the call returned a list of one outcome per job: each is classified
//!   as a run's result is (output limit, redaction, JSON parse; `retry`
//!   or `fatal`), on its own;
//! - it returned a list of another length: every job fails as
//!   `guest_fatal`, saying so;
//! - the guest trapped, ran out of fuel or memory, passed its deadline or
//!   was stopped: every job fails with that kind (`classify`), so a kind
//!   that retries retries every job;
//! - it made a call that belongs to one job (`run_state::batch`): every
//!   job fails as `guest_fatal`, naming the call.

use std::time::Instant;

use super::classify::{classify, classify_instantiation};
use super::{Ended, Instance, Run, deadline_passed, ready_for_call, wit_job};
use crate::bindings::{Job, JobError};
use crate::run_state::RunState;
use crate::transcript::{BatchedJob, RecordedJob, RecordedOutcome};
use crate::{
    Completion, Failure, FailureKind, HostServices, JobInput, Limits, LoadedComponent, LogListener,
    RunEnv, RunOutcome, Sandbox, StopSignal,
};
use airlock_core::clock::now_ms;

/// The name of the `batch-handler` world's export.
pub const RUN_BATCH: &str = "run-batch";

/// How a batch run ended.
#[derive(Debug)]
pub struct BatchOutcome {
    /// The run's own end and measurements (fuel, memory and wall time are
    /// the whole batch's; its logs are the batch's). `completion` is
    /// `Completed(null)` when each job has an outcome in `jobs`, else the
    /// failure every job of the batch ends with.
    pub run: RunOutcome,
    /// One outcome per job, in the order of the call's jobs; `None` when
    /// the batch failed as a whole.
    pub jobs: Option<Vec<Completion>>,
}

impl BatchOutcome {
    /// A batch that failed before its guest could start: every job ends
    /// with `failure`, nothing measured.
    pub fn failed(failure: Failure) -> BatchOutcome {
        BatchOutcome {
            run: RunOutcome {
                completion: Completion::Failed(failure),
                fuel_used: None,
                peak_memory_bytes: 0,
                wall_time: std::time::Duration::ZERO,
                logs: Vec::new(),
                logs_dropped_bytes: 0,
                logs_dropped_lines: 0,
                http: Default::default(),
                warm: false,
                transcript: None,
            },
            jobs: None,
        }
    }
}

impl Sandbox {
    /// Runs `jobs` as one batch on this sandbox's guest runtime (a running
    /// guest holds none of the caller's threads), in a fresh instance.
    /// `env.reuse` does not apply to a batch and is ignored; `env.batch` is
    /// set here. With `env.transcript`, the batch has one transcript, which
    /// lists each job with its end.
    pub async fn run_batch_isolated(
        self: &std::sync::Arc<Self>,
        component: std::sync::Arc<LoadedComponent>,
        jobs: Vec<JobInput>,
        limits: Limits,
        services: Box<dyn HostServices>,
        log_listener: Option<LogListener>,
        env: RunEnv,
    ) -> BatchOutcome {
        let sandbox = self.clone();
        let started = Instant::now();
        let run = async move {
            sandbox
                .run_batch_async(&component, jobs, &limits, services, log_listener, env)
                .await
        };
        match self.guest_runtime().spawn(run).await {
            Ok(outcome) => outcome,
            // Only a bug in the host itself (a panic in the run) can get
            // here: every job still gets a definite, final outcome.
            Err(e) => {
                let mut failed = BatchOutcome::failed(Failure::new(
                    FailureKind::Instantiation,
                    format!("sandbox task failed: {e}"),
                ));
                failed.run.wall_time = started.elapsed();
                failed
            }
        }
    }

    /// Runs `jobs` as one batch on the current runtime: a fresh store, the
    /// `run-batch` call under the run's deadline and stop, each job's
    /// outcome classified, the instance dropped.
    pub async fn run_batch_async(
        &self,
        component: &LoadedComponent,
        jobs: Vec<JobInput>,
        limits: &Limits,
        services: Box<dyn HostServices>,
        log_listener: Option<LogListener>,
        mut env: RunEnv,
    ) -> BatchOutcome {
        env.reuse = None;
        env.batch = true;
        let recorded = env.transcript.is_some().then(|| jobs.clone());
        let failed = |run: Run, failure| {
            let ended = Ended::before_start(failure);
            let batch = recorded_ends(recorded.as_deref(), &ended.completion, None);
            BatchOutcome {
                run: run.outcome_with(ended, batch),
                jobs: None,
            }
        };
        let Some(first) = jobs.first().cloned() else {
            let run = Run::begin(None, limits, log_listener, &env, &JobInput::default());
            let failure = Failure::new(FailureKind::Instantiation, "a batch of no jobs");
            return failed(run, failure);
        };
        let metered = limits.fuel.is_some();
        let pre = self.compiled(component, metered);
        let run = Run::begin(None, limits, log_listener, &env, &first);
        if let Err(e) = limits.check_within(&self.config.maxima) {
            return failed(run, Failure::new(FailureKind::Instantiation, e.to_string()));
        }
        let pre = match pre {
            Ok(pre) => pre,
            Err(e) => return failed(run, Failure::new(FailureKind::Instantiation, e)),
        };
        let deadline = run.started + limits.timeout;
        let stop = env.stop.clone();
        let count = jobs.len();
        let mut instance =
            self.instance(metered, services, limits, env, deadline, &run.sink, &first);
        let (completion, outcomes) = self
            .call_batch(&mut instance, &pre, jobs, limits, stop, deadline)
            .await;
        let ended = self.settle(instance, completion, None, limits, None, None, false);
        let jobs = match (&ended.completion, outcomes) {
            (Completion::Completed(_), Some(outcomes)) if outcomes.len() == count => Some(outcomes),
            _ => None,
        };
        let batch = recorded_ends(recorded.as_deref(), &ended.completion, jobs.as_deref());
        BatchOutcome {
            run: run.outcome_with(ended, batch),
            jobs,
        }
    }

    /// Instantiates the batch's instance and calls `run-batch` with
    /// `jobs`, racing the call against the deadline and a stop, as
    /// [`Sandbox::call`] does for one job. The batch's completion (see
    /// [`BatchOutcome::run`]) and, when it answered one per job, each
    /// job's.
    async fn call_batch(
        &self,
        instance: &mut Instance,
        pre: &crate::bindings::HandlerPre<RunState>,
        jobs: Vec<JobInput>,
        limits: &Limits,
        stop: Option<StopSignal>,
        deadline: Instant,
    ) -> (Completion, Option<Vec<Completion>>) {
        let store = &mut instance.store;
        ready_for_call(store, limits);
        let count = jobs.len();
        let started_at_ms = now_ms();
        let wit_jobs: Vec<Job> = jobs
            .into_iter()
            .map(|job| wit_job(job, started_at_ms))
            .collect();
        let stopped = async {
            match stop {
                Some(mut signal) => signal.stopped().await,
                None => std::future::pending().await,
            }
        };
        type Outcomes = Vec<Result<String, JobError>>;
        let ran = tokio::select! {
            biased;
            failure = stopped => Err(Some(failure)),
            ran = tokio::time::timeout_at(deadline.into(), async {
                let began = std::time::SystemTime::now();
                let instantiated = self.instantiate_instance(pre, &mut *store).await;
                let failed = instantiated.as_ref().err().map(|e| format!("{e:#}"));
                store.data().note_instantiation(began, failed);
                let instance = instantiated.map_err(Err)?;
                let func = instance
                    .get_typed_func::<(Vec<Job>,), (Outcomes,)>(&mut *store, RUN_BATCH)
                    .map_err(Ok)?;
                Ok(func.call_async(&mut *store, (wit_jobs,)).await.map(|(o,)| o))
            }) => ran.map_err(|_| None),
        };
        let failed = |failure| (Completion::Failed(failure), None);
        match ran {
            Ok(Ok(result)) => {
                let state = store.data();
                // A call that belongs to one job ended the batch, whatever
                // the guest did after the error it was answered.
                if let Some(ended) = state.ended.clone() {
                    return (ended, None);
                }
                let outcomes = match result {
                    Ok(outcomes) => outcomes,
                    Err(trap) => return (classify(Err(trap), state, limits), None),
                };
                if outcomes.len() != count {
                    return failed(Failure::new(
                        FailureKind::GuestFatal,
                        format!(
                            "`run-batch` answered {} outcomes for a batch of {count} jobs",
                            outcomes.len()
                        ),
                    ));
                }
                // Each job's failure reason through the run's redaction, as
                // a single run's is (`settle`); outputs were redacted by
                // `classify`.
                let each = outcomes
                    .into_iter()
                    .map(|outcome| match classify(Ok(outcome), state, limits) {
                        Completion::Failed(mut f) => {
                            f.message = state.redact(f.message);
                            Completion::Failed(f)
                        }
                        other => other,
                    })
                    .collect();
                (Completion::Completed(serde_json::Value::Null), Some(each))
            }
            // The component has no `run-batch` (a binding checks this
            // before it takes `batch`; a component replaced since).
            Ok(Err(Ok(e))) => failed(Failure::new(
                FailureKind::Instantiation,
                format!("the component exports no `{RUN_BATCH}`: {e:#}"),
            )),
            Ok(Err(Err(e))) => failed(classify_instantiation(&e, store.data(), limits)),
            Err(Some(failure)) => failed(failure),
            Err(None) => failed(deadline_passed(limits)),
        }
    }
}

/// A recorded batch's jobs (`jobs`, when the batch records a transcript)
/// with their ends: each its own (`each`), or the batch's `completion`
/// when it failed as a whole.
fn recorded_ends(
    jobs: Option<&[JobInput]>,
    completion: &Completion,
    each: Option<&[Completion]>,
) -> Option<Vec<BatchedJob>> {
    let jobs = jobs?;
    Some(
        jobs.iter()
            .enumerate()
            .map(|(i, job)| BatchedJob {
                job: RecordedJob::from(job),
                outcome: RecordedOutcome::from(each.and_then(|e| e.get(i)).unwrap_or(completion)),
            })
            .collect(),
    )
}
