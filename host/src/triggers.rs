//! Event triggers (Inngest-style): `POST /v1/events` delivers an event to
//! every queue whose binding subscribes to its name, as a job whose data is
//! the event.
//!
//! An event with an id is delivered at most once per 24 hours: the first
//! delivery claims `P:{airlock}:event:<id>` (SET NX) and stores the jobs it
//! created there; a repeat finds the claim and answers with those jobs. The
//! jobs also get the id in their job id (`evt-<id>`), so even two deliveries
//! racing past the claim cannot add a job twice to a queue.

use std::time::{SystemTime, UNIX_EPOCH};

use redis::AsyncCommands;
use serde::{Deserialize, Serialize};

use crate::queue::{NewJob, OptionError, QueueService};
use crate::registry::Registry;

/// How long an event id blocks a repeat delivery.
pub const EVENT_ID_TTL_SECS: u64 = 24 * 60 * 60;

/// An incoming event.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Event {
    /// The event name (`order.placed`).
    pub name: String,
    /// The event's payload.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub data: serde_json::Value,
    /// An idempotency id: the same id within 24 hours creates no new jobs.
    #[serde(default)]
    pub id: Option<String>,
}

/// What a delivery did.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Delivery {
    /// The event id (generated when the event had none).
    pub event_id: String,
    /// True when this id was delivered before: no new jobs were created.
    pub duplicate: bool,
    /// The jobs the (first) delivery created, as `<queue>:<id>`.
    pub jobs: Vec<String>,
}

fn bad(field: &str, message: &str) -> OptionError {
    OptionError {
        field: field.into(),
        message: message.into(),
    }
}

impl Event {
    /// Checks the name and id.
    pub fn validate(&self) -> Result<(), OptionError> {
        if self.name.is_empty() || self.name.len() > 256 {
            return Err(bad("name", "must be 1 to 256 characters"));
        }
        if let Some(id) = &self.id
            && (id.is_empty()
                || id.len() > 200
                || !id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
        {
            return Err(bad(
                "id",
                "must be 1 to 200 letters, digits, `-`, `_` or `.`",
            ));
        }
        Ok(())
    }
}

/// Delivers `event` to its subscribed queues.
pub async fn deliver(
    queues: &QueueService,
    registry: &Registry,
    event: &Event,
) -> anyhow::Result<Delivery> {
    event.validate()?;
    let event_id = event
        .id
        .clone()
        .unwrap_or_else(|| uuid::Uuid::new_v4().simple().to_string());
    let store = queues.store();
    let claim = store.keys().event(&event_id);
    let mut conn = store.conn();
    if event.id.is_some() {
        let claimed: Option<String> = redis::cmd("SET")
            .arg(&claim)
            .arg("[]")
            .arg("NX")
            .arg("EX")
            .arg(EVENT_ID_TTL_SECS)
            .query_async(&mut conn)
            .await?;
        if claimed.is_none() {
            let stored: Option<String> = conn.get(&claim).await?;
            let jobs = stored
                .and_then(|s| serde_json::from_str(&s).ok())
                .unwrap_or_default();
            return Ok(Delivery {
                event_id,
                duplicate: true,
                jobs,
            });
        }
    }
    let timestamp = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis() as u64;
    let payload = serde_json::json!({
        "name": event.name,
        "data": event.data,
        "id": event_id,
        "ts": timestamp,
    });
    let mut jobs = Vec::new();
    for binding in registry.bindings().await? {
        if !binding.events.iter().any(|e| e == &event.name) {
            continue;
        }
        let mut opts = binding.default_job_options.clone();
        opts.job_id = Some(format!("evt-{event_id}"));
        let added = queues
            .add(
                &binding.queue,
                NewJob {
                    name: event.name.clone(),
                    data: payload.clone(),
                    opts,
                },
            )
            .await?;
        jobs.push(format!("{}:{}", binding.queue, added.id));
    }
    if event.id.is_some() {
        let _: () = redis::cmd("SET")
            .arg(&claim)
            .arg(serde_json::to_string(&jobs)?)
            .arg("XX")
            .arg("KEEPTTL")
            .query_async(&mut conn)
            .await?;
    }
    Ok(Delivery {
        event_id,
        duplicate: false,
        jobs,
    })
}
