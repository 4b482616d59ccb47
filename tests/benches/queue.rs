//! Queue-host benchmarks (`make bench`): drain throughput and idle latency
//! of an Airlock host (a WASM instance per job) against a plain Node BullMQ
//! no-op worker on the same Redis, in the same run. A third peer, a no-op
//! worker of the Rust port (`bullmq-official`) Airlock wraps, run on its own
//! runtime with no sandbox and no Airlock bookkeeping, shows which part of
//! the gap to Node is the port and which is Airlock.
//!
//! - throughput: N no-op jobs are pre-enqueued, then a worker drains them;
//!   jobs/s = N / (last `finishedOn` - first `processedOn`), read from the
//!   job hashes the same way for both workers;
//! - idle latency: one job at a time into an idle worker; enqueue→start and
//!   enqueue→finish are timed by this process from just before the add to
//!   the `active` / `completed` event on the queue's events stream.
//!
//! Needs the release `airlock` binary (`cargo build --release -p airlock`),
//! the guests and `tests/interop/node_modules` (`make interop-deps`).

use std::collections::HashMap;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use airlock_tests::host::Admin;
use airlock_tests::redis_server::RedisServer;
use airlock_tests::{interop_script, shared_cache_dir, target_dir};
use redis::AsyncCommands;
use serde_json::json;

const QUEUE: &str = "bench";

fn release_airlock() -> std::path::PathBuf {
    let path = target_dir().join("release").join("airlock");
    assert!(
        path.exists(),
        "build it first: cargo build --release -p airlock"
    );
    path
}

fn start_airlock(redis: &RedisServer) -> Child {
    start_airlock_on(&redis.url(), "bench")
}

fn start_airlock_on(redis_url: &str, id: &str) -> Child {
    Command::new(release_airlock())
        .args([
            "serve",
            "--redis",
            redis_url,
            "--host-id",
            id,
            "--poll",
            "100ms",
        ])
        .env("AIRLOCK_CACHE_DIR", shared_cache_dir())
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start airlock")
}

