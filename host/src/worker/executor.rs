//! Runs one queued job in the sandbox and maps the outcome onto BullMQ.
//!
//! The order of writes around a run:
//! 1. **Before the run**, Redis is read only when the job may carry state
//!    of its own: a rerun (BullMQ's `ats` > 1: a retry, a wake-up after a
//!    durable sleep, a recovery) reads its pinned digest, and a job whose
//!    id was chosen before its add (not a BullMQ integer) reads its per-job
//!    limits ([`Meta::pin`], one script). A first run of an
//!    integer-id job — what a BullMQ producer adds without options of
//!    Airlock's — reads nothing: it runs the handler's current digest under
//!    the binding's limits (no per-job limits can exist on such an id).
//! 2. **During the run**, the job's first durable write pins the digest: a
//!    step result or a sleep in the same script as the record
//!    ([`Meta::set_and_pin`]), a KV write (another slot) one round trip
//!    before it.
//! 3. **After the run**, progress and logs are flushed, BullMQ finishes the
//!    job, and the run's measurements (and the pin of a first run that made
//!    no durable write) are written in batches ([`super::recorder`]).
//!
//! Crash windows, and why each is safe:
//! - the host dies before the run: nothing ran; the job stalls and is
//!   retried from scratch;
//! - it dies mid-run before any durable write: the job is rerun from the
//!   top, possibly on a newer handler version — there is no recorded state
//!   for the new version to diverge from (the lazy-pinning decision);
//! - it dies mid-run after a durable write: the lock expires, another
//!   host's stalled check puts the job back; the rerun reads the pinned
//!   digest and replays the steps recorded so far against the same code;
//! - it dies after a step ran but before it was recorded: that step runs
//!   again (at-least-once; guests make side effects idempotent);
//! - it dies after recording a sleep but before parking the job: the job is
//!   recovered, replays, finds the recorded wake-up time and parks again;
//! - it dies after the run but before BullMQ's `moveToFinished`: the job
//!   is run again. Execution is at least once; no job is ever lost;
//! - it dies after `moveToFinished` but before the measurements are
//!   written: the job is finished; its measurements (and a first run's
//!   pin) are lost (see [`super::recorder`]);
//! - it dies holding a key slot (`keyConcurrency`): the slot's lease runs
//!   out with the job's lock, and the recovered job finds its own lease and
//!   keeps the slot; it dies while parking a job for its key: the next
//!   sweep puts the job in line (see [`crate::queue::key_limits`]);
//! - it dies running a cancelled job: the job's cancel mark fails it when
//!   the stalled check puts it back and a worker takes it, without running
//!   it (see [`crate::queue::cancel`]);
//! - it dies with a job in `cancelOn` sets: the ids stay until a matching
//!   event finds the job finished and takes them out.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use super::HostContext;
use super::loader::LoadError;
use super::recorder::Recorder;
use super::reporter::Reporter;
use super::services::{PendingPin, RedisServices};
use crate::error::QueueError;
use crate::metrics::QueueMetrics;
use crate::queue::fields;
use crate::queue::key_limits::{KeySlot, PARK_MS};
use crate::queue::key_rates::{RateDecision, RateMode};
use crate::queue::meta::RunEnd;
use crate::queue::meta::{Pinned, Producer, RunRecord};
use crate::queue::waits::Waits;
use crate::queue::{ActiveJob, JobProcessor, JobResult, RunningJob};
use crate::registry::json_path::JsonPath;
use crate::registry::{Binding, SingletonMode, WarmInstances};
use crate::sandbox::clock::now_ms;
use crate::sandbox::egress::EgressPolicy;
use crate::sandbox::{
    Completion, Failure, FailureKind, Limits, Reuse, RunEnv, RunOutcome, StopSignal, stop_pair,
};

/// A binding with its handler resolved to the digest new jobs run.
#[derive(Debug, Clone)]
pub struct ResolvedBinding {
    /// The binding.
    pub binding: Binding,
    /// Current digest of its handler.
    pub digest: String,
    /// What its runs may reach (configuration, egress, secrets key), built
    /// once per binding change.
    pub env: RunEnv,
    /// Unique to this resolution: warm instances are shared only within
    /// one (a changed binding — config, egress, secrets — starts afresh).
    pub version: u64,
}

