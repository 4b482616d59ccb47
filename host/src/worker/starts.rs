//! What a running job starts: jobs on other queues (`context.enqueue`,
//! `context.invoke`) and events (`context.send-event`), under its
//! binding's `starts`, as its producer, in its trace. The sandbox checks
//! the guest's arguments and keeps the order of an invoke's groups
//! (`sandbox::run_state::work`); this module adds, reads and detaches.
//!
//! ## What is stored
//! - A started job's id is derived from the starting job, the step and
//!   the job's index in the call (`c-<digest>`): adding it again — a
//!   replay, a rerun after a crash between the add and its record — finds
//!   the job instead of adding one.
//! - An invoke's children are added with BullMQ's `parent` option and
//!   `ignoreDependencyOnFailure`: the script that finishes a child (its
//!   completion, or its failure for good, after its retries) records its
//!   end in the parent's `processed` or `failed` hash and, when it was the
//!   last child the parent waits for, moves the parent from
//!   `waiting-children` to the wait list. The end and the wake-up are one
//!   BullMQ script: no host dying anywhere loses either, and the parent
//!   is moved once.
//! - `airlock.invoke:<step>` on the parent: its deadline, written by the
//!   run that first reaches the invoke, and the children that timed out
//!   for it, written once past the deadline (so every replay gets the same
//!   ends).
//! - `invoke-deadlines` in the `{airlock}` slot: the parked parents with a
//!   deadline, for [`sweep_deadlines`].
//!
//! ## Crash windows
//! - After children are added, before the parent parks: stalled recovery
//!   reruns the parent; it replays, adds the same ids (found, by
//!   Airlock's claim or BullMQ's own duplicate check, and not added again;
//!   the first add's link to the parent is still there) and parks.
//! - A child ends before its parent parks: BullMQ records its end; the
//!   park (`moveToWaitingChildren`) then finds nothing pending and the
//!   parent runs again at once (`worker::executor`).
//! - Past a deadline: the sweep detaches the parent's pending children,
//!   which moves it to the wait list; a sweeper dying half-way, or a
//!   detach failing, leaves the entry for the next sweep (detaching again
//!   is harmless). The parent's
//!   run then detaches again (no-op) before it records the time-out, so a
//!   record never claims a child still holds the parent.
//! - An `enqueue` or `send-event` whose host dies between the start and
//!   its step record: the rerun starts the same id again — found (a job
//!   while it exists; an event id for 24 hours, `delivery`: each
//!   subscribed queue gets one job per event id, while a re-send is
//!   recorded among the recent events again and may resume or cancel the
//!   jobs that match it then).
//!
//! ## Trust
//! On a host with the fleet's secrets key, the parent's producer is the
//! one Airlock sealed on it (a forged producer field is ignored: its
//! children then have none, and only admin and reader tokens read them);
//! without the key, the field as the API reads it for access
//! (`Meta::inherited`). Ends read from the parent's hashes
//! are bounded and parsed; a forged end can only answer the invoke that
//! names that child, which a writer of Redis could do to the job directly.

use std::sync::Arc;

use redis::AsyncCommands;

use crate::delivery::{self, Event};
use crate::queue::{DefaultJobOptions, JobOptions, NewJob, QueueError, QueueService};
use crate::registry::{Registry, Starts};
use crate::sandbox::services::{ChildEnd, InvokeState, ServiceError, StartJob};
use crate::state::fields;
use crate::state::meta::Producer;
use airlock_core::clock::now_ms;

/// Largest child return value or failure reason handed to a parent;
/// longer ones are cut (a reason) or answered as an error (a value).
const MAX_END_BYTES: usize = 8 << 20;

/// Most bytes of return values and failure reasons one resumption hands
/// its parent, all children together: the ends are lowered into the guest
/// at once, and `processed` and `failed` hashes written by hand must not
/// make one resumption hand over 10,000 × [`MAX_END_BYTES`]. Ends past it
/// are answered as an `output_too_large` failure.
const MAX_ENDS_BYTES: usize = 64 << 20;

