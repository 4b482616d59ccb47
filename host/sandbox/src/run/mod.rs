//! One run of a job, in phases: [`Sandbox::run_async`] takes the
//! component's compiled form and, on a binding with warm instances, an
//! idle instance of the run's owner ([`Run::begin`]); it gets a store
//! ready ([`Sandbox::instance`]: the warm one, or a fresh one from the
//! pool), calls the guest under its deadline and stop ([`Sandbox::call`]),
//! classifies how it ended ([`classify`](fn@classify)), and settles the instance
//! ([`Sandbox::settle`]: kept for the owner's next job after a clean
//! completion, else dropped, which resets its pool slot — see
//! [`crate::reset`]). What every end of a run gathers — its logs, its
//! transcript, its wall time — is [`Run::outcome`].

mod batch;
mod classify;

pub use self::batch::{BatchOutcome, RUN_BATCH};

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Instant;

use wasmtime::Store;

use self::classify::{classify, classify_instantiation};
use super::bindings::{Handler, HandlerPre, Job, JobRef};
use super::logs::{CapturedStream, LogSink};
use super::run_state::{self, RunState};
use super::warm::{Warm, WarmKey};
use super::{
    Completion, Failure, FailureKind, HostServices, JobInput, Limits, LoadedComponent,
    LocalServices, LogLevel, LogListener, Reuse, RunEnv, RunOutcome, Sandbox, StopSignal, http,
    transcript,
};
use airlock_core::clock::now_ms;

/// What a run ended with, measured, before its logs and transcript are
/// gathered ([`Run::outcome`]).
struct Ended {
    completion: Completion,
    fuel_used: Option<u64>,
    peak_memory_bytes: u64,
    http: http::HttpSummary,
    /// It ran in a warm instance.
    warm: bool,
}

impl Ended {
    /// A run that failed before its guest could start.
    fn before_start(failure: Failure) -> Ended {
        Ended {
            completion: Completion::Failed(failure),
            fuel_used: None,
            peak_memory_bytes: 0,
            http: Default::default(),
            warm: false,
        }
    }
}

/// What every end of a run gathers: when it started, its log sink and,
/// when it records one, its transcript's job and start.
struct Run {
    started: Instant,
    sink: Arc<Mutex<LogSink>>,
    recording: Option<(
        Arc<transcript::TranscriptRecorder>,
        transcript::RecordedJob,
        u64,
    )>,
}

impl Run {
    /// Starts the run's clock; its log sink is the warm instance's,
    /// renewed for this job, or a new one.
    fn begin(
        warm: Option<&Warm>,
        limits: &Limits,
        log_listener: Option<LogListener>,
        env: &RunEnv,
        job: &JobInput,
    ) -> Run {
        let sink = match warm {
            Some(w) => {
                let sink = w.store.data().logs.clone();
                sink.lock().unwrap_or_else(|p| p.into_inner()).renew(
                    limits.max_log_bytes,
                    limits.max_log_lines,
                    log_listener,
                );
                sink
            }
            None => Arc::new(Mutex::new(LogSink::new(
                limits.max_log_bytes,
                limits.max_log_lines,
                log_listener,
            ))),
        };
        let recording = env
            .transcript
            .clone()
            .map(|recorder| (recorder, transcript::RecordedJob::from(job), now_ms()));
        Run {
            started: Instant::now(),
            sink,
            recording,
        }
    }

    /// The run's outcome: how it ended, its logs, its transcript (revealed
    /// values redacted) and its wall time.
    fn outcome(self, ended: Ended) -> RunOutcome {
        self.outcome_with(ended, None)
    }

    /// [`Run::outcome`], with `batch` (each job of a batch run and its
    /// end) in the transcript.
    fn outcome_with(self, ended: Ended, batch: Option<Vec<transcript::BatchedJob>>) -> RunOutcome {
        let transcript = self.recording.map(|(recorder, job, started_at)| {
            let sink = self.sink.lock().unwrap_or_else(|p| p.into_inner());
            recorder.finish(
                job,
                started_at,
                transcript::RecordedOutcome::from(&ended.completion),
                batch,
                &|text| sink.redact(&text).unwrap_or(text),
            )
        });
        let (logs, dropped) = self.sink.lock().unwrap_or_else(|p| p.into_inner()).finish();
        RunOutcome {
            transcript,
            completion: ended.completion,
            fuel_used: ended.fuel_used,
            peak_memory_bytes: ended.peak_memory_bytes,
            wall_time: self.started.elapsed(),
            logs,
            logs_dropped_bytes: dropped.bytes,
            logs_dropped_lines: dropped.lines,
            http: ended.http,
            warm: ended.warm,
        }
    }
}

/// A store ready for the guest's call: a warm instance's, with its
/// handler, or a fresh one, instantiated by the call.
struct Instance {
    store: Store<RunState>,
    handler: Option<Handler>,
    /// Jobs the instance ran before this one.
    jobs_before: u32,
}

