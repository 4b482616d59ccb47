//! Queue-host benchmarks (`make bench`): drain throughput and idle latency
//! of an Airlock host (a WASM instance per job) against a plain Node BullMQ
//! no-op worker on the same Redis, in the same run. A third peer, a no-op
//! worker of the Rust port (`bullmq-official`) Airlock wraps, run on its own
//! runtime with no sandbox and no Airlock bookkeeping, shows which part of
//! the gap to Node is the port and which is Airlock.
//!
//! - throughput: N jobs are pre-enqueued, then a worker drains them;
//!   jobs/s = N / (last `finishedOn` - first `processedOn`), read from the
//!   job hashes the same way for every worker. No-op jobs measure the
//!   protocol and bookkeeping; payment jobs (the `payment-webhook` guest
//!   against the same processor on Node, `tests/interop/payment-processor.js`)
//!   add progress, logs and a result;
//! - cost per job, in the steady state (first completion to last): Redis CPU
//!   (`INFO cpu`), the worker process's CPU (`/proc/PID/stat`), and Redis
//!   calls per job by command (`INFO commandstats`), with `EVALSHA` split by
//!   script in a `MONITOR` sample that names Airlock's own scripts;
//! - host CPU per job by phase of the job path (fetch, admit, load,
//!   instantiate, reset, run, finish, record, Redis connections, runtime):
//!   a profiled no-op and payment drain, where `perf` can profile
//!   (`queue/phases.rs`);
//! - idle latency: one job at a time into an idle worker; enqueue→start and
//!   enqueue→finish are timed by this process from just before the add to
//!   the `active` / `completed` event on the queue's events stream;
//! - I/O waits (`BENCH_ONLY=io`): 2,000 jobs each making one request to a
//!   loopback server that answers after 1 s, all at once on one host with
//!   1 s locks, against Node's worker running `fetch`; then 1,000 of them
//!   beside CPU-bound guests: wall time, peak RSS per job, stalls;
//! - languages (`BENCH_ONLY=languages`, `BENCH_LANG_JOBS`, default 3,000):
//!   the payment handler built in Rust, TypeScript (QuickJS and
//!   StarlingMonkey) and Python, a fresh instance per job and (TypeScript
//!   on StarlingMonkey, Python) with warm instances, against the same
//!   processor on a plain Node worker and as BullMQ's sandboxed processor
//!   (`sandboxed-payment.js`): jobs/s, the worker's CPU, minor faults and
//!   resident memory per job, and the targets met or missed.
//!
//! - traces (`BENCH_ONLY=traces`): the no-op drain with OpenTelemetry
//!   traces off, on for every run and on for 1 %, to an OTLP receiver in
//!   this process.
//! - transcripts (`BENCH_ONLY=transcripts`): the no-op and the payment
//!   drain with `recordTranscripts` off and on.
//! - invokes (`BENCH_ONLY=invoke`): an invoke's idle round trip against a
//!   plain job's, and a fan-out of 1,000 no-op children against the same
//!   jobs added directly (`queue/invoke.rs`).
//! - batches (`BENCH_ONLY=batch`): no-op and payment batch handlers in
//!   Rust and TypeScript, batches of 10 and 50, against Node's plain worker
//!   at the same 100 jobs held (`queue/batch.rs`).
//!
//! Needs the release `airlock` binary (`cargo build --release -p airlock`;
//! `AIRLOCK_BENCH_BIN` runs another build, to compare versions), the
//! guests and `tests/interop/node_modules` (`make interop-deps`).

use std::collections::{BTreeMap, HashMap};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use airlock_tests::host::Admin;
use airlock_tests::http_server::TestServer;
use airlock_tests::redis_server::{RedisServer, command_stats};
use airlock_tests::{interop_script, shared_cache_dir, target_dir};
use redis::AsyncCommands;
use serde_json::json;

#[path = "queue/phases.rs"]
mod phases;

#[path = "queue/invoke.rs"]
mod invoke;

#[path = "queue/batch.rs"]
mod batch;

const QUEUE: &str = "bench";

fn release_airlock() -> std::path::PathBuf {
    let path = std::env::var_os("AIRLOCK_BENCH_BIN")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| target_dir().join("release").join("airlock"));
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
    start_airlock_with(redis_url, id, &[])
}

fn start_airlock_with(redis_url: &str, id: &str, extra: &[&str]) -> Child {
    start_airlock_env(redis_url, id, extra, &[])
}

fn start_airlock_env(redis_url: &str, id: &str, extra: &[&str], env: &[(&str, &str)]) -> Child {
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
        .args(extra)
        // `BENCH_AIRLOCK_ARGS`: more `airlock serve` flags for every host
        // (to compare settings, e.g. `--memory-keep-resident 0`).
        .args(
            std::env::var("BENCH_AIRLOCK_ARGS")
                .unwrap_or_default()
                .split_whitespace(),
        )
        .env("AIRLOCK_CACHE_DIR", shared_cache_dir())
        .env("RUST_LOG", "warn")
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start airlock")
}

fn start_node(redis: &RedisServer, count: usize, concurrency: usize) -> Child {
    start_node_processor(redis, count, concurrency, "noop")
}

fn start_node_processor(
    redis: &RedisServer,
    count: usize,
    concurrency: usize,
    processor: &str,
) -> Child {
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
            "--processor",
            processor,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start node worker")
}

async fn enqueue(redis: &RedisServer, count: usize) {
    enqueue_jobs(redis, count, "noop", "{}").await
}

async fn enqueue_jobs(redis: &RedisServer, count: usize, name: &str, data: &str) {
    enqueue_on(redis, QUEUE, count, name, data).await
}

