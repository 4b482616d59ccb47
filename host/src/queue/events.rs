//! A queue's events, from BullMQ's events stream (`<prefix>:<queue>:events`):
//! what the SSE endpoints and `wait` are fed from.

use redis::AsyncCommands;
use serde::Serialize;

use super::{QueueError, QueueService};

/// One event of a queue.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueEventItem {
    /// The stream entry id (resume after it with `Last-Event-ID`).
    pub id: String,
    /// BullMQ's event name: `added`, `waiting`, `active`, `progress`,
    /// `completed`, `failed`, `delayed`, `stalled`, `removed`, ...
    pub event: String,
    /// The job it is about, if any.
    pub job_id: Option<String>,
    /// The event's payload (`returnvalue`, `failedReason`, progress `data`, ...).
    pub data: serde_json::Value,
}

impl QueueEventItem {
    /// Whether this event ends a job's life: it completed or failed for good.
    pub fn is_terminal(&self) -> bool {
        self.event == "completed" || self.event == "failed"
    }
}

fn parse_json(raw: &str) -> serde_json::Value {
    serde_json::from_str(raw).unwrap_or_else(|_| serde_json::Value::String(raw.to_string()))
}

fn convert(entry: bullmq::QueueEventEntry) -> QueueEventItem {
    use bullmq::QueueEvent as E;
    use serde_json::json;
    let event = entry.event.name().to_string();
    let job_id = entry.event.job_id().map(str::to_string);
    let data = match entry.event {
        E::Completed {
            return_value, prev, ..
        } => json!({"returnvalue": parse_json(&return_value), "prev": prev}),
        E::Failed {
            failed_reason,
            prev,
            ..
        } => json!({"failedReason": failed_reason, "prev": prev}),
        E::Progress { data, .. } => json!({"progress": data}),
        E::Added { name, .. } => json!({"name": name}),
        E::Delayed { delay, .. } => json!({"delay": delay}),
        E::Active { prev, .. } | E::Waiting { prev, .. } | E::Removed { prev, .. } => {
            json!({"prev": prev})
        }
        E::RetriesExhausted { attempts_made, .. } => json!({"attemptsMade": attempts_made}),
        E::Other { fields, .. } => serde_json::to_value(fields).unwrap_or_default(),
        _ => json!({}),
    };
    QueueEventItem {
        id: entry.id,
        event,
        job_id,
        data,
    }
}

/// A live subscription to a queue's events.
pub struct Subscription {
    inner: Option<bullmq::QueueEvents>,
}

impl Subscription {
    /// The next event; `None` once the subscription is closed.
    pub async fn next(&self) -> Option<QueueEventItem> {
        self.inner.as_ref()?.next_event().await.map(convert)
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.take() {
            // Closing releases the dedicated blocking connection.
            tokio::spawn(async move { inner.close().await });
        }
    }
}

impl QueueService {
    /// The id of the newest entry of a queue's events stream (`0-0` when
    /// empty): subscribe from here, then read the job's state, and no event
    /// in between can slip through.
    pub async fn events_cursor(&self, queue: &str) -> Result<String, QueueError> {
        let mut conn = self.store().conn();
        let newest: redis::streams::StreamRangeReply = conn
            .xrevrange_count(self.events_key(queue), "+", "-", 1)
            .await?;
        Ok(newest
            .ids
            .first()
            .map(|e| e.id.clone())
            .unwrap_or_else(|| "0-0".into()))
    }

    /// Subscribes to `queue`'s events after stream id `after`.
    pub async fn subscribe(&self, queue: &str, after: &str) -> Result<Subscription, QueueError> {
        crate::names::queue("queue", queue)?;
        let opts = bullmq::QueueEventsOptions {
            connection: self.connection().clone(),
            prefix: self.prefix().to_string(),
            blocking_timeout: 5000,
            last_event_id: Some(after.to_string()),
            autorun: true,
        };
        let inner = bullmq::QueueEvents::with_options(queue, opts).await?;
        Ok(Subscription { inner: Some(inner) })
    }
}
