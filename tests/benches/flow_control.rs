//! Flow-control benchmark (`make bench`): per-key concurrency under a
//! deep backlog, on two release hosts sharing one Redis.
//!
//! One key ("big") gets `BENCH_FC_BIG` no-op jobs (default 100,000) through
//! the API's bulk enqueue while the hosts drain; then 99 other keys get 10
//! jobs each in one request. The queue allows 2 jobs per key at once, 50
//! across the fleet (`globalConcurrency`), 25 per host. Reported:
//! - the start delay of every small key's first job: from its enqueue
//!   (`timestamp`) to the first start of any job of that key
//!   (`processedOn`), p50 / p99 / max over the 99 keys;
//! - the big key's idle gap once it runs alone at its limit: from each of
//!   its jobs' finish to the start that took the freed slot, p50 / p99 /
//!   max (only with the limit);
//! - throughput, first start to last finish over every job, against the
//!   same jobs on the same fleet without `keyConcurrency`; and, to show
//!   the gate's own cost apart from what the limit itself allows, a drain
//!   of 100 keys x 1,000 jobs where the limit (2 x 100 keys) never binds
//!   under the global 50, with Redis's calls and µs per job by command
//!   (`INFO commandstats`, enqueue included) for it and the free drain;
//! - cancel latency (`BENCH_ONLY=cancel`): from the cancel request to the
//!   failed job, for a guest spinning on one of the two hosts;
//! - recovery after a SIGKILL (`BENCH_ONLY=recovery`), with the default
//!   heartbeat, lock duration and stalled interval: a host holding both
//!   slots of a limit-2 key is killed while two more jobs of the key wait
//!   in its line; from the kill to the first start of a waiting job, and to
//!   the start of the killed jobs' completed runs (`processedOn`), over 5
//!   kills on fresh fleets.
//!
//! - tenant fairness (`BENCH_ONLY=fairness`): one tenant's backlog of
//!   1,000 keys x `BENCH_FC_PER_KEY` jobs (default 100), from the API or
//!   from Node's `addBulk`, then 100 other tenants' first jobs, one every
//!   20 ms through the API: their start delays (`processedOn - timestamp`)
//!   with `fairness` by `$.tenant` and without, and each drain's jobs/s;
//!   then, fair by `producer`, the API backlog as producer `web`'s and the
//!   Node backlog as the producer-less tenant's, each other tenant adding
//!   its job with a producer token of its own.
//!
//! - fair shares under a spread backlog (`BENCH_ONLY=shares`, issue 46's
//!   scenario): two hosts of 8, 16 in the fleet, customers limited to 2,
//!   the catalog handler busy 3 ms, fair by producer: producer `web`'s
//!   4,000 jobs over 200 customers through the API, then producers `t0`
//!   and `t1` 10 jobs each in waves (their first starts, p50 · p99 · max);
//!   and `web` and `t0` (weight 3) with 1,000 jobs each (t0's share of the
//!   starts while both had jobs left); each drain's jobs/s against the same
//!   without fairness. `BENCH_FC_SHARES_RUNS` runs of each (default 3).
//!
//! `BENCH_ONLY` runs one part: `recovery`, `cancel`, `fairness`, `shares`,
//! `backlog` (the two backlog drains and the spread drain) or `spread` (the
//! spread drain).
//!
//! Needs the release `airlock` binary (`cargo build --release -p airlock`)
//! and the guests (`make guests`).

use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use airlock_tests::host::{Admin, tokens};
use airlock_tests::redis_server::{RedisServer, command_stats};
use airlock_tests::{interop_script, shared_cache_dir, target_dir};
use serde_json::{Value, json};

const QUEUE: &str = "fc";