/// Numbers [`ResolvedBinding`]s.
static RESOLUTIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl ResolvedBinding {
    /// `binding` running `digest` on `host`.
    pub fn new(binding: Binding, digest: String, host: &HostContext) -> ResolvedBinding {
        let env = RunEnv {
            config: Arc::new(binding.config.clone()),
            egress: (!binding.egress.is_empty()).then(|| EgressPolicy {
                operator: host.egress.clone(),
                rules: binding.egress.clone(),
            }),
            secrets_key: host.secrets_key.clone(),
            stop: None,
            reuse: None,
        };
        ResolvedBinding {
            binding,
            digest,
            env,
            version: RESOLUTIONS.fetch_add(1, Ordering::Relaxed),
        }
    }
}

/// The [`JobProcessor`] of one queue.
pub struct Executor {
    host: Arc<HostContext>,
    /// Swapped by the supervisor when the binding changes; a run takes the
    /// `Arc` (no copy of the binding per job).
    binding: Arc<RwLock<Arc<ResolvedBinding>>>,
    /// Writes finished runs' measurements, batched.
    recorder: Recorder,
    /// This queue's metric series, resolved once.
    metrics: QueueMetrics,
    /// Refills the queue's key lines every half lease (see
    /// `queue::key_limits`); ends with the executor.
    _pump: AbortOnDrop,
}

impl Executor {
    /// An executor for the queue of `binding`.
    pub fn new(host: Arc<HostContext>, binding: Arc<RwLock<Arc<ResolvedBinding>>>) -> Self {
        let queue = binding.read().unwrap().binding.queue.clone();
        Executor {
            recorder: Recorder::start(host.queues.meta().clone()),
            metrics: host.metrics.queue(&queue),
            _pump: AbortOnDrop(tokio::spawn(pump(host.clone(), binding.clone()))),
            host,
            binding,
        }
    }

