//! Batches (a binding's `batch`): the jobs of a queue a host holds, gathered
//! into groups and run together in one call of the handler's `run-batch`,
//! each job then ending on its own.
//!
//! ## What is where
//! Nothing of a batch is in Redis while it gathers or runs: each of its jobs
//! is an ordinary active BullMQ job, locked by this host's worker (which
//! takes `size` × `concurrency` jobs at once on such a queue and renews
//! their locks), and the batch is this host's memory: a group per
//! [`GroupKey`] in [`Batches`], then a run. When the run ends, each job's
//! own `process` gets its outcome ([`Joined`]) and finishes the job as a
//! single run would (its record carries the batch's id and size,
//! `state::runs`). So:
//! - a host that dies while a batch gathers or runs loses no job: each is
//!   still active in BullMQ under a lock that expires, and recovery
//!   (`worker::recovery`, else BullMQ's stalled check) puts it back to
//!   wait, to run again in another batch — at least once, as every job;
//! - a job ends after its batch's run, never before, so a crash between
//!   the run and a job's end runs that job again, as a crash between a
//!   single run and BullMQ's `moveToFinished` does.
//!
//! What a batch leaves in Redis after its run, both kept a week: the ids of
//! its jobs (for their pages) and, for a binding with `recordTranscripts`,
//! its one transcript, written before any job ends, so a job's record that
//! points to it (`state::meta::TranscriptField`) never names nothing until
//! it expires. A crash before the transcript is kept loses only it: the
//! jobs run again, each run recorded anew.
//!
//! ## Who may share a batch
//! The jobs of one group share the binding's resolution (its environment),
//! the handler version, the effective limits, the producer — verified
//! through Airlock's seal, as warm instances' owners are
//! (`executor::reuse`, which also reads the producer of a job whose fields
//! the run did not read); a job whose producer does not verify, or cannot
//! be read, runs in a batch of its own — and, with `batch.key`, the key's
//! value (jobs without one, or whose data is not JSON, share the empty
//! key).
//!
//! ## When a group runs
//! At once when it holds `size` jobs; once it holds `minSize` and no job
//! joined it for [`SETTLE`]; at the latest `timeoutMs` after its first job
//! joined, with what it holds; and at once when the queue's worker closes
//! or drains ([`Batches::flush`]). At most the queue's share of batches
//! (`concurrency`, [`Batches::set_at_once`]) run at once on a host; a group
//! taken when that many run waits for one to end. A job stopped
//! (cancelled, past its time to finish) before it joins, or while its
//! group gathers, fails at once without running; one stopped once its
//! group was taken ends with its stop's failure when the batch has run,
//! its outcome dropped (the run is not stopped for the other jobs).

mod services;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{Notify, Semaphore, oneshot};

use super::HostContext;
use super::reporter::ProgressSender;
use crate::registry::Batch;
use crate::sandbox::trace::RunSpans;
use crate::sandbox::transcript::Transcript;
use crate::sandbox::{
    BatchOutcome, Completion, Failure, FailureKind, Limits, LoadedComponent, LogLine, LogListener,
    RunEnv,
};
use crate::traces::BatchEnded;
use airlock_core::run::JobInput;
use opentelemetry::trace::SpanContext;

pub use self::services::BatchServices;

/// How long the list of a batch's jobs is kept (`Keys::batch_members`),
/// for the job page's siblings, and a recorded batch's transcript
/// (`Keys::batch_transcript`): a week.
pub const BATCH_MEMBERS_TTL: Duration = Duration::from_secs(7 * 24 * 60 * 60);

/// How long a group that holds `minSize` jobs waits for one more before
/// it runs: the jobs the worker had to hand arrive within it, one fetch
/// apart.
pub const SETTLE: Duration = Duration::from_millis(5);

