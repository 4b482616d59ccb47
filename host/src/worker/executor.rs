//! Runs one queued job in the sandbox and maps the outcome onto BullMQ.
//!
//! Crash windows, and why each is safe:
//! - the host dies before the digest is pinned: nothing ran; the job stalls
//!   and is retried from scratch;
//! - it dies mid-run: the lock expires, another host's stalled check puts
//!   the job back; steps recorded so far are in the job hash and replay;
//! - it dies after a step ran but before it was recorded: that step runs
//!   again (at-least-once; guests make side effects idempotent);
//! - it dies after recording a sleep but before parking the job: the job is
//!   recovered, replays, finds the recorded wake-up time and parks again;
//! - it dies after the run but before BullMQ's `moveToFinished`: the job
//!   is run again. Execution is at least once; no job is ever lost.

use std::sync::atomic::Ordering;
use std::sync::{Arc, RwLock};

use super::HostContext;
use super::loader::LoadError;
use super::reporter::Reporter;
use super::services::RedisServices;
use crate::error::QueueError;
use crate::queue::meta::RunRecord;
use crate::queue::{ActiveJob, JobProcessor, JobResult, RunningJob};
use crate::registry::Binding;
use crate::sandbox::clock::now_ms;
use crate::sandbox::{Completion, Failure, FailureKind, Limits, RunOutcome};

/// A binding with its handler resolved to the digest new jobs run.
#[derive(Debug, Clone)]
pub struct ResolvedBinding {
    /// The binding.
    pub binding: Binding,
    /// Current digest of its handler.
    pub digest: String,
}

/// The [`JobProcessor`] of one queue.
pub struct Executor {
    host: Arc<HostContext>,
    /// Updated in place by the supervisor when the binding changes.
    binding: Arc<RwLock<ResolvedBinding>>,
}

impl Executor {
    /// An executor for the queue of `binding`.
    pub fn new(host: Arc<HostContext>, binding: Arc<RwLock<ResolvedBinding>>) -> Self {
        Executor { host, binding }
    }

    /// Writes the run's measurements onto the job.
    async fn record<J: RunningJob>(&self, job: &J, outcome: &RunOutcome) {
        let record = RunRecord {
            peak_memory_bytes: outcome.peak_memory_bytes,
            wall_time_ms: outcome.wall_time.as_secs_f64() * 1000.0,
            host: self.host.host_id.clone(),
            fuel_used: outcome.fuel_used,
            failure_kind: outcome.failure().map(|f| f.kind.as_str()),
        };
        if let Err(e) = self
            .host
            .queues
            .meta()
            .record_run(job.job_key(), &record)
            .await
        {
            tracing::warn!(job = job.id(), error = %e, "could not record run metrics");
        }
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
        Completion::Suspended { wake_at_ms } => format!("suspended until {wake_at_ms}"),
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
        let queue = job.queue().to_string();

        let meta = self.host.queues.meta();
        let pin = || meta.pin(job.queue(), job.id(), &resolved.digest);
        let pinned = match retrying("pin the job", pin).await {
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
        };
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
            tokio::runtime::Handle::current(),
            self.host.queues.store().clone(),
            self.host.queues.meta().clone(),
            job.job_key().to_string(),
            resolved.binding.handler.clone(),
            self.host.queues.prefix().to_string(),
            reporter.progress_sender(),
        );
        let input = job.input();
        let outcome = self
            .host
            .sandbox
            .run_blocking(
                component,
                input,
                limits,
                Box::new(services),
                Some(reporter.log_listener()),
            )
            .await;
        // Successful runs keep their measurements in the job hash only;
        // runs that failed or slept also say so in the job's log, where
        // people look when something went wrong.
        if !matches!(outcome.completion, Completion::Completed(_)) {
            reporter.log(summary(&outcome));
        }
        // Both must land before BullMQ finishes the job (which may delete
        // it); they are independent, so they share the wait.
        tokio::join!(reporter.finish(), self.record(&job, &outcome));
        self.host.metrics.record(&queue, &outcome);

        match outcome.completion {
            Completion::Completed(output) => match serde_json::from_str(&output) {
                Ok(value) => JobResult::Completed(value),
                Err(e) => Self::fail(Failure::new(FailureKind::InvalidOutput, e.to_string())),
            },
            Completion::Failed(failure) => Self::fail(failure),
            Completion::Suspended { wake_at_ms } => {
                let park = || job.park_until(wake_at_ms.max(now_ms()));
                match retrying("park the job", park).await {
                    Ok(()) => JobResult::Parked,
                    Err(e) => Self::fail(Failure::new(
                        FailureKind::HostUnavailable,
                        format!("could not park the job for its durable sleep: {e:#}"),
                    )),
                }
            }
        }
    }
}