    /// Writes the measurements still queued; call after the queue's worker
    /// has closed.
    pub async fn close(&self) {
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

/// The job's data, parsed once for every rule of `binding` that keys on
/// it; `None` when no rule does (nothing is parsed then) or it is not JSON.
fn keyed_data<J: RunningJob>(binding: &Binding, job: &J) -> Option<serde_json::Value> {
    let keyed = binding.key_concurrency.is_some()
        || binding.singleton.is_some()
        || binding.key_throttle.is_some()
        || binding.key_rate_limit.is_some()
        || binding.debounce.is_some()
        || !binding.cancel_on.is_empty();
    keyed
        .then(|| serde_json::from_str(&job.input().data).ok())
        .flatten()
}

/// The value at `path` in the job's `data`, as JSON text, if it has one.
fn key_value(path: &JsonPath, data: Option<&serde_json::Value>) -> Option<String> {
    path.get(data?).map(|v| v.to_string())
}

/// The key slot in `queue` of the value at `path` in the job's `data`.
fn slot_of(path: &JsonPath, queue: &str, data: Option<&serde_json::Value>) -> Option<KeySlot> {
    Some(KeySlot::of(queue, path.get(data?)?))
}

/// What a job does when its key has no slot for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OnFull {
    /// Wait in the key's line (`keyConcurrency`).
    Wait,
    /// Fail as `skipped` (`singleton`, mode `skip`).
    Skip,
    /// Cancel the key's running job, then wait for its slot (`singleton`,
    /// mode `cancel`).
    CancelRunning,
}

/// One key slot a job must hold to run.
struct KeyGate {
    slot: KeySlot,
    limit: u64,
    path: JsonPath,
    /// The key's value, as JSON text (for failure reasons).
    value: String,
    on_full: OnFull,
}

/// The key slots of the job under `binding`: its `singleton` key's, then
/// its `keyConcurrency` key's (each only when the job's data holds a value
/// at the rule's path).
fn key_gates(binding: &Binding, queue: &str, data: Option<&serde_json::Value>) -> Vec<KeyGate> {
    let mut gates = Vec::new();
    if let Some(rule) = &binding.singleton
        && let Some(slot) = slot_of(&rule.key, queue, data)
    {
        gates.push(KeyGate {
            slot: slot.singleton(),
            limit: 1,
            path: rule.key.clone(),
            value: key_value(&rule.key, data).unwrap_or_default(),
            on_full: match rule.mode {
                SingletonMode::Skip => OnFull::Skip,
                SingletonMode::Cancel => OnFull::CancelRunning,
            },
        });
    }
    if let Some(rule) = &binding.key_concurrency
        && let Some(slot) = slot_of(&rule.key, queue, data)
    {
        gates.push(KeyGate {
            slot,
            limit: rule.limit,
            path: rule.key.clone(),
            value: key_value(&rule.key, data).unwrap_or_default(),
            on_full: OnFull::Wait,
        });
    }
    gates
}

/// The (event, value) pairs of `binding`'s cancel-on rules that find a
/// value in the job's data.
fn cancel_matches(
    binding: &Binding,
    data: Option<&serde_json::Value>,
) -> Vec<(String, serde_json::Value)> {
    let Some(data) = data else {
        return Vec::new();
    };
    binding
        .cancel_on
        .iter()
        .filter_map(|rule| {
            let value = rule.job_match.get(data)?;
            Some((rule.event.clone(), value.clone()))
        })
        .collect()
}

/// Refills the key lines of the executor's queue every half lease, while
/// its binding has a `keyConcurrency` or a `singleton`: releases a crash
/// swallowed, and reservations whose promote was lost, come back this way.
async fn pump(host: Arc<HostContext>, binding: Arc<RwLock<Arc<ResolvedBinding>>>) {
    let lease = host.worker_settings.lock_duration;
    let mut tick = tokio::time::interval((lease / 2).max(Duration::from_millis(100)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let resolved = binding.read().unwrap().clone();
        let limit = resolved.binding.key_concurrency.as_ref().map(|r| r.limit);
        if limit.is_none() && resolved.binding.singleton.is_none() {
            continue;
        }
        let queue = &resolved.binding.queue;
        let lease_ms = lease.as_millis() as u64;
        if let Err(e) = host.queues.fill_key_lines(queue, limit, lease_ms).await {
            tracing::warn!(queue, error = %e, "could not refill the key lines");
        }
    }
}

/// The failure of a job past its time to finish of `ms`.
fn timed_out(ms: u64) -> Failure {
    Failure::new(
        FailureKind::TimedOut,
        format!(
            "not finished within {} of becoming ready (the binding's finishTimeoutMs)",
            humantime::format_duration(Duration::from_millis(ms))
        ),
    )
}

/// Aborts a task when dropped: a run's timer ends with the run.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Runs a Redis operation, retrying for a while: right after a Redis
/// restart the first commands on a reconnecting connection fail, and a job
/// should not pay for that.
async fn retrying<T, F, Fut>(what: &str, op: F) -> Result<T, QueueError>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<T, QueueError>>,
{
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut delay = std::time::Duration::from_millis(50);
    loop {
        match op().await {
            Ok(v) => return Ok(v),
            Err(e) if tokio::time::Instant::now() < deadline => {
                tracing::warn!(error = %e, "could not {what}; retrying");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(std::time::Duration::from_secs(1));
            }
            Err(e) => return Err(e),
        }
    }
}

fn summary(outcome: &RunOutcome) -> String {
    let ending = match &outcome.completion {
        Completion::Completed(_) => "completed".to_string(),
        Completion::Failed(f) => format!("failed ({})", f.kind),
        Completion::Suspended {
            wake_at_ms,
            wait: None,
        } => format!("suspended until {wake_at_ms}"),
        Completion::Suspended {
            wake_at_ms,
            wait: Some(wait),
        } => format!("waiting (`{wait}`) until {wake_at_ms}"),
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

#[async_trait::async_trait]
impl JobProcessor for Executor {
    async fn process(&self, job: ActiveJob) -> JobResult {
        self.run_job(job).await
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

    async fn run<J: RunningJob>(&self, job: J) -> JobResult {
        let resolved = self.binding.read().unwrap().clone();

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
        let finish_by = resolved
            .binding
            .finish_timeout_ms
            .map(|ms| (job.ready_at_ms().saturating_add(ms), ms));
        let _timer = match finish_by {
            Some((deadline, ms)) => {
                let left = deadline.saturating_sub(now_ms());
                if left == 0 {
                    return Self::fail(timed_out(ms));
                }
                Some(AbortOnDrop(tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(left)).await;
                    stop.stop(timed_out(ms));
                })))
            }
            None => None,
        };
        let queues = &self.host.queues;
        let (queue, id) = (job.queue().to_string(), job.id().to_string());
        let data = keyed_data(&resolved.binding, &job);
        let data = data.as_ref();

        // Per-key start rates (see `queue::key_rates`): a rate limit drops
        // a job over it on its first start; a throttle parks it until its
        // turn.
        let rates = [
            (&resolved.binding.key_rate_limit, RateMode::Drop),
            (&resolved.binding.key_throttle, RateMode::Throttle),
        ];
        for (rule, mode) in rates {
            let Some(rule) = rule else { continue };
            if mode == RateMode::Drop && job.attempts_started() > 1 {
                continue;
            }
            let Some(slot) = slot_of(&rule.key, &queue, data) else {
                continue;
            };
            let check = || queues.check_key_rate(&slot, &id, rule.rate(), mode);
            match retrying("check the job's key rate", check).await {
                Ok(RateDecision::Start) => {}
                Ok(RateDecision::WaitUntil(at)) => {
                    let park = || job.park_until(at.max(now_ms()));
                    return match retrying("park the job for its key's throttle", park).await {
                        Ok(()) => JobResult::Parked,
                        Err(e) => Self::fail(Failure::new(
                            FailureKind::HostUnavailable,
                            format!("could not park the job for its key's throttle: {e:#}"),
                        )),
                    };
                }
                Ok(RateDecision::Dropped(room_in)) => {
                    return Self::fail(Failure::new(
                        FailureKind::RateLimited,
                        format!(
                            "key {} ({}) is over its rate limit of {} per {}; dropped without running (room again in {})",
                            key_value(&rule.key, data).unwrap_or_default(),
                            rule.key.as_str(),
                            rule.limit,
                            humantime::format_duration(Duration::from_millis(rule.period_ms)),
                            humantime::format_duration(Duration::from_millis(room_in)),
                        ),
                    ));
                }
                Err(e) => {
                    return Self::fail(Failure::new(
                        FailureKind::HostUnavailable,
                        format!("could not check the job's key rate: {e:#}"),
                    ));
                }
            }
        }

        // Key slots (see `queue::key_limits`): a `singleton` key's one
        // slot, then a `keyConcurrency` key's; each taken, or the job skips,
        // cancels the running one, or waits in line. Leases are renewed
        // while the job runs.
        let gates = key_gates(&resolved.binding, &queue, data);
        let lease_ms = self.lease_ms();
        let mut held: Vec<(KeySlot, u64)> = Vec::new();
        for gate in &gates {
            let park = gate.on_full != OnFull::Skip;
            let acquire = || queues.acquire_key_slot(&gate.slot, &id, gate.limit, lease_ms, park);
            let outcome = retrying("take a key slot", acquire).await;
            if matches!(outcome, Ok(true)) {
                held.push((gate.slot.clone(), gate.limit));
                continue;
            }
            // Not taken: what this job holds so far goes back first.
            self.release_all(&held, &id).await;
            return match outcome {
                Ok(_) => self.key_full(&job, gate).await,
                Err(e) => Self::fail(Failure::new(
                    FailureKind::HostUnavailable,
                    format!("could not take a slot of the job's key: {e:#}"),
                )),
            };
        }
        let _renewal = (!held.is_empty()).then(|| {
            let (queues, slots, id) = (queues.clone(), held.clone(), id.clone());
            let every = Duration::from_millis((lease_ms / 3).max(1));
            AbortOnDrop(tokio::spawn(async move {
                loop {
                    tokio::time::sleep(every).await;
                    for (slot, _) in &slots {
                        if let Err(e) = queues.renew_key_slot(slot, &id, lease_ms).await {
                            tracing::warn!(error = %e, "could not renew a key slot's lease");
                        }
                    }
                }
            }))
        });
        let result = self
            .run_keyed(job, resolved, stop_signal, finish_by, data)
            .await;
        self.release_all(&held, &id).await;
        result
    }

    /// Gives back every key slot in `held`.
    async fn release_all(&self, held: &[(KeySlot, u64)], id: &str) {
        for (slot, limit) in held {
            let release = || {
                self.host
                    .queues
                    .release_key_slot(slot, id, *limit, self.lease_ms())
            };
            if let Err(e) = retrying("give a key slot back", release).await {
                // The lease runs out on its own: the slot is back then.
                tracing::warn!(error = %e, "could not give a key slot back");
            }
        }
    }

    /// What a job does when a key of its has no slot for it.
    async fn key_full<J: RunningJob>(&self, job: &J, gate: &KeyGate) -> JobResult {
        match gate.on_full {
            OnFull::Wait => self.wait_in_line(job, &gate.slot, gate.limit).await,
            OnFull::Skip => Self::fail(Failure::new(
                FailureKind::Skipped,
                format!(
                    "singleton: key {} ({}) already has a running job; skipped without running",
                    gate.value,
                    gate.path.as_str()
                ),
            )),
            OnFull::CancelRunning => {
                let queues = &self.host.queues;
                let reason = format!(
                    "replaced by job {} (singleton key {})",
                    job.id(),
                    gate.value
                );
                // Only a job of the same producer is replaced: another
                // tenant's job with the same key is waited for instead.
                let owner = |id: &str| {
                    let key = queues.job_key(job.queue(), id);
                    async move { queues.meta().get(&key, fields::PRODUCER).await }
                };
                match (queues.key_holders(&gate.slot).await, owner(job.id()).await) {
                    (Ok(holders), Ok(mine)) => {
                        for holder in holders.iter().filter(|h| h.as_str() != job.id()) {
                            match owner(holder).await {
                                Ok(theirs) if theirs == mine => {}
                                _ => continue,
                            }
                            if let Err(e) = queues.cancel(job.queue(), holder, &reason).await {
                                tracing::debug!(holder, error = %e, "singleton: cancel the running job");
                            }
                        }
                    }
                    (Err(e), _) | (_, Err(e)) => {
                        tracing::warn!(error = %e, "singleton: could not read the running job");
                    }
                }
                // Its slot comes back as the cancelled run stops; the
                // release promotes this job from the line.
                self.wait_in_line(job, &gate.slot, gate.limit).await
            }
        }
    }

    /// Lease of a key slot: the worker lock duration, so a dead host's
    /// slots come back when its jobs' locks do.
    fn lease_ms(&self) -> u64 {
        self.host.worker_settings.lock_duration.as_millis() as u64
    }

    /// Parks a job whose key is at its limit and puts it in the key's line.
    async fn wait_in_line<J: RunningJob>(&self, job: &J, slot: &KeySlot, limit: u64) -> JobResult {
        let park = || job.park_until(now_ms() + PARK_MS);
        if let Err(e) = retrying("park the job for its key", park).await {
            return Self::fail(Failure::new(
                FailureKind::HostUnavailable,
                format!("could not park the job while its key is at its limit: {e:#}"),
            ));
        }
        let join = || {
            self.host
                .queues
                .join_key_line(slot, job.id(), limit, self.lease_ms())
        };
        if let Err(e) = retrying("join the key's line", join).await {
            // Parked but in no line: it wakes after PARK_MS and is gated
            // again (see `queue::key_limits`).
            tracing::warn!(error = %e, "could not put a parked job in its key's line");
        }
        JobResult::Parked
    }

    async fn run_keyed<J: RunningJob>(
        &self,
        job: J,
        resolved: Arc<ResolvedBinding>,
        stop_signal: StopSignal,
        finish_by: Option<(u64, u64)>,
        data: Option<&serde_json::Value>,
    ) -> JobResult {
        let queues = &self.host.queues;
        let (queue, id) = (job.queue().to_string(), job.id().to_string());
        let (queue, id) = (queue.as_str(), id.as_str());
        // A debounced job that starts ends its key's burst: the next job of
        // the key opens a window of its own (see `queue::debounce`).
        if let Some(rule) = &resolved.binding.debounce
            && let Some(slot) = slot_of(&rule.key, queue, data)
            && let Err(e) = queues.end_debounce_burst(&slot).await
        {
            tracing::debug!(error = %e, "could not end a debounce burst");
        }
        // Findable by the binding's cancel-on events from now on (see
        // `queue::cancel`): before the guest starts, until the job ends.
        let matches = cancel_matches(&resolved.binding, data);
        if !matches.is_empty() {
            let index = || queues.index_for_cancel(queue, id, &matches, true);
            if let Err(e) = retrying("index the job for cancelOn", index).await {
                return Self::fail(Failure::new(
                    FailureKind::HostUnavailable,
                    format!("could not index the job for its binding's cancelOn events: {e:#}"),
                ));
            }
        }
        let result = self
            .run_stoppable(job, resolved, stop_signal, finish_by)
            .await;
        if !matches.is_empty()
            && matches!(result, JobResult::Completed(_) | JobResult::Failed { .. })
            && let Err(e) = queues.index_for_cancel(queue, id, &matches, false).await
        {
            // Left behind: the next matching event finds the job finished.
            tracing::debug!(error = %e, "could not take a finished job out of its cancelOn sets");
        }
        result
    }

    async fn run_stoppable<J: RunningJob>(
        &self,
        job: J,
        resolved: Arc<ResolvedBinding>,
        stop_signal: StopSignal,
        finish_by: Option<(u64, u64)>,
    ) -> JobResult {
        let meta = self.host.queues.meta();

        // Read what the job may carry (see the module docs), or nothing.
        let carries_state =
            job.attempts_started() > 1 || !job.id().bytes().all(|b| b.is_ascii_digit());
        let pinned = if carries_state {
            let pin = || meta.pin(job.queue(), job.id(), &resolved.digest);
            match retrying("pin the job", pin).await {
                Ok(Some(p)) => p,
                Ok(None) => {
                    return JobResult::Failed {
                        reason: "the job was removed while it was being started".into(),
                        retry: false,
                    };
                }
                Err(e) => {
                    return Self::fail(Failure::new(
                        FailureKind::HostUnavailable,
                        format!("could not read the job's Airlock fields: {e:#}"),
                    ));
                }
            }
        } else {
            Pinned {
                digest: resolved.digest.clone(),
                limits: None,
                producer: Producer::default(),
            }
        };
        // The pin still to write (with the first durable write, or at the
        // finish), when nothing pinned this job yet.
        let unpinned = Arc::new(AtomicBool::new(!carries_state));

        let limits: Limits = match &pinned.limits {
            Some(request) => match resolved.binding.limits.lowered_by(request) {
                Ok(l) => l,
                Err(e) => {
                    return Self::fail(Failure::new(FailureKind::GuestFatal, e.to_string()));
                }
            },
            None => resolved.binding.limits.clone(),
        };
        let component = match self.host.loader.get(&pinned.digest).await {
            Ok(c) => c,
            // Missing or corrupt component: a retry cannot bring it back.
            Err(LoadError::Permanent(e)) => {
                return Self::fail(Failure::new(FailureKind::Instantiation, e));
            }
            Err(LoadError::Unavailable(e)) => {
                return Self::fail(Failure::new(FailureKind::HostUnavailable, e));
            }
        };

        // Wait for room on this host rather than fail (back-pressure).
        let _permit = match self.host.capacity.acquire(limits.memory_bytes).await {
            Ok(p) => p,
            Err(e) => return Self::fail(Failure::new(FailureKind::Instantiation, e.to_string())),
        };
        let reporter = Reporter::start(job.clone());
        let services = RedisServices::new(
            &self.host.queues,
            job.job_key().to_string(),
            job.ready_at_ms(),
            resolved.binding.handler.clone(),
            reporter.progress_sender(),
            PendingPin {
                digest: pinned.digest.clone(),
                unpinned: unpinned.clone(),
            },
        );
        let mut env = resolved.env.clone();
        env.stop = Some(stop_signal);
        if let Some(warm) = &resolved.binding.warm_instances {
            env.reuse = self
                .reuse(&job, &resolved, warm, pinned.producer, carries_state)
                .await;
        }
        let outcome = self
            .host
            .sandbox
            .run_isolated(
                component,
                job.input(),
                limits,
                Box::new(services),
                Some(reporter.log_listener()),
                env,
            )
            .await;
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
        let record = RunRecord {
            job_key: job.job_key().to_string(),
            pin: unpinned
                .load(Ordering::Relaxed)
                .then(|| pinned.digest.clone()),
            peak_memory_bytes: outcome.peak_memory_bytes,
            wall_time_ms: outcome.wall_time.as_secs_f64() * 1000.0,
            fuel_used: outcome.fuel_used,
            http: outcome.http,
            run: job.attempts_started(),
            started_at_ms: now_ms().saturating_sub(outcome.wall_time.as_millis() as u64),
            host: self.host.host_id.clone(),
            end: match &outcome.completion {
                Completion::Completed(output)
                    if serde_json::from_str::<serde::de::IgnoredAny>(output).is_ok() =>
                {
                    RunEnd::Completed
                }
                Completion::Completed(_) => RunEnd::Failed(FailureKind::InvalidOutput),
                Completion::Failed(f) => RunEnd::Failed(f.kind),
                Completion::Suspended { wait: None, .. } => RunEnd::Slept,
                Completion::Suspended { wait: Some(_), .. } => RunEnd::Waited,
            },
        };

        let result = match outcome.completion {
            Completion::Completed(output) => match serde_json::from_str(&output) {
                Ok(value) => JobResult::Completed(value),
                Err(e) => Self::fail(Failure::new(FailureKind::InvalidOutput, e.to_string())),
            },
            Completion::Failed(failure) => Self::fail(failure),
            Completion::Suspended { wake_at_ms, wait } => {
                // A sleep past the job's time to finish wakes at it instead,
                // to fail as `timed_out` when it is taken again.
                let wake_at_ms = match finish_by {
                    Some((deadline, _)) => wake_at_ms.min(deadline),
                    None => wake_at_ms,
                };
                let park = || job.park_until(wake_at_ms.max(now_ms()));
                match retrying("park the job", park).await {
                    Ok(()) => {
                        if let Some(wait) = wait {
                            self.wake_if_answered(&job, &wait).await;
                        }
                        JobResult::Parked
                    }
                    Err(e) => Self::fail(Failure::new(
                        FailureKind::HostUnavailable,
                        format!("could not park the job for its durable sleep: {e:#}"),
                    )),
                }
            }
        };
        // Queued, not awaited: the recorder writes it in its next batch,
        // around the time BullMQ finishes the job with `result`.
        self.recorder.record(record);
        result
    }

    /// How a run of a binding with warm instances may share its instance:
    /// with jobs of the same queue, binding version and tenant — the
    /// producer token that enqueued it when Airlock's seal on that verifies
    /// (the producer fields are read from the job hash, where anyone who
    /// can write to Redis can write them; the seal they cannot write), or
    /// "no producer" for jobs that carry none (what BullMQ's own producers
    /// add). A job whose producer is not sealed, or not verifiably (this
    /// host has no secrets key, or the seal is wrong), gets a fresh
    /// instance of its own. `known` is the producer the pin read, if it
    /// ran; otherwise it is read here (one `HMGET`).
    async fn reuse<J: RunningJob>(
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
            match self.host.queues.meta().producer(job.job_key()).await {
                Ok(p) => p,
                Err(e) => {
                    tracing::debug!(error = %e, "read the job's producer; running it in a fresh instance");
                    return None;
                }
            }
        };
        let tenant = match (producer.name, producer.seal) {
            (None, _) => "-".to_string(),
            (Some(name), Some(seal)) => {
                let key = self.host.secrets_key.as_ref()?;
                let input = job.input();
                key.producer_seal_matches(
                    &seal,
                    job.queue(),
                    job.id(),
                    &name,
                    &input.name,
                    &input.data,
                )
                .then(|| format!("p:{name}"))?
            }
            (Some(_), None) => return None,
        };
        Some(Reuse {
            owner: format!("{}\n{tenant}\n{}", resolved.binding.queue, resolved.version),
            max_jobs: warm.max_jobs,
            max_idle: Duration::from_millis(warm.idle_ms),
            max_kept: resolved.binding.concurrency,
        })
    }

    /// After parking a job for wait `wait`: an outcome that came while it
    /// still ran found it not delayed yet, so wake it now (crash window: a
    /// host that dies before this leaves the job to find the outcome at
    /// its deadline; see `queue::waits`).
    async fn wake_if_answered<J: RunningJob>(&self, job: &J, wait: &str) {
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
