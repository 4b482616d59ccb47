//! Runs one queued job in the sandbox and maps the outcome onto BullMQ. A
//! run reads as its four phases:
//! 1. **admit** ([`Executor::admit`]): the run registers where a cancel
//!    can stop it ([`super::cancels`]), fails at once past the job's time
//!    to finish, and flow control decides ([`crate::gate`]): run, holding
//!    its key slots; park; or fail;
//! 2. **load** ([`Executor::load`]): the job's own Airlock fields, when it
//!    may carry any (its pinned digest, per-job limits, producer), its
//!    limits, its component and a capacity permit (a batch holds one for
//!    all its jobs);
//! 3. **run** ([`Executor::run_guest`]): the guest runs on the sandbox's
//!    runtime, its progress and logs streaming into BullMQ
//!    ([`super::reporter`]), its durable calls going to Redis
//!    ([`super::services`]); on a queue bound with `batch`, the job joins
//!    a batch instead and gets its outcome when the batch has run
//!    ([`Executor::run_in_batch`], [`super::batches`]);
//! 4. **finish** ([`Executor::finish`]): how the run ended becomes the
//!    run's record on the job ([`super::recorder`], queued, written around
//!    the time BullMQ finishes the job) and BullMQ's result.
//!
//! What a run reads from Redis before its guest starts, each only when it
//! is needed:
//! - the job's cancel mark, when a cancel request for it was heard lately
//!   ([`super::cancels`]);
//! - flow control's state, for a binding with flow-control rules
//!   ([`crate::gate::admission`]; under fairness by producer, the job's
//!   producer);
//! - the job's own Airlock fields, when it may carry state of its own: a
//!   rerun (BullMQ's `ats` > 1: a retry, a wake-up after a durable sleep,
//!   a recovery) or a job whose id was chosen before its add (not a BullMQ
//!   integer) — [`Meta::pin`](crate::state::meta::Meta::pin), one script
//!   that also pins it;
//! - on a binding with warm instances, the producer of a job the pin
//!   skipped (one `HMGET`);
//! - on a host that exports traces, the job's trace context (one `HMGET`);
//! - a component not loaded on this host yet (its bytes, or an artifact
//!   another host compiled: [`super::loader`]).
//!
//! A first run of an integer-id job on a binding without those rules —
//! what a BullMQ producer adds without options of Airlock's — reads
//! nothing: it runs the handler's current digest (a canary's candidate for
//! its share) under the binding's limits (no per-job limits can exist on
//! such an id). During the run, the job's first durable write pins the
//! digest (a step or sleep in the same script as the record,
//! [`Meta::set_and_pin`](crate::state::meta::Meta::set_and_pin); a KV
//! write one round trip before it). After the run, BullMQ finishes the job
//! and the run's record — with the pin of a run that made no durable write
//! — is written in the recorder's next batch.
//!
//! Crash windows, and why each is safe (a crashed job comes back through
//! a live host's recovery, `worker::recovery`, within seconds, else
//! BullMQ's stalled check):
//! - the host dies before the run: nothing ran; the job is run again from
//!   scratch;
//! - it dies mid-run before any durable write: the job is rerun from the
//!   top, possibly on a newer handler version — there is no recorded state
//!   for the new version to diverge from (the lazy-pinning decision);
//! - it dies mid-run after a durable write: the rerun reads the pinned
//!   digest and replays the steps recorded so far against the same code;
//! - it dies after a step ran but before it was recorded: that step runs
//!   again (at-least-once; guests make side effects idempotent);
//! - it dies after recording a sleep but before parking the job: the job is
//!   recovered, replays, finds the recorded wake-up time and parks again;
//! - it dies after the run but before BullMQ's `moveToFinished`: the job
//!   is run again. Execution is at least once; no job is ever lost.
//!
//! The other state a run touches has its crash windows stated where it is
//! owned: the run's record and tallies (`worker::recorder`), key slots
//! and parking (`state::key_limits`), start rates (`state::key_rates`), a
//! cancel (`queue::cancel`), `cancelOn` sets (`state::cancels`), durable
//! waits (`state::waits`), the run's trace span (`crate::traces`), and the
//! recovery of a dead host's jobs itself (`worker::recovery`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use super::HostContext;
use super::cancels::Registration;
use super::capacity::Permit;
use super::loader::LoadError;
use super::recorder::Recorder;
use super::reporter::Reporter;
use super::services::{PendingPin, RedisServices};
use super::starts::RunStarts;
use crate::gate::{self, Admission, Admit, FinishDeadline};
use crate::metrics::QueueMetrics;
use crate::queue::{ActiveJob, JobProcessor, JobResult, RunningJob};
use crate::registry::WarmInstances;
use crate::sandbox::trace::RunSpans;
use crate::sandbox::{
    BatchOutcome, Completion, Failure, FailureKind, Limits, LoadedComponent, Reuse, RunOutcome,
    StopSignal, SuspendedOn, stop_pair,
};
use crate::state::meta::{Pinned, Producer};
use crate::state::runs::{MAX_TRANSCRIPT_RUNS, RunEnd, RunRecord};
use crate::state::waits::Waits;
use crate::tasks::{AbortOnDrop, retrying};
use crate::traces::{self, RunEnded, RunTrace, Traces};
use airlock_core::clock::now_ms;

