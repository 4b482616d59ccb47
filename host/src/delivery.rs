//! Event delivery (Inngest-style): `POST /v1/events` delivers an event to
//! every queue whose binding subscribes to its name, as a job whose data is
//! the event.
//!
//! Delivery is a retry-safe fan-out: each subscribed queue gets the job
//! `evt-<event id>`, added with BullMQ deduplication on `evt:<event id>` for
//! 24 hours. Both make the add idempotent per queue inside BullMQ's own add
//! script — the job id while the job exists, the deduplication key for 24
//! hours even after retention removed it. So nothing is claimed up front: a
//! delivery that failed part-way (Redis went away after two of three
//! queues) is completed by sending the same event again, which adds the
//! missing jobs and finds the others; within 24 hours an event id yields
//! exactly one job per subscribed queue, however often and however
//! concurrently it is sent. An event without an id gets a fresh one and is
//! delivered once per request.

use serde::{Deserialize, Serialize};

use crate::access::Scope;
use crate::error::{FieldError, QueueError};
use crate::names;
use crate::queue::{Deduplication, NewJob, QueueService};
use crate::registry::{Registry, RegistryError};
use crate::state::events::Effect;

/// How long an event id blocks a repeat delivery, in milliseconds.
pub const EVENT_ID_TTL_MS: u64 = 24 * 60 * 60 * 1000;

pub use crate::state::events::{MAX_EVENT_ID, MAX_EVENT_NAME};

/// An incoming event.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Event {
    /// The event name (`order.placed`).
    #[schema(min_length = 1, max_length = 256)]
    pub name: String,
    /// The event's payload.
    #[serde(default)]
    #[schema(value_type = Value)]
    pub data: serde_json::Value,
    /// An idempotency id: the same id within 24 hours creates no new jobs.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 200, pattern = r"^[A-Za-z0-9._-]{1,200}$")]
    pub id: Option<String>,
}

/// What a delivery did.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Delivery {
    /// The event id (generated when the event had none).
    pub event_id: String,
    /// True when every subscribed queue already had this event's job: no
    /// new job was created.
    pub duplicate: bool,
    /// The event's job on each subscribed queue, as `<queue>:<id>`.
    pub jobs: Vec<String>,
    /// The jobs it cancelled through their bindings' `cancelOn` rules, as
    /// `<queue>:<id>`.
    pub cancelled: Vec<String>,
    /// The jobs whose durable wait (`wait-for-event`) it ended, as
    /// `<queue>:<id>`.
    pub resumed: Vec<String>,
}

