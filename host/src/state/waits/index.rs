//! How an event or a token completion finds its waits and resolves them:
//! the index sets and token records of [`super`]'s module docs, and the
//! one script that writes an outcome (first writer wins).

use std::sync::LazyLock;

use redis::AsyncCommands;

use super::{MAX_WAIT_PATHS, OutcomeRecord};
use crate::error::QueueError;
use crate::state::{digest, fields};
use crate::store::Store;
use airlock_core::json_path::JsonPath;

/// Most waiters one event resolves at once (the rest stay for the next).
const MAX_RESOLVE: usize = 10_000;

/// Brings a parked job forward once one of its waits has its outcome:
/// BullMQ's `promote` of a delayed job. Resolving writes Airlock's keys
/// only; the queue module does the waking (`QueueService` implements this).
#[async_trait::async_trait]
pub trait Wake: Sync {
    /// Wakes job `id` of `queue` if it is parked; anything else is left
    /// alone.
    async fn wake(&self, queue: &str, id: &str) -> Result<(), QueueError>;
}

/// The waits' scripts by name, with their SHA1s (for benchmarks).
pub fn script_hashes() -> Vec<(&'static str, String)> {
    [
        ("resolve", &RESOLVE),
        ("listen", &LISTEN),
        ("token", &TOKEN),
    ]
    .into_iter()
    .map(|(name, script)| (name, script.get_hash().to_string()))
    .collect()
}

/// `KEYS[1]` job hash; `ARGV[1]` outcome field, `ARGV[2]` outcome, `ARGV[3]`
/// producer the job must belong to (`""`: any), `ARGV[4]` wait field that
/// must exist (`""`: none needed), `ARGV[5]` token field, `ARGV[6]` the
/// token it must hold (with `ARGV[5]`). 1: resolved; 0: no such job; -1:
/// it had an outcome; -2: another producer's job; -3: no such wait (or
/// another token).
pub(super) static RESOLVE: LazyLock<redis::Script> =
    LazyLock::new(|| redis::Script::new(include_str!("../lua/wait_resolve.lua")));

/// `KEYS[1]` paths set, `KEYS[2]` waiters set; `ARGV[1]` path (`""`: none),
/// `ARGV[2]` waiter, `ARGV[3]` expiry (ms from now), `ARGV[4]` most paths.
/// 1: listening; 0: too many paths in use for this event name.
pub(super) static LISTEN: LazyLock<redis::Script> =
    LazyLock::new(|| redis::Script::new(include_str!("../lua/wait_listen.lua")));

/// `KEYS[1]` job hash; `ARGV[1]` token field, `ARGV[2]` a new token. The
/// job's token (the new one if it had none); `false` when the job is gone.
pub(super) static TOKEN: LazyLock<redis::Script> =
    LazyLock::new(|| redis::Script::new(include_str!("../lua/wait_token.lua")));

/// The index set of waits for `event` holding `value` at `path` (`None`:
/// waits without a match).
pub(super) fn waiters_digest(event: &str, matching: Option<(&str, &serde_json::Value)>) -> String {
    match matching {
        Some((path, value)) => digest(&[event, path, &value.to_string()]),
        None => digest(&[event, "", ""]),
    }
}

/// A waiter as the index holds it: `[queue, id, wait id]`.
pub(super) fn waiter(queue: &str, id: &str, wait_id: &str) -> String {
    serde_json::to_string(&(queue, id, wait_id)).unwrap_or_default()
}

/// Parses a waiter or token record read from Redis (untrusted).
fn parse_waiter(text: &str) -> Option<(String, String, String)> {
    if text.len() > 2048 {
        return None;
    }
    let (queue, id, wait_id): (String, String, String) = serde_json::from_str(text).ok()?;
    (crate::names::queue("queue", &queue).is_ok() && !id.is_empty() && !wait_id.is_empty())
        .then_some((queue, id, wait_id))
}

/// A fresh completion token: 244 random bits.
pub(super) fn new_token() -> String {
    format!(
        "wt_{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

/// Whether a text could be a token (checked before any Redis read).
pub fn is_token(text: &str) -> bool {
    text.len() == 67 && text.starts_with("wt_") && text[3..].bytes().all(|b| b.is_ascii_hexdigit())
}

/// What resolving a wait did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Resolved {
    /// It wrote the outcome.
    Yes,
    /// The wait had one already.
    Already,
    /// The job is gone.
    Gone,
    /// The job belongs to another producer.
    NotYours,
    /// No such wait (or another token).
    NoWait,
}

pub(super) async fn resolve(
    store: &Store,
    job_key: &str,
    wait_id: &str,
    outcome: &str,
    producer: Option<&str>,
    need_wait: bool,
    token: Option<&str>,
) -> Result<Resolved, QueueError> {
    let mut conn = store.conn();
    let answer: i64 = RESOLVE
        .key(job_key)
        .arg(format!("{}{wait_id}", fields::WAITED_PREFIX))
        .arg(outcome)
        .arg(producer.unwrap_or(""))
        .arg(if need_wait {
            format!("{}{wait_id}", fields::WAIT_PREFIX)
        } else {
            String::new()
        })
        .arg(if token.is_some() {
            format!("{}{wait_id}", fields::TOKEN_PREFIX)
        } else {
            String::new()
        })
        .arg(token.unwrap_or(""))
        .invoke_async(&mut conn)
        .await?;
    Ok(match answer {
        1 => Resolved::Yes,
        -1 => Resolved::Already,
        -2 => Resolved::NotYours,
        -3 => Resolved::NoWait,
        _ => Resolved::Gone,
    })
}

/// What completing a token did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenCompletion {
    /// The wait has the result; the job, if parked, was woken.
    Completed,
    /// The wait already had an outcome (completed, or timed out).
    AlreadyDone,
    /// No such token, or its job is gone.
    Unknown,
}