impl Sandbox {
    /// Runs one job to completion on this sandbox's guest runtime, blocking
    /// the calling thread until it ends. For callers outside any async
    /// runtime (tests, benchmarks); async code uses [`Sandbox::run_isolated`].
    pub fn run(
        &self,
        component: &LoadedComponent,
        job: JobInput,
        limits: &Limits,
        services: Box<dyn HostServices>,
        log_listener: Option<LogListener>,
    ) -> RunOutcome {
        self.guest_runtime().block_on(self.run_async(
            component,
            job,
            limits,
            services,
            log_listener,
            RunEnv::default(),
        ))
    }

    /// [`Sandbox::run_async`], awaited from any runtime without letting a
    /// computing guest hold the caller's threads (the queue host's, which
    /// renew job locks, answer the API and move Redis replies). The run
    /// starts here: one that ends within its first slice — most small jobs,
    /// which then cost no hand-off between threads — is done; one still
    /// running at its first yield (waiting on a host call, or computing
    /// past an epoch tick) goes on on the sandbox's own runtime. So a guest
    /// holds a caller's thread for one epoch tick (and its instantiation)
    /// at most, however many guests compute at once.
    pub async fn run_isolated(
        self: &Arc<Self>,
        component: Arc<LoadedComponent>,
        job: JobInput,
        limits: Limits,
        services: Box<dyn HostServices>,
        log_listener: Option<LogListener>,
        env: RunEnv,
    ) -> RunOutcome {
        let sandbox = self.clone();
        let started = Instant::now();
        let mut run = Box::pin(async move {
            sandbox
                .run_async(&component, job, &limits, services, log_listener, env)
                .await
        });
        // The first poll runs inside the guest runtime's context, so what it
        // starts (a request's connection task, the deadline's timer) belongs
        // to the runtime that goes on with the run — not to the caller's.
        let guests = self.guest_runtime().clone();
        let first = std::future::poll_fn(|cx| {
            let _guests = guests.enter();
            let polled =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run.as_mut().poll(cx)));
            Poll::Ready(polled)
        })
        .await;
        let ended = match first {
            Ok(Poll::Ready(outcome)) => return outcome,
            Ok(Poll::Pending) => guests.spawn(run).await.map_err(|e| e.to_string()),
            Err(_) => Err("the run panicked".to_string()),
        };
        match ended {
            Ok(outcome) => outcome,
            // Only a bug in the host itself (a panic in the run) can get
            // here; the job still gets a definite outcome rather than
            // vanishing — final, so a host bug is not retried in a loop.
            Err(e) => RunOutcome {
                completion: Completion::Failed(Failure::new(
                    FailureKind::Instantiation,
                    format!("sandbox task failed: {e}"),
                )),
                fuel_used: None,
                peak_memory_bytes: 0,
                wall_time: started.elapsed(),
                logs: Vec::new(),
                logs_dropped_bytes: 0,
                logs_dropped_lines: 0,
                http: Default::default(),
                warm: false,
                transcript: None,
            },
        }
    }

    /// Runs one job on the *current* runtime. A guest waiting on a host
    /// call (Redis, HTTP) is suspended and holds no thread; a guest
    /// computing yields at every epoch tick. The run's deadline is a timer:
    /// past it, the guest is dropped at its next yield — with every request
    /// it has in flight — and the run fails with `timeout`. With
    /// `env.reuse`, the run takes an idle warm instance of its owner if
    /// there is one, and leaves its instance for the next job if the job
    /// completed (see [`crate::warm`]).
    pub async fn run_async(
        &self,
        component: &LoadedComponent,
        job: JobInput,
        limits: &Limits,
        services: Box<dyn HostServices>,
        log_listener: Option<LogListener>,
        mut env: RunEnv,
    ) -> RunOutcome {
        let metered = limits.fuel.is_some();
        let pre = self.compiled(component, metered);
        let reuse = env.reuse.take();
        let key = reuse.as_ref().map(|r| WarmKey {
            digest: component.digest.clone(),
            metered,
            owner: r.owner.clone(),
            limits: limits.clone(),
        });
        let warm = key.as_ref().and_then(|k| self.warm.take(k));
        let run = Run::begin(warm.as_ref(), limits, log_listener, &env, &job);
        if let Err(e) = limits.check_within(&self.config.maxima) {
            let failure = Failure::new(FailureKind::Instantiation, e.to_string());
            return run.outcome(Ended::before_start(failure));
        }
        let pre = match pre {
            Ok(pre) => pre,
            Err(e) => {
                let failure = Failure::new(FailureKind::Instantiation, e);
                return run.outcome(Ended::before_start(failure));
            }
        };
        let deadline = run.started + limits.timeout;
        let stop = env.stop.clone();
        let was_warm = warm.is_some();
        let mut instance = match warm {
            Some(w) => {
                let mut store = w.store;
                store
                    .data_mut()
                    .begin_job(services, limits.clone(), env, deadline);
                Instance {
                    store,
                    handler: Some(w.handler),
                    jobs_before: w.jobs,
                }
            }
            None => self.instance(metered, services, limits, env, deadline, &run.sink, &job),
        };
        let (completion, handler) = self
            .call(&mut instance, &pre, job, limits, stop, deadline)
            .await;
        let ended = self.settle(instance, completion, handler, limits, reuse, key, was_warm);
        run.outcome(ended)
    }

    /// The component's compiled form for the engine the run needs,
    /// compiled now if this is its first run there (an unmetered queue's
    /// first job): seconds for a JavaScript or Python component, so off the
    /// async threads, and before the run's clock starts — a compile is not
    /// the job's time and must not eat its deadline.
    fn compiled(
        &self,
        component: &LoadedComponent,
        metered: bool,
    ) -> Result<HandlerPre<RunState>, String> {
        if component.is_compiled_for(metered) {
            return self.handler_pre(component, metered);
        }
        match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
            Ok(tokio::runtime::RuntimeFlavor::MultiThread) => {
                tokio::task::block_in_place(|| self.handler_pre(component, metered))
            }
            _ => self.handler_pre(component, metered),
        }
    }

    /// A fresh store for the job: a WASI context with nothing but clocks,
    /// random and captured stdout/stderr, the run's services, limits and
    /// environment, and the memory limiter. The guest is instantiated by
    /// the call, under the run's deadline.
    #[allow(clippy::too_many_arguments)]
    fn instance(
        &self,
        metered: bool,
        services: Box<dyn HostServices>,
        limits: &Limits,
        env: RunEnv,
        deadline: Instant,
        sink: &Arc<Mutex<LogSink>>,
        job: &JobInput,
    ) -> Instance {
        let engine = if metered {
            &self.metered
        } else {
            &self.unmetered
        };
        let wasi = run_state::Wasi::new(|b| {
            b.stdout(CapturedStream::new(sink.clone(), LogLevel::Stdout))
                .stderr(CapturedStream::new(sink.clone(), LogLevel::Stderr))
                .allow_tcp(false)
                .allow_udp(false)
                .allow_ip_name_lookup(false);
        });
        let state = RunState::new(
            wasi,
            sink.clone(),
            services,
            limits.clone(),
            job.queue.clone(),
            env,
            deadline,
        );
        let mut store = Store::new(&engine.engine, state);
        store.limiter(|state| &mut state.limiter);
        Instance {
            store,
            handler: None,
            jobs_before: 0,
        }
    }

    /// Calls the guest's `run` with `job`: instantiates a fresh instance
    /// first, then races the call against the run's deadline and a stop
    /// from outside (see [`crate::stop`]); either drops the guest at its
    /// next yield. The handler comes back with a call that returned, for
    /// the instance to be kept.
    async fn call(
        &self,
        instance: &mut Instance,
        pre: &HandlerPre<RunState>,
        job: JobInput,
        limits: &Limits,
        stop: Option<StopSignal>,
        deadline: Instant,
    ) -> (Completion, Option<Handler>) {
        let store = &mut instance.store;
        ready_for_call(store, limits);
        let wit_job = wit_job(job, now_ms());
        let handler = instance.handler.take();
        let stopped = async {
            match stop {
                Some(mut signal) => signal.stopped().await,
                None => std::future::pending().await,
            }
        };
        let ran = tokio::select! {
            biased;
            failure = stopped => Err(Some(failure)),
            ran = tokio::time::timeout_at(deadline.into(), async {
                let handler = match handler {
                    Some(handler) => handler,
                    None => {
                        let began = std::time::SystemTime::now();
                        let instantiated = self.instantiate(pre, &mut *store).await;
                        let failed = instantiated.as_ref().err().map(|e| format!("{e:#}"));
                        store.data().note_instantiation(began, failed);
                        instantiated?
                    }
                };
                let result = handler.call_run(&mut *store, &wit_job).await;
                Ok((handler, result))
            }) => ran.map_err(|_| None),
        };
        match ran {
            Ok(Ok((handler, result))) => (classify(result, store.data(), limits), Some(handler)),
            Ok(Err(e)) => (
                Completion::Failed(classify_instantiation(&e, store.data(), limits)),
                None,
            ),
            Err(Some(failure)) => (Completion::Failed(failure), None),
            Err(None) => (Completion::Failed(deadline_passed(limits)), None),
        }
    }

    /// Measures the run and settles its instance: after a clean completion
    /// of a run that may share its instance ([`crate::warm`]), kept for the
    /// owner's next job (its next job's services replace these now);
    /// otherwise dropped here, which resets its pool slot. A failure's
    /// message has revealed values redacted.
    #[allow(clippy::too_many_arguments)]
    fn settle(
        &self,
        instance: Instance,
        completion: Completion,
        handler: Option<Handler>,
        limits: &Limits,
        reuse: Option<Reuse>,
        key: Option<WarmKey>,
        was_warm: bool,
    ) -> Ended {
        let Instance {
            mut store,
            jobs_before,
            ..
        } = instance;
        // Revealed secrets never leave in a failure's reason (a completed
        // run's output was redacted before it was parsed: `classify`).
        let completion = match completion {
            Completion::Failed(mut f) => {
                f.message = store.data().redact(f.message);
                Completion::Failed(f)
            }
            other => other,
        };
        let fuel_used = limits
            .fuel
            .map(|budget| budget - store.get_fuel().unwrap_or(0));
        let peak_memory_bytes = store.data().limiter.peak_bytes();
        let http = store.data().http.stats.summary();
        let ended = |completion| Ended {
            completion,
            fuel_used,
            peak_memory_bytes,
            http,
            warm: was_warm,
        };
        if let (Some(reuse), Some(key), Some(handler)) = (&reuse, key, handler) {
            let state = store.data_mut();
            let clean = matches!(completion, Completion::Completed(_))
                && !state.limiter.limit_hit
                && state.panic_message.is_none()
                && state.service_outage.is_none()
                && state.suspended.is_none()
                && !state.holds_http_resources();
            let jobs = jobs_before + 1;
            if clean && jobs < reuse.max_jobs {
                // The next job's services replace these; the last job's
                // are dropped now, not when the instance is.
                state.begin_job(
                    Box::new(LocalServices::new()),
                    limits.clone(),
                    RunEnv::default(),
                    Instant::now(),
                );
                self.warm
                    .put(key, Warm::new(store, handler, jobs, reuse), reuse.max_kept);
                return ended(completion);
            }
        }
        drop(store);
        ended(completion)
    }

    /// Instantiates `pre` in `store`; when the pool is full, idle warm
    /// instances give their slots back first and it is tried once more.
    async fn instantiate(
        &self,
        pre: &HandlerPre<RunState>,
        store: &mut Store<RunState>,
    ) -> wasmtime::Result<Handler> {
        match pre.instantiate_async(&mut *store).await {
            Err(e)
                if e.downcast_ref::<wasmtime::PoolConcurrencyLimitError>()
                    .is_some()
                    && self.warm.evict(8) > 0 =>
            {
                pre.instantiate_async(&mut *store).await
            }
            other => other,
        }
    }

    /// [`Sandbox::instantiate`] for a call the world's bindings do not
    /// name (a batch's `run-batch`): the instance itself.
    async fn instantiate_instance(
        &self,
        pre: &HandlerPre<RunState>,
        store: &mut Store<RunState>,
    ) -> wasmtime::Result<wasmtime::component::Instance> {
        let instance_pre = pre.instance_pre();
        match instance_pre.instantiate_async(&mut *store).await {
            Err(e)
                if e.downcast_ref::<wasmtime::PoolConcurrencyLimitError>()
                    .is_some()
                    && self.warm.evict(8) > 0 =>
            {
                instance_pre.instantiate_async(&mut *store).await
            }
            other => other,
        }
    }
}