/// Why an event could not be delivered.
#[derive(Debug, thiserror::Error)]
pub enum DeliveryError {
    /// A queue operation failed (for Redis trouble: send it again).
    #[error(transparent)]
    Queue(#[from] QueueError),
    /// The bindings could not be read.
    #[error(transparent)]
    Registry(#[from] RegistryError),
}

impl Event {
    /// Checks the name and id.
    pub fn validate(&self) -> Result<(), FieldError> {
        if self.name.is_empty() || self.name.len() > MAX_EVENT_NAME {
            return Err(FieldError::new(
                "name",
                format!("must be 1 to {MAX_EVENT_NAME} characters"),
            ));
        }
        if let Some(id) = &self.id {
            names::id("id", id, MAX_EVENT_ID)?;
        }
        Ok(())
    }
}

/// Notes what event `event_id` did in its record for the events view; a
/// failure to is logged, not answered: the delivery itself happened.
async fn note(queues: &QueueService, event_id: &str, effect: Effect, refs: &[String]) {
    if let Err(e) = queues.state().events.note(event_id, effect, refs).await {
        tracing::warn!(event_id, ?effect, error = %e, "could not note what an event did");
    }
}

/// Delivers `event` to its subscribed queues, and cancels the started jobs
/// it matches through their bindings' `cancelOn` rules — only those
/// `producer` enqueued, when the event comes from a producer token. A
/// scoped token's event reaches the queues of its `scope` alone: it starts
/// and cancels no job elsewhere.
/// `lease_ms` is a key-slot reservation's lease (the worker lock duration);
/// the jobs it creates carry `trace` (`crate::traces`).
pub async fn deliver(
    queues: &QueueService,
    registry: &Registry,
    event: &Event,
    producer: Option<&str>,
    scope: Option<&Scope>,
    lease_ms: u64,
    trace: Option<String>,
) -> Result<Delivery, DeliveryError> {
    event.validate().map_err(QueueError::from)?;
    let event_id = event
        .id
        .clone()
        .unwrap_or_else(|| uuid::Uuid::new_v4().simple().to_string());
    let payload = serde_json::json!({
        "name": event.name,
        "data": event.data,
        "id": event_id,
        "ts": airlock_core::clock::now_ms(),
    });
    // First into the recent events, then to the waits already listening:
    // a wait that starts listening in between looks back and finds it (see
    // `state::waits`).
    let state = queues.state();
    state.events.record(&event.name, &payload, producer).await?;
    let resumed = state
        .waits
        .resolve_event(&event.name, &payload, producer, queues)
        .await?;
    // The record of what the event did comes after it is done (a record
    // for the events view only, see `state::events`).
    note(queues, &event_id, Effect::Resumed, &resumed).await;
    let mut jobs = Vec::new();
    let mut cancelled = Vec::new();
    let mut all_duplicates = true;
    let mut bindings = registry.bindings().await?;
    bindings.retain(|b| scope.is_none_or(|s| s.has_queue(&b.queue)));
    for binding in &bindings {
        for rule in binding.cancel_on.iter().filter(|r| r.event == event.name) {
            let Some(value) = rule.event_path().get(&event.data) else {
                continue;
            };
            let reason = format!(
                "event `{}` ({event_id}) matched {} = {value}",
                event.name,
                rule.job_match.as_str()
            );
            let ids = queues
                .cancel_matching(&binding.queue, &event.name, value, producer, &reason)
                .await?;
            cancelled.extend(
                ids.into_iter()
                    .map(|id| airlock_core::job_ref::join(&binding.queue, &id)),
            );
        }
    }
    note(queues, &event_id, Effect::Cancelled, &cancelled).await;
    for binding in bindings {
        if !binding.events.iter().any(|e| e == &event.name) {
            continue;
        }
        let mut opts = binding.default_job_options.to_job_options();
        opts.job_id = Some(format!("evt-{event_id}"));
        // A debounced queue coalesces its events by key instead (its
        // debounce sets the deduplication): the event id then dedupes only
        // while its job exists (see `state::debounces`).
        let debounced = binding
            .debounce
            .as_ref()
            .is_some_and(|rule| rule.key.get(&payload).is_some());
        if debounced {
            // The debounce sets the delay, over the binding's default.
            opts.delay = None;
        } else {
            opts.deduplication = Some(Deduplication {
                id: format!("evt:{event_id}"),
                ttl: Some(EVENT_ID_TTL_MS),
                ..Default::default()
            });
        }
        let job = NewJob {
            name: event.name.clone(),
            data: payload.clone(),
            opts,
            // The sending producer owns the jobs its event created: it
            // reads them, and its events may cancel them.
            producer: producer.map(str::to_string),
            trace: trace.clone(),
            parent: None,
        };
        // Flow control's enqueue side, as for the API's jobs.
        let field = |_: usize, field: &str| format!("defaultJobOptions.{field}");
        let added =
            crate::gate::add_governed(queues, &binding, &binding.queue, vec![job], lease_ms, field)
                .await?
                .remove(0);
        all_duplicates &= added.duplicate;
        jobs.push(airlock_core::job_ref::join(&binding.queue, &added.id));
    }
    Ok(Delivery {
        event_id,
        duplicate: !jobs.is_empty() && all_duplicates,
        jobs,
        cancelled,
        resumed,
    })
}
