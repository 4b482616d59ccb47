//! A binding's `onFailure`: every job of the queue that failed for good is
//! announced once — as a job on a dead-letter queue and/or as an event.
//!
//! ## Where it comes from, and why none is missed
//! The announcer reads BullMQ's `failed` set (scored by the failure's
//! time, from the clock of the host that recorded it), not the runs: a
//! job is there only once BullMQ recorded that it failed for good (its
//! last attempt, or a fatal error). Each host serving the queue reads it
//! from a cursor (`airlock:failures-cursor` of the queue: where the next
//! pass starts, 10 s behind the latest failure time read, so a failure
//! recorded late with an earlier time is still read) every second,
//! announces what is not announced, marks each job
//! (`airlock.failureAnnounced` = its failure's time) and moves the cursor
//! ([`announce`]). So a failure on a host that died right after is
//! announced by another; a job retried by hand and failing again is
//! announced again (a new failure time).
//!
//! What is missed: a job BullMQ does not keep in its failed set
//! (`removeOnFail: true`), or one its retention removed before a pass read
//! it (a `removeOnFail` count or age reached within about a second), and
//! a failure recorded more than 10 s later than a failure with a later
//! time.
//!
//! ## Once
//! The dead-letter job's id and the event's id are derived from the queue,
//! the job and the failure's time, and the dead-letter job carries BullMQ
//! deduplication on that id for 24 hours (an event id blocks a repeat job
//! on a subscribed queue for as long, `delivery`): two hosts announcing
//! the same failure, or one dying between the announcement and its mark,
//! add one dead-letter job and one job per subscribed queue (a re-sent
//! event is recorded among the recent events again, and resumes or
//! cancels what matches it then).
//!
//! ## What it says
//! `{"queue", "id", "name", "data", "failure": {"kind", "reason"},
//! "attempts", "producer", "failedAt"}`; the job and the event belong to
//! the failed job's producer (on a host with the fleet's secrets key, the
//! one Airlock sealed on it; without the key, the field as the API reads
//! it for access: `Meta::inherited`), so a producer token reads the dead
//! letters of its own jobs only.

use std::sync::Arc;
use std::time::Duration;

use redis::AsyncCommands;
use serde_json::json;

use crate::delivery::{self, EVENT_ID_TTL_MS, Event};
use crate::queue::{Deduplication, JobOptions, NewJob, QueueError, QueueService};
use crate::registry::{OnFailure, Registry};
use crate::state::fields;
use crate::state::meta::Producer;

/// Failures read from the failed set at a time.
const PAGE: isize = 200;
/// Most failures one pass reads.
const MOST_PER_PASS: isize = 5_000;
/// How far behind the latest failure time read the next pass starts: a
/// failure recorded later than another, with an earlier time (hosts'
/// clocks differ; two finishes race), is read within it.
const LOOKBACK_MS: u64 = 10_000;
/// How often a host reads the failed set.
const EVERY: Duration = Duration::from_secs(1);

/// Announces the failures of `queue` while `route` answers its binding's
/// `onFailure` (it ends when the binding drops it).
pub async fn announce_loop(
    queues: Arc<QueueService>,
    registry: Registry,
    queue: String,
    lease_ms: u64,
    route: impl Fn() -> Option<OnFailure> + Send + 'static,
) {
    // A test ends the announcer here, so a failure this host recorded
    // is announced only by another host, after this one's death.
    fail::fail_point!("announce-failures", |_| ());
    let mut tick = tokio::time::interval(EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(route) = route() else { return };
        if let Err(e) = announce(&queues, &registry, &queue, &route, lease_ms).await {
            tracing::warn!(queue, error = %e, "announce failed jobs");
        }
    }
}