fn start_node(redis: &RedisServer, count: usize, concurrency: usize) -> Child {
    Command::new("node")
        .arg(interop_script("bench-worker.js"))
        .args([
            "--redis",
            &redis.url(),
            "--prefix",
            "bull",
            "--queue",
            QUEUE,
        ])
        .args([
            "--count",
            &count.to_string(),
            "--concurrency",
            &concurrency.to_string(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start node worker")
}

async fn enqueue(redis: &RedisServer, count: usize) {
    let out = Command::new("node")
        .arg(interop_script("enqueue.js"))
        .args([
            "--redis",
            &redis.url(),
            "--prefix",
            "bull",
            "--queue",
            QUEUE,
        ])
        .args(["--count", &count.to_string(), "--name", "noop"])
        .output()
        .expect("enqueue");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

async fn completed(redis: &RedisServer) -> u64 {
    let client = redis::Client::open(redis.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    conn.zcard(format!("bull:{QUEUE}:completed")).await.unwrap()
}

/// Jobs/s from the job hashes: first start to last finish.
async fn drain_rate(redis: &RedisServer) -> f64 {
    let client = redis::Client::open(redis.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let ids: Vec<String> = conn
        .zrange(format!("bull:{QUEUE}:completed"), 0, -1)
        .await
        .unwrap();
    let mut first = u64::MAX;
    let mut last = 0u64;
    for chunk in ids.chunks(500) {
        let mut pipe = redis::pipe();
        for id in chunk {
            pipe.cmd("HMGET")
                .arg(format!("bull:{QUEUE}:{id}"))
                .arg("processedOn")
                .arg("finishedOn");
        }
        let rows: Vec<(Option<u64>, Option<u64>)> = pipe.query_async(&mut conn).await.unwrap();
        for (p, f) in rows {
            first = first.min(p.unwrap_or(u64::MAX));
            last = last.max(f.unwrap_or(0));
        }
    }
    ids.len() as f64 / ((last - first).max(1) as f64 / 1000.0)
}

async fn wait_drained(redis: &RedisServer, count: usize) {
    let deadline = Instant::now() + Duration::from_secs(600);
    while completed(redis).await < count as u64 {
        assert!(Instant::now() < deadline, "drain timed out");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn airlock_drain(count: usize, concurrency: usize) -> f64 {
    let redis = RedisServer::start();
    let admin = Admin::connect(&redis.url()).await;
    admin.deploy("noop", "noop").await;
    admin
        .bind(QUEUE, "noop", json!({"concurrency": concurrency}))
        .await;
    enqueue(&redis, count).await;
    let mut host = start_airlock(&redis);
    wait_drained(&redis, count).await;
    let _ = host.kill();
    let _ = host.wait();
    drain_rate(&redis).await
}

async fn node_drain(count: usize, concurrency: usize) -> f64 {
    let redis = RedisServer::start();
    enqueue(&redis, count).await;
    let mut worker = start_node(&redis, count, concurrency);
    wait_drained(&redis, count).await;
    let _ = worker.wait();
    drain_rate(&redis).await
}

/// The Rust port's own no-op worker draining `count` jobs: no sandbox, no
/// pin read, no metrics write. Runs on a separate two-thread runtime (the
/// host's default) so the bench's own polling does not share it.
async fn port_drain(count: usize, concurrency: usize) -> f64 {
    let redis = RedisServer::start();
    enqueue(&redis, count).await;
    let url = redis.url();
    let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
    let worker_thread = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let mut opts = bullmq::WorkerOptions::new()
                .connection(bullmq::options::RedisConnectionOptions::new().url(url))
                .concurrency(concurrency);
            opts.skip_version_check = true;
            // `with_options` starts fetching at once (autorun).
            let worker = bullmq::Worker::with_options(
                QUEUE,
                |_job: bullmq::Job, _cancel: bullmq::worker::CancellationToken| async {
                    Ok(serde_json::Value::Null)
                },
                opts,
            )
            .await
            .expect("start the port's worker");
            tokio::task::spawn_blocking(move || stop_rx.recv())
                .await
                .unwrap()
                .ok();
            let _ = worker.close(1000).await;
        });
    });
    wait_drained(&redis, count).await;
    stop_tx.send(()).unwrap();
    worker_thread.join().unwrap();
    drain_rate(&redis).await
}

/// Records when each (event, job id) shows up on the events stream.
fn watch_events(url: String) -> Arc<Mutex<HashMap<(String, String), Instant>>> {
    let seen: Arc<Mutex<HashMap<(String, String), Instant>>> = Arc::default();
    let out = seen.clone();
    tokio::spawn(async move {
        let client = redis::Client::open(url).unwrap();
        // XREAD BLOCK outlives the default response timeout.
        let config = redis::AsyncConnectionConfig::new().set_response_timeout(None);
        let mut conn = client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .unwrap();
        let mut last = "$".to_string();
        loop {
            let reply: redis::RedisResult<redis::streams::StreamReadReply> = redis::cmd("XREAD")
                .arg("BLOCK")
                .arg(1000)
                .arg("STREAMS")
                .arg(format!("bull:{QUEUE}:events"))
                .arg(&last)
                .query_async(&mut conn)
                .await;
            // The scenario is over and its Redis is gone.
            let Ok(reply) = reply else { return };
            let now = Instant::now();
            for key in reply.keys {
                for entry in key.ids {
                    last = entry.id.clone();
                    let event: Option<String> = entry.get("event");
                    let job: Option<String> = entry.get("jobId");
                    if let (Some(e), Some(j)) = (event, job) {
                        out.lock().unwrap().insert((e, j), now);
                    }
                }
            }
        }
    });
    seen
}

fn percentiles(mut samples: Vec<Duration>) -> String {
    samples.sort();
    let p = |q: f64| samples[((samples.len() as f64 - 1.0) * q).round() as usize];
    format!(
        "p50 {:.2} ms · p90 {:.2} ms · p99 {:.2} ms",
        p(0.5).as_secs_f64() * 1e3,
        p(0.9).as_secs_f64() * 1e3,
        p(0.99).as_secs_f64() * 1e3
    )
}

/// Idle latency: one job at a time. `start_worker` starts the worker under test.
async fn idle_latency(
    label: &str,
    samples: usize,
    start_worker: impl FnOnce(&RedisServer) -> Child,
) -> (Vec<Duration>, Vec<Duration>) {
    let redis = RedisServer::start();
    let admin = Admin::connect(&redis.url()).await;
    admin.deploy("noop", "noop").await;
    admin.bind(QUEUE, "noop", json!({"concurrency": 10})).await;
    let seen = watch_events(redis.url());
    let mut worker = start_worker(&redis);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (mut to_start, mut to_finish) = (Vec::new(), Vec::new());
    for i in 0..samples + 20 {
        let t0 = Instant::now();
        let id = admin.enqueue(QUEUE, "noop", json!({}), json!({})).await;
        let deadline = t0 + Duration::from_secs(10);
        let (started, finished) = loop {
            let found = {
                let s = seen.lock().unwrap();
                match (
                    s.get(&("active".to_string(), id.clone())),
                    s.get(&("completed".to_string(), id.clone())),
                ) {
                    (Some(a), Some(c)) => Some((*a, *c)),
                    _ => None,
                }
            };
            if let Some(times) = found {
                break times;
            }
            assert!(Instant::now() < deadline, "{label}: job {id} not done");
            tokio::time::sleep(Duration::from_micros(200)).await;
        };
        if i >= 20 {
            to_start.push(started - t0);
            to_finish.push(finished - t0);
        }
        // Let the worker go idle (blocked on its marker) again.
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let _ = worker.kill();
    let _ = worker.wait();
    (to_start, to_finish)
}

/// CPU time (user + system) of a process so far, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            let fields: Vec<&str> = s.rsplit(')').next()?.split_whitespace().collect();
            Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
        })
        .unwrap_or(0)
}

/// N hosts draining one queue on one Redis: jobs/s and Redis CPU per job.
async fn fleet_drain(hosts: usize, count: usize) -> (f64, f64) {
    let redis = RedisServer::start();
    let admin = Admin::connect(&redis.url()).await;
    admin.deploy("noop", "noop").await;
    admin.bind(QUEUE, "noop", json!({"concurrency": 10})).await;
    enqueue(&redis, count).await;
    let pid = redis.pid().unwrap();
    let before = cpu_ticks(pid);
    let mut children: Vec<Child> = (0..hosts)
        .map(|i| start_airlock_on(&redis.url(), &format!("bench-{i}")))
        .collect();
    wait_drained(&redis, count).await;
    let ticks = cpu_ticks(pid) - before;
    for c in &mut children {
        let _ = c.kill();
        let _ = c.wait();
    }
    let rate = drain_rate(&redis).await;
    // Clock ticks are 10 ms; µs of Redis CPU per job (idle time included,
    // so this is an upper bound).
    (rate, ticks as f64 * 10_000.0 / count as f64)
}

/// One host draining `queues` queues of `per_queue` no-op jobs each, on one
/// Redis or on a 3-master cluster (queues hash-tagged onto different
/// masters): jobs/s over all queues.
async fn multi_queue_drain(cluster: bool, queues: &[&str], per_queue: usize) -> f64 {
    let nodes = if cluster {
        airlock_tests::redis_server::start_cluster(3)
    } else {
        vec![RedisServer::start()]
    };
    let url = nodes.iter().map(|n| n.url()).collect::<Vec<_>>().join(",");
    let admin = Admin::connect(&url).await;
    admin.deploy("noop", "noop").await;
    for q in queues {
        admin.bind(q, "noop", json!({"concurrency": 10})).await;
        for _ in 0..per_queue / 1000 {
            let jobs = (0..1000)
                .map(|_| airlock::queue::NewJob {
                    name: "noop".into(),
                    data: json!({}),
                    opts: Default::default(),
                    producer: None,
                })
                .collect();
            admin.queues.add_bulk(q, jobs).await.unwrap();
        }
    }
    let per_queue = per_queue / 1000 * 1000;
    let started = Instant::now();
    let mut host = start_airlock_on(&url, "bench-multi");
    let deadline = started + Duration::from_secs(600);
    loop {
        let mut done = 0;
        for q in queues {
            done += admin.queues.counts(q).await.unwrap().completed;
        }
        if done as usize >= queues.len() * per_queue {
            break;
        }
        assert!(Instant::now() < deadline, "multi-queue drain timed out");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let elapsed = started.elapsed();
    let _ = host.kill();
    let _ = host.wait();
    (queues.len() * per_queue) as f64 / elapsed.as_secs_f64()
}

/// HTTP enqueue: jobs/s through the API (single and bulk requests, many in
/// flight from this process) and the latency the API adds over a direct
/// BullMQ add. The host is a separate process, with its workers off so the
/// queue only grows.
async fn api_enqueue(count: usize) {
    use futures::StreamExt;
    let redis = RedisServer::start();
    let admin = Admin::connect(&redis.url()).await;
    admin.deploy("noop", "noop").await;
    admin.bind(QUEUE, "noop", json!({})).await;
    let token = "bench-producer-token-0001";
    let mut host = Command::new(release_airlock())
        .args([
            "serve",
            "--redis",
            &redis.url(),
            "--no-workers",
            "--listen",
            "127.0.0.1:0",
        ])
        .args(["--tokens", &format!("producer:bench:{token}")])
        .env("AIRLOCK_CACHE_DIR", shared_cache_dir())
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start airlock api");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(host.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    let base = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap()
        .to_string();
    let http = airlock_tests::http_client();
    let url = format!("{base}/v1/queues/{QUEUE}/jobs");

    let started = Instant::now();
    let sent = futures::stream::iter(0..count)
        .map(|i| {
            let req = http
                .post(&url)
                .bearer_auth(token)
                .json(&json!({"data": {"i": i}}));
            async move { req.send().await.map(|r| r.status().as_u16()).unwrap_or(0) }
        })
        .buffer_unordered(32)
        .filter(|s| futures::future::ready(*s == 202))
        .count()
        .await;
    let single = sent as f64 / started.elapsed().as_secs_f64();

    let bulk_url = format!("{url}/bulk");
    let started = Instant::now();
    let sent: usize = futures::stream::iter(0..count / 100)
        .map(|_| {
            let jobs: Vec<_> = (0..100).map(|i| json!({"data": {"i": i}})).collect();
            let req = http
                .post(&bulk_url)
                .bearer_auth(token)
                .json(&json!({"jobs": jobs}));
            async move {
                if req.send().await.map(|r| r.status().as_u16()).unwrap_or(0) == 202 {
                    100
                } else {
                    0
                }
            }
        })
        .buffer_unordered(8)
        .fold(0, |a, n| futures::future::ready(a + n))
        .await;
    let bulk = sent as f64 / started.elapsed().as_secs_f64();

    // Latency, one request at a time: API vs a direct add.
    let mut api_lat = Vec::new();
    let mut direct_lat = Vec::new();
    for i in 0..500 {
        let t = Instant::now();
        let status = http
            .post(&url)
            .bearer_auth(token)
            .json(&json!({"data": {"i": i}}))
            .send()
            .await
            .unwrap()
            .status();
        assert_eq!(status.as_u16(), 202);
        api_lat.push(t.elapsed());
        let t = Instant::now();
        admin
            .enqueue(QUEUE, "direct", json!({"i": i}), json!({}))
            .await;
        direct_lat.push(t.elapsed());
    }
    let _ = host.kill();
    let _ = host.wait();
    println!("| HTTP enqueue, single requests (32 in flight) | {single:.0} jobs/s |");
    println!("| HTTP enqueue, bulk of 100 (8 in flight) | {bulk:.0} jobs/s |");
    println!(
        "| enqueue latency through the API | {} |",
        percentiles(api_lat.clone())
    );
    println!(
        "| enqueue latency, direct BullMQ add | {} |",
        percentiles(direct_lat.clone())
    );
    api_lat.sort();
    direct_lat.sort();
    let added = api_lat[api_lat.len() / 2].saturating_sub(direct_lat[direct_lat.len() / 2]);
    println!(
        "| latency the API adds (p50) | {:.2} ms |",
        added.as_secs_f64() * 1e3
    );
}

#[tokio::main]
async fn main() {
    let count: usize = std::env::var("BENCH_JOBS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let only = std::env::var("BENCH_ONLY").unwrap_or_default();
    println!("| benchmark | Airlock | Node BullMQ | ratio |");
    println!("|---|---|---|---|");
    let mut port_rates = Vec::new();
    for concurrency in [10, 50] {
        if !only.is_empty() && only != "drain" {
            break;
        }
        let node = node_drain(count, concurrency).await;
        let airlock = airlock_drain(count, concurrency).await;
        port_rates.push((
            concurrency,
            port_drain(count, concurrency).await,
            node,
            airlock,
        ));
        println!(
            "| drain {count} no-op jobs, concurrency {concurrency} | {airlock:.0} jobs/s | {node:.0} jobs/s | {:.2}× |",
            airlock / node
        );
    }
    if !port_rates.is_empty() {
        println!();
        println!(
            "| drain, Rust port's no-op worker (no sandbox) | jobs/s | vs Node | Airlock vs port |"
        );
        println!("|---|---|---|---|");
        for (concurrency, port, node, airlock) in port_rates {
            println!(
                "| concurrency {concurrency} | {port:.0} | {:.2}× | {:.2}× |",
                port / node,
                airlock / port
            );
        }
    }
    if only == "drain" {
        return;
    }
    println!();
    println!("| hosts on one Redis (concurrency 10 each) | jobs/s | Redis CPU per job |");
    println!("|---|---|---|");
    for hosts in [1, 2, 4] {
        if !only.is_empty() {
            break;
        }
        let (rate, redis_us) = fleet_drain(hosts, count).await;
        println!("| {hosts} | {rate:.0} | {redis_us:.0} µs |");
    }
    println!();
    if only.is_empty() || only == "api" {
        println!("| API | result |");
        println!("|---|---|");
        api_enqueue(count).await;
        println!();
    }
    let queues = ["{q-a}", "{q-b}", "{q-c}"];
    if !only.is_empty() && only != "multi" {
        return;
    }
    let single = multi_queue_drain(false, &queues, count / 3).await;
    let clustered = multi_queue_drain(true, &queues, count / 3).await;
    println!("| 3 queues, 1 host | jobs/s (incl. host start) |");
    println!("|---|---|");
    println!("| one Redis | {single:.0} |");
    println!(
        "| Redis Cluster, 3 masters | {clustered:.0} ({:.2}×) |",
        clustered / single
    );
    println!();
    let samples = 300;
    let (a_start, a_finish) = idle_latency("airlock", samples, start_airlock).await;
    let (n_start, n_finish) =
        idle_latency("node", samples, |r| start_node(r, samples + 20, 10)).await;
    println!(
        "| idle enqueue→start | {} | {} | |",
        percentiles(a_start),
        percentiles(n_start)
    );
    println!(
        "| idle enqueue→finish | {} | {} | |",
        percentiles(a_finish),
        percentiles(n_finish)
    );
}
