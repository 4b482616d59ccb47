//! Durable waits: how a job parked in `context.wait-for-event` or
//! `wait-for-token` hears of the event or the token completion it waits
//! for, and why neither is lost when it comes early.
//!
//! ## What is stored
//! In the job's hash (it lives and dies with the job):
//! - `airlock.wait:<wait id>`: the wait, JSON [`WaitRecord`] — what for and
//!   its deadline — written by the run that first reaches it (with the
//!   job's pin, like a sleep);
//! - `airlock.waited:<wait id>`: its outcome, `{"came": value}` or
//!   `{"timedOut": true}`, written only by the resolve script (`lua/wait_resolve.lua`) with `HSETNX`: the
//!   first outcome wins, and every replay gets it;
//! - `airlock.token:<wait id>`: the wait's completion token.
//!
//! In the fleet's `{airlock}` slot:
//! - `P:{airlock}:events`, the recent-events stream ([`super::events`]):
//!   what a starting wait looks back at;
//! - `P:{airlock}:waits:<digest of event, path, value>`: the set of jobs
//!   (`[queue, id, wait id]`) waiting for such an event, and
//!   `P:{airlock}:wait-paths:<digest of event>`: the paths the waits of one
//!   event name match on (`""`: no match), at most [`MAX_WAIT_PATHS`], so an
//!   event finds its waiters with one read per path;
//! - `P:{airlock}:token:<digest of token>`: the job a token completes.
//!
//! Index sets and token records expire a day after the last deadline they
//! serve, so jobs removed while waiting leave nothing behind for long.
//!
//! ## Which events count, and why none is lost
//! A wait gets the first matching event sent since its job became ready to
//! run (its enqueue time plus delay) that no other wait of the job received
//! — so an event sent while the job still runs, or while a crashed run is
//! recovered, or while the job waited for something else, is kept for it,
//! as long as it is among the last ~[`RECENT_EVENTS`](super::events::RECENT_EVENTS) events and the
//! newest [`MAX_LOOK_BACK`] of those sent since the job became ready.
//! (Inngest's `waitForEvent` only sees events sent after the wait starts.)
//!
//! An event is first appended to the stream, then looked up in the index
//! ([`Resolver::resolve_event`]). A wait is first added to the index,
//! then looks back in the stream ([`Waits::begin`]). Whatever the
//! interleaving, one of the two sees the other, and when both do, `HSETNX`
//! keeps one outcome. A token completion writes the outcome whenever it
//! comes, before the wait too.
//!
//! Resolving a wait writes the outcome, then promotes the job if it is
//! parked (delayed), through [`Wake`]: BullMQ's promote is the queue
//! module's. A job still running when its outcome comes is not
//! delayed yet: its host reads the outcome again right after parking it
//! (`worker::executor`), and promotes it itself. Crash windows: a resolver
//! that dies after the write, or whose promote fails (its request then
//! answers 503), leaves the outcome for the job to find at its deadline
//! (late, not lost); sending the event or completion again promotes the
//! job (a wait that has its outcome is woken, never changed; a repeated
//! completion answers 409); a host that dies between parking and its
//! second read leaves the outcome to the deadline likewise; a host that
//! dies with the job running lets stalled recovery rerun it, and the
//! rerun finds the outcome.
//!
//! ## Trust
//! Every record read back from Redis is parsed and bounded; a forged
//! waiter or token record can at most resolve a wait it names, which a
//! writer of Redis could do to the job hash directly. An event from a
//! producer token resolves only that token's jobs; a token completes only
//! the wait whose `airlock.token` field holds it.

mod index;

use redis::AsyncCommands;
use serde::{Deserialize, Serialize};

use self::index::{LISTEN, Resolved, TOKEN, new_token, resolve, waiter, waiters_digest};
pub use self::index::{Resolver, TokenCompletion, Wake, is_token, script_hashes};
use super::events::{Effect, EventLog, MAX_LOOK_BACK, MAX_RECENT_EVENT_BYTES};
use crate::error::QueueError;
use crate::state::{digest, fields};
use crate::store::Store;
use airlock_core::json_path::JsonPath;
use airlock_core::wait::{WaitFor, WaitOutcome};

/// Most match paths the waits of one event name may use at a time.
pub const MAX_WAIT_PATHS: usize = 32;

/// How long index entries and token records outlive the deadline they
/// serve.
const INDEX_GRACE_MS: u64 = 24 * 60 * 60 * 1000;

/// What a job is parked for beyond BullMQ's own delays, as its hash says.
#[derive(Debug, Clone, PartialEq)]
pub enum Parked {
    /// A durable wait without its outcome.
    Wait(WaitRecord),
    /// A durable sleep that has not ended by `now`.
    Sleep,
}