/// What a run needs to start work: shared by the runs of one queue.
#[derive(Clone)]
pub struct StartEnv {
    /// The queues.
    pub queues: Arc<QueueService>,
    /// The bindings (a started job's queue's defaults and flow control;
    /// an event's subscribers).
    pub registry: Registry,
    /// The binding's `starts`; `None`: nothing may be started.
    pub rules: Option<Starts>,
    /// A key-slot reservation's lease (the worker lock duration).
    pub lease_ms: u64,
}

impl std::fmt::Debug for StartEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StartEnv")
            .field("rules", &self.rules)
            .field("lease_ms", &self.lease_ms)
            .finish_non_exhaustive()
    }
}

/// What one run starts work with: its queue's [`StartEnv`] and the run's
/// trace context (which started jobs continue).
pub struct RunStarts {
    /// The queue's.
    pub env: Arc<StartEnv>,
    /// The run's trace context, as BullMQ's telemetry writes it.
    pub trace: Option<String>,
}

/// The starting job: who it is, and what its children inherit.
pub struct Starter {
    env: Arc<StartEnv>,
    queue: String,
    id: String,
    job_key: String,
    /// The run's trace context, as BullMQ's telemetry writes it.
    trace: Option<String>,
    /// The job's producer, as Airlock sealed it, once read.
    producer: Option<Option<String>>,
}

fn unavailable(e: impl std::fmt::Display) -> ServiceError {
    ServiceError::Unavailable(e.to_string())
}

/// A started job's id: `c-` and the digest of the starting job, the step
/// and the index (never an integer, so its runs read their pin).
pub fn derived_id(queue: &str, id: &str, step: &str, index: usize) -> String {
    let digest = crate::state::digest(&[queue, id, step, &index.to_string()]);
    format!("c-{}", &digest[..40])
}

impl Starter {
    /// The starter of job `id` of `queue` (its hash `job_key`), whose run
    /// continues `trace`.
    pub fn new(
        env: Arc<StartEnv>,
        queue: &str,
        id: &str,
        job_key: &str,
        trace: Option<String>,
    ) -> Starter {
        Starter {
            env,
            queue: queue.to_string(),
            id: id.to_string(),
            job_key: job_key.to_string(),
            trace,
            producer: None,
        }
    }

    fn queues(&self) -> &QueueService {
        &self.env.queues
    }

    /// The job's producer its children inherit (`Meta::inherited`): one
    /// `HMGET` the first time.
    async fn producer(&mut self) -> Result<Option<String>, ServiceError> {
        if let Some(known) = &self.producer {
            return Ok(known.clone());
        }
        let mut conn = self.queues().store().conn();
        let (name, data, producer, seal): (
            Option<String>,
            Option<String>,
            Option<String>,
            Option<String>,
        ) = redis::cmd("HMGET")
            .arg(&self.job_key)
            .arg("name")
            .arg("data")
            .arg(fields::PRODUCER)
            .arg(fields::PRODUCER_SEAL)
            .query_async(&mut conn)
            .await
            .map_err(unavailable)?;
        let verified = self.queues().state().meta.inherited(
            &Producer {
                name: producer,
                seal,
            },
            &self.queue,
            &self.id,
            name.as_deref().unwrap_or_default(),
            data.as_deref().unwrap_or_default(),
        );
        self.producer = Some(verified.clone());
        Ok(verified)
    }

    /// Refuses a queue the binding's `starts` does not allow.
    fn check_queue(&self, queue: &str) -> Result<(), ServiceError> {
        let allowed = self
            .env
            .rules
            .as_ref()
            .is_some_and(|r| r.allows_queue(queue));
        if allowed {
            return Ok(());
        }
        Err(ServiceError::Refused(format!(
            "queue `{queue}` is not in the `starts.queues` of queue `{}`'s binding",
            self.queue
        )))
    }

