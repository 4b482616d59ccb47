//! What starting other work costs (`BENCH_ONLY=invoke`), one host at
//! concurrency 10, same run:
//! - the idle round trip of an invoke, one parent at a time: the parent's
//!   enqueue → its first run invokes one no-op child and parks → the
//!   child runs → BullMQ moves the parent back → its second run completes;
//!   timed by BullMQ's own `timestamp` and `finishedOn` of the parent,
//!   against a plain no-op job's (enqueue → done) in the same run;
//! - a fan-out of 1,000 no-op children from one parent, enqueue → parent
//!   done, against the same 1,000 jobs added directly (enqueue → the last
//!   one done).

use super::*;

/// The parent's queue (work-probe) and its children's (noop).
const PARENTS: &str = "parents";
const KIDS: &str = "kids";

/// Both benchmarks on one fresh Redis and host.
pub async fn invoke_benchmarks(samples: usize, fan_out: usize) {
    let redis = RedisServer::start();
    let admin = Admin::connect(&redis.url()).await;
    admin.deploy("work-probe", "work-probe").await;
    admin.deploy("noop", "noop").await;
    admin
        .bind(
            PARENTS,
            "work-probe",
            json!({"concurrency": 10, "starts": {"queues": [KIDS]}}),
        )
        .await;
    admin.bind(KIDS, "noop", json!({"concurrency": 10})).await;
    let mut host = start_airlock(&redis);
    tokio::time::sleep(Duration::from_secs(2)).await;

    let one_child = json!({"invoke": [{"queue": KIDS, "name": "child", "data": {}}]});
    let (mut invoked, mut plain) = (Vec::new(), Vec::new());
    for i in 0..samples + 10 {
        let parent = admin
            .enqueue(PARENTS, "parent", one_child.clone(), json!({}))
            .await;
        let done = admin
            .wait_finished(PARENTS, &parent, Duration::from_secs(30))
            .await;
        let job = admin.enqueue(KIDS, "plain", json!({}), json!({})).await;
        let alone = admin
            .wait_finished(KIDS, &job, Duration::from_secs(30))
            .await;
        if i >= 10 {
            invoked.push(took(&done));
            plain.push(took(&alone));
        }
    }
    println!("| idle, one at a time ({samples} samples) | enqueue → done (BullMQ's timestamps) |");
    println!("|---|---|");
    println!(
        "| a parent invoking one no-op child (two parent runs, one child run) | {} |",
        percentiles(invoked)
    );
    println!("| a plain no-op job | {} |", percentiles(plain));
    println!();

    let jobs: Vec<serde_json::Value> = (0..fan_out)
        .map(|_| json!({"queue": KIDS, "name": "child", "data": {}}))
        .collect();
    let t0 = Instant::now();
    let parent = admin
        .enqueue(PARENTS, "fan-out", json!({"invoke": jobs}), json!({}))
        .await;
    let done = admin
        .wait_finished(PARENTS, &parent, Duration::from_secs(600))
        .await;
    let fanned = t0.elapsed();
    assert_eq!(
        done.returnvalue
            .as_ref()
            .and_then(|r| r["ends"].as_array().map(Vec::len)),
        Some(fan_out),
        "the fan-out's ends: {done:?}"
    );
    let completed_before = completed(&redis).await;
    let t0 = Instant::now();
    for _ in 0..fan_out {
        admin.enqueue(KIDS, "direct", json!({}), json!({})).await;
    }
    while completed(&redis).await < completed_before + fan_out {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let direct = t0.elapsed();
    println!("| {fan_out} no-op jobs, concurrency 10 | enqueue → all done |");
    println!("|---|---|");
    println!(
        "| invoked by one parent (one call) | {:.2} s |",
        fanned.as_secs_f64()
    );
    println!(
        "| added directly, one add each | {:.2} s |",
        direct.as_secs_f64()
    );
    println!();
    println!(
        "Load average before the run {}.",
        START_LOAD.get().map_or("?", String::as_str)
    );
    let _ = host.kill();
    let _ = host.wait();
}

/// A finished job's enqueue → finish, from BullMQ's own timestamps.
fn took(job: &airlock::queue::JobSnapshot) -> Duration {
    Duration::from_millis(job.finished_on.unwrap_or(job.timestamp) - job.timestamp)
}

/// How many jobs the children's queue completed.
async fn completed(redis: &RedisServer) -> usize {
    let client = redis::Client::open(redis.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    conn.zcard(format!("bull:{KIDS}:completed")).await.unwrap()
}