impl Parked {
    /// `event`, `token` or `sleeping`: the words `GET /v1/jobs/{ref}`'s
    /// `waiting.kind` uses for it.
    pub fn kind(&self) -> &'static str {
        match self {
            Parked::Wait(WaitRecord::Event { .. }) => "event",
            Parked::Wait(WaitRecord::Token { .. }) => "token",
            Parked::Sleep => "sleeping",
        }
    }
}

/// The durable wait or sleep a job (its hash's `fields`) is parked for at
/// `now`, if any: a wait without an outcome, or a sleep that has not ended.
/// Meaningful for a delayed job: one that runs again has moved on.
pub fn parked_in(fields: &std::collections::HashMap<String, String>, now: u64) -> Option<Parked> {
    let wait = fields.iter().find_map(|(name, value)| {
        let id = name.strip_prefix(fields::WAIT_PREFIX)?;
        let answered = fields.contains_key(&format!("{}{id}", fields::WAITED_PREFIX));
        (!answered)
            .then(|| serde_json::from_str::<WaitRecord>(value).ok())
            .flatten()
    });
    if let Some(record) = wait {
        return Some(Parked::Wait(record));
    }
    let sleeping = fields.iter().any(|(name, value)| {
        name.starts_with(fields::SLEEP_PREFIX) && value.parse::<u64>().is_ok_and(|wake| wake > now)
    });
    sleeping.then_some(Parked::Sleep)
}

/// A durable wait as its job hash holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "for", rename_all = "camelCase")]
pub enum WaitRecord {
    /// For an event.
    Event {
        /// Its name.
        event: String,
        /// The path its data must hold `value` at, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<String>,
        /// The value, with `path`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        value: Option<serde_json::Value>,
        /// When it times out, ms since the epoch.
        deadline: u64,
    },
    /// For the completion of the wait's token.
    Token {
        /// When it times out, ms since the epoch.
        deadline: u64,
    },
}

impl WaitRecord {
    /// The record of a wait for `what`, timing out at `deadline`.
    pub fn new(what: &WaitFor, deadline: u64) -> WaitRecord {
        match what {
            WaitFor::Event { name, matching, .. } => WaitRecord::Event {
                event: name.clone(),
                path: matching.as_ref().map(|(p, _)| p.clone()),
                value: matching.as_ref().map(|(_, v)| v.clone()),
                deadline,
            },
            WaitFor::Token => WaitRecord::Token { deadline },
        }
    }

    /// When it times out.
    pub fn deadline(&self) -> u64 {
        match self {
            WaitRecord::Event { deadline, .. } | WaitRecord::Token { deadline } => *deadline,
        }
    }

    /// What it waits for, in words.
    pub fn describe(&self) -> String {
        match self {
            WaitRecord::Event {
                event,
                path: Some(path),
                value: Some(value),
                ..
            } => format!("event `{event}` with {path} = {value}"),
            WaitRecord::Event { event, .. } => format!("event `{event}`"),
            WaitRecord::Token { .. } => "the completion of its wait token".into(),
        }
    }
}

/// A wait's outcome as stored.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct OutcomeRecord {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    came: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    timed_out: bool,
}

impl OutcomeRecord {
    fn came(value: &serde_json::Value) -> String {
        serde_json::to_string(&OutcomeRecord {
            came: Some(value.clone()),
            timed_out: false,
        })
        .unwrap_or_default()
    }

    fn timed_out() -> String {
        r#"{"timedOut":true}"#.to_string()
    }

    /// Parses a stored outcome (untrusted: anything else is refused).
    fn parse(text: &str) -> Result<WaitOutcome, QueueError> {
        let record: OutcomeRecord = serde_json::from_str(text)
            .map_err(|e| QueueError::Internal(format!("a wait outcome: {e}")))?;
        Ok(match record.came {
            Some(value) => WaitOutcome::Came(value.to_string()),
            None => WaitOutcome::TimedOut,
        })
    }
}

/// The durable waits of one job, for its run's services.
#[derive(Clone)]
pub struct Waits {
    store: Store,
    queue: String,
    id: String,
    job_key: String,
}

impl Waits {
    /// The waits of job `id` of `queue`, whose hash is `job_key`.
    pub fn new(store: Store, queue: &str, id: &str, job_key: &str) -> Waits {
        Waits {
            store,
            queue: queue.to_string(),
            id: id.to_string(),
            job_key: job_key.to_string(),
        }
    }