/// Resolves waits from outside their job: events and token completions.
#[derive(Clone)]
pub struct Resolver {
    store: Store,
}

impl Resolver {
    /// The waits on `store`'s Redis.
    pub fn new(store: Store) -> Self {
        Resolver { store }
    }

    /// Resolves the waits an event (`payload`, `{name, data, id, ts}`)
    /// matches — only those of jobs `producer` enqueued, when it comes from
    /// a producer token — and wakes their jobs (`wake`), each before its
    /// waiter leaves the index (see the module docs). Answers them as
    /// `<queue>:<id>`. Waits of finished or removed jobs leave the index.
    pub async fn resolve_event(
        &self,
        name: &str,
        payload: &serde_json::Value,
        producer: Option<&str>,
        wake: &dyn Wake,
    ) -> Result<Vec<String>, QueueError> {
        let keys = self.store.keys().clone();
        let mut conn = self.store.conn();
        let paths: Vec<String> = conn
            .smembers(keys.event_wait_paths(&digest(&[name])))
            .await?;
        let data = payload.get("data").cloned().unwrap_or_default();
        let outcome = OutcomeRecord::came(payload);
        let mut resumed = Vec::new();
        for path in paths.into_iter().take(MAX_WAIT_PATHS) {
            let set = if path.is_empty() {
                keys.event_waiters(&waiters_digest(name, None))
            } else {
                let Ok(parsed) = JsonPath::parse(&path) else {
                    continue;
                };
                let Some(value) = parsed.get(&data) else {
                    continue;
                };
                keys.event_waiters(&waiters_digest(name, Some((&path, value))))
            };
            let members: Vec<String> = redis::cmd("SRANDMEMBER")
                .arg(&set)
                .arg(MAX_RESOLVE)
                .query_async(&mut conn)
                .await?;
            let mut done = Vec::new();
            for member in members {
                let Some((queue, id, wait_id)) = parse_waiter(&member) else {
                    done.push(member);
                    continue;
                };
                let job_key = self.store.keys().job(&queue, &id);
                let resolved = resolve(
                    &self.store,
                    &job_key,
                    &wait_id,
                    &outcome,
                    producer,
                    true,
                    None,
                )
                .await?;
                match resolved {
                    Resolved::NotYours => continue,
                    Resolved::Yes => {
                        wake.wake(&queue, &id).await?;
                        resumed.push(airlock_core::job_ref::join(&queue, &id));
                    }
                    // Resolved by an earlier send of this event (or
                    // another) whose promote may not have happened: a
                    // resolver that died in between. Waking a job that
                    // is delayed for anything else only reruns it early.
                    Resolved::Already => wake.wake(&queue, &id).await?,
                    Resolved::Gone | Resolved::NoWait => {}
                }
                done.push(member);
            }
            if !done.is_empty() {
                let _: i64 = conn.srem(&set, &done).await?;
            }
        }
        Ok(resumed)
    }

    /// Completes wait token `token` with `result` and wakes its job
    /// (`wake`).
    pub async fn complete_token(
        &self,
        token: &str,
        result: &serde_json::Value,
        wake: &dyn Wake,
    ) -> Result<TokenCompletion, QueueError> {
        if !is_token(token) {
            return Ok(TokenCompletion::Unknown);
        }
        let key = self.store.keys().wait_token(&digest(&[token]));
        let mut conn = self.store.conn();
        let record: Option<String> = conn.get(&key).await?;
        let Some((queue, id, wait_id)) = record.as_deref().and_then(parse_waiter) else {
            return Ok(TokenCompletion::Unknown);
        };
        let job_key = self.store.keys().job(&queue, &id);
        let resolved = resolve(
            &self.store,
            &job_key,
            &wait_id,
            &OutcomeRecord::came(result),
            None,
            false,
            Some(token),
        )
        .await?;
        // Single use: the outcome field decides (first writer wins). The
        // record stays until it expires, so a second completion is told
        // the token was used (409), not that it never existed.
        Ok(match resolved {
            Resolved::Yes => {
                wake.wake(&queue, &id).await?;
                TokenCompletion::Completed
            }
            // A completion retried after a 503 lands here: wake the job
            // in case the first one died before its promote.
            Resolved::Already => {
                wake.wake(&queue, &id).await?;
                TokenCompletion::AlreadyDone
            }
            Resolved::Gone | Resolved::NoWait | Resolved::NotYours => TokenCompletion::Unknown,
        })
    }
}