    /// Adds the jobs at `indexes` of `jobs` (see
    /// [`HostServices::start_jobs`](crate::sandbox::HostServices::start_jobs)).
    pub async fn start_jobs(
        &mut self,
        step: &str,
        jobs: &[StartJob],
        indexes: &[usize],
        as_children: bool,
    ) -> Result<Vec<(String, String)>, ServiceError> {
        for job in jobs {
            self.check_queue(&job.queue)?;
            crate::names::queue("queue", &job.queue)
                .map_err(|e| ServiceError::Invalid(e.to_string()))?;
        }
        let producer = self.producer().await?;
        let mut refs = Vec::with_capacity(indexes.len());
        // Each ref's index in the call, which an error names.
        let mut in_call = Vec::with_capacity(indexes.len());
        // One add per queue, in the order of the call; each job with its
        // place in `refs`.
        let mut by_queue: Vec<(&str, Vec<NewJob>, Vec<usize>)> = Vec::new();
        for &i in indexes {
            let Some(job) = jobs.get(i) else { continue };
            let own: DefaultJobOptions = match &job.options {
                Some(options) => serde_json::from_value(options.clone())
                    .map_err(|e| ServiceError::Invalid(format!("the job's options: {e}")))?,
                None => DefaultJobOptions::default(),
            };
            let id = derived_id(&self.queue, &self.id, step, i);
            let opts = JobOptions {
                job_id: Some(id.clone()),
                ..JobOptions::default()
            }
            .with_defaults(&own);
            let at_ref = refs.len();
            refs.push((job.queue.clone(), id));
            in_call.push(i);
            let new = NewJob {
                name: job.name.clone(),
                data: job.data.clone(),
                opts,
                producer: producer.clone(),
                trace: self.trace.clone(),
                parent: as_children.then(|| (self.queue.clone(), self.id.clone())),
            };
            match by_queue.iter_mut().find(|(q, _, _)| *q == job.queue) {
                Some((_, list, at)) => {
                    list.push(new);
                    at.push(at_ref);
                }
                None => by_queue.push((&job.queue, vec![new], vec![at_ref])),
            }
        }
        for (queue, list, at) in by_queue {
            // The job's fields as the call names them (`options` for
            // BullMQ's `opts`).
            let field = |k: usize, f: &str| match f.strip_prefix("opts.") {
                Some(option) => format!("jobs[{}].options.{option}", in_call[at[k]]),
                None => format!("jobs[{}].{f}", in_call[at[k]]),
            };
            let added = crate::gate::add_to_queue(
                self.queues(),
                &self.env.registry,
                queue,
                list,
                self.env.lease_ms,
                field,
            )
            .await;
            let added = added.map_err(|e| match e {
                QueueError::Invalid(e) => ServiceError::Invalid(e.to_string()),
                e => unavailable(e),
            })?;
            // The id BullMQ answered, which for a job that joined a
            // debounce may be another job's (a child never joins one:
            // `gate::add_governed` refuses it).
            for (enqueued, &at_ref) in added.iter().zip(&at) {
                refs[at_ref].1 = enqueued.id.clone();
            }
        }
        // A test pauses here to kill the host between the add and the park
        // (or the step's record).
        fail::fail_point!("after-start-jobs");
        Ok(refs)
    }

    /// The invoke of `step`: its deadline and each child's end so far,
    /// with the record to write (the field and its value: the deadline,
    /// the first time) before the answer counts.
    pub async fn invoke_state(
        &mut self,
        step: &str,
        jobs: &[StartJob],
        timeout_ms: Option<u64>,
    ) -> Result<(InvokeState, Option<(String, String)>), ServiceError> {
        let field = format!("{}{step}", fields::INVOKE_PREFIX);
        let mut conn = self.queues().store().conn();
        let recorded: Option<String> = conn
            .hget(&self.job_key, &field)
            .await
            .map_err(unavailable)?;
        let invoke = match recorded
            .as_deref()
            .map(serde_json::from_str::<InvokeRecord>)
        {
            Some(Ok(invoke)) => invoke,
            Some(Err(e)) => {
                return Err(ServiceError::Invalid(format!(
                    "the invoke's record does not parse: {e}"
                )));
            }
            None => InvokeRecord {
                deadline: timeout_ms.map(|t| now_ms().saturating_add(t)),
                timed_out: Vec::new(),
            },
        };
        let to_record = match recorded {
            Some(_) => None,
            None => Some((field, serde_json::to_string(&invoke).map_err(unavailable)?)),
        };
        let ends = self.ends(step, jobs, &invoke.timed_out).await?;
        let state = InvokeState {
            deadline_ms: invoke.deadline,
            ends,
        };
        Ok((state, to_record))
    }

