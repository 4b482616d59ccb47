//! Durable waits: for an event (Inngest's `waitForEvent`) or for a token a
//! person or a third party completes (Trigger.dev's waitpoint tokens).

use serde::{Deserialize, Serialize};

/// An event a [`wait_for_event`](crate::Context::wait_for_event) received:
/// what `POST /v1/events` was sent, the same form an event-triggered job's
/// data has.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// Its name (`order.paid`).
    pub name: String,
    /// Its payload.
    #[serde(default)]
    pub data: serde_json::Value,
    /// Its id (given by the sender, or generated).
    pub id: String,
    /// When Airlock received it, ms since the Unix epoch.
    pub ts: u64,
}

/// Which events a wait accepts beyond their name: those whose data holds
/// `value` at a JSON path.
#[derive(Debug, Clone, PartialEq)]
pub struct Match {
    pub(crate) path: String,
    pub(crate) value: String,
}

impl Match {
    /// Events whose data holds `value` at `path` (`$.orderId`: `$` then
    /// `.name` segments), compared as JSON values.
    pub fn new(path: impl Into<String>, value: impl Serialize) -> Match {
        Match {
            path: path.into(),
            // A value that does not serialise matches nothing the host
            // could send; `null` is then refused nowhere, but no event
            // holds `null` at a path (a path finding `null` finds nothing).
            value: serde_json::to_string(&value).unwrap_or_else(|_| "null".into()),
        }
    }
}