mod batched;
mod finish;
mod pinned;
mod resolved;
mod reuse;
mod traced;

use self::finish::summary;
pub use self::resolved::ResolvedBinding;

/// The [`JobProcessor`] of one queue.
pub struct Executor {
    host: Arc<HostContext>,
    /// Swapped when the binding changes ([`Executor::rebind`]); a run
    /// takes the `Arc` (no copy of the binding per job).
    binding: Arc<RwLock<Arc<ResolvedBinding>>>,
    /// Writes finished runs' records onto their jobs, batched, and sums
    /// the queue's tallies.
    recorder: Recorder,
    /// This queue's metric series, resolved once.
    metrics: QueueMetrics,
    /// Flow control's decision before each run.
    admission: Admission,
    /// Refills the queue's key lines every half lease while its binding
    /// has a rule that keeps lines (see `gate::pump`); ends with the
    /// executor.
    pump: Mutex<Option<AbortOnDrop>>,
    /// Key slots of runs that ended, until BullMQ has recorded the end
    /// (see `gate::recorded`).
    recorded_ends: gate::RecordedEnds,
    /// Announces the queue's failures while its binding has `onFailure`
    /// (see `worker::on_failure`); ends with the executor.
    announcer: Mutex<Option<AbortOnDrop>>,
    /// The queue's batches gathering on this host, while its binding has
    /// `batch` (see `worker::batches`).
    batches: Arc<super::batches::Batches>,
}

/// A job flow control let through: what stops its run, and what it holds
/// until the run ends.
struct Cleared {
    /// A cancel, or the job's time to finish, stops the run through it.
    stop: StopSignal,
    /// The run's place among this host's cancellable runs; dropping it
    /// takes the run out.
    _cancels: Registration,
    /// The job's time to finish, with the timer that stops the run there.
    finish: Option<FinishDeadline>,
    /// Key slots and `cancelOn` sets, given back when the run ends.
    admitted: gate::Admitted,
}

/// What a run needs, loaded.
struct Loaded {
    /// The digest, per-job limits and producer the job runs with.
    pinned: Pinned,
    /// Whether its own Airlock fields were read (it may carry state).
    carries_state: bool,
    /// Set while nothing pinned the job: the first durable write, or the
    /// run's record, writes the pin.
    unpinned: Arc<AtomicBool>,
    limits: Limits,
    component: Arc<LoadedComponent>,
    /// Room on this host, held until the run's end; `None` for a job of a
    /// batch (its batch holds room for its one instance).
    _permit: Option<Permit>,
}

/// What a run left.
struct Ran {
    outcome: RunOutcome,
    /// The run's span, when this host exports traces.
    traced: Option<(Arc<Traces>, RunTrace, Arc<RunSpans>)>,
    /// The batch it ran in, for a queue bound with `batch`.
    batch: Option<crate::state::runs::BatchRef>,
    /// Its batch's run was recorded: the job's transcript is the batch's,
    /// kept once under the batch (`Keys::batch_transcript`), and its run
    /// record points there.
    batch_recorded: bool,
}

impl Executor {
    /// An executor for the queue of `binding`.
    pub fn new(host: Arc<HostContext>, binding: Arc<RwLock<Arc<ResolvedBinding>>>) -> Self {
        let queue = binding.read().unwrap().binding.queue.clone();
        let lease = host.worker_settings.lock_duration;
        let current = binding.clone();
        let fairness = move || {
            let resolved = current.read().unwrap();
            let binding = &resolved.binding;
            Some((binding.fairness.clone()?, binding.global_concurrency?))
        };
        let tenants = gate::Tenants::new(host.queues.clone(), &queue, lease, fairness);
        let executor = Executor {
            recorder: Recorder::start(host.queues.state().runs.clone(), &queue),
            metrics: host.metrics.queue(&queue),
            admission: Admission::new(host.queues.clone(), lease, tenants),
            pump: Mutex::new(None),
            recorded_ends: gate::RecordedEnds::new(),
            announcer: Mutex::new(None),
            batches: super::batches::Batches::new(host.clone()),
            host,
            binding,
        };
        executor.follow_rules(true);
        executor
    }

