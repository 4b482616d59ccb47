//! The enqueue side of flow control: what a binding's rules do to jobs
//! as Airlock adds them (the API's enqueue and bulk enqueue, and events
//! delivered to subscribed queues), before and after BullMQ's add.
//!
//! 1. `debounce`: a key's jobs added less than `periodMs` apart coalesce
//!    in BullMQ's debounce mode; the delay keeps to `maxWaitMs`
//!    (`state::debounces`). A job of a debounced key may carry no `delay`
//!    or `deduplication` of its own: checked for every job before the
//!    first write.
//! 2. `keyConcurrency` reservations: each ready job (not delayed, no
//!    priority of its own) whose key has room takes a slot before the add;
//!    one whose key is full is held back
//!    behind every ready job (BullMQ's lowest priority,
//!    `queue::HELD_BACK_PRIORITY`) so it does not take a
//!    worker's turn from a job that can run.
//! 3. BullMQ's add, then the hand-over of each added job's reservation to
//!    the job; a duplicate's reservation expires with its lease.
//!
//! Flows and schedules do not come through here: BullMQ's own scripts add
//! their jobs (the flow producer, the job scheduler's ticks), so their
//! jobs meet flow control at admission only ([`super::admission`]), which
//! holds the same limits when they run.
//!
//! Crash windows: see `state::key_limits` (reservations) and
//! `state::debounces`.

use crate::error::{FieldError, QueueError};
use crate::queue::{Deduplication, Enqueued, HELD_BACK_PRIORITY, NewJob, QueueService};
use crate::registry::{Binding, Registry, RegistryError};
use crate::state::key_limits::KeySlot;

/// Adds `jobs` to `queue` as a job a handler starts (a child, a dead
/// letter) is added: under the queue's binding — its default job options,
/// then [`add_governed`] — or, for a queue no binding serves yet (a BullMQ
/// worker elsewhere may), by BullMQ's add as asked. A registry that cannot
/// be read is [`QueueError::Unavailable`].
pub async fn add_to_queue(
    queues: &QueueService,
    registry: &Registry,
    queue: &str,
    mut jobs: Vec<NewJob>,
    lease_ms: u64,
    field: impl Fn(usize, &str) -> String,
) -> Result<Vec<Enqueued>, QueueError> {
    match registry.binding(queue).await {
        Ok(binding) => {
            for job in &mut jobs {
                job.opts = job.opts.with_defaults(&binding.default_job_options);
            }
            add_governed(queues, &binding, queue, jobs, lease_ms, field).await
        }
        Err(RegistryError::NotFound(_)) => queues.add_bulk(queue, jobs).await,
        Err(e) => Err(QueueError::Unavailable(e.to_string())),
    }
}

/// Adds `jobs` to `queue` under `binding`'s rules. `field` names a job's
/// field in errors (`jobs[2].opts.delay` in a bulk request); `lease_ms`
/// is a reservation's lease.
pub async fn add_governed(
    queues: &QueueService,
    binding: &Binding,
    queue: &str,
    mut jobs: Vec<NewJob>,
    lease_ms: u64,
    field: impl Fn(usize, &str) -> String,
) -> Result<Vec<Enqueued>, QueueError> {
    if let Some(rule) = &binding.debounce {
        for (i, job) in jobs.iter().enumerate() {
            if rule.key.get(&job.data).is_none() {
                continue;
            }
            if job.parent.is_some() {
                return Err(FieldError::new(
                    field(i, "data"),
                    "matches the queue's debounce key, and a child its parent waits for cannot join a debounce (the burst's next job would replace it)",
                )
                .into());
            }
            if job.opts.deduplication.is_some() {
                return Err(FieldError::new(
                    field(i, "opts.deduplication"),
                    "cannot be combined with the queue's debounce (an Idempotency-Key header sets one too)",
                )
                .into());
            }
            if job.opts.delay.is_some_and(|d| d > 0) {
                return Err(FieldError::new(
                    field(i, "opts.delay"),
                    "cannot be combined with the queue's debounce, which sets the delay",
                )
                .into());
            }
        }
        for job in jobs.iter_mut() {
            let Some(value) = rule.key.get(&job.data) else {
                continue;
            };
            let debounces = &queues.state().debounces;
            let burst = debounces
                .join(&KeySlot::of(queue, value), rule.period_ms, rule.max_wait_ms)
                .await?;
            job.opts.delay = (burst.delay_ms > 0).then_some(burst.delay_ms);
            // BullMQ's debounce mode: the burst's delayed job is replaced.
            job.opts.deduplication = Some(Deduplication {
                id: burst.dedup_id,
                ttl: Some(burst.delay_ms.max(1)),
                extend: Some(true),
                replace: Some(true),
            });
        }
    }
    let keys: Vec<Option<(KeySlot, u64)>> = match &binding.key_concurrency {
        Some(rule) => jobs
            .iter()
            .map(|job| {
                // A delayed job, or one with a priority of its own (it waits
                // in BullMQ's priority order, maybe long), takes its slot
                // when it starts: a reservation would hold the slot while
                // it waits.
                let delayed = job.opts.delay.is_some_and(|d| d > 0);
                let prioritized = job.opts.priority.unwrap_or(0) > 0;
                let value = rule
                    .key
                    .get(&job.data)
                    .filter(|_| !delayed && !prioritized)?;
                Some((KeySlot::of(queue, value), rule.limit))
            })
            .collect(),
        None => Vec::new(),
    };
    let tokens = if keys.is_empty() {
        Vec::new()
    } else {
        queues.state().key_limits.reserve(&keys, lease_ms).await?
    };
    for (job, (key, token)) in jobs.iter_mut().zip(keys.iter().zip(&tokens)) {
        if key.is_some() && token.is_none() && job.opts.priority.unwrap_or(0) == 0 {
            job.opts.priority = Some(HELD_BACK_PRIORITY);
        }
    }
    let added = queues.add_bulk(queue, jobs).await?;
    let handovers: Vec<(KeySlot, String, String)> = keys
        .into_iter()
        .zip(tokens)
        .zip(&added)
        .filter_map(|((key, token), job)| {
            let ((slot, _), token) = (key?, token?);
            (!job.duplicate).then(|| (slot, token, job.id.clone()))
        })
        .collect();
    queues.state().key_limits.hand_over(&handovers).await?;
    Ok(added)
}