    /// Each child's end as the parent's `processed` and `failed` hashes
    /// hold it; `timed_out` ones as timed out.
    async fn ends(
        &self,
        step: &str,
        jobs: &[StartJob],
        timed_out: &[usize],
    ) -> Result<Vec<Option<ChildEnd>>, ServiceError> {
        let keys = self.queues().store().keys();
        let child_keys: Vec<String> = (0..jobs.len())
            .map(|i| keys.job(&jobs[i].queue, &derived_id(&self.queue, &self.id, step, i)))
            .collect();
        let mut conn = self.queues().store().conn();
        let (values, reasons): (Vec<Option<String>>, Vec<Option<String>>) = redis::pipe()
            .cmd("HMGET")
            .arg(format!("{}:processed", self.job_key))
            .arg(&child_keys)
            .cmd("HMGET")
            .arg(format!("{}:failed", self.job_key))
            .arg(&child_keys)
            .query_async(&mut conn)
            .await
            .map_err(unavailable)?;
        let failed: Vec<usize> = (0..jobs.len())
            .filter(|&i| values[i].is_none() && reasons[i].is_some())
            .collect();
        let attempts: Vec<Option<u32>> = if failed.is_empty() {
            Vec::new()
        } else {
            let mut pipe = redis::pipe();
            for &i in &failed {
                pipe.cmd("HGET").arg(&child_keys[i]).arg("atm");
            }
            pipe.query_async(&mut conn).await.map_err(unavailable)?
        };
        let mut ends = Vec::with_capacity(jobs.len());
        let mut attempts = failed.iter().zip(attempts);
        let mut handed = 0usize;
        for i in 0..jobs.len() {
            let end = if timed_out.contains(&i) {
                Some(ChildEnd::TimedOut)
            } else if let Some(value) = &values[i] {
                Some(if value.len() > MAX_END_BYTES {
                    let why = format!(
                        "its return value is {} bytes, more than an invoke hands over ({MAX_END_BYTES})",
                        value.len()
                    );
                    too_large(why, 1)
                } else if handed + value.len() > MAX_ENDS_BYTES {
                    too_large(over_total(), 1)
                } else {
                    handed += value.len();
                    ChildEnd::Completed(value.clone())
                })
            } else if let Some(reason) = &reasons[i] {
                let made = attempts.next().and_then(|(_, n)| n).unwrap_or(1);
                let end = failure_end(reason, made);
                let len = match &end {
                    ChildEnd::Failed { reason, .. } => reason.len(),
                    _ => 0,
                };
                Some(if handed + len > MAX_ENDS_BYTES {
                    too_large(over_total(), made)
                } else {
                    handed += len;
                    end
                })
            } else {
                None
            };
            ends.push(end);
        }
        Ok(ends)
    }

    /// Past the deadline of `step`: detaches the children at `pending`,
    /// and answers the record that says they timed out (the field and its
    /// value), unless one does already.
    pub async fn invoke_expire(
        &mut self,
        step: &str,
        jobs: &[StartJob],
        pending: &[usize],
    ) -> Result<Option<(String, String)>, ServiceError> {
        // Every pending child detached before the record says it timed
        // out (a Redis error fails the run, which is then run again).
        for &i in pending {
            let Some(job) = jobs.get(i) else { continue };
            let child = derived_id(&self.queue, &self.id, step, i);
            self.queues()
                .detach_child(&job.queue, &child, &self.job_key)
                .await
                .map_err(unavailable)?;
        }
        let field = format!("{}{step}", fields::INVOKE_PREFIX);
        let mut conn = self.queues().store().conn();
        let recorded: Option<String> = conn
            .hget(&self.job_key, &field)
            .await
            .map_err(unavailable)?;
        let mut invoke: InvokeRecord = recorded
            .as_deref()
            .and_then(|t| serde_json::from_str(t).ok())
            .unwrap_or_default();
        if !invoke.timed_out.is_empty() {
            return Ok(None);
        }
        invoke.timed_out = pending.to_vec();
        let text = serde_json::to_string(&invoke).map_err(unavailable)?;
        Ok(Some((field, text)))
    }