    /// Runs the queue's jobs under `resolved` from now on, starting the
    /// flow-control tasks its rules need (and letting those of rules it
    /// dropped end).
    pub fn rebind(&self, resolved: ResolvedBinding) {
        *self.binding.write().unwrap() = Arc::new(resolved);
        self.follow_rules(false);
    }

    /// Starts what the binding's rules need and is not running: the key
    /// lines' pump (always at `start`, so lines a rule left behind before
    /// this host started are emptied: it ends after a pass without a rule
    /// that keeps lines) and the tenants' refresh and scan (`fairness`).
    fn follow_rules(&self, start: bool) {
        let lines = self.binding.read().unwrap().binding.keeps_lines();
        let mut pump = self.pump.lock().unwrap_or_else(|p| p.into_inner());
        let running = pump.as_ref().is_some_and(|p| !p.0.is_finished());
        if !running && (start || lines) {
            let current = self.binding.clone();
            let lines = move || gate::KeyLines::of(&current.read().unwrap().binding);
            let lease = self.host.worker_settings.lock_duration;
            *pump = Some(AbortOnDrop(tokio::spawn(gate::pump(
                self.host.queues.clone(),
                lease,
                lines,
            ))));
        }
        self.admission.tenants().follow_rule();
        self.follow_on_failure();
    }

    /// Starts the announcer of the queue's failures when its binding has
    /// `onFailure` and none runs (it ends when the binding drops it).
    fn follow_on_failure(&self) {
        let (queue, wanted) = {
            let resolved = self.binding.read().unwrap();
            (
                resolved.binding.queue.clone(),
                resolved.binding.on_failure.is_some(),
            )
        };
        let mut announcer = self.announcer.lock().unwrap_or_else(|p| p.into_inner());
        let running = announcer.as_ref().is_some_and(|a| !a.0.is_finished());
        if !wanted || running {
            return;
        }
        let current = self.binding.clone();
        let route = move || current.read().unwrap().binding.on_failure.clone();
        *announcer = Some(AbortOnDrop(tokio::spawn(super::on_failure::announce_loop(
            self.host.queues.clone(),
            self.host.registry.clone(),
            queue,
            self.host.worker_settings.lock_duration.as_millis() as u64,
            route,
        ))));
    }

    /// Runs the queue's batches still gathering now (a closing or draining
    /// worker takes no more jobs to fill them).
    pub fn flush_batches(&self) {
        self.batches.flush();
    }

    /// How many batches of the queue run at once on this host (its share
    /// of the host's capacity, counted in batches).
    pub fn set_batches_at_once(&self, batches: usize) {
        self.batches.set_at_once(batches);
    }

    /// Gives back the key slots of runs whose recorded end was not
    /// reported yet, then adds the tallies not added yet; call after the
    /// queue's worker has closed.
    pub async fn close(&self) {
        self.recorded_ends.release_all().await;
        self.recorder.close().await;
    }

    fn fail(failure: Failure) -> JobResult {
        if failure.kind.is_infrastructure() {
            return JobResult::Requeue {
                reason: failure.reason(),
            };
        }
        JobResult::Failed {
            retry: failure.kind.is_retryable(),
            reason: failure.reason(),
        }
    }
}

#[async_trait::async_trait]
impl JobProcessor for Executor {
    async fn process(&self, job: ActiveJob) -> JobResult {
        self.run_job(job).await
    }

    fn recorded(&self, id: &str) {
        self.recorded_ends.recorded(id);
    }
}

impl Executor {
    /// Runs one job a worker holds (or, in tests, a fake one) and says how
    /// BullMQ should finish it.
    pub async fn run_job<J: RunningJob>(&self, job: J) -> JobResult {
        self.host.running.fetch_add(1, Ordering::Relaxed);
        let result = self.run(job).await;
        self.host.running.fetch_sub(1, Ordering::Relaxed);
        result
    }