/// What the jobs of one group share; jobs of different keys never share a
/// batch.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GroupKey {
    /// The binding's resolution the jobs were taken under (its
    /// environment: config, egress; a rebind starts new groups).
    pub resolution: u64,
    /// The handler version the jobs run.
    pub digest: String,
    /// `-` for jobs without a producer, `p:<name>` for a verified one,
    /// `j:<job id>` for a job whose producer does not verify (alone).
    pub owner: String,
    /// The effective limits (per-job limits lowered from the binding's).
    pub limits: Limits,
    /// The value at `batch.key` in the job's data (JSON text), with a key.
    pub key: Option<String>,
}

/// A job waiting in a group, with where its batch's end goes.
pub struct Member {
    /// The job as handed to the guest.
    pub input: JobInput,
    /// Where the batch's progress reports reach this job.
    pub progress: ProgressSender,
    /// Where the batch's log lines reach this job.
    pub logs: LogListener,
    /// The job's hash key, for the services of the batch's first job.
    pub job_key: String,
    /// When the job became ready, for the same.
    pub ready_at_ms: u64,
    /// The job's run span, on a host that exports traces: the batch's span
    /// links to it.
    pub trace: Option<SpanContext>,
    /// This join's own number (a job held twice on a host joins twice).
    token: u64,
    reply: Option<oneshot::Sender<Joined>>,
}

impl Member {
    /// A member for `input`, its reports going to `progress` and `logs`.
    pub fn new(
        input: JobInput,
        progress: ProgressSender,
        logs: LogListener,
        job_key: String,
        ready_at_ms: u64,
        trace: Option<SpanContext>,
    ) -> Member {
        Member {
            input,
            progress,
            logs,
            job_key,
            ready_at_ms,
            trace,
            token: 0,
            reply: None,
        }
    }
}

/// What a job gets when its batch's run ended.
#[derive(Clone)]
pub struct Joined {
    /// The batch's end, shared by its jobs.
    pub batch: Arc<Ran>,
    /// This job's place in the batch.
    pub index: usize,
}

/// A batch's run, ended.
pub struct Ran {
    /// `<host id>-<8 random hex digits, one per executor>-<n>`.
    pub id: String,
    /// Jobs in the batch.
    pub size: usize,
    /// How the run ended, with each job's outcome when it answered them.
    pub outcome: BatchOutcome,
    /// The batch's span, on a host that exports traces.
    pub trace: Option<SpanContext>,
}

impl Ran {
    /// Job `index`'s outcome: its own when the batch answered one per job,
    /// else the batch's failure.
    pub fn completion(&self, index: usize) -> Completion {
        match &self.outcome.jobs {
            Some(jobs) => jobs[index].clone(),
            None => self.outcome.run.completion.clone(),
        }
    }
}

/// A group gathering jobs.
struct Open {
    id: u64,
    members: Vec<Member>,
    first_at: Instant,
    last_join: Instant,
    wake: Arc<Notify>,
    /// What its run needs (the first joiner's), for [`Batches::flush`].
    with: Option<RunWith>,
}

/// What [`Batches::due`] found.
enum Due {
    /// Taken: run it.
    Now(Box<Open>),
    /// Not yet: wait for a join or the instant.
    Later(Arc<Notify>, Instant),
    /// Taken by a job that filled it, or emptied by stops.
    Gone,
}

/// What a batch run needs besides its jobs.
#[derive(Clone)]
pub struct RunWith {
    /// The component (the group's digest).
    pub component: Arc<LoadedComponent>,
    /// The binding's environment for the run (its stop stays unset).
    pub env: RunEnv,
    /// The binding's handler name (KV and secrets are the handler's).
    pub handler: String,
    /// One job's effective limits (the group's: its key holds them).
    pub limits: Limits,
    /// The binding's start rules (a batch starts nothing; its services
    /// need them).
    pub starts: Arc<super::starts::StartEnv>,
    /// The binding's `propagateTrace`: the batch's span goes on the
    /// handler's outbound requests.
    pub propagate_trace: bool,
}