/// One pass: the failures from the cursor on, a page at a time, up to
/// [`MOST_PER_PASS`]. The cursor is where the next pass starts reading:
/// [`LOOKBACK_MS`] before the latest failure time read in a pass that read
/// all there was (a failure whose script landed late, with an earlier
/// time from another host's clock, is still read; those already announced
/// are skipped by their mark), or that time itself after a pass that
/// stopped at its cap, so a flood moves on. It never goes back. A Redis
/// error ends the pass with the cursor where it was; a failure whose
/// announcement is refused (a dead-letter queue's rules refuse it) is
/// logged and passed over, so it does not hold up the queue's others.
pub async fn announce(
    queues: &QueueService,
    registry: &Registry,
    queue: &str,
    route: &OnFailure,
    lease_ms: u64,
) -> Result<(), QueueError> {
    let keys = queues.store().keys();
    let cursor_key = keys.failures_cursor(queue);
    let failed_key = keys.bullmq(queue, "failed");
    let mut conn = queues.store().conn();
    let cursor: Option<u64> = conn.get(&cursor_key).await?;
    let from = cursor.unwrap_or(0);
    let mut latest: Option<u64> = None;
    let mut read = 0isize;
    let complete = loop {
        let page: Vec<(String, u64)> = conn
            .zrangebyscore_limit_withscores(&failed_key, from, "+inf", read, PAGE)
            .await?;
        for (id, failed_at) in &page {
            match announce_one(queues, registry, queue, id, *failed_at, route, lease_ms).await {
                Ok(()) => {}
                Err(e @ QueueError::Unavailable(_)) => return Err(e),
                Err(e) => {
                    tracing::warn!(queue, id, error = %e, "a failure's announcement was refused; passed over");
                }
            }
            latest = Some(latest.map_or(*failed_at, |l| l.max(*failed_at)));
        }
        read += page.len() as isize;
        if (page.len() as isize) < PAGE {
            break true;
        }
        if read >= MOST_PER_PASS {
            break false;
        }
    };
    let Some(latest) = latest else {
        return Ok(());
    };
    let next = if complete {
        latest.saturating_sub(LOOKBACK_MS)
    } else {
        latest
    };
    if next > from {
        let _: () = conn.set(&cursor_key, next).await?;
    }
    Ok(())
}

/// Announces job `id`'s failure at `failed_at`, unless it was already.
async fn announce_one(
    queues: &QueueService,
    registry: &Registry,
    queue: &str,
    id: &str,
    failed_at: u64,
    route: &OnFailure,
    lease_ms: u64,
) -> Result<(), QueueError> {
    let job_key = queues.store().keys().job(queue, id);
    let mut conn = queues.store().conn();
    type Fields = (
        Option<String>,
        Option<String>,
        Option<u32>,
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
    );
    let (name, data, attempts, reason, announced, producer, seal): Fields = redis::cmd("HMGET")
        .arg(&job_key)
        .arg("name")
        .arg("data")
        .arg("atm")
        .arg("failedReason")
        .arg(fields::FAILURE_ANNOUNCED)
        .arg(fields::PRODUCER)
        .arg(fields::PRODUCER_SEAL)
        .query_async(&mut conn)
        .await?;
    let (Some(name), Some(data)) = (name, data) else {
        // Removed since (retention): nothing left to announce.
        return Ok(());
    };
    if announced.as_deref() == Some(&failed_at.to_string()) {
        return Ok(());
    }
    let producer = queues.state().meta.inherited(
        &Producer {
            name: producer,
            seal,
        },
        queue,
        id,
        &name,
        &data,
    );
    let reason = reason.unwrap_or_default();
    let (kind, message) = airlock_core::failure::FailureKind::split_reason(&reason);
    let kind = kind.map_or("failed", |k| k.as_str());
    let payload = json!({
        "queue": queue,
        "id": id,
        "name": name,
        "data": serde_json::from_str::<serde_json::Value>(&data).unwrap_or(serde_json::Value::Null),
        "failure": { "kind": kind, "reason": message },
        "attempts": attempts.unwrap_or(0),
        "producer": producer,
        "failedAt": failed_at,
    });
    let digest = crate::state::digest(&[queue, id, &failed_at.to_string()]);
    let once = format!("f-{}", &digest[..40]);
    if let Some(dead_letters) = &route.queue {
        let job = NewJob {
            name: name.clone(),
            data: payload.clone(),
            opts: JobOptions {
                job_id: Some(once.clone()),
                deduplication: Some(Deduplication {
                    id: once.clone(),
                    ttl: Some(EVENT_ID_TTL_MS),
                    ..Default::default()
                }),
                ..JobOptions::default()
            },
            producer: producer.clone(),
            trace: None,
            parent: None,
        };
        let field = |_: usize, f: &str| format!("onFailure.queue.{f}");
        crate::gate::add_to_queue(queues, registry, dead_letters, vec![job], lease_ms, field)
            .await?;
    }
    if let Some(event) = &route.event {
        let event = Event {
            name: event.clone(),
            data: payload,
            id: Some(once),
        };
        delivery::deliver(
            queues,
            registry,
            &event,
            producer.as_deref(),
            None,
            lease_ms,
            None,
        )
        .await
        .map_err(|e| QueueError::Unavailable(e.to_string()))?;
    }
    // Not on a job removed meanwhile (that would leave a hash behind).
    queues
        .state()
        .meta
        .set_if_exists(
            &job_key,
            &[(fields::FAILURE_ANNOUNCED, &failed_at.to_string())],
        )
        .await?;
    Ok(())
}