    /// admit → load → run → finish, then what flow control gave back.
    async fn run<J: RunningJob>(&self, job: J) -> JobResult {
        let resolved = self.binding.read().unwrap().clone();
        let cleared = match self.admit(&job, &resolved).await {
            Ok(cleared) => cleared,
            Err(result) => return result,
        };
        let finish_by = cleared.finish.as_ref().map(|f| f.at_ms);
        let result = match self.load(&job, &resolved, &cleared.stop).await {
            Ok(loaded) => {
                let ran = match &resolved.binding.batch {
                    Some(rule) => {
                        self.run_in_batch(&job, &resolved, rule, &loaded, &cleared.stop)
                            .await
                    }
                    None => {
                        self.run_guest(&job, &resolved, &loaded, cleared.stop.clone())
                            .await
                    }
                };
                self.finish(&job, &resolved, &loaded, ran, finish_by).await
            }
            Err(result) => result,
        };
        // A job that completed or failed keeps its slots until BullMQ has
        // recorded that (`gate::recorded`); any other end gives them back
        // now, before the job moves.
        let Cleared { admitted, .. } = cleared;
        if result.ends_attempt() && admitted.holds_anything() {
            self.recorded_ends.hold(job.id(), admitted);
        } else if admitted.holds_anything() {
            admitted.finish(&result).await;
        }
        result
    }

    /// Registers the run where a cancel can stop it, starts the job's time
    /// to finish, and asks flow control. `Err`: the job does not run now
    /// (parked, or failed), and this is what BullMQ is told.
    async fn admit<J: RunningJob>(
        &self,
        job: &J,
        resolved: &ResolvedBinding,
    ) -> Result<Cleared, JobResult> {
        // A cancel (see `super::cancels`) or the job's own time to finish
        // stops the run through this handle, from now on: also while it
        // waits for room or its component.
        let (stop, stop_signal) = stop_pair();
        let registration = self
            .host
            .cancels
            .register(job.queue(), job.id(), stop.clone());
        registration
            .check_mark(&self.host.queues, job.job_key())
            .await;
        let finish = FinishDeadline::start(&resolved.binding, job.ready_at_ms(), stop)
            .map_err(Self::fail)?;
        if !resolved.binding.has_admission_rules() {
            return Ok(Cleared {
                stop: stop_signal,
                _cancels: registration,
                finish,
                admitted: gate::Admitted::nothing(self.host.queues.clone()),
            });
        }
        let data = gate::keyed_data(&resolved.binding, job);
        let deciding = std::time::SystemTime::now();
        match self
            .admission
            .admit(job, &resolved.binding, data.as_ref())
            .await
        {
            Admit::Run(admitted) => Ok(Cleared {
                stop: stop_signal,
                _cancels: registration,
                finish,
                admitted,
            }),
            Admit::Parked(rule) => {
                if let Some(traces) = &self.host.traces {
                    let parent = self.trace_context(job).await;
                    traces.held(job.queue(), job.id(), parent.as_deref(), rule, deciding);
                }
                Err(JobResult::Parked)
            }
            Admit::Fail(failure) => Err(Self::fail(failure)),
        }
    }

    /// The job's pin, limits, component and a permit. `Err`: the job
    /// cannot run (removed meanwhile, limits refused, component missing,
    /// stopped while waiting), and this is what BullMQ is told.
    async fn load<J: RunningJob>(
        &self,
        job: &J,
        resolved: &ResolvedBinding,
        stop: &StopSignal,
    ) -> Result<Loaded, JobResult> {
        let (pinned, carries_state) = self.pinned(job, resolved).await?;
        // The pin still to write (with the first durable write, or the
        // record), when nothing pinned this job yet.
        let unpinned = Arc::new(AtomicBool::new(!carries_state));
        let limits: Limits =
            match &pinned.limits {
                Some(request) => resolved.binding.limits.lowered_by(request).map_err(|e| {
                    Self::fail(Failure::new(FailureKind::GuestFatal, e.to_string()))
                })?,
                None => resolved.binding.limits.clone(),
            };
        // A component not in memory yet loads as a task of its own, so a
        // stop (a cancel, the time to finish) during a compile fails the job
        // at once, while the compile goes on for the host's cache and the
        // jobs waiting for it. One in memory (the usual case) is taken here.
        let loaded = match self.host.loader.loaded(&pinned.digest) {
            Some(component) => Ok(component),
            None => {
                let (host, digest) = (self.host.clone(), pinned.digest.clone());
                let load = tokio::spawn(async move { host.loader.get(&digest).await });
                match until_stopped(stop, load).await {
                    Ok(Ok(loaded)) => loaded,
                    Ok(Err(e)) => Err(LoadError::Unavailable(format!("loader task failed: {e}"))),
                    Err(stopped) => return Err(Self::fail(stopped)),
                }
            }
        };
        let component = match loaded {
            Ok(c) => c,
            // Missing or corrupt component: a retry cannot bring it back.
            Err(LoadError::Permanent(e)) => {
                return Err(Self::fail(Failure::new(FailureKind::Instantiation, e)));
            }
            Err(LoadError::Unavailable(e)) => {
                return Err(Self::fail(Failure::new(FailureKind::HostUnavailable, e)));
            }
        };
        if resolved.binding.batch.is_some() {
            return Ok(Loaded {
                pinned,
                carries_state,
                unpinned,
                limits,
                component,
                _permit: None,
            });
        }
        // Wait for room on this host rather than fail (back-pressure).
        let room = self.host.capacity.acquire(limits.memory_bytes);
        let permit = match until_stopped(stop, room).await {
            Ok(Ok(p)) => p,
            Ok(Err(e)) => {
                return Err(Self::fail(Failure::new(
                    FailureKind::Instantiation,
                    e.to_string(),
                )));
            }
            Err(stopped) => return Err(Self::fail(stopped)),
        };
        Ok(Loaded {
            pinned,
            carries_state,
            unpinned,
            limits,
            component,
            _permit: Some(permit),
        })
    }