    /// Wait `wait_id` as recorded, with its outcome once it has one.
    pub async fn state(
        &self,
        wait_id: &str,
    ) -> Result<Option<(WaitRecord, Option<WaitOutcome>)>, QueueError> {
        let mut conn = self.store.conn();
        let (record, outcome): (Option<String>, Option<String>) = redis::cmd("HMGET")
            .arg(&self.job_key)
            .arg(format!("{}{wait_id}", fields::WAIT_PREFIX))
            .arg(format!("{}{wait_id}", fields::WAITED_PREFIX))
            .query_async(&mut conn)
            .await?;
        let Some(record) = record else {
            return Ok(None);
        };
        let record: WaitRecord = serde_json::from_str(&record)
            .map_err(|e| QueueError::Internal(format!("wait `{wait_id}`: {e}")))?;
        let outcome = outcome.as_deref().map(OutcomeRecord::parse).transpose()?;
        Ok(Some((record, outcome)))
    }

    /// The outcome of wait `wait_id`, if it has one.
    pub async fn outcome(&self, wait_id: &str) -> Result<Option<WaitOutcome>, QueueError> {
        let mut conn = self.store.conn();
        let outcome: Option<String> = conn
            .hget(&self.job_key, format!("{}{wait_id}", fields::WAITED_PREFIX))
            .await?;
        outcome.as_deref().map(OutcomeRecord::parse).transpose()
    }

    /// Starts listening for what the recorded wait `wait_id` waits for, and
    /// answers an outcome that came already: an event sent since `since_ms`
    /// (the job's ready time) that no other wait of the job received, from
    /// the recent-events stream; a token completed before the wait.
    /// Listening comes first (see the module docs).
    pub async fn begin(
        &self,
        wait_id: &str,
        record: &WaitRecord,
        since_ms: u64,
    ) -> Result<Begun, QueueError> {
        match record {
            WaitRecord::Token { deadline } => {
                self.token(wait_id, *deadline).await?;
                Ok(Begun::from(self.outcome(wait_id).await?))
            }
            WaitRecord::Event {
                event,
                path,
                value,
                deadline,
            } => {
                let matching = path.as_deref().zip(value.as_ref());
                if !self.listen(wait_id, event, matching, *deadline).await? {
                    return Ok(Begun::TooManyPaths(format!(
                        "the waits for event `{event}` already match on {MAX_WAIT_PATHS} different paths, the most at a time"
                    )));
                }
                let Some(found) = self.look_back(event, matching, since_ms).await? else {
                    return Ok(Begun::Listening);
                };
                // The look-back kept only events this job's producer may
                // send it.
                let resolved = resolve(
                    &self.store,
                    &self.job_key,
                    wait_id,
                    &OutcomeRecord::came(&found),
                    None,
                    true,
                    None,
                )
                .await?;
                if resolved == Resolved::Yes || resolved == Resolved::Already {
                    self.unlisten(wait_id, record).await?;
                }
                // The event's record of the waits it ended gets this one
                // too (after the fact, like the sender's own: a record for
                // people, see `super::events`); a failure to write it is
                // logged, as the wait has its outcome all the same.
                if resolved == Resolved::Yes
                    && let Some(event_id) = found.get("id").and_then(|v| v.as_str())
                    && let Err(e) = EventLog::new(self.store.clone())
                        .note(
                            event_id,
                            Effect::Resumed,
                            &[airlock_core::job_ref::join(&self.queue, &self.id)],
                        )
                        .await
                {
                    tracing::warn!(event_id, error = %e, "could not note the wait an event ended");
                }
                Ok(Begun::from(self.outcome(wait_id).await?))
            }
        }
    }

    /// Past its deadline: records that wait `wait_id` timed out unless an
    /// outcome came first, stops listening, and answers the outcome.
    pub async fn expire(
        &self,
        wait_id: &str,
        record: &WaitRecord,
    ) -> Result<WaitOutcome, QueueError> {
        resolve(
            &self.store,
            &self.job_key,
            wait_id,
            &OutcomeRecord::timed_out(),
            None,
            true,
            None,
        )
        .await?;
        self.unlisten(wait_id, record).await?;
        Ok(self
            .outcome(wait_id)
            .await?
            .unwrap_or(WaitOutcome::TimedOut))
    }

    /// The completion token of wait `wait_id`, created on the first call,
    /// with its record leading back to the job (kept `INDEX_GRACE_MS` past
    /// `deadline`, or a year and a day when the wait has none yet). No record
    /// is written once the wait has its outcome.
    pub async fn token(&self, wait_id: &str, deadline: u64) -> Result<String, QueueError> {
        let mut conn = self.store.conn();
        let token: Option<String> = TOKEN
            .key(&self.job_key)
            .arg(format!("{}{wait_id}", fields::TOKEN_PREFIX))
            .arg(new_token())
            .invoke_async(&mut conn)
            .await?;
        let token = token.ok_or_else(|| {
            QueueError::NotFound(format!(
                "job `{}:{}` (removed while running)",
                self.queue, self.id
            ))
        })?;
        if self.outcome(wait_id).await?.is_none() {
            let ttl = deadline
                .saturating_sub(airlock_core::clock::now_ms())
                .saturating_add(INDEX_GRACE_MS)
                .max(1);
            let key = self.store.keys().wait_token(&digest(&[&token]));
            let _: () = conn
                .pset_ex(key, waiter(&self.queue, &self.id, wait_id), ttl)
                .await?;
        }
        Ok(token)
    }