/// The groups of one queue on this host.
pub struct Batches {
    host: Arc<HostContext>,
    open: Mutex<HashMap<GroupKey, Open>>,
    /// Numbers groups and joins.
    next: AtomicU64,
    /// Random per executor, in every batch id: ids repeat neither across a
    /// host's restarts nor across a queue bound again.
    incarnation: String,
    /// Batches that may run at once: the queue's share.
    at_once: Arc<Semaphore>,
    /// The permits `at_once` was given in all.
    at_once_given: Mutex<usize>,
}

impl Batches {
    /// No groups yet; one batch at a time until [`Batches::set_at_once`].
    pub fn new(host: Arc<HostContext>) -> Arc<Batches> {
        Arc::new(Batches {
            host,
            open: Mutex::new(HashMap::new()),
            next: AtomicU64::new(1),
            incarnation: uuid::Uuid::new_v4().simple().to_string()[..8].to_string(),
            at_once: Arc::new(Semaphore::new(1)),
            at_once_given: Mutex::new(1),
        })
    }

    /// Lets `batches` (at least 1) run at once from now on: permits added
    /// at once; permits taken away as runs end.
    pub fn set_at_once(&self, batches: usize) {
        let batches = batches.max(1);
        let mut given = self.at_once_given.lock().unwrap_or_else(|p| p.into_inner());
        if batches > *given {
            self.at_once.add_permits(batches - *given);
        } else if batches < *given {
            let (semaphore, fewer) = (self.at_once.clone(), (*given - batches) as u32);
            tokio::spawn(async move {
                if let Ok(taken) = semaphore.acquire_many_owned(fewer).await {
                    taken.forget();
                }
            });
        }
        *given = batches;
    }

    /// Runs every group gathering now (a closing or draining worker).
    pub fn flush(self: &Arc<Self>) {
        let groups: Vec<Open> = {
            let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
            open.drain().map(|(_, group)| group).collect()
        };
        for group in groups {
            group.wake.notify_one();
            if let Some(with) = group.with.clone() {
                tokio::spawn(self.clone().run(group, with));
            }
        }
    }

    /// Adds `member` to the group of `key`, opening it (and its gatherer)
    /// when there is none; the group runs with `with` under `rule` (see
    /// the module docs). The receiver answers when the batch has run.
    pub fn join(
        self: &Arc<Self>,
        key: GroupKey,
        rule: &Batch,
        with: RunWith,
        mut member: Member,
    ) -> (oneshot::Receiver<Joined>, JoinTicket) {
        let (tx, rx) = oneshot::channel();
        member.reply = Some(tx);
        let now = Instant::now();
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let group = open.entry(key.clone()).or_insert_with(|| {
            let id = self.next.fetch_add(1, Ordering::Relaxed);
            let wake = Arc::new(Notify::new());
            tokio::spawn(
                self.clone()
                    .gather(key.clone(), id, rule.clone(), with.clone()),
            );
            Open {
                id,
                members: Vec::new(),
                first_at: now,
                last_join: now,
                wake,
                with: Some(with.clone()),
            }
        });
        member.token = self.next.fetch_add(1, Ordering::Relaxed);
        let token = member.token;
        group.members.push(member);
        group.last_join = now;
        let ticket = JoinTicket {
            key: key.clone(),
            group: group.id,
            token,
        };
        if group.members.len() >= rule.size as usize {
            let full = open.remove(&key).expect("the group is open");
            full.wake.notify_one();
            drop(open);
            tokio::spawn(self.clone().run(full, with));
        } else {
            group.wake.notify_one();
        }
        (rx, ticket)
    }

    /// Takes a stopped job out of its group if the group has not started;
    /// `true` when it was taken out (its batch will not hold it).
    pub fn leave(&self, ticket: &JoinTicket) -> bool {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let Some(group) = open.get_mut(&ticket.key) else {
            return false;
        };
        if group.id != ticket.group {
            return false;
        }
        let before = group.members.len();
        group.members.retain(|m| m.token != ticket.token);
        let left = group.members.len() < before;
        if group.members.is_empty() {
            open.remove(&ticket.key);
        }
        left
    }