/// Readies a store for the guest's call: the run's fuel, and a yield to
/// the runtime at every epoch tick from the next one on — a computing
/// guest shares its thread, and its deadline timer gets to fire. (The
/// deadline is set, not only the yield: left at a past epoch, it made every
/// run yield once at its first check — a trip through the scheduler per
/// job, and a small job's hand-off to the sandbox's runtime.)
fn ready_for_call(store: &mut Store<RunState>, limits: &Limits) {
    if let Some(fuel) = limits.fuel {
        store
            .set_fuel(fuel)
            .expect("fuel is enabled on the metered engine");
    }
    store.set_epoch_deadline(1);
    store.epoch_deadline_async_yield_and_update(1);
}

/// The job as the guest sees it, its run started at `started_at_ms`; it
/// moves into the guest's view: its data is not copied.
fn wit_job(job: JobInput, started_at_ms: u64) -> Job {
    Job {
        id: job.id,
        queue: job.queue,
        name: job.name,
        data: job.data,
        attempt: job.attempt.max(1),
        max_attempts: job.max_attempts.max(1),
        enqueued_at_ms: job.enqueued_at_ms,
        started_at_ms,
        parent: job.parent.map(|(queue, id)| JobRef { queue, id }),
    }
}

/// A run stopped at its deadline.
fn deadline_passed(limits: &Limits) -> Failure {
    Failure::new(
        FailureKind::Timeout,
        format!(
            "deadline of {} passed",
            humantime::format_duration(limits.timeout)
        ),
    )
}