    /// Runs the guest: its reporter and services, the binding's
    /// environment with this run's stop, trace, transcript and warm
    /// instance rules, on the sandbox's runtime. Progress and logs are in
    /// BullMQ when this returns.
    async fn run_guest<J: RunningJob>(
        &self,
        job: &J,
        resolved: &ResolvedBinding,
        loaded: &Loaded,
        stop: StopSignal,
    ) -> Ran {
        let reporter = Reporter::start(job.clone());
        let traced = match &self.host.traces {
            Some(traces) => Some(
                self.begin_trace(traces, job, &loaded.pinned, &reporter)
                    .await,
            ),
            None => None,
        };
        let services = RedisServices::new(
            &self.host.queues,
            job.job_key().to_string(),
            job.ready_at_ms(),
            resolved.binding.handler.clone(),
            reporter.progress_sender(),
            PendingPin {
                digest: loaded.pinned.digest.clone(),
                unpinned: loaded.unpinned.clone(),
            },
            RunStarts {
                env: resolved.starts.clone(),
                trace: traced.as_ref().and_then(|(_, run, _)| run.metadata()),
            },
        );
        let mut env = resolved.env.clone();
        env.stop = Some(stop);
        env.spans = traced.as_ref().map(|(_, _, spans)| spans.clone());
        if resolved.binding.propagate_trace {
            env.traceparent = traced.as_ref().and_then(|(_, run, _)| run.traceparent());
        }
        if resolved.binding.record_transcripts {
            env.transcript = Some(Arc::default());
        }
        if let Some(warm) = &resolved.binding.warm_instances {
            env.reuse = self
                .reuse(
                    job,
                    resolved,
                    warm,
                    loaded.pinned.producer.clone(),
                    loaded.carries_state,
                )
                .await;
        }
        let run = self.host.sandbox.run_isolated(
            loaded.component.clone(),
            job.input(),
            loaded.limits.clone(),
            Box::new(services),
            Some(reporter.log_listener()),
            env,
        );
        // A run that goes on streams its reports as they come; most end
        // first, and their reports go in one round trip at the end.
        tokio::pin!(run);
        let outcome = tokio::select! {
            biased;
            outcome = &mut run => outcome,
            () = tokio::time::sleep(super::reporter::STREAM_AFTER) => {
                reporter.stream();
                run.await
            }
        };
        // Successful runs keep their measurements in the job hash only;
        // runs that failed or slept also say so in the job's log, where
        // people look when something went wrong.
        if !matches!(outcome.completion, Completion::Completed(_)) {
            reporter.log(summary(&outcome));
        }
        // Logs and progress land before BullMQ finishes the job (which may
        // delete it, and announces it finished).
        reporter.finish().await;
        self.metrics.record(&outcome);
        Ran {
            outcome,
            traced,
            batch: None,
            batch_recorded: false,
        }
    }
}

/// `work`'s output, or the stop asked for before it was ready (a stop asked
/// for already wins over `work` ready at once).
async fn until_stopped<T>(
    signal: &StopSignal,
    work: impl std::future::Future<Output = T>,
) -> Result<T, Failure> {
    let mut signal = signal.clone();
    tokio::select! {
        biased;
        stopped = signal.stopped() => Err(stopped),
        out = work => Ok(out),
    }
}