    /// Waits until group `id` of `key` should run (see the module docs),
    /// takes it and runs it; ends at once when a job that filled it took
    /// it first.
    async fn gather(self: Arc<Self>, key: GroupKey, id: u64, rule: Batch, with: RunWith) {
        let timeout = Duration::from_millis(rule.timeout_ms);
        let min_size = rule.min_size();
        let group = loop {
            match self.due(&key, id, timeout, min_size) {
                Due::Gone => return,
                Due::Now(group) => break *group,
                Due::Later(wake, next) => {
                    tokio::select! {
                        () = wake.notified() => {}
                        () = tokio::time::sleep_until(next.into()) => {}
                    }
                }
            }
        };
        self.run(group, with).await;
    }

    /// Whether group `id` of `key` should run now (taken out of the open
    /// groups), later (what wakes it, and when to look again), or is gone.
    fn due(&self, key: &GroupKey, id: u64, timeout: Duration, min_size: usize) -> Due {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let Some(group) = open.get(key).filter(|g| g.id == id) else {
            return Due::Gone;
        };
        let now = Instant::now();
        let deadline = group.first_at + timeout;
        let settled = group.last_join + SETTLE;
        let enough = group.members.len() >= min_size;
        if now >= deadline || (enough && now >= settled) {
            return Due::Now(Box::new(open.remove(key).expect("the group is open")));
        }
        let next = if enough {
            settled.min(deadline)
        } else {
            deadline
        };
        Due::Later(group.wake.clone(), next)
    }

    /// Runs a group's jobs as one batch and hands each its end.
    async fn run(self: Arc<Self>, group: Open, with: RunWith) {
        let Open { id, members, .. } = group;
        if members.is_empty() {
            return;
        }
        let size = members.len();
        let batch_id = format!("{}-{}-{id}", self.host.host_id, self.incarnation);
        let (outcome, trace) = self.run_members(&members, with, &batch_id).await;
        let ran = Arc::new(Ran {
            id: batch_id,
            size,
            outcome,
            trace,
        });
        let queue = members[0].input.queue.clone();
        let ids: Vec<String> = members.iter().map(|m| m.input.id.clone()).collect();
        if let Some(transcript) = &ran.outcome.run.transcript {
            self.keep_transcript(&queue, &ran.id, transcript).await;
        }
        for (index, mut member) in members.into_iter().enumerate() {
            if let Some(reply) = member.reply.take() {
                let _ = reply.send(Joined {
                    batch: ran.clone(),
                    index,
                });
            }
        }
        self.note_members(&queue, &ran.id, &ids).await;
    }

    /// Keeps a recorded batch's transcript, once for all its jobs, before
    /// they are handed their outcomes: each job's run record points to it
    /// (`state::meta::TranscriptField`), and a pointer never lands before
    /// what it names. A failure to keep it costs only the transcript.
    async fn keep_transcript(&self, queue: &str, batch: &str, transcript: &Transcript) {
        let meta = &self.host.queues.state().meta;
        let kept = match serde_json::to_string(transcript) {
            Ok(text) => {
                meta.keep_batch_transcript(queue, batch, &text, BATCH_MEMBERS_TTL)
                    .await
            }
            Err(e) => Err(e.into()),
        };
        if let Err(e) = kept {
            tracing::warn!(queue, batch, error = %e, "keep the batch's transcript");
        }
    }

    /// Keeps the ids of a batch's jobs (a JSON array) for their pages (one
    /// `SET` per batch, after its jobs were handed their outcomes); a
    /// failure to write them costs only the page's list.
    async fn note_members(&self, queue: &str, batch: &str, ids: &[String]) {
        let store = self.host.queues.store();
        let key = store.keys().batch_members(queue, batch);
        let mut conn = store.conn();
        let written: redis::RedisResult<()> = redis::cmd("SET")
            .arg(key)
            .arg(serde_json::to_string(ids).unwrap_or_default())
            .arg("EX")
            .arg(BATCH_MEMBERS_TTL.as_secs())
            .query_async(&mut conn)
            .await;
        if let Err(e) = written {
            tracing::debug!(queue, batch, error = %e, "keep the batch's job ids");
        }
    }

