//! A binding's `onFailure`: every job of the queue that failed for good is
//! announced once — as a job on a dead-letter queue and/or as an event.
//!
//! ## Where it comes from, and why none is missed
//! The announcer reads BullMQ's `failed` set (scored by the failure's
//! time), not the runs: a job is there only once BullMQ recorded that it
//! failed for good (its last attempt, or a fatal error). Each host serving
//! the queue reads it from a cursor (`airlock:failures-cursor` of the
//! queue,
//! the failure time it has read up to) every second, announces what is
//! not announced, marks each job (`airlock.failureAnnounced` = its
//! failure's time) and moves the cursor. So a failure on a host that died
//! right after is announced by another; a job retried by hand and failing
//! again is announced again (a new failure time).
//!
//! ## Once
//! The dead-letter job's id and the event's id are derived from the queue,
//! the job and the failure's time, and the dead-letter job carries BullMQ
//! deduplication on that id for 24 hours (an event id blocks a repeat for
//! as long, `delivery`): two hosts announcing the same failure, or one
//! dying between the announcement and its mark, add one job and send one
//! event.
//!
//! ## What it says
//! `{"queue", "id", "name", "data", "failure": {"kind", "reason"},
//! "attempts", "producer", "failedAt"}`; the job and the event belong to
//! the failed job's producer (as Airlock sealed it, `Meta::inherited`), so a producer token
//! reads the dead letters of its own jobs only.

use std::sync::Arc;
use std::time::Duration;

use redis::AsyncCommands;
use serde_json::json;

use crate::delivery::{self, EVENT_ID_TTL_MS, Event};
use crate::queue::{Deduplication, JobOptions, NewJob, QueueError, QueueService};
use crate::registry::{OnFailure, Registry};
use crate::state::fields;
use crate::state::meta::Producer;

/// Most failures one pass announces.
const BATCH: isize = 200;
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

/// One pass: the failures since the cursor.
pub async fn announce(
    queues: &QueueService,
    registry: &Registry,
    queue: &str,
    route: &OnFailure,
    lease_ms: u64,
) -> Result<(), QueueError> {
    let keys = queues.store().keys();
    let cursor_key = keys.failures_cursor(queue);
    let mut conn = queues.store().conn();
    let cursor: Option<u64> = conn.get(&cursor_key).await?;
    let failed: Vec<(String, u64)> = conn
        .zrangebyscore_limit_withscores(
            keys.bullmq(queue, "failed"),
            cursor.unwrap_or(0),
            "+inf",
            0,
            BATCH,
        )
        .await?;
    let mut read_to = cursor;
    for (id, failed_at) in failed {
        announce_one(queues, registry, queue, &id, failed_at, route, lease_ms).await?;
        read_to = Some(read_to.map_or(failed_at, |r| r.max(failed_at)));
    }
    if read_to != cursor
        && let Some(to) = read_to
    {
        let _: () = conn.set(&cursor_key, to).await?;
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