    /// Adds the wait to the index; false when its event name has too many
    /// paths in use.
    async fn listen(
        &self,
        wait_id: &str,
        event: &str,
        matching: Option<(&str, &serde_json::Value)>,
        deadline: u64,
    ) -> Result<bool, QueueError> {
        let keys = self.store.keys();
        let ttl = deadline
            .saturating_sub(airlock_core::clock::now_ms())
            .saturating_add(INDEX_GRACE_MS);
        let mut conn = self.store.conn();
        let listening: i64 = LISTEN
            .key(keys.event_wait_paths(&digest(&[event])))
            .key(keys.event_waiters(&waiters_digest(event, matching)))
            .arg(matching.map_or("", |(path, _)| path))
            .arg(waiter(&self.queue, &self.id, wait_id))
            .arg(ttl)
            .arg(MAX_WAIT_PATHS)
            .invoke_async(&mut conn)
            .await?;
        Ok(listening == 1)
    }

    /// Takes an event wait out of the index. A token's record stays until
    /// it expires, so a completion after the wait ended is told so (409).
    async fn unlisten(&self, wait_id: &str, record: &WaitRecord) -> Result<(), QueueError> {
        let WaitRecord::Event {
            event, path, value, ..
        } = record
        else {
            return Ok(());
        };
        let key = self
            .store
            .keys()
            .event_waiters(&waiters_digest(event, path.as_deref().zip(value.as_ref())));
        let mut conn = self.store.conn();
        let _: i64 = conn
            .srem(key, waiter(&self.queue, &self.id, wait_id))
            .await?;
        Ok(())
    }

    /// The first recent event named `event` (holding `matching`) sent since
    /// `since_ms` that this job's producer may send it and that no other
    /// wait of this job received.
    async fn look_back(
        &self,
        event: &str,
        matching: Option<(&str, &serde_json::Value)>,
        since_ms: u64,
    ) -> Result<Option<serde_json::Value>, QueueError> {
        let path = match matching {
            Some((path, _)) => Some(JsonPath::parse(path).map_err(QueueError::Internal)?),
            None => None,
        };
        let mut conn = self.store.conn();
        // The newest events since the job became ready (those just before
        // the wait matter most), then oldest first: the earliest match wins.
        let entries: redis::streams::StreamRangeReply = conn
            .xrevrange_count(
                self.store.keys().recent_events(),
                "+",
                format!("{since_ms}-0"),
                MAX_LOOK_BACK,
            )
            .await?;
        let candidates: Vec<(String, serde_json::Value)> = entries
            .ids
            .into_iter()
            .rev()
            .filter_map(|entry| {
                let name: String = entry.get("name")?;
                let payload: String = entry.get("event")?;
                if name != event || payload.len() > MAX_RECENT_EVENT_BYTES {
                    return None;
                }
                let payload: serde_json::Value = serde_json::from_str(&payload).ok()?;
                if let (Some(path), Some((_, value))) = (&path, matching)
                    && payload.get("data").and_then(|d| path.get(d)) != Some(value)
                {
                    return None;
                }
                Some((entry.get("producer").unwrap_or_default(), payload))
            })
            .collect();
        if candidates.is_empty() {
            return Ok(None);
        }
        // Whose job it is, and which events its other waits got.
        let fields = self.store.hgetall(&self.job_key).await?;
        let owner = fields.get(fields::PRODUCER);
        let received_ids: std::collections::HashSet<String> = fields
            .iter()
            .filter(|(name, _)| name.starts_with(fields::WAITED_PREFIX))
            .filter_map(|(_, outcome)| {
                let record: OutcomeRecord = serde_json::from_str(outcome).ok()?;
                Some(record.came?.get("id")?.as_str()?.to_string())
            })
            .collect();
        Ok(candidates.into_iter().find_map(|(sender, payload)| {
            let yours = sender.is_empty() || owner == Some(&sender);
            let id = payload
                .get("id")
                .and_then(|i| i.as_str())
                .unwrap_or_default();
            (yours && !received_ids.contains(id)).then_some(payload)
        }))
    }
}

/// What starting a wait found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Begun {
    /// Nothing yet: the job parks.
    Listening,
    /// Its outcome came already.
    Came(WaitOutcome),
    /// Refused: its event name has [`MAX_WAIT_PATHS`] other paths in use.
    TooManyPaths(String),
}

impl From<Option<WaitOutcome>> for Begun {
    fn from(outcome: Option<WaitOutcome>) -> Begun {
        outcome.map_or(Begun::Listening, Begun::Came)
    }
}
