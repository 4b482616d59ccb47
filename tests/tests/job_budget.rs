//! Airlock's Redis budget per job, held by counting: 1,000 no-op jobs a
//! BullMQ producer added are drained by the Rust port's own worker (no
//! sandbox, no Airlock bookkeeping), then 1,000 more by a real Airlock host,
//! on the same Redis; `INFO commandstats` counts what each sent. Airlock may
//! send per job no more than [`BUDGET`] beyond the port. A feature that
//! adds a per-job write changes the budget here and in
//! docs/BENCHMARKS.md ("Redis budget per job"), in the open.
//!
//! Counting, not timing: the figures do not depend on how busy the machine
//! is, so the test holds on a loaded CI machine as on a quiet one.

use std::collections::BTreeMap;
use std::time::Duration;

use airlock_tests::eventually_some;
use airlock_tests::host::{Admin, HostOptions, HostProcess};
use airlock_tests::redis_server::RedisServer;
use serde_json::json;

const QUEUE: &str = "budget";
const JOBS: u64 = 1_000;
const CONCURRENCY: usize = 10;

/// Most calls per job Airlock may send beyond the port, by command, and
/// why; any other command has none (but [`BACKGROUND`]).
const BUDGET: [(&str, f64, &str); 6] = [
    (
        "evalsha",
        1.0,
        "the runs' records (`record`): one call per batch of runs that ended together, so one per job at most",
    ),
    (
        "exists",
        1.0,
        "the record's guard: it may land after BullMQ's finish, and a job retention removed must get no stray hash",
    ),
    (
        "hset",
        1.0,
        "the record: `airlock.lastRun` (and a failed or later run's history entry)",
    ),
    (
        "hsetnx",
        1.0,
        "the pin of a first run of a BullMQ integer id: the job's digest, what a later retry runs",
    ),
    (
        "hincrby",
        0.05,
        "the queue's per-minute tallies, summed on the host and added once a second",
    ),
    ("pexpire", 0.01, "the tallies' expiry, once per flush"),
];

/// Calls per job of any command, on top of its budget, for a host's
/// background work (heartbeat, registry poll, cancel stream, the test's
/// pause and resume): per second, not per job.
const BACKGROUND: f64 = 0.02;

/// `INFO commandstats` as command → calls, without the test's own calls
/// (`INFO`, `CONFIG RESETSTAT`, and `ZCOUNT`, which it polls with: neither
/// worker sends it).
async fn calls(conn: &mut redis::aio::MultiplexedConnection) -> BTreeMap<String, f64> {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(conn)
        .await
        .unwrap();
    info.lines()
        .filter_map(|line| {
            let (name, rest) = line.trim().strip_prefix("cmdstat_")?.split_once(':')?;
            let calls = rest
                .strip_prefix("calls=")?
                .split(',')
                .next()?
                .parse()
                .ok()?;
            (!matches!(name, "info" | "config" | "zcount")).then(|| (name.to_string(), calls))
        })
        .collect()
}

async fn reset_stats(conn: &mut redis::aio::MultiplexedConnection) {
    let () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query_async(conn)
        .await
        .unwrap();
}

/// Adds `count` no-op jobs through the port's own queue, as a BullMQ
/// producer does (integer ids, no Airlock fields).
async fn enqueue(redis: &RedisServer, count: u64) {
    let opts = bullmq::QueueOptions::new()
        .connection(bullmq::options::RedisConnectionOptions::new().url(redis.url()))
        .prefix("bull");
    let queue = bullmq::Queue::with_options(QUEUE, opts).await.unwrap();
    let mut left = count;
    while left > 0 {
        let chunk = left.min(500);
        let jobs = (0..chunk)
            .map(|_| bullmq::BulkJob::new("noop", json!({})))
            .collect();
        queue.add_bulk(jobs).await.unwrap();
        left -= chunk;
    }
}

/// Waits until `count` jobs have completed (polling with `ZCOUNT`).
async fn drained(conn: &mut redis::aio::MultiplexedConnection, count: u64) {
    eventually_some(
        &format!("{count} jobs completed"),
        Duration::from_secs(300),
        || {
            let mut conn = conn.clone();
            async move {
                let done: u64 = redis::cmd("ZCOUNT")
                    .arg(format!("bull:{QUEUE}:completed"))
                    .arg("-inf")
                    .arg("+inf")
                    .query_async(&mut conn)
                    .await
                    .unwrap();
                (done >= count).then_some(())
            }
        },
    )
    .await
}