    /// Sends event `name` under an id derived from the job and `step`.
    pub async fn send_event(
        &mut self,
        step: &str,
        name: &str,
        data: &serde_json::Value,
    ) -> Result<String, ServiceError> {
        let allowed = self
            .env
            .rules
            .as_ref()
            .is_some_and(|r| r.allows_event(name));
        if !allowed {
            return Err(ServiceError::Refused(format!(
                "event `{name}` is not in the `starts.events` of queue `{}`'s binding",
                self.queue
            )));
        }
        let producer = self.producer().await?;
        let digest = crate::state::digest(&[&self.queue, &self.id, step]);
        let event = Event {
            name: name.to_string(),
            data: data.clone(),
            id: Some(format!("e-{}", &digest[..40])),
        };
        event
            .validate()
            .map_err(|e| ServiceError::Invalid(e.to_string()))?;
        let delivered = delivery::deliver(
            self.queues(),
            &self.env.registry,
            &event,
            producer.as_deref(),
            None,
            self.env.lease_ms,
            self.trace.clone(),
        )
        .await
        .map_err(unavailable)?;
        Ok(delivered.event_id)
    }
}

/// `airlock.invoke:<step>`.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct InvokeRecord {
    /// When it times out.
    #[serde(default)]
    deadline: Option<u64>,
    /// The children that timed out for it.
    #[serde(default)]
    timed_out: Vec<usize>,
}

/// The end handed over in place of one too large to hand over.
fn too_large(reason: String, attempts: u32) -> ChildEnd {
    ChildEnd::Failed {
        kind: "output_too_large".into(),
        reason,
        attempts,
    }
}

/// Why an end past [`MAX_ENDS_BYTES`] was not handed over.
fn over_total() -> String {
    format!("the invoke's ends come to more than it hands over in all ({MAX_ENDS_BYTES} bytes)")
}

/// A failed child's end from its `failedReason` (`kind: message`, as
/// `sandbox::Failure::reason` writes it; another writer's reason is all
/// message).
fn failure_end(reason: &str, attempts: u32) -> ChildEnd {
    let mut reason = reason.to_string();
    if reason.len() > MAX_END_BYTES {
        let mut cut = MAX_END_BYTES;
        while !reason.is_char_boundary(cut) {
            cut -= 1;
        }
        reason.truncate(cut);
    }
    let (kind, message) = airlock_core::failure::FailureKind::split_reason(&reason);
    ChildEnd::Failed {
        kind: kind.map_or("failed", |k| k.as_str()).to_string(),
        reason: message.to_string(),
        attempts,
    }
}

/// Wakes the jobs whose invoke's deadline has passed while they wait in
/// `waiting-children`: detaches each child still pending, which moves the
/// job to the wait list (BullMQ's `removeChildDependency`); its run then
/// finds the deadline passed and records the time-out — or, for the
/// binding's time to finish noted in its place (`finishTimeoutMs`, when
/// sooner), fails as `timed_out` when it is taken. Every host sweeps
/// (with its recovery, every half heartbeat); two sweeping one job detach
/// the same children, harmlessly.
pub async fn sweep_deadlines(queues: &QueueService) {
    let deadlines = &queues.state().invoke_deadlines;
    let due = match deadlines.due(now_ms()).await {
        Ok(due) => due,
        Err(e) => {
            tracing::debug!(error = %e, "read the invokes' deadlines");
            return;
        }
    };
    for (queue, id) in due {
        if let Err(e) = wake_past_deadline(queues, &queue, &id).await {
            tracing::warn!(queue, id, error = %e, "wake an invoke past its deadline");
            continue;
        }
        if let Err(e) = deadlines.done(&queue, &id).await {
            tracing::debug!(queue, id, error = %e, "drop an invoke's deadline");
        }
    }
}

/// Detaches the pending children of job `id` of `queue`.
async fn wake_past_deadline(
    queues: &QueueService,
    queue: &str,
    id: &str,
) -> Result<(), QueueError> {
    let keys = queues.store().keys();
    let parent_key = keys.job(queue, id);
    let mut conn = queues.store().conn();
    let pending: Vec<String> = conn.smembers(format!("{parent_key}:dependencies")).await?;
    for child_key in pending {
        let Some((child_queue, child_id)) = keys.split_job_key(&child_key) else {
            continue;
        };
        // An error keeps the deadline's entry for the next sweep.
        queues
            .detach_child(child_queue, child_id, &parent_key)
            .await?;
    }
    Ok(())
}
