//! The fleet's recent-events stream (`P:{airlock}:events`): the last
//! ~[`RECENT_EVENTS`] *sent events* (`POST /v1/events`, each at most
//! [`MAX_RECENT_EVENT_BYTES`] as JSON). A starting durable wait looks back
//! at it ([`super::waits`]), and the dashboard lists it. Entries are
//! untrusted (any Redis client can add one): a read skips what does not
//! parse or is over the bounds the API holds sent events to — its JSON
//! over [`MAX_RECENT_EVENT_BYTES`], a name over [`MAX_EVENT_NAME`], an id
//! over [`MAX_EVENT_ID`], a producer name over [`MAX_PRODUCER_NAME`].

use redis::AsyncCommands;
use serde::Serialize;

use crate::error::QueueError;
use crate::store::Store;

/// About how many events the recent-events stream keeps (`XADD MAXLEN ~`).
pub const RECENT_EVENTS: usize = 10_000;

/// Largest event (its JSON, as sent to a job) kept in the recent-events
/// stream; a bigger one reaches only the waits registered when it comes.
pub const MAX_RECENT_EVENT_BYTES: usize = 64 << 10;

/// Most recent events a wait looks back at: the newest this many of those
/// sent since its job became ready.
pub const MAX_LOOK_BACK: usize = 1_000;

/// Longest event name.
pub const MAX_EVENT_NAME: usize = 256;

/// Longest event id.
pub const MAX_EVENT_ID: usize = 200;

/// Longest producer (token) name an entry of the stream may carry.
pub const MAX_PRODUCER_NAME: usize = 256;

/// An event as the recent-events stream keeps it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecentEvent {
    /// Its id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// When Airlock received it, ms since the epoch.
    pub ts: u64,
    /// The producer token that sent it (none: an admin).
    pub producer: Option<String>,
    /// Its payload.
    #[schema(value_type = Value)]
    pub data: serde_json::Value,
}

/// The fleet's recent events on one Redis.
#[derive(Clone)]
pub struct EventLog {
    store: Store,
}

impl EventLog {
    /// The recent events on `store`'s Redis.
    pub fn new(store: Store) -> Self {
        EventLog { store }
    }

    /// Appends an event (its job form, `{name, data, id, ts}`) to the
    /// recent-events stream, unless it is over [`MAX_RECENT_EVENT_BYTES`].
    /// `producer`: the producer token that sent it, if one did.
    pub async fn record(
        &self,
        name: &str,
        payload: &serde_json::Value,
        producer: Option<&str>,
    ) -> Result<(), QueueError> {
        let text = payload.to_string();
        if text.len() > MAX_RECENT_EVENT_BYTES {
            return Ok(());
        }
        let mut conn = self.store.conn();
        let _: String = redis::cmd("XADD")
            .arg(self.store.keys().recent_events())
            .arg("MAXLEN")
            .arg("~")
            .arg(RECENT_EVENTS)
            .arg("*")
            .arg("name")
            .arg(name)
            .arg("event")
            .arg(text)
            .arg("producer")
            .arg(producer.unwrap_or(""))
            .query_async(&mut conn)
            .await?;
        Ok(())
    }

    /// The most recent `limit` events still in the recent-events stream,
    /// newest first — only those `producer` sent, when given. Entries that
    /// do not parse are left out.
    pub async fn recent(
        &self,
        limit: usize,
        producer: Option<&str>,
    ) -> Result<Vec<RecentEvent>, QueueError> {
        let mut conn = self.store.conn();
        // A producer's own events may be sparse among everyone's: read a
        // bounded window and keep its own.
        let window = if producer.is_some() {
            MAX_LOOK_BACK
        } else {
            limit
        };
        let entries: redis::streams::StreamRangeReply = conn
            .xrevrange_count(self.store.keys().recent_events(), "+", "-", window)
            .await?;
        let mut events = Vec::new();
        for entry in entries.ids {
            let sender: String = entry.get("producer").unwrap_or_default();
            if producer.is_some_and(|p| p != sender) || sender.len() > MAX_PRODUCER_NAME {
                continue;
            }
            let Some(payload) = entry
                .get::<String>("event")
                .filter(|text| text.len() <= MAX_RECENT_EVENT_BYTES)
                .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
            else {
                continue;
            };
            let (Some(id), Some(name), Some(ts)) = (
                payload.get("id").and_then(|v| v.as_str()),
                payload.get("name").and_then(|v| v.as_str()),
                payload.get("ts").and_then(|v| v.as_u64()),
            ) else {
                continue;
            };
            if id.len() > MAX_EVENT_ID || name.is_empty() || name.len() > MAX_EVENT_NAME {
                continue;
            }
            events.push(RecentEvent {
                id: id.to_string(),
                name: name.to_string(),
                ts,
                producer: (!sender.is_empty()).then_some(sender),
                data: payload.get("data").cloned().unwrap_or_default(),
            });
            if events.len() == limit {
                break;
            }
        }
        Ok(events)
    }
}
