//! The fleet's recent-events stream (`P:{airlock}:events`): the last
//! ~[`RECENT_EVENTS`] *sent events* (`POST /v1/events`, each at most
//! [`MAX_RECENT_EVENT_BYTES`] as JSON). A starting durable wait looks back
//! at it ([`super::waits`]), and the dashboard lists it. Entries are
//! untrusted (any Redis client can add one): a read skips what does not
//! parse or is over the bounds the API holds sent events to — its JSON
//! over [`MAX_RECENT_EVENT_BYTES`], a name over [`MAX_EVENT_NAME`], an id
//! over [`MAX_EVENT_ID`], a producer name over [`MAX_PRODUCER_NAME`].
//!
//! Beside it, each event's record of what it did to jobs that were there
//! before it (`P:{airlock}:event-effects:<digest of its id>`, a list of
//! `r:<queue>:<id>` and `c:<queue>:<id>`): the durable waits it ended
//! (`r`, [`Effect::Resumed`]) — those waiting when it was sent, and those
//! that started later and found it here — and the jobs it cancelled through
//! a `cancelOn` rule (`c`). The first [`MAX_EVENT_EFFECTS`] are kept, for
//! [`EFFECTS_TTL_MS`]. It is a record for people (the dashboard's events
//! view), written after what it records: a host that dies in between, or a
//! write that fails (it is logged, and the delivery or the wait goes on),
//! leaves a resume or cancel without its line; nothing reads it to decide
//! anything. Read back, it is bounded and parsed like the stream.

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

/// Most jobs an event's record of what it did keeps ([`EventLog::note`]).
pub const MAX_EVENT_EFFECTS: usize = 100;

/// How long an event's record of what it did is kept after its last line
/// (the stream itself is bounded by count, not by time).
pub const EFFECTS_TTL_MS: u64 = 7 * 24 * 60 * 60 * 1000;

/// Longest job ref (`<queue>:<id>`) a record of what an event did may
/// hold; longer lines are left out when read.
const MAX_EFFECT_REF: usize = 512;

/// What an event did to a job that was there before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// It ended one of the job's durable waits (`wait-for-event`).
    Resumed,
    /// It cancelled the job through its binding's `cancelOn` rule.
    Cancelled,
}

impl Effect {
    fn mark(self) -> &'static str {
        match self {
            Effect::Resumed => "r:",
            Effect::Cancelled => "c:",
        }
    }
}

/// The jobs an event resumed and cancelled, as `<queue>:<id>`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventEffects {
    /// Jobs whose durable wait it ended.
    pub resumed: Vec<String>,
    /// Jobs it cancelled.
    pub cancelled: Vec<String>,
}

impl EventEffects {
    /// Parses a record's lines, leaving out what is not a mark and a ref
    /// within bounds, and repeats.
    fn parse(lines: Vec<String>) -> EventEffects {
        let mut effects = EventEffects::default();
        for line in lines {
            let (list, job) = if let Some(job) = line.strip_prefix(Effect::Resumed.mark()) {
                (&mut effects.resumed, job)
            } else if let Some(job) = line.strip_prefix(Effect::Cancelled.mark()) {
                (&mut effects.cancelled, job)
            } else {
                continue;
            };
            let well_formed = job.len() <= MAX_EFFECT_REF
                && !job.chars().any(char::is_control)
                && airlock_core::job_ref::JobRef::parse(job).is_some();
            if well_formed && !list.iter().any(|j| j == job) {
                list.push(job.to_string());
            }
        }
        effects
    }
}

/// The key of event `event_id`'s record of what it did: a digest, so an id
/// read from Redis names a key of bounded length.
fn effects_key(store: &Store, event_id: &str) -> String {
    store.keys().event_effects(&super::digest(&[event_id]))
}

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

    /// Notes that event `event_id` had `effect` on the jobs `refs`
    /// (`<queue>:<id>`), in its record of what it did (see the module
    /// docs): one atomic append, trim and expiry.
    pub async fn note(
        &self,
        event_id: &str,
        effect: Effect,
        refs: &[String],
    ) -> Result<(), QueueError> {
        if refs.is_empty() {
            return Ok(());
        }
        let key = effects_key(&self.store, event_id);
        let lines: Vec<String> = refs
            .iter()
            .take(MAX_EVENT_EFFECTS)
            .map(|job| format!("{}{job}", effect.mark()))
            .collect();
        let mut conn = self.store.conn();
        let _: () = redis::pipe()
            .atomic()
            .rpush(&key, lines)
            .ignore()
            .ltrim(&key, 0, MAX_EVENT_EFFECTS as isize - 1)
            .ignore()
            .pexpire(&key, EFFECTS_TTL_MS as i64)
            .ignore()
            .query_async(&mut conn)
            .await?;
        Ok(())
    }

    /// What each of `event_ids` did, in their order, as their records say
    /// (one round trip).
    pub async fn effects(&self, event_ids: &[&str]) -> Result<Vec<EventEffects>, QueueError> {
        if event_ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        for id in event_ids {
            pipe.lrange(
                effects_key(&self.store, id),
                0,
                MAX_EVENT_EFFECTS as isize - 1,
            );
        }
        let mut conn = self.store.conn();
        let records: Vec<Vec<String>> = pipe.query_async(&mut conn).await?;
        Ok(records.into_iter().map(EventEffects::parse).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_read_back_keeps_only_well_formed_lines_once() {
        let lines = [
            "r:refunds:7",
            "c:orders:j-1",
            "r:refunds:7",
            "x:refunds:8",
            "r:no-id:",
            "r::no-queue",
            "r:noseparator",
            "c:bad:\u{7}bell",
        ]
        .map(String::from)
        .to_vec();
        let mut long = String::from("r:q:");
        long.push_str(&"a".repeat(MAX_EFFECT_REF));
        let mut all = lines;
        all.push(long);
        assert_eq!(
            EventEffects::parse(all),
            EventEffects {
                resumed: vec!["refunds:7".into()],
                cancelled: vec!["orders:j-1".into()],
            }
        );
    }
}