/// Waits until `count` completed jobs carry their run's record
/// (`airlock.lastRun`), which the host writes a moment after the finish.
async fn recorded(conn: &mut redis::aio::MultiplexedConnection, count: usize) {
    eventually_some(
        &format!("{count} runs recorded"),
        Duration::from_secs(30),
        || {
            let mut conn = conn.clone();
            async move {
                let ids: Vec<String> = redis::cmd("ZRANGE")
                    .arg(format!("bull:{QUEUE}:completed"))
                    .arg(0)
                    .arg(-1)
                    .query_async(&mut conn)
                    .await
                    .unwrap();
                let mut pipe = redis::pipe();
                for id in &ids {
                    pipe.hexists(format!("bull:{QUEUE}:{id}"), "airlock.lastRun");
                }
                let measured: Vec<bool> = pipe.query_async(&mut conn).await.unwrap();
                (measured.iter().filter(|m| **m).count() >= count).then_some(())
            }
        },
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn airlock_sends_redis_no_more_per_job_than_its_budget_beyond_the_port() {
    let redis = RedisServer::start();
    let client = redis::Client::open(redis.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();

    // The port's own no-op worker drains the first 1,000.
    enqueue(&redis, JOBS).await;
    reset_stats(&mut conn).await;
    let mut opts = bullmq::WorkerOptions::new()
        .connection(bullmq::options::RedisConnectionOptions::new().url(redis.url()))
        .concurrency(CONCURRENCY);
    opts.skip_version_check = true;
    let port = bullmq::Worker::with_options(
        QUEUE,
        |_job: bullmq::Job, _cancel: bullmq::worker::CancellationToken| async {
            Ok(serde_json::Value::Null)
        },
        opts,
    )
    .await
    .unwrap();
    drained(&mut conn, JOBS).await;
    let by_port = calls(&mut conn).await;
    port.close(5_000).await.unwrap();

    // A real host with the no-op guest bound drains 1,000 more, warmed up
    // first (its component loaded, its worker fetching).
    let admin = Admin::connect(&redis.url()).await;
    admin.deploy("noop", "noop").await;
    admin
        .bind(QUEUE, "noop", json!({"concurrency": CONCURRENCY}))
        .await;
    let _host = HostProcess::start(&redis.url(), HostOptions::default());
    enqueue(&redis, 20).await;
    drained(&mut conn, JOBS + 20).await;
    recorded(&mut conn, 20).await;
    admin.queues.pause(QUEUE).await.unwrap();
    enqueue(&redis, JOBS).await;
    reset_stats(&mut conn).await;
    admin.queues.resume(QUEUE).await.unwrap();
    drained(&mut conn, 2 * JOBS + 20).await;
    // The records of the last runs land a moment after their finish.
    let records = |stats: &BTreeMap<String, f64>| stats.get("hsetnx").copied().unwrap_or(0.0);
    let by_airlock = eventually_some(
        "the last runs' records written",
        Duration::from_secs(30),
        || {
            let mut conn = conn.clone();
            async move {
                let stats = calls(&mut conn).await;
                (records(&stats) >= JOBS as f64).then_some(stats)
            }
        },
    )
    .await;

    let per_job = |stats: &BTreeMap<String, f64>, name: &str| {
        stats.get(name).copied().unwrap_or(0.0) / JOBS as f64
    };
    let mut over = Vec::new();
    let names: std::collections::BTreeSet<&String> =
        by_airlock.keys().chain(by_port.keys()).collect();
    for name in names {
        let extra = per_job(&by_airlock, name) - per_job(&by_port, name);
        let (allowed, why) = BUDGET
            .iter()
            .find(|(command, _, _)| command == name)
            .map(|(_, allowed, why)| (*allowed, *why))
            .unwrap_or((0.0, "no per-job use"));
        if extra > allowed + BACKGROUND {
            over.push(format!(
                "`{name}`: {extra:.3} more per job than the port, budget {allowed} ({why})"
            ));
        }
    }
    assert!(
        over.is_empty(),
        "over the per-job Redis budget:\n{}\nAirlock: {by_airlock:?}\nport: {by_port:?}",
        over.join("\n")
    );
    // The budget is spent as it says: every job's record and pin, in fewer
    // calls than jobs.
    assert_eq!(per_job(&by_airlock, "hsetnx"), 1.0, "{by_airlock:?}");
    assert!(
        per_job(&by_airlock, "evalsha") - per_job(&by_port, "evalsha") <= 1.0,
        "{by_airlock:?}"
    );
}