async fn enqueue_on(redis: &RedisServer, queue: &str, count: usize, name: &str, data: &str) {
    let out = Command::new("node")
        .arg(interop_script("enqueue.js"))
        .args([
            "--redis",
            &redis.url(),
            "--prefix",
            "bull",
            "--queue",
            queue,
        ])
        .args([
            "--count",
            &count.to_string(),
            "--name",
            name,
            "--data",
            data,
        ])
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

/// The worker under test in a drain.
#[derive(Clone, Copy, PartialEq)]
enum Peer {
    /// `airlock serve`, the queue bound to this guest.
    Airlock(&'static str),
    /// The same, the binding with warm instances (`warmInstances`: a job
    /// may run in the instance an earlier completed job left).
    AirlockWarm(&'static str),
    /// `airlock serve` exporting traces to [`TRACE_RECEIVER`], the
    /// sampler keeping this ratio of traces (`parentbased_traceidratio`).
    AirlockTraced(&'static str, &'static str),
    /// `airlock serve`, the binding recording every run's transcript
    /// (`recordTranscripts`).
    AirlockRecorded(&'static str),
    /// `airlock serve`, the binding running batches of this size
    /// (`batch`, gathering at most 20 ms) with this batch handler; the
    /// drain's concurrency is the jobs held at once.
    AirlockBatch(&'static str, u32),
    /// Node's BullMQ worker with this processor (`bench-worker.js`).
    Node(&'static str),
    /// The Rust port's no-op worker, in a process of its own (this
    /// benchmark binary, re-run as [`port_worker`]).
    Port,
}

/// What draining a queue cost.
struct Drain {
    rate: f64,
    /// Redis CPU per job, µs.
    redis_us: f64,
    /// The worker's CPU per job (its process and every child, such as
    /// BullMQ's sandboxed processors), µs.
    host_us: f64,
    /// Minor page faults per job, the worker's process and its children.
    faults: f64,
    /// Resident memory of the worker's process and its children at the
    /// end of the drain, bytes.
    rss: u64,
    /// Redis calls per job by command: (calls, µs).
    commands: BTreeMap<String, (f64, f64)>,
}

/// Redis's own CPU so far (user + system), µs.
async fn redis_cpu_us(conn: &mut redis::aio::MultiplexedConnection) -> f64 {
    let info: String = redis::cmd("INFO")
        .arg("cpu")
        .query_async(conn)
        .await
        .unwrap();
    info.lines()
        .filter_map(|l| {
            let (k, v) = l.trim().split_once(':')?;
            matches!(k, "used_cpu_sys" | "used_cpu_user").then(|| v.parse::<f64>().ok())?
        })
        .sum::<f64>()
        * 1e6
}

fn start_peer(peer: Peer, redis: &RedisServer, count: usize, concurrency: usize) -> Child {
    match peer {
        Peer::Airlock(_)
        | Peer::AirlockWarm(_)
        | Peer::AirlockRecorded(_)
        | Peer::AirlockBatch(..) => start_airlock(redis),
        Peer::AirlockTraced(_, ratio) => {
            let receiver = TRACE_RECEIVER.get().expect("the trace bench's receiver");
            start_airlock_env(
                &redis.url(),
                "bench",
                &[],
                &[
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver),
                    ("OTEL_TRACES_SAMPLER", "parentbased_traceidratio"),
                    ("OTEL_TRACES_SAMPLER_ARG", ratio),
                    // Batches every 100 ms, so the spans count is read
                    // after the drain with at most 100 ms of them unsent.
                    ("OTEL_BSP_SCHEDULE_DELAY", "100"),
                ],
            )
        }
        // More jobs than queued: the worker keeps running (and its CPU
        // readable) until it is killed.
        Peer::Node(processor) => start_node_processor(redis, count * 10, concurrency, processor),
        Peer::Port => Command::new(std::env::current_exe().unwrap())
            .env("AIRLOCK_BENCH_PORT_WORKER", redis.url())
            .env("AIRLOCK_BENCH_CONCURRENCY", concurrency.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the port's worker"),
    }
}

/// Jobs every worker runs before the measured drain, so that what is
/// measured is the steady state a user gets: the component loaded
/// (compiled, or read from the artifact cache) and its pool slots used,
/// connections open, Node's JIT warm.
const WARM_UP: usize = 500;

/// Drains `count` jobs with `peer`, warmed up: the worker first runs
/// [`WARM_UP`] jobs; then the queue is paused, the warm-up jobs cleaned
/// away and the `count` jobs enqueued, and the drain is measured from the
/// resume to the last completion. Nothing of start-up (connecting, loading
/// or compiling the component, the first fetch) is in the span.
async fn drain(peer: Peer, count: usize, concurrency: usize, name: &str, data: &str) -> Drain {
    // `BENCH_PERF=DIR` profiles every Airlock drain's measured span with
    // `perf record` (DIR/airlock-c<concurrency>-<guest>.data).
    let profile = match (peer, std::env::var_os("BENCH_PERF")) {
        (
            Peer::Airlock(guest)
            | Peer::AirlockWarm(guest)
            | Peer::AirlockTraced(guest, _)
            | Peer::AirlockRecorded(guest)
            | Peer::AirlockBatch(guest, _),
            Some(dir),
        ) => Some(std::path::Path::new(&dir).join(format!("airlock-c{concurrency}-{guest}.data"))),
        _ => None,
    };
    drain_profiled(peer, count, concurrency, name, data, profile.as_deref()).await
}

/// [`drain`], its measured span profiled with `perf record` (call
/// stacks from DWARF) into `profile` when given.
async fn drain_profiled(
    peer: Peer,
    count: usize,
    concurrency: usize,
    name: &str,
    data: &str,
    profile: Option<&std::path::Path>,
) -> Drain {
    let redis = RedisServer::start();
    let admin = Admin::connect(&redis.url()).await;
    match peer {
        Peer::Airlock(guest) | Peer::AirlockTraced(guest, _) => {
            admin.deploy(guest, guest).await;
            admin
                .bind(QUEUE, guest, json!({"concurrency": concurrency}))
                .await;
        }
        Peer::AirlockWarm(guest) => {
            admin.deploy(guest, guest).await;
            admin
                .bind(
                    QUEUE,
                    guest,
                    json!({"concurrency": concurrency, "warmInstances": {"maxJobs": 1000}}),
                )
                .await;
        }
        Peer::AirlockBatch(guest, size) => {
            admin.deploy(guest, guest).await;
            let batches = (concurrency / size as usize).max(1);
            admin
                .bind(
                    QUEUE,
                    guest,
                    json!({"concurrency": batches, "batch": {"size": size, "timeoutMs": 20}}),
                )
                .await;
        }
        Peer::AirlockRecorded(guest) => {
            admin.deploy(guest, guest).await;
            admin
                .bind(
                    QUEUE,
                    guest,
                    json!({"concurrency": concurrency, "recordTranscripts": true}),
                )
                .await;
        }
        _ => {}
    }
    let client = redis::Client::open(redis.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let mut worker = start_peer(peer, &redis, count + WARM_UP, concurrency);
    let pid = worker.id();
    enqueue_jobs(&redis, WARM_UP, name, data).await;
    wait_drained(&redis, WARM_UP).await;
    admin.queues.pause(QUEUE).await.unwrap();
    let cleaned = admin
        .queues
        .clean(QUEUE, airlock::queue::JobState::Completed, 0, 0)
        .await
        .unwrap();
    assert_eq!(cleaned.len(), WARM_UP, "the warm-up jobs are cleaned away");
    enqueue_jobs(&redis, count, name, data).await;
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query_async(&mut conn)
        .await
        .unwrap();
    let perf = profile.map(|path| {
        Command::new("perf")
            .args(["record", "--call-graph", "dwarf,16384", "-F", "999"])
            .args(["-p", &pid.to_string(), "-o"])
            .arg(path)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start perf")
    });
    let (redis_before, host_before) = (redis_cpu_us(&mut conn).await, tree_usage(pid));
    admin.queues.resume(QUEUE).await.unwrap();
    wait_drained(&redis, count).await;
    let (redis_after, host_after) = (redis_cpu_us(&mut conn).await, tree_usage(pid));
    if let Some(mut perf) = perf {
        // SIGINT makes perf write its file and exit.
        let _ = Command::new("kill")
            .args(["-INT", &perf.id().to_string()])
            .status();
        let _ = perf.wait();
    }
    let measured = count as f64;
    let commands = command_stats(&mut conn)
        .await
        .into_iter()
        .map(|(name, (calls, us))| (name, (calls / measured, us / measured)))
        .collect();
    let rss = tree_usage(pid).rss;
    let _ = worker.kill();
    let _ = worker.wait();
    Drain {
        rate: drain_rate(&redis).await,
        redis_us: (redis_after - redis_before) / measured,
        // Clock ticks are 10 ms.
        host_us: (host_after.ticks - host_before.ticks) as f64 * 10_000.0 / measured,
        faults: (host_after.minor_faults - host_before.minor_faults) as f64 / measured,
        rss,
        commands,
    }
}

/// The Rust port's own no-op worker: no sandbox, no Airlock bookkeeping,
/// on a two-thread runtime (the host's default on the benchmark machine).
/// Runs until killed.
fn port_worker(url: String, concurrency: usize) {
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
        let _worker = bullmq::Worker::with_options(
            QUEUE,
            |_job: bullmq::Job, _cancel: bullmq::worker::CancellationToken| async {
                Ok(serde_json::Value::Null)
            },
            opts,
        )
        .await
        .expect("start the port's worker");
        std::future::pending::<()>().await;
    });
}

/// `EVALSHA` calls per job by script, from a `MONITOR` sample of an
/// Airlock no-op drain (`MONITOR` slows Redis down: this run is for
/// attribution, not for rates). Airlock's scripts are named; the rest are
/// BullMQ's (the port's).
async fn script_calls(count: usize, concurrency: usize) -> Vec<(String, f64)> {
    use std::io::{BufRead, Write};
    let redis = RedisServer::start();
    let admin = Admin::connect(&redis.url()).await;
    admin.deploy("noop", "noop").await;
    admin
        .bind(QUEUE, "noop", json!({"concurrency": concurrency}))
        .await;
    enqueue(&redis, count).await;
    let mut monitor = std::net::TcpStream::connect(("127.0.0.1", redis.port())).unwrap();
    monitor.write_all(b"MONITOR\r\n").unwrap();
    let reader = std::io::BufReader::new(monitor.try_clone().unwrap());
    let counts = std::thread::spawn(move || {
        let mut counts: HashMap<String, u64> = HashMap::new();
        for line in reader.lines() {
            let Ok(line) = line else { break };
            // +1700000000.123456 [0 127.0.0.1:5555] "EVALSHA" "sha" "2" ...
            let mut quoted = line.split('"').skip(1).step_by(2);
            if quoted
                .next()
                .is_some_and(|c| c.eq_ignore_ascii_case("evalsha"))
                && let Some(sha) = quoted.next()
            {
                *counts.entry(sha.to_string()).or_default() += 1;
            }
        }
        counts
    });
    let mut host = start_airlock(&redis);
    wait_drained(&redis, count).await;
    // The host's last batch of run records lands after the last finish.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let _ = host.kill();
    let _ = host.wait();
    let _ = monitor.shutdown(std::net::Shutdown::Both);
    let counts = counts.join().unwrap();
    let names: HashMap<String, &str> = airlock::state::State::script_hashes()
        .into_iter()
        .map(|(name, sha)| (sha, name))
        .collect();
    let mut rows: Vec<(String, f64)> = counts
        .into_iter()
        .map(|(sha, n)| {
            let name = match names.get(&sha) {
                Some(name) => format!("Airlock `{name}`"),
                None => format!("BullMQ `{}`", &sha[..sha.len().min(8)]),
            };
            (name, n as f64 / count as f64)
        })
        .collect();
    rows.sort_by(|a, b| b.1.total_cmp(&a.1));
    rows
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

/// What a process has used so far: `/proc/PID/stat`'s CPU time (user +
/// system, in clock ticks) and minor page faults, its reaped children's
/// included.
#[derive(Debug, Clone, Copy, Default)]
struct Usage {
    ticks: u64,
    minor_faults: u64,
    /// Resident set, bytes.
    rss: u64,
    /// The parent's pid, to find a process's children.
    ppid: u32,
}

fn usage(pid: u32) -> Option<Usage> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, from field 3 (`state`) on.
    let fields: Vec<&str> = stat.rsplit(')').next()?.split_whitespace().collect();
    let field = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok());
    Some(Usage {
        ppid: field(1)? as u32,
        minor_faults: field(7)? + field(8)?,
        ticks: field(11)? + field(12)? + field(13)? + field(14)?,
        rss: field(21)? * 4096,
    })
}

/// [`Usage`] of `pid` and every live descendant (BullMQ's sandboxed
/// processors run jobs in child processes).
fn tree_usage(pid: u32) -> Usage {
    let mut all: Vec<(u32, Usage)> = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        if let Some(p) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
            && let Some(u) = usage(p)
        {
            all.push((p, u));
        }
    }
    let mut tree = vec![pid];
    let mut total = Usage::default();
    while let Some(p) = tree.pop() {
        for (child, u) in &all {
            if *child == p {
                total.ticks += u.ticks;
                total.minor_faults += u.minor_faults;
                total.rss += u.rss;
            }
            if u.ppid == p {
                tree.push(*child);
            }
        }
    }
    total
}

/// CPU time (user + system) of a process so far, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    usage(pid).map_or(0, |u| u.ticks)
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
                    trace: None,
                    parent: None,
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

/// The payment data our users' producers send (the seeds' webhook shape).
const PAYMENT: &str = r#"{"transactionId":"tx_1","amount":42.5,"currency":"EUR","source":"stripe","timestamp":"2026-11-30T10:00:00Z"}"#;

fn per_job_us(v: f64) -> String {
    format!("{v:.1} µs")
}

/// Node's no-op drain at concurrency 10 on a quiet machine (2 vCPU AMD
/// EPYC, KVM; nothing else running; 2026-12-02, this benchmark): the
/// yardstick for how busy the machine was during a run.
const QUIET_NODE_NOOP_C10: f64 = 17_841.0;

/// How busy the machine was: Node's own no-op rate in this run against
/// its rate on a quiet machine (a single-threaded Node worker loses more
/// to a busy machine than a multi-threaded one does, so ratios from a busy
/// run flatter Airlock), and the load average before the benchmark began.
fn machine_note(node_noop_c10: f64) {
    println!(
        "Machine: Node's no-op drain at concurrency 10 ran at {node_noop_c10:.0} jobs/s, {:.0} % of its {QUIET_NODE_NOOP_C10:.0} jobs/s on a quiet machine; load average before the run {}.",
        node_noop_c10 / QUIET_NODE_NOOP_C10 * 100.0,
        START_LOAD.get().map_or("?", String::as_str)
    );
}

/// `/proc/loadavg`'s 1, 5 and 15 minute figures when the benchmark began.
static START_LOAD: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// The drain tables: rates against Node and the port, cost per job, and
/// what Airlock adds on Redis.
async fn drains(count: usize) {
    println!(
        "| drain {count} jobs | Airlock | Node BullMQ | Airlock / Node | Rust port, no sandbox | Airlock / port |"
    );
    println!("|---|---|---|---|---|---|");
    let mut costs: Vec<(String, Drain, Drain, Option<Drain>)> = Vec::new();
    for concurrency in [10, 50] {
        let node = drain(Peer::Node("noop"), count, concurrency, "noop", "{}").await;
        let airlock = drain(Peer::Airlock("noop"), count, concurrency, "noop", "{}").await;
        let port = drain(Peer::Port, count, concurrency, "noop", "{}").await;
        println!(
            "| no-op, concurrency {concurrency} | {:.0} jobs/s | {:.0} jobs/s | {:.2}× | {:.0} jobs/s | {:.2}× |",
            airlock.rate,
            node.rate,
            airlock.rate / node.rate,
            port.rate,
            airlock.rate / port.rate
        );
        costs.push((
            format!("no-op, concurrency {concurrency}"),
            airlock,
            node,
            Some(port),
        ));
    }
    for concurrency in [10, 50] {
        let node = drain(
            Peer::Node("payment"),
            count,
            concurrency,
            "payment",
            PAYMENT,
        )
        .await;
        let airlock = drain(
            Peer::Airlock("payment-webhook"),
            count,
            concurrency,
            "payment",
            PAYMENT,
        )
        .await;
        println!(
            "| payment webhook (3 progress, 2 logs, a result), concurrency {concurrency} | {:.0} jobs/s | {:.0} jobs/s | {:.2}× | | |",
            airlock.rate,
            node.rate,
            airlock.rate / node.rate
        );
        costs.push((
            format!("payment webhook, concurrency {concurrency}"),
            airlock,
            node,
            None,
        ));
    }

    println!();
    machine_note(costs[0].2.rate);
    println!();
    println!(
        "| cost per job, steady state | Redis CPU: Airlock | port | Node | Airlock / port | worker CPU: Airlock | port | Node | Airlock / port | minor faults: Airlock | Airlock's RSS after the drain |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for (label, airlock, node, port) in &costs {
        let (port_redis, port_host, ratio, host_ratio) = match port {
            Some(p) => (
                per_job_us(p.redis_us),
                per_job_us(p.host_us),
                format!("{:.2}×", airlock.redis_us / p.redis_us),
                format!("{:.2}×", airlock.host_us / p.host_us),
            ),
            None => Default::default(),
        };
        println!(
            "| {label} | {} | {port_redis} | {} | {ratio} | {} | {port_host} | {} | {host_ratio} | {:.2} | {:.0} MiB |",
            per_job_us(airlock.redis_us),
            per_job_us(node.redis_us),
            per_job_us(airlock.host_us),
            per_job_us(node.host_us),
            airlock.faults,
            airlock.rss as f64 / (1u64 << 20) as f64,
        );
    }

    // What Airlock sends Redis beyond what the port itself sends.
    let (_, airlock, node, port) = &costs[0];
    let port = port.as_ref().unwrap();
    println!();
    println!(
        "| Redis calls per job, no-op, concurrency 10 | Airlock | port | Node | Airlock µs | port µs |"
    );
    println!("|---|---|---|---|---|---|");
    let names: std::collections::BTreeSet<&String> = airlock
        .commands
        .keys()
        .chain(port.commands.keys())
        .chain(node.commands.keys())
        .collect();
    let get = |d: &Drain, name: &str| d.commands.get(name).copied().unwrap_or((0.0, 0.0));
    for name in names {
        let (a, p, n) = (get(airlock, name), get(port, name), get(node, name));
        if a.0.max(p.0).max(n.0) < 0.005 {
            continue;
        }
        println!(
            "| `{name}` | {:.3} | {:.3} | {:.3} | {:.1} | {:.1} |",
            a.0, p.0, n.0, a.1, p.1
        );
    }
    println!();
    println!(
        "| `EVALSHA` per job by script, Airlock no-op drain (MONITOR sample, 5000 jobs) | calls |"
    );
    println!("|---|---|");
    for (script, calls) in script_calls(5000, 10).await {
        println!("| {script} | {calls:.3} |");
    }
    println!();
    phase_split(count).await;
}

/// Host CPU per job by phase of the job path (`phases`): a no-op and a
/// payment drain at concurrency 10, each profiled with `perf record` (so
/// a little slower than the measured drains above), each sample put
/// in its phase, the shares applied to the profiled drain's CPU per job.
/// Left out, saying why, where `perf` cannot profile.
async fn phase_split(count: usize) {
    let runs = [
        ("no-op", "noop", "noop", "{}"),
        ("payment webhook", "payment-webhook", "payment", PAYMENT),
    ];
    let dir = tempfile::tempdir().expect("temp dir");
    let mut columns = Vec::new();
    for (label, guest, name, data) in runs {
        let profile = dir.path().join(format!("{guest}.data"));
        let drained =
            drain_profiled(Peer::Airlock(guest), count, 10, name, data, Some(&profile)).await;
        match phases::split(&profile) {
            Ok(shares) => columns.push((label, drained.host_us, shares)),
            Err(why) => {
                println!("(host CPU by phase left out: `perf` could not profile the host: {why})");
                return;
            }
        }
    }
    println!(
        "| host CPU per job by phase, concurrency 10 (a drain profiled with `perf`) | {} |",
        columns
            .iter()
            .map(|(l, _, _)| *l)
            .collect::<Vec<_>>()
            .join(" | ")
    );
    println!("|---|{}", "---|".repeat(columns.len()));
    for (i, (phase, _)) in phases::PHASES.iter().enumerate() {
        let cells: Vec<String> = columns
            .iter()
            .map(|(_, host_us, shares)| {
                per_job_us(host_us * shares.get(&i).copied().unwrap_or(0.0))
            })
            .collect();
        println!("| {phase} | {} |", cells.join(" | "));
    }
    let totals: Vec<String> = columns
        .iter()
        .map(|(_, host_us, _)| format!("**{}**", per_job_us(*host_us)))
        .collect();
    println!("| all (the profiled drain) | {} |", totals.join(" | "));
}

/// Where [`Peer::AirlockTraced`] hosts export: the OTLP receiver of
/// [`trace_drains`], in this process.
static TRACE_RECEIVER: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// What traces cost (`BENCH_ONLY=traces`): the no-op drain at concurrency
/// 10 with traces off, exported for every run, and for 1 % of them
/// (`parentbased_traceidratio` 0.01: Node's jobs carry no trace, so each
/// run's span is a new trace the ratio decides on), same run, to an OTLP
/// receiver in this process that decodes every request. Warm host, no
/// compile in the span (see [`drain`]); the exporter's batches leave on
/// their own thread inside the span.
async fn trace_drains(count: usize) {
    let receiver = airlock_tests::otlp::OtlpReceiver::start();
    TRACE_RECEIVER.set(receiver.url.clone()).unwrap();
    let node = drain(Peer::Node("noop"), count, 10, "noop", "{}").await;
    let off = drain(Peer::Airlock("noop"), count, 10, "noop", "{}").await;
    let all = drain(Peer::AirlockTraced("noop", "1.0"), count, 10, "noop", "{}").await;
    // Received before each host was stopped (the drain's end).
    let received_all = receiver.spans().len();
    let some = drain(Peer::AirlockTraced("noop", "0.01"), count, 10, "noop", "{}").await;
    let received_some = receiver.spans().len() - received_all;
    println!(
        "| no-op drain of {count} jobs, concurrency 10 | jobs/s | / traces off | host CPU per job | Redis CPU per job | spans received by the drain's end (of {} runs, warm-up included) |",
        count + WARM_UP
    );
    println!("|---|---|---|---|---|---|");
    for (label, d, spans) in [
        ("traces off", &off, None),
        ("traces on, every run", &all, Some(received_all)),
        ("traces on, 1 % of runs", &some, Some(received_some)),
    ] {
        println!(
            "| {label} | {:.0} | {:.2}× | {} | {} | {} |",
            d.rate,
            d.rate / off.rate,
            per_job_us(d.host_us),
            per_job_us(d.redis_us),
            spans.map_or(String::new(), |n| n.to_string())
        );
    }
    println!();
    machine_note(node.rate);
}

/// What recording transcripts costs (`BENCH_ONLY=transcripts`): the no-op
/// and the payment handler (3 progress reports, 2 logs, a configuration
/// read, a result) drained at concurrency 10 with `recordTranscripts` off
/// and on, same run. Warm host, no compile in the span (see [`drain`]).
async fn transcript_drains(count: usize) {
    let node = drain(Peer::Node("noop"), count, 10, "noop", "{}").await;
    println!(
        "| drain of {count} jobs, concurrency 10 | off, jobs/s | recorded, jobs/s | recorded / off | host CPU per job, off → recorded | Redis CPU per job, off → recorded |"
    );
    println!("|---|---|---|---|---|---|");
    for (label, guest, name, data) in [
        ("no-op", "noop", "noop", "{}"),
        ("payment webhook", "payment-webhook", "payment", PAYMENT),
    ] {
        let off = drain(Peer::Airlock(guest), count, 10, name, data).await;
        let on = drain(Peer::AirlockRecorded(guest), count, 10, name, data).await;
        println!(
            "| {label} | {:.0} | {:.0} | {:.2}× | {} → {} | {} → {} |",
            off.rate,
            on.rate,
            on.rate / off.rate,
            per_job_us(off.host_us),
            per_job_us(on.host_us),
            per_job_us(off.redis_us),
            per_job_us(on.redis_us),
        );
    }
    println!();
    machine_note(node.rate);
}

/// The payment handler in every language Airlock takes, drained by one
/// host — a fresh instance per job, and with warm instances for the
/// engines that pay a start-up per instance —, against the same processor
/// on a plain Node worker and as BullMQ's sandboxed processor (a pool of
/// child processes), same run; then the issue's targets against the
/// sandboxed processor. Every drain is warmed up first (see [`drain`]).
async fn language_drains(count: usize) {
    let concurrency = 10;
    let node = drain(
        Peer::Node("payment"),
        count,
        concurrency,
        "payment",
        PAYMENT,
    )
    .await;
    let sandboxed = drain(
        Peer::Node("sandboxed-payment"),
        count,
        concurrency,
        "payment",
        PAYMENT,
    )
    .await;
    println!(
        "| payment webhook, {count} jobs, concurrency {concurrency} | jobs/s | / BullMQ sandboxed | / plain Node | worker CPU per job | minor faults per job | RSS |"
    );
    println!("|---|---|---|---|---|---|---|");
    let row = |label: &str, d: &Drain| {
        println!(
            "| {label} | {:.0} | {:.2}× | {:.2}× | {} | {:.1} | {:.0} MiB |",
            d.rate,
            d.rate / sandboxed.rate,
            d.rate / node.rate,
            per_job_us(d.host_us),
            d.faults,
            d.rss as f64 / (1u64 << 20) as f64,
        );
    };
    row("Node BullMQ, plain worker", &node);
    row("Node BullMQ, sandboxed processor", &sandboxed);
    let mut airlock = BTreeMap::new();
    for (label, peer) in [
        ("Airlock, Rust", Peer::Airlock("payment-webhook")),
        (
            "Airlock, TypeScript on QuickJS",
            Peer::Airlock("js-payment-webhook-qjs"),
        ),
        (
            "Airlock, TypeScript on StarlingMonkey",
            Peer::Airlock("js-payment-webhook"),
        ),
        ("Airlock, Python", Peer::Airlock("py-payment-webhook")),
        (
            "Airlock, TypeScript on StarlingMonkey, warm instances",
            Peer::AirlockWarm("js-payment-webhook"),
        ),
        (
            "Airlock, Python, warm instances",
            Peer::AirlockWarm("py-payment-webhook"),
        ),
    ] {
        let d = drain(peer, count, concurrency, "payment", PAYMENT).await;
        row(label, &d);
        airlock.insert(label, d);
    }
    println!();
    println!("| target (against BullMQ's sandboxed processor) | wanted | measured | met |");
    println!("|---|---|---|---|");
    let target = |what: &str, label: &str, wanted: f64| {
        let ratio = airlock[label].rate / sandboxed.rate;
        let met = if ratio >= wanted { "yes" } else { "no" };
        println!("| {what} | ≥ {wanted}× | {ratio:.2}× | {met} |");
    };
    target(
        "QuickJS, fresh instance per job",
        "Airlock, TypeScript on QuickJS",
        2.0,
    );
    target(
        "StarlingMonkey, fresh instance",
        "Airlock, TypeScript on StarlingMonkey",
        1.0,
    );
    target("Python, fresh instance", "Airlock, Python", 0.6);
    target(
        "StarlingMonkey, warm instances",
        "Airlock, TypeScript on StarlingMonkey, warm instances",
        2.0,
    );
    target(
        "Python, warm instances",
        "Airlock, Python, warm instances",
        1.5,
    );
    let worst = airlock
        .iter()
        .max_by(|a, b| a.1.faults.total_cmp(&b.1.faults))
        .expect("drains");
    println!(
        "| minor page faults per job, every language | ≤ 5 | {:.1} ({}) | {} |",
        worst.1.faults,
        worst.0,
        if worst.1.faults <= 5.0 { "yes" } else { "no" }
    );
}

/// Resident and peak resident memory of a process (`VmRSS`, `VmHWM`), bytes.
fn rss(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<u64>().ok())
            .unwrap_or(0)
            * 1024
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// What one drain of I/O-waiting jobs showed.
struct IoRun {
    /// First start to last finish, s.
    wall: f64,
    /// First start to last start, s.
    starts: f64,
    /// Peak RSS growth over the idle host, per job, bytes.
    rss_per_job: f64,
    /// Recoveries of stalled jobs (sum of BullMQ's `stc`) and failures.
    stalled: u64,
    failed: u64,
    /// CPU-bound jobs completed alongside (the mix), and their stalls.
    cpu_done: u64,
    cpu_stalled: u64,
}

/// First `processedOn` to last `finishedOn` over `queue`'s completed jobs,
/// and the sum of their stall counts.
async fn span_and_stalls(redis: &RedisServer, queue: &str) -> (f64, u64, u64) {
    let (wall, _, stalled, failed) = spans(redis, queue).await;
    (wall, stalled, failed)
}

/// [`span_and_stalls`], with first `processedOn` to last `processedOn` (how
/// long it took to start them all), s.
async fn spans(redis: &RedisServer, queue: &str) -> (f64, f64, u64, u64) {
    let client = redis::Client::open(redis.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let ids: Vec<String> = conn
        .zrange(format!("bull:{queue}:completed"), 0, -1)
        .await
        .unwrap();
    let failed: u64 = conn.zcard(format!("bull:{queue}:failed")).await.unwrap();
    let (mut first, mut last, mut stalled, mut last_start) = (u64::MAX, 0u64, 0u64, 0u64);
    for chunk in ids.chunks(500) {
        let mut pipe = redis::pipe();
        for id in chunk {
            pipe.cmd("HMGET")
                .arg(format!("bull:{queue}:{id}"))
                .arg("processedOn")
                .arg("finishedOn")
                .arg("stc");
        }
        let rows: Vec<(Option<u64>, Option<u64>, Option<u64>)> =
            pipe.query_async(&mut conn).await.unwrap();
        for (p, f, stc) in rows {
            first = first.min(p.unwrap_or(u64::MAX));
            last_start = last_start.max(p.unwrap_or(0));
            last = last.max(f.unwrap_or(0));
            stalled += stc.unwrap_or(0);
        }
    }
    let seconds = |ms: u64| ms as f64 / 1000.0;
    (
        seconds(last.saturating_sub(first)),
        seconds(last_start.saturating_sub(first)),
        stalled,
        failed,
    )
}

async fn wait_completed(redis: &RedisServer, queue: &str, count: u64) {
    let client = redis::Client::open(redis.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let done: u64 = conn.zcard(format!("bull:{queue}:completed")).await.unwrap();
        let failed: u64 = conn.zcard(format!("bull:{queue}:failed")).await.unwrap();
        if done + failed >= count {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{queue}: {done}/{count} after 300 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `count` jobs, each one GET of a loopback server that answers after 1 s,
/// all at once on one Airlock host (1 s locks), optionally beside
/// `cpu_jobs` CPU-bound jobs on another queue.
async fn airlock_io(server: &TestServer, count: usize, cpu_jobs: usize) -> IoRun {
    let redis = RedisServer::start();
    let admin = Admin::connect(&redis.url()).await;
    admin.deploy("http-probe", "http-probe").await;
    let url = format!("{}/slow?ms=1000", server.url);
    let binding = json!({
        "concurrency": count,
        "limits": {"memoryBytes": 4 << 20, "timeoutMs": 30_000},
        "egress": [server.url],
    });
    let instances = (count + 64).to_string();
    let mut host = start_airlock_with(
        &redis.url(),
        "bench-io",
        &[
            "--egress-allow",
            &server.url,
            "--egress-allow-network",
            "127.0.0.1/32",
            "--max-instances",
            &instances,
            "--memory-budget",
            "64GiB",
            "--lock-duration",
            "1s",
            "--stalled-interval",
            "1s",
        ],
    );
    let data = json!({"url": url, "requests": [{"url": url}]}).to_string();
    // Warm up (compile, first instance) on a queue of its own, with room
    // for one job: queues share the host's slots.
    let mut warm = binding.clone();
    warm["concurrency"] = json!(1);
    admin.bind("warm", "http-probe", warm).await;
    enqueue_on(&redis, "warm", 1, "io", &data).await;
    wait_completed(&redis, "warm", 1).await;
    if cpu_jobs > 0 {
        admin.deploy("cpu-bound", "cpu-bound").await;
        enqueue_on(
            &redis,
            "cpu",
            cpu_jobs,
            "cpu",
            r#"{"rounds":3000000,"seed":"io-mix"}"#,
        )
        .await;
    }
    enqueue_on(&redis, QUEUE, count, "io", &data).await;
    let (idle, _) = rss(host.id());
    admin.bind(QUEUE, "http-probe", binding).await;
    if cpu_jobs > 0 {
        admin
            .bind(
                "cpu",
                "cpu-bound",
                json!({"concurrency": 4, "metered": false}),
            )
            .await;
    }
    wait_completed(&redis, QUEUE, count as u64).await;
    let (_, peak) = rss(host.id());
    let (wall, starts, stalled, failed) = spans(&redis, QUEUE).await;
    let (cpu_done, cpu_stalled) = if cpu_jobs > 0 {
        wait_completed(&redis, "cpu", cpu_jobs as u64).await;
        let (_, s, _) = span_and_stalls(&redis, "cpu").await;
        (completed_on(&redis, "cpu").await, s)
    } else {
        (0, 0)
    };
    let _ = host.kill();
    let _ = host.wait();
    IoRun {
        wall,
        starts,
        rss_per_job: peak.saturating_sub(idle) as f64 / count as f64,
        stalled,
        failed,
        cpu_done,
        cpu_stalled,
    }
}

async fn completed_on(redis: &RedisServer, queue: &str) -> u64 {
    let client = redis::Client::open(redis.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    conn.zcard(format!("bull:{queue}:completed")).await.unwrap()
}

/// Node's BullMQ worker running the same fetch-then-return job at the same
/// concurrency.
async fn node_io(server: &TestServer, count: usize) -> IoRun {
    let redis = RedisServer::start();
    let url = format!("{}/slow?ms=1000", server.url);
    let data = json!({"url": url, "requests": [{"url": url}]}).to_string();
    enqueue_on(&redis, QUEUE, count, "io", &data).await;
    let mut worker = start_node_processor(&redis, count, count, "fetch");
    // Node's baseline: the worker started, nothing fetched yet.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (idle, _) = rss(worker.id());
    wait_completed(&redis, QUEUE, count as u64).await;
    let (_, peak) = rss(worker.id());
    let (wall, starts, stalled, failed) = spans(&redis, QUEUE).await;
    let _ = worker.kill();
    let _ = worker.wait();
    IoRun {
        wall,
        starts,
        rss_per_job: peak.saturating_sub(idle) as f64 / count as f64,
        stalled,
        failed,
        cpu_done: 0,
        cpu_stalled: 0,
    }
}

/// Jobs waiting on I/O hold no thread: 2,000 one-second requests at once,
/// and 1,000 of them beside CPU-bound guests with 1 s locks.
async fn io_benchmarks() {
    let count: usize = std::env::var("BENCH_IO_JOBS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let server = TestServer::start();
    let airlock = airlock_io(&server, count, 0).await;
    let node = node_io(&server, count).await;
    println!(
        "| {count} jobs, each one GET answered after 1 s, concurrency {count} | wall (first start → last finish) | all started within | peak RSS growth per job | stalled | failed |"
    );
    println!("|---|---|---|---|---|---|");
    for (name, run) in [
        ("Airlock (http-probe guest)", &airlock),
        ("Node BullMQ (fetch)", &node),
    ] {
        println!(
            "| {name} | {:.2} s | {:.2} s | {:.0} KiB | {} | {} |",
            run.wall,
            run.starts,
            run.rss_per_job / 1024.0,
            run.stalled,
            run.failed
        );
    }
    println!();
    let cpu_jobs = 20;
    let mix = airlock_io(&server, count / 2, cpu_jobs).await;
    println!("| mix on one Airlock host, 1 s locks | result |");
    println!("|---|---|");
    println!(
        "| {} I/O jobs (1 s each) | wall {:.2} s, stalled {}, failed {} |",
        count / 2,
        mix.wall,
        mix.stalled,
        mix.failed
    );
    println!(
        "| {cpu_jobs} CPU-bound jobs (3M SHA-256 rounds, unmetered, concurrency 4) | {} completed, stalled {} |",
        mix.cpu_done, mix.cpu_stalled
    );
}

fn main() {
    // Re-run as the port's worker, in a process of its own (see `Peer`).
    if let Ok(url) = std::env::var("AIRLOCK_BENCH_PORT_WORKER") {
        let concurrency = std::env::var("AIRLOCK_BENCH_CONCURRENCY")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(10);
        port_worker(url, concurrency);
        return;
    }
    tokio::runtime::Runtime::new().unwrap().block_on(bench());
}

async fn bench() {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let _ = START_LOAD.set(
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" "),
    );
    let count: usize = std::env::var("BENCH_JOBS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let only = std::env::var("BENCH_ONLY").unwrap_or_default();
    if only.is_empty() || only == "drain" {
        drains(count).await;
    }
    if only.is_empty() || only == "batch" {
        println!();
        batch::batch_drains(count).await;
    }
    if only.is_empty() || only == "traces" {
        println!();
        trace_drains(count).await;
    }
    if only.is_empty() || only == "transcripts" {
        println!();
        transcript_drains(count).await;
    }
    if only.is_empty() || only == "languages" {
        println!();
        language_drains(
            std::env::var("BENCH_LANG_JOBS")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(3_000),
        )
        .await;
    }
    println!();
    if only.is_empty() || only == "fleet" {
        println!("| hosts on one Redis (concurrency 10 each) | jobs/s | Redis CPU per job |");
        println!("|---|---|---|");
        for hosts in [1, 2, 4] {
            let (rate, redis_us) = fleet_drain(hosts, count).await;
            println!("| {hosts} | {rate:.0} | {redis_us:.0} µs |");
        }
        println!();
    }
    if only.is_empty() || only == "api" {
        println!("| API | result |");
        println!("|---|---|");
        api_enqueue(count).await;
        println!();
    }
    let queues = ["{q-a}", "{q-b}", "{q-c}"];
    if only.is_empty() || only == "multi" {
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
    }
    if only.is_empty() || only == "io" {
        io_benchmarks().await;
        println!();
    }
    if only.is_empty() || only == "invoke" {
        invoke::invoke_benchmarks(200, 1000).await;
        println!();
    }
    if only.is_empty() || only == "latency" {
        let samples = 300;
        let (a_start, a_finish) = idle_latency("airlock", samples, start_airlock).await;
        let (n_start, n_finish) =
            idle_latency("node", samples, |r| start_node(r, samples + 20, 10)).await;
        println!("| idle latency, one job at a time | Airlock | Node BullMQ |");
        println!("|---|---|---|");
        println!(
            "| enqueue→start | {} | {} |",
            percentiles(a_start),
            percentiles(n_start)
        );
        println!(
            "| enqueue→finish | {} | {} |",
            percentiles(a_finish),
            percentiles(n_finish)
        );
    }
}