fn release_airlock() -> std::path::PathBuf {
    let path = target_dir().join("release").join("airlock");
    assert!(
        path.exists(),
        "build it first: cargo build --release -p airlock"
    );
    path
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A release host with more `serve` arguments `extra`; with `api`,
/// serving the API on that port.
fn start_host_with(redis: &RedisServer, id: &str, api: Option<u16>, extra: &[&str]) -> Child {
    let mut cmd = Command::new(release_airlock());
    cmd.args(["serve", "--redis", &redis.url(), "--host-id", id])
        .args(["--poll", "100ms", "--max-instances", "64"])
        .args(extra);
    if let Some(port) = api {
        cmd.args(["--listen", &format!("127.0.0.1:{port}")])
            .args(["--tokens", &tokens::list()]);
    }
    cmd.env("AIRLOCK_CACHE_DIR", shared_cache_dir())
        .env("AIRLOCK_ARTIFACT_KEY", airlock_tests::host::TEST_FLEET_KEY)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start airlock")
}

/// A Redis, a queue bound to one guest, and release hosts (the first with
/// the API); the hosts are killed when it is dropped.
struct Fleet {
    redis: RedisServer,
    base: String,
    http: reqwest::Client,
    hosts: Vec<Child>,
    /// The `serve` arguments the hosts [`Fleet::add_host`] starts get.
    host_extra: Vec<String>,
}

impl Fleet {
    /// `guest` bound to the benchmark queue with `spec`, and the API host.
    async fn start(guest: &str, spec: Value) -> Fleet {
        Fleet::start_with(guest, spec, &[]).await
    }

    /// [`Fleet::start`], the API host started with `extra` arguments.
    async fn start_with(guest: &str, spec: Value, extra: &[&str]) -> Fleet {
        let redis = RedisServer::start();
        let admin = Admin::connect(&redis.url()).await;
        admin.deploy(guest, guest).await;
        admin.bind(QUEUE, guest, spec).await;
        let port = free_port();
        let base = format!("http://127.0.0.1:{port}");
        let hosts = vec![start_host_with(&redis, "fc-a", Some(port), extra)];
        let http = airlock_tests::http_client();
        wait_up(&http, &base).await;
        Fleet {
            redis,
            base,
            http,
            hosts,
            host_extra: Vec::new(),
        }
    }

    /// [`Fleet::start`], every host (the API host and those
    /// [`Fleet::add_host`] starts) with `extra` arguments.
    async fn start_all_with(guest: &str, spec: Value, extra: &[&str]) -> Fleet {
        let mut fleet = Fleet::start_with(guest, spec, extra).await;
        fleet.host_extra = extra.iter().map(|a| a.to_string()).collect();
        fleet
    }

    /// Another host, without the API.
    fn add_host(&mut self) {
        let id = format!("fc-{}", self.hosts.len());
        let extra: Vec<&str> = self.host_extra.iter().map(String::as_str).collect();
        self.hosts
            .push(start_host_with(&self.redis, &id, None, &extra));
    }

    /// Adds `jobs` as producer `web` (see [`enqueue_as`]).
    async fn enqueue(&self, jobs: Vec<Value>) {
        enqueue_as(self, tokens::PRODUCER, jobs).await
    }

    /// Adds one job as producer `web`; answers its ref.
    async fn add(&self, body: Value) -> String {
        self.add_as(tokens::PRODUCER, body).await
    }

    /// Adds one job with producer token `token`; answers its ref.
    async fn add_as(&self, token: &str, body: Value) -> String {
        let resp: Value = self
            .http
            .post(format!("{}/v1/queues/{QUEUE}/jobs", self.base))
            .bearer_auth(token)
            .json(&body)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        resp["ref"].as_str().unwrap().to_string()
    }

    /// Polls job `job_ref` until `pred` holds (a minute at most).
    async fn until(&self, job_ref: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let job = self.job(job_ref).await;
            if pred(&job) {
                return job;
            }
            assert!(
                Instant::now() < deadline,
                "job {job_ref} never got there: {job}"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    async fn job(&self, job_ref: &str) -> Value {
        self.get(&format!("/v1/jobs/{job_ref}")).await
    }

    /// `GET path` of the API, as the admin.
    async fn get(&self, path: &str) -> Value {
        self.http
            .get(format!("{}{path}", self.base))
            .bearer_auth(tokens::ADMIN)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        for h in &mut self.hosts {
            let _ = h.kill();
            let _ = h.wait();
        }
    }
}

/// The noop queue's binding, with the per-key limit or without.
fn noop_spec(limited: bool) -> Value {
    let mut spec = json!({"concurrency": 25, "globalConcurrency": 50});
    if limited {
        spec["keyConcurrency"] = json!({"key": "$.customerId", "limit": 2});
    }
    spec
}

async fn wait_up(http: &reqwest::Client, base: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while http
        .get(format!("{base}/healthz"))
        .send()
        .await
        .map(|r| !r.status().is_success())
        .unwrap_or(true)
    {
        assert!(Instant::now() < deadline, "the API never came up");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn job(key: &str) -> Value {
    json!({"data": {"customerId": key}})
}

/// Every completed job's (key, timestamp, processedOn, finishedOn): the
/// key is its `customerId`, after its `tenant` and a `/` when it has one.
async fn finished(redis: &RedisServer) -> Vec<(String, u64, u64, u64)> {
    let client = redis::Client::open(redis.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let ids: Vec<String> =
        redis::AsyncCommands::zrange(&mut conn, format!("bull:{QUEUE}:completed"), 0, -1)
            .await
            .unwrap();
    let mut out = Vec::with_capacity(ids.len());
    for chunk in ids.chunks(1000) {
        let mut pipe = redis::pipe();
        for id in chunk {
            pipe.cmd("HMGET").arg(format!("bull:{QUEUE}:{id}")).arg(&[
                "data",
                "timestamp",
                "processedOn",
                "finishedOn",
            ]);
        }
        let rows: Vec<(String, u64, u64, u64)> = pipe.query_async(&mut conn).await.unwrap();
        for (data, t, p, f) in rows {
            let data: Value = serde_json::from_str(&data).unwrap();
            let customer = data["customerId"].as_str().unwrap();
            // A job marked with its tenant (the shares drains' other
            // producers) is told apart by it.
            let key = match data["tenant"].as_str() {
                Some(tenant) => format!("{tenant}/{customer}"),
                None => customer.to_string(),
            };
            out.push((key, t, p, f));
        }
    }
    out
}

async fn completed(redis: &RedisServer) -> usize {
    let client = redis::Client::open(redis.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    redis::AsyncCommands::zcard(&mut conn, format!("bull:{QUEUE}:completed"))
        .await
        .unwrap()
}

async fn wait_completed(redis: &RedisServer, count: usize) {
    let deadline = Instant::now() + Duration::from_secs(1800);
    while completed(redis).await < count {
        assert!(Instant::now() < deadline, "drain timed out");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn rate(jobs: &[(String, u64, u64, u64)]) -> f64 {
    let first = jobs.iter().map(|j| j.2).min().unwrap();
    let last = jobs.iter().map(|j| j.3).max().unwrap();
    jobs.len() as f64 / ((last - first).max(1) as f64 / 1000.0)
}

struct Run {
    /// Small keys' first-start delays, ms, sorted.
    delays: Vec<u64>,
    rate: f64,
    /// The big key's idle gaps, ms, sorted: from each of its jobs' finish
    /// to the start that took the slot it freed, once the small keys are
    /// done (see [`idle_gaps`]).
    gaps: Vec<u64>,
}

/// The idle gaps of key `key` running at its `limit` (see [`Run::gaps`]),
/// from the first finish after every other key's last finish. At the
/// limit, the k-th finish frees the slot the (k + limit)-th start takes:
/// the gap is the time between them, 0 when that start came first (BullMQ
/// writes `finishedOn` after the slot went back: what its active list
/// counts, in docs/FLOW_CONTROL.md).
fn idle_gaps(jobs: &[(String, u64, u64, u64)], key: &str, limit: usize) -> Vec<u64> {
    let others_done = jobs
        .iter()
        .filter(|j| j.0 != key)
        .map(|j| j.3)
        .max()
        .unwrap_or(0);
    let mut starts: Vec<u64> = jobs.iter().filter(|j| j.0 == key).map(|j| j.2).collect();
    let mut finishes: Vec<u64> = jobs.iter().filter(|j| j.0 == key).map(|j| j.3).collect();
    starts.sort();
    finishes.sort();
    let mut gaps: Vec<u64> = finishes
        .iter()
        .enumerate()
        .filter(|(_, f)| **f >= others_done)
        .filter_map(|(k, f)| starts.get(k + limit).map(|s| s.saturating_sub(*f)))
        .collect();
    gaps.sort();
    gaps
}

/// One drain on two fresh hosts: `big` jobs of one key through the API,
/// then 99 keys x 10; with or without the per-key limit.
async fn backlog_drain(big: usize, limited: bool) -> Run {
    let mut fleet = Fleet::start("noop", noop_spec(limited)).await;
    fleet.add_host();
    fleet.enqueue((0..big).map(|_| job("big")).collect()).await;
    let small: Vec<Value> = (1..=99)
        .flat_map(|k| (0..10).map(move |_| job(&format!("k{k}"))))
        .collect();
    fleet.enqueue(small).await;
    wait_completed(&fleet.redis, big + 990).await;
    let jobs = finished(&fleet.redis).await;
    let mut first: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for (key, t, p, _) in &jobs {
        if key == "big" {
            continue;
        }
        let e = first.entry(key).or_insert((u64::MAX, u64::MAX));
        e.0 = e.0.min(*t);
        e.1 = e.1.min(*p);
    }
    let mut delays: Vec<u64> = first.values().map(|(t, p)| p.saturating_sub(*t)).collect();
    delays.sort();
    Run {
        delays,
        rate: rate(&jobs),
        gaps: idle_gaps(&jobs, "big", 2),
    }
}

/// 100 keys x `per_key` jobs, limit 2 (or none): the gate's cost where the
/// limit never binds.
/// A spread drain's jobs/s, and Redis's commands per job over it (the
/// enqueue included) as command → (calls, µs).
struct Spread {
    rate: f64,
    commands: BTreeMap<String, (f64, f64)>,
}

async fn spread_drain(per_key: usize, limited: bool) -> Spread {
    let mut fleet = Fleet::start("noop", noop_spec(limited)).await;
    // Keys interleaved, all queued before the second host starts.
    let jobs: Vec<Value> = (0..per_key)
        .flat_map(|_| (0..100).map(|k| job(&format!("k{k}"))))
        .collect();
    let count = jobs.len();
    fleet.enqueue(jobs).await;
    fleet.add_host();
    wait_completed(&fleet.redis, count).await;
    let client = redis::Client::open(fleet.redis.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let commands = command_stats(&mut conn)
        .await
        .into_iter()
        .map(|(name, (calls, us))| (name, (calls / count as f64, us / count as f64)))
        .collect();
    Spread {
        rate: rate(&finished(&fleet.redis).await),
        commands,
    }
}

/// Where a tenant's backlog comes from.
#[derive(Debug, Clone, Copy)]
enum Source {
    /// The API's bulk enqueue.
    Api,
    /// Node's BullMQ `queue.addBulk`.
    Node,
}

/// The fleet's secrets key in the drains fair by producer: it seals the
/// producers the API writes.
const SECRETS_KEY: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

/// The 100 other tenants' producer tokens (drains fair by producer).
fn other_producer(t: usize) -> String {
    format!("bench-producer-{t:06}-secret")
}

/// A tokens file (`--tokens-file`) with the 100 other tenants' producer
/// tokens, named `t0` … `t99`.
fn other_producers_file() -> std::path::PathBuf {
    let entries: Vec<Value> = (0..100)
        .map(|t| json!({"name": format!("t{t}"), "role": "producer", "token": other_producer(t)}))
        .collect();
    let path = std::env::temp_dir().join(format!("airlock-fc-tokens-{}.json", std::process::id()));
    std::fs::write(&path, serde_json::to_string(&entries).unwrap()).unwrap();
    path
}

/// One tenant ("big") enqueues 1,000 keys x `per_key` no-op jobs (keys
/// interleaved) from `source`; once it is queued, 100 other tenants add one
/// job each through the API, 20 ms apart, while the backlog drains. The
/// queue has, with `keyed`, the per-key limit of 2 and, with `fair`,
/// `fairness` with that `tenant`: by `$.tenant`, or by `producer`, where
/// the backlog is producer `web`'s (API) or producer-less (Node) and each
/// other tenant adds its job with a producer token of its own. Answers the
/// other tenants' start delays (`processedOn - timestamp`, ms, sorted), the
/// backlog left when the first of them was added, and the drain's jobs/s.
async fn tenant_drain(
    per_key: usize,
    source: Source,
    keyed: bool,
    fair: Option<&str>,
) -> (Vec<u64>, u64, f64) {
    let mut spec = noop_spec(keyed);
    if let Some(tenant) = fair {
        spec["fairness"] = json!({ "tenant": tenant });
    }
    let by_producer = fair == Some("producer");
    let tokens_file = other_producers_file();
    let extra: Vec<&str> = match by_producer {
        true => vec![
            "--secrets-key",
            SECRETS_KEY,
            "--tokens-file",
            tokens_file.to_str().unwrap(),
        ],
        false => Vec::new(),
    };
    let mut fleet = Fleet::start_all_with("noop", spec, &extra).await;
    fleet.add_host();
    let big = 1000 * per_key;
    match source {
        Source::Api => {
            let jobs = (0..big)
                .map(|i| json!({"data": {"tenant": "big", "customerId": format!("k{}", i % 1000)}}))
                .collect();
            fleet.enqueue(jobs).await;
        }
        Source::Node => {
            let out = Command::new("node")
                .arg(interop_script("enqueue.js"))
                .args(["--redis", &fleet.redis.url(), "--prefix", "bull"])
                .args(["--queue", QUEUE, "--count", &big.to_string()])
                .args(["--name", "noop", "--data", r#"{"tenant":"big"}"#])
                .args(["--vary", "customerId:1000"])
                .output()
                .expect("run node");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    let left = big.saturating_sub(completed(&fleet.redis).await) as u64;
    for t in 0..100 {
        let body = json!({"data": {"tenant": format!("t{t}"), "customerId": format!("t{t}")}});
        match by_producer {
            true => fleet.add_as(&other_producer(t), body).await,
            false => fleet.add(body).await,
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let _ = std::fs::remove_file(&tokens_file);
    wait_completed(&fleet.redis, big + 100).await;
    let jobs = finished(&fleet.redis).await;
    let mut delays: Vec<u64> = jobs
        .iter()
        .filter(|j| j.0.starts_with('t'))
        .map(|(_, t, p, _)| p.saturating_sub(*t))
        .collect();
    delays.sort();
    (delays, left, rate(&jobs))
}

/// Enqueues `jobs` through the bulk endpoint as producer `token`, 1,000 per
/// request.
async fn enqueue_as(fleet: &Fleet, token: &str, jobs: Vec<Value>) {
    for chunk in jobs.chunks(1000) {
        let resp = fleet
            .http
            .post(format!("{}/v1/queues/{QUEUE}/jobs/bulk", fleet.base))
            .bearer_auth(token)
            .json(&json!({ "jobs": chunk }))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 202, "{}", resp.text().await.unwrap());
    }
}

/// The shares scenario's binding (issue 46, as a new user tried it): the
/// catalog handler busy 3 ms a job, 8 per host and 16 in the fleet, at
/// most 2 per customer, with `fairness` by producer and these `weights`
/// (`None`: no fairness).
fn shares_spec(weights: Option<Value>) -> Value {
    let mut spec = json!({
        "metered": false,
        "concurrency": 8,
        "globalConcurrency": 16,
        "keyConcurrency": {"key": "$.customerId", "limit": 2},
    });
    if let Some(weights) = weights {
        spec["fairness"] = json!({"tenant": "producer", "weights": weights});
    }
    spec
}

/// Two hosts with the secrets key and the producer tokens `t0` … `t99`
/// (besides `web`), the catalog handler bound with `spec`.
async fn shares_fleet(spec: Value, tokens_file: &std::path::Path) -> Fleet {
    let extra = [
        "--secrets-key",
        SECRETS_KEY,
        "--tokens-file",
        tokens_file.to_str().unwrap(),
    ];
    let mut fleet = Fleet::start_all_with("catalog-sync", spec, &extra).await;
    fleet.add_host();
    fleet
}

/// `count` jobs of tenant `who`'s customers (`keys` of them, interleaved),
/// each busy 3 ms.
fn customer_jobs(who: &str, count: usize, keys: usize) -> Vec<Value> {
    (0..count)
        .map(|i| json!({"data": {"customerId": format!("{who}-{}", i % keys), "holdMs": 3}}))
        .collect()
}

/// Behind producer `web`'s 4,000 jobs over 200 customers (through the API,
/// 1,000 a request), producers `t0` and `t1` each add 10 jobs for 2
/// customers of their own, 2 + 2 a wave, 5 waves 250 ms apart (a
/// customer's job added while its 2 slots are taken is held back). Answers their first starts' delays
/// (`processedOn - timestamp`, ms) and the drain's jobs/s.
async fn spread_first_starts(
    fair: bool,
    shared: bool,
    tokens_file: &std::path::Path,
) -> (Vec<u64>, f64) {
    let fleet = shares_fleet(shares_spec(fair.then(|| json!({}))), tokens_file).await;
    enqueue_as(&fleet, tokens::PRODUCER, customer_jobs("web", 4000, 200)).await;
    for _ in 0..5 {
        for t in 0..2 {
            for i in 0..2 {
                let customer = match shared {
                    true => format!("web-{i}"),
                    false => format!("t{t}-{i}"),
                };
                let body = json!({"data": {"tenant": format!("t{t}"), "customerId": customer, "holdMs": 3}});
                fleet.add_as(&other_producer(t), body).await;
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    wait_completed(&fleet.redis, 4020).await;
    let jobs = finished(&fleet.redis).await;
    let delays = jobs
        .iter()
        .filter(|j| j.0.contains('/'))
        .map(|(_, t, p, _)| p.saturating_sub(*t))
        .collect();
    (delays, rate(&jobs))
}

/// Producers `web` and `t0` each add 1,000 jobs over 100 customers (web's
/// first), `t0` of weight 3. Answers the starts of each while both had
/// jobs left to start (from the first start to the earlier of their last
/// starts) and the drain's jobs/s.
async fn weighted_starts(fair: bool, tokens_file: &std::path::Path) -> (usize, usize, f64) {
    let fleet = shares_fleet(shares_spec(fair.then(|| json!({"t0": 3}))), tokens_file).await;
    enqueue_as(&fleet, tokens::PRODUCER, customer_jobs("web", 1000, 100)).await;
    enqueue_as(&fleet, &other_producer(0), customer_jobs("t0", 1000, 100)).await;
    wait_completed(&fleet.redis, 2000).await;
    let jobs = finished(&fleet.redis).await;
    let starts = |who: &str| -> Vec<u64> {
        jobs.iter()
            .filter(|j| j.0.starts_with(&format!("{who}-")))
            .map(|j| j.2)
            .collect()
    };
    let (web, t0) = (starts("web"), starts("t0"));
    let first = web.iter().chain(&t0).min().copied().unwrap();
    let until = web
        .iter()
        .max()
        .unwrap()
        .min(t0.iter().max().unwrap())
        .to_owned();
    let within = |s: &[u64]| s.iter().filter(|t| **t >= first && **t <= until).count();
    (within(&web), within(&t0), rate(&jobs))
}

/// Cancel latency: `runs` times, a spinning guest (unmetered) runs on one
/// of two hosts; from just before `POST /v1/jobs/{ref}/cancel` to the
/// job's `finishedOn` (the failure written after the guest was stopped).
/// Client and hosts share one clock.
async fn cancel_latency(runs: usize) -> Vec<u64> {
    let spec = json!({"metered": false, "limits": {"timeoutMs": 60_000}});
    let mut fleet = Fleet::start("hostile-infinite-loop", spec).await;
    fleet.add_host();
    let mut latencies = Vec::with_capacity(runs);
    for _ in 0..runs {
        let job_ref = fleet.add(json!({"data": {}})).await;
        fleet.until(&job_ref, |j| j["state"] == "active").await;
        // Let the guest get going.
        tokio::time::sleep(Duration::from_millis(20)).await;
        let sent = airlock_core::clock::now_ms();
        let resp = fleet
            .http
            .post(format!("{}/v1/jobs/{job_ref}/cancel", fleet.base))
            .bearer_auth(tokens::PRODUCER)
            .json(&json!({}))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 202);
        let done = loop {
            let job = fleet.job(&job_ref).await;
            if job["state"] == "failed" {
                break job;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        };
        assert_eq!(done["failureKind"], "cancelled", "{done}");
        latencies.push(done["finishedOn"].as_u64().unwrap().saturating_sub(sent));
    }
    latencies.sort();
    latencies
}

/// One SIGKILL of a host holding both slots of a key (see the module
/// docs): ms from the kill to the first start of a job that waited in the
/// key's line, and to the start of the killed jobs' completed runs (the
/// later of the two).
async fn recovery_once() -> (u64, u64) {
    let spec = json!({
        "metered": false,
        "concurrency": 4,
        "limits": {"timeoutMs": 60_000},
        "keyConcurrency": {"key": "$.customerId", "limit": 2},
    });
    let mut fleet = Fleet::start_with("catalog-sync", spec, &["--no-workers"]).await;
    fleet.add_host();
    let mut held = Vec::new();
    for _ in 0..2 {
        let data = json!({"data": {"customerId": "c1", "holdMs": 1_500}});
        held.push(fleet.add(data).await);
    }
    for job in &held {
        fleet.until(job, |j| j["state"] == "active").await;
    }
    let mut waiting = Vec::new();
    for _ in 0..2 {
        let data = json!({"data": {"customerId": "c1", "holdMs": 20}});
        waiting.push(fleet.add(data).await);
    }
    for job in &waiting {
        fleet
            .until(job, |j| j["waiting"]["kind"] == "key_limit")
            .await;
    }
    fleet.add_host();
    // The survivor serves the queue before the kill.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let hosts = fleet.get("/v1/hosts").await;
        let serving = hosts["hosts"].as_array().is_some_and(|hosts| {
            hosts.iter().any(|h| {
                h["id"] == "fc-2"
                    && h["queues"]
                        .as_array()
                        .is_some_and(|q| q.contains(&json!(QUEUE)))
            })
        });
        if serving {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the second host never served the queue: {hosts}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let killed_at = airlock_core::clock::now_ms();
    let victim = &mut fleet.hosts[1];
    let _ = victim.kill();
    let _ = victim.wait();
    let done = |j: &Value| j["state"] == "completed";
    let mut resumed = u64::MAX;
    for job in &waiting {
        let j = fleet.until(job, done).await;
        resumed = resumed.min(j["processedOn"].as_u64().unwrap() - killed_at);
    }
    let mut restarted = 0;
    for job in &held {
        let j = fleet.until(job, done).await;
        assert_eq!(j["stalledCount"], 1, "{j}");
        restarted = restarted.max(j["processedOn"].as_u64().unwrap() - killed_at);
    }
    (resumed, restarted)
}

fn pct(sorted: &[u64], p: f64) -> u64 {
    let i = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

fn main() {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(bench());
}

async fn bench() {
    let only = std::env::var("BENCH_ONLY").ok();
    let runs = |parts: &[&str]| only.as_deref().is_none_or(|o| parts.contains(&o));
    if runs(&["recovery"]) {
        let (mut resumed, mut restarted) = (Vec::new(), Vec::new());
        for _ in 0..5 {
            let (r, s) = recovery_once().await;
            resumed.push(r);
            restarted.push(s);
        }
        resumed.sort();
        restarted.sort();
        println!(
            "| SIGKILL of a host holding a key's 2 slots (5 kills, defaults) | median · max | target |"
        );
        println!("|---|---|---|");
        println!(
            "| kill → the key's waiting jobs resume | {} · {} ms | ≤ 6 s |",
            pct(&resumed, 0.5),
            resumed.last().unwrap()
        );
        println!(
            "| kill → the killed jobs restart | {} · {} ms | ≤ 10 s |",
            pct(&restarted, 0.5),
            restarted.last().unwrap()
        );
        println!();
    }
    if runs(&["cancel"]) {
        let cancel = cancel_latency(100).await;
        println!("| cancel a running guest (100 runs, 2 hosts) | p50 · p99 · max |");
        println!("|---|---|");
        println!(
            "| request sent → job failed (`finishedOn`) | {} · {} · {} ms |",
            pct(&cancel, 0.5),
            pct(&cancel, 0.99),
            cancel.last().unwrap()
        );
        println!();
    }
    if runs(&["backlog"]) {
        let big: usize = std::env::var("BENCH_FC_BIG")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(100_000);
        let limited = backlog_drain(big, true).await;
        let unlimited = backlog_drain(big, false).await;
        println!(
            "| 2 hosts, global 50; 1 key x {big} then 99 keys x 10 (API) | small keys' first start p50 · p99 · max | jobs/s |"
        );
        println!("|---|---|---|");
        for (name, run) in [
            ("keyConcurrency limit 2", &limited),
            ("no keyConcurrency", &unlimited),
        ] {
            println!(
                "| {name} | {} · {} · {} ms | {:.0} |",
                pct(&run.delays, 0.5),
                pct(&run.delays, 0.99),
                run.delays.last().unwrap(),
                run.rate
            );
        }
        println!(
            "| ratio, limited / unlimited | | {:.2}x |",
            limited.rate / unlimited.rate
        );
        println!();
        let gaps = &limited.gaps;
        println!("| the big key alone at its limit of 2 | p50 · p99 · max | target |");
        println!("|---|---|---|");
        println!(
            "| a job's finish → the key's next start ({} gaps) | {} · {} · {} ms | p99 ≤ 5 ms |",
            gaps.len(),
            pct(gaps, 0.5),
            pct(gaps, 0.99),
            gaps.last().unwrap()
        );
        println!();
    }
    if runs(&["fairness"]) {
        let per_key: usize = std::env::var("BENCH_FC_PER_KEY")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(100);
        println!(
            "| 2 hosts, global 50; tenant \"big\" 1,000 keys x {per_key}, then 100 tenants x 1 job (API, 20 ms apart) | backlog left | other tenants' first start p50 · p99 · max | jobs/s | target |"
        );
        println!("|---|---|---|---|---|");
        // (source, key limit, fairness's tenants, and whether the same
        // drain without fairness runs beside it).
        let drains = [
            (Source::Api, true, "$.tenant", true),
            (Source::Api, false, "$.tenant", true),
            (Source::Node, true, "$.tenant", true),
            (Source::Api, true, "producer", false),
            (Source::Node, true, "producer", false),
        ];
        // `BENCH_FC_DRAINS=api-free,node-keyed-producer` picks some of them.
        let picked = std::env::var("BENCH_FC_DRAINS").ok();
        for (source, keyed, tenant, unfair_too) in drains {
            let name = format!(
                "{}-{}{}",
                format!("{source:?}").to_lowercase(),
                if keyed { "keyed" } else { "free" },
                if tenant == "producer" {
                    "-producer"
                } else {
                    ""
                }
            );
            if picked
                .as_deref()
                .is_some_and(|p| !p.split(',').any(|d| d == name))
            {
                continue;
            }
            let fairs: &[Option<&str>] = match unfair_too {
                true => &[Some(tenant), None],
                false => &[Some(tenant)],
            };
            for &fair in fairs {
                let (delays, left, rate) = tenant_drain(per_key, source, keyed, fair).await;
                let keyed = if keyed { "key limit 2" } else { "no key limit" };
                let fairness = match fair {
                    Some(tenant) => format!("fairness by {tenant}"),
                    None => "no fairness".to_string(),
                };
                println!(
                    "| backlog from {source:?}, {keyed}, {fairness} | {left} | {} · {} · {} ms | {rate:.0} | {} |",
                    pct(&delays, 0.5),
                    pct(&delays, 0.99),
                    delays.last().unwrap(),
                    if fair.is_some() { "p99 ≤ 100 ms" } else { "" },
                );
            }
        }
        println!();
    }
    if runs(&["shares"]) {
        let tokens_file = other_producers_file();
        let runs_n: usize = std::env::var("BENCH_FC_SHARES_RUNS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(3);
        println!(
            "| 2 hosts, 8 each, global 16, key limit 2, catalog 3 ms, fair by producer ({runs_n} runs) | p50 · p99 · max, or share | jobs/s fair · free (ratio) | target |"
        );
        println!("|---|---|---|---|");
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        for shared in [false, true] {
            let (mut delays, mut fair_rates, mut free_rates) = (Vec::new(), Vec::new(), Vec::new());
            for _ in 0..runs_n {
                let (d, r) = spread_first_starts(true, shared, &tokens_file).await;
                delays.extend(d);
                fair_rates.push(r);
                free_rates.push(spread_first_starts(false, shared, &tokens_file).await.1);
            }
            delays.sort();
            let (fair, free) = (median(&mut fair_rates), median(&mut free_rates));
            let whose = match shared {
                true => "2 of web's customers each",
                false => "2 customers of its own each",
            };
            println!(
                "| t0's and t1's first starts ({whose}) behind web's 4,000 jobs over 200 customers ({} jobs) | {} · {} · {} ms | {fair:.0} · {free:.0} ({:.2}x) | p99 ≤ 100 ms; ≥ 0.75x |",
                delays.len(),
                pct(&delays, 0.5),
                pct(&delays, 0.99),
                delays.last().unwrap(),
                fair / free
            );
        }
        let (mut shares, mut fair_rates, mut free_rates) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..runs_n {
            let (web, t0, r) = weighted_starts(true, &tokens_file).await;
            shares.push(format!(
                "{:.2} ({t0}/{})",
                t0 as f64 / (web + t0) as f64,
                web + t0
            ));
            fair_rates.push(r);
            free_rates.push(weighted_starts(false, &tokens_file).await.2);
        }
        let (fair, free) = (median(&mut fair_rates), median(&mut free_rates));
        println!(
            "| t0 (weight 3) and web, 1,000 jobs each over 100 customers: t0's share of the starts while both had jobs left | {} | {fair:.0} · {free:.0} ({:.2}x) | 0.56–0.94 (0.75 ± 25 %); ≥ 0.75x |",
            shares.join(", "),
            fair / free
        );
        println!();
        let _ = std::fs::remove_file(&tokens_file);
    }
    if runs(&["backlog", "spread"]) {
        let limited = spread_drain(1000, true).await;
        let free = spread_drain(1000, false).await;
        println!("| 100 keys x 1,000, limit never binding | jobs/s |");
        println!("|---|---|");
        println!("| keyConcurrency limit 2 | {:.0} |", limited.rate);
        println!("| no keyConcurrency | {:.0} |", free.rate);
        println!(
            "| ratio | {:.2}x (target ≥ 0.85x) |",
            limited.rate / free.rate
        );
        println!();
        println!(
            "| Redis per job, enqueue and drain (`INFO commandstats`) | limited calls · µs | free calls · µs |"
        );
        println!("|---|---|---|");
        let names: std::collections::BTreeSet<&String> = limited
            .commands
            .keys()
            .chain(free.commands.keys())
            .collect();
        for name in names {
            let l = limited.commands.get(name).copied().unwrap_or_default();
            let f = free.commands.get(name).copied().unwrap_or_default();
            if l.0 < 0.005 && f.0 < 0.005 {
                continue;
            }
            println!(
                "| `{name}` | {:.2} · {:.1} | {:.2} · {:.1} |",
                l.0, l.1, f.0, f.1
            );
        }
        println!(
            "(`evalsha`'s µs include the commands its scripts run, which are also counted on their own rows.)"
        );
    }
}