    /// The batch's run: room on this host for one instance, the limits
    /// scaled to the batch (fuel and the deadline times its jobs), its
    /// progress and logs to every job, its span (on a host that exports
    /// traces), the call. With the batch's span's ids.
    async fn run_members(
        &self,
        members: &[Member],
        mut with: RunWith,
        batch_id: &str,
    ) -> (BatchOutcome, Option<SpanContext>) {
        let first = &members[0];
        let maxima = &self.host.sandbox.config().maxima;
        let limits = scaled(&with.limits, members.len(), maxima);
        // One of the queue's batches at once, then room for one instance.
        let _turn = self.at_once.clone().acquire_owned().await;
        let permit = match self.host.capacity.acquire(limits.memory_bytes).await {
            Ok(permit) => permit,
            Err(e) => {
                let failure = Failure::new(FailureKind::Instantiation, e.to_string());
                return (BatchOutcome::failed(failure), None);
            }
        };
        let traced = self.host.traces.as_ref().map(|traces| {
            let runs = members.iter().filter_map(|m| m.trace.clone()).collect();
            let span = traces.start_batch(&first.input.queue, runs);
            (traces.clone(), span, Arc::new(RunSpans::default()))
        });
        if let Some((_, span, spans)) = &traced {
            with.env.spans = Some(spans.clone());
            if with.propagate_trace {
                with.env.traceparent = span.traceparent();
            }
        }
        let digest = with.component.digest.clone();
        let progress: Vec<ProgressSender> = members.iter().map(|m| m.progress.clone()).collect();
        let listeners: Vec<LogListener> = members.iter().map(|m| m.logs.clone()).collect();
        let logs: LogListener = Arc::new(move |line: &LogLine| {
            for listener in &listeners {
                listener(line);
            }
        });
        let services = BatchServices::new(
            &self.host.queues,
            first.job_key.clone(),
            first.ready_at_ms,
            with.handler.clone(),
            with.starts.clone(),
            progress,
        );
        let jobs = members.iter().map(|m| m.input.clone()).collect();
        let outcome = self
            .host
            .sandbox
            .run_batch_isolated(
                with.component.clone(),
                jobs,
                limits,
                Box::new(services),
                Some(logs),
                with.env,
            )
            .await;
        drop(permit);
        let Some((traces, span, spans)) = traced else {
            return (outcome, None);
        };
        let ids = span.span_context();
        let failure = outcome.run.failure();
        traces.end_batch(
            span,
            BatchEnded {
                id: batch_id,
                size: members.len(),
                digest: &digest,
                host: &self.host.host_id,
                fuel_used: outcome.run.fuel_used,
                peak_memory_bytes: outcome.run.peak_memory_bytes,
                end: failure.map_or("completed", |f| f.kind.as_str()),
                reason: failure.map(|f| f.message.as_str()),
                spans: spans.take().0,
            },
        );
        (outcome, Some(ids))
    }
}

/// A batch's limits: fuel and the deadline are the per-job figures times
/// its jobs, at most the host's maxima; memory and the rest are one
/// instance's (one job's output limit holds for each job's output).
pub fn scaled(per_job: &Limits, jobs: usize, maxima: &crate::sandbox::HostMaxima) -> Limits {
    let n = jobs.max(1) as u32;
    let mut limits = per_job.clone();
    limits.fuel = per_job
        .fuel
        .map(|f| f.saturating_mul(u64::from(n)).min(maxima.fuel.max(f)));
    limits.timeout = per_job
        .timeout
        .saturating_mul(n)
        .min(maxima.timeout.max(per_job.timeout));
    limits
}

/// Where a job joined, to take it out again ([`Batches::leave`]).
pub struct JoinTicket {
    key: GroupKey,
    group: u64,
    token: u64,
}
