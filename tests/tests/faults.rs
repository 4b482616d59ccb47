//! Fault tests: hosts killed mid-job again and again, Redis killed and
//! restarted, a soak of hostile jobs, a rolling restart. Every job whose
//! enqueue was acknowledged completes; none is lost.
//!
//! Loopback only, bounded in time. Recovery times are printed (and checked
//! against the promise: within twice the lock duration).

use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use airlock_tests::api::Api;
use airlock_tests::host::{Admin, HostOptions, HostProcess, tokens};
use airlock_tests::redis_server::{RedisOptions, RedisServer};
use reqwest::StatusCode;
use serde_json::{Value, json};

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

fn host(redis: &RedisServer, id: &str, lock: Duration, stalled: Duration) -> HostProcess {
    HostProcess::start(
        &redis.url(),
        HostOptions {
            id: id.into(),
            lock_duration: lock,
            stalled_interval: stalled,
            extra: vec!["--max-stalled-count".into(), "100".into()],
            ..HostOptions::default()
        },
    )
}

#[tokio::test]
async fn twenty_host_kills_lose_no_job_and_recover_within_two_lock_durations() {
    let redis = RedisServer::start();
    let admin = Admin::connect(&redis.url()).await;
    admin.deploy("crunch", "cpu-bound").await;
    admin
        .bind(
            "crunch",
            "crunch",
            json!({"concurrency": 2, "limits": {"fuel": 1_000_000_000_000u64}}),
        )
        .await;
    let lock = Duration::from_secs(2);
    let stalled = Duration::from_millis(500);
    let mut hosts: Vec<HostProcess> = (0..3)
        .map(|i| host(&redis, &format!("h{i}-0"), lock, stalled))
        .collect();

    // ~0.8 s of compute per job, 90 jobs on 6 slots: the fleet stays busy
    // for all 20 kills.
    let rounds = 6_000_000u64;
    let mut seeds = HashMap::new();
    for i in 0..90 {
        let seed = format!("job-{i}");
        let id = admin
            .enqueue(
                "crunch",
                "crunch",
                json!({"rounds": rounds, "seed": seed}),
                json!({}),
            )
            .await;
        seeds.insert(id, seed);
    }

    // Kill a host in the middle of its jobs, 20 times in a row, restarting
    // it under a new id each time.
    let mut kills: Vec<(String, u64)> = Vec::new();
    for round in 0..20 {
        let victim = round % 3;
        let victim_id = format!("h{victim}-{}", round / 3);
        tokio::time::sleep(Duration::from_millis(1000)).await;
        let active = admin
            .queues
            .list("crunch", airlock::queue::JobState::Active, 0, 100)
            .await
            .unwrap();
        let killed_at = now_ms();
        if std::env::var("AIRLOCK_FAULT_DEBUG").is_ok() {
            let workers: Vec<_> = active.iter().map(|j| j.worker.clone()).collect();
            eprintln!("round {round}: victim {victim_id}, active workers {workers:?}");
        }
        hosts[victim].kill9();
        for job in active
            .iter()
            .filter(|j| j.worker.as_deref() == Some(victim_id.as_str()))
        {
            kills.push((job.id.clone(), killed_at));
        }
        hosts[victim] = host(
            &redis,
            &format!("h{victim}-{}", round / 3 + 1),
            lock,
            stalled,
        );
    }

    // Every job completes with its own, correct result (computed natively
    // now, after the kills, so the fleet is busy while hosts die).
    let expected: HashMap<String, String> = seeds
        .into_iter()
        .map(|(id, seed)| (id, cpu_bound_core::hash_chain(&seed, rounds)))
        .collect();
    for (id, digest) in &expected {
        let job = admin
            .wait_finished("crunch", id, Duration::from_secs(240))
            .await;
        assert_eq!(job.state, airlock::queue::JobState::Completed, "{job:#?}");
        assert_eq!(
            job.returnvalue.as_ref().unwrap()["digest"],
            json!(digest),
            "job {id}"
        );
    }
    assert!(
        kills.len() >= 5,
        "the kills hit too few running jobs ({}) to prove anything",
        kills.len()
    );
    // Each killed job was recovered — found stalled and put back to wait
    // (BullMQ's `stalled` event) — within twice the lock duration. Running
    // it again can take longer when every slot of the fleet is busy.
    let entries = redis.cli(&["XRANGE", "bull:crunch:events", "-", "+"]);
    let mut stalled_at: HashMap<String, Vec<u64>> = HashMap::new();
    let lines: Vec<&str> = entries.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        // redis-cli prints an entry as its id, then field/value lines.
        if let Some((ms, _)) = lines[i].split_once('-')
            && let Ok(ms) = ms.parse::<u64>()
        {
            let mut j = i + 1;
            let mut event = "";
            let mut job = "";
            while j + 1 < lines.len()
                && lines[j]
                    .split_once('-')
                    .is_none_or(|(a, _)| a.parse::<u64>().is_err())
            {
                match lines[j] {
                    "event" => event = lines[j + 1],
                    "jobId" => job = lines[j + 1],
                    _ => {}
                }
                j += 2;
            }
            if event == "stalled" {
                stalled_at.entry(job.to_string()).or_default().push(ms);
            }
            i = j;
        } else {
            i += 1;
        }
    }
    let mut recoveries = Vec::new();
    for (id, killed_at) in &kills {
        let first_after = stalled_at
            .get(id)
            .and_then(|times| times.iter().filter(|t| **t >= *killed_at).min().copied());
        let Some(at) = first_after else {
            // Finished before its lock expired (the kill came as it ended).
            continue;
        };
        recoveries.push(at - killed_at);
    }
    recoveries.sort();
    println!(
        "jobs killed mid-run: {}, recovered after (ms): {recoveries:?}",
        kills.len()
    );
    assert!(!recoveries.is_empty(), "no stalled event seen");
    let worst = *recoveries.last().unwrap_or(&0);
    assert!(
        worst <= 2 * lock.as_millis() as u64,
        "a killed job took {worst} ms to run again"
    );
}

/// Per-job limits travel with the job, not with the host that first ran
/// it: a job enqueued with a low fuel budget, whose hosts are killed under
/// it twice, still runs out of exactly that budget on the third host — not
/// the binding's, 33 times larger.
#[tokio::test]
async fn per_job_limits_hold_across_host_kills() {
    let redis = RedisServer::start();
    let admin = Admin::connect(&redis.url()).await;
    admin.deploy("crunch", "cpu-bound").await;
    admin
        .bind(
            "crunch",
            "crunch",
            json!({"limits": {"fuel": 1_000_000_000_000u64, "timeoutMs": 300_000}}),
        )
        .await;
    let lock = Duration::from_secs(2);
    let stalled = Duration::from_millis(500);
    // ~5·10^9 fuel a million rounds: the budget is ~2 s of compute, the
    // binding's ~60 s, the job would need ~300 s.
    let budget = 30_000_000_000u64;
    let id = admin
        .enqueue(
            "crunch",
            "crunch",
            json!({"rounds": 2_000_000_000u64, "seed": "limited"}),
            json!({"limits": {"fuel": budget}}),
        )
        .await;
    for round in 0..2 {
        let host_id = format!("k{round}");
        let mut victim = host(&redis, &host_id, lock, stalled);
        admin
            .wait_for("crunch", &id, Duration::from_secs(60), |j| {
                j.state == airlock::queue::JobState::Active
                    && j.worker.as_deref() == Some(host_id.as_str())
            })
            .await;
        // Part-way through its budget.
        tokio::time::sleep(Duration::from_millis(500)).await;
        victim.kill9();
    }
    let _last = host(&redis, "k2", lock, stalled);
    let job = admin
        .wait_recorded("crunch", &id, Duration::from_secs(60))
        .await;
    assert_eq!(job.state, airlock::queue::JobState::Failed, "{job:#?}");
    assert_eq!(
        job.failure_kind.as_deref(),
        Some("fuel_exhausted"),
        "{job:#?}"
    );
    assert_eq!(job.worker.as_deref(), Some("k2"), "{job:#?}");
    assert!(job.stalled_count >= 2, "both kills hit the run: {job:#?}");
    assert_eq!(
        job.metrics.fuel_used,
        Some(budget),
        "the last run burnt the job's own budget: {job:#?}"
    );
}

#[tokio::test]
async fn a_redis_crash_loses_no_acknowledged_job() {
    let mut api = Api::start_with_redis(RedisOptions {
        appendonly: true,
        appendfsync_always: true,
        ..RedisOptions::default()
    });
    api.setup("payments", "payment-webhook", json!({"concurrency": 4}))
        .await;
    let mut acknowledged = Vec::new();
    let mut refused = 0;
    let mut down_since: Option<Instant> = None;
    // What /readyz answered while Redis was down, once it said why.
    let mut not_ready: Option<String> = None;
    let started = Instant::now();
    // A producer enqueues 300 jobs, retrying each until it is acknowledged;
    // Redis is SIGKILLed after 100 and restarted 2 s later.
    for i in 0..300 {
        if i == 100 {
            api.redis.kill9();
            down_since = Some(Instant::now());
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if down_since.is_some_and(|t| t.elapsed() > Duration::from_secs(2)) {
                api.redis.restart();
                down_since = None;
            }
            let (status, body) = api
                .post(
                    "/v1/queues/payments/jobs",
                    tokens::PRODUCER,
                    json!({"data": {"transactionId": format!("r{i}"), "amount": 1}}),
                )
                .await;
            if status == StatusCode::ACCEPTED {
                acknowledged.push(body["ref"].as_str().unwrap().to_string());
                break;
            }
            assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
            refused += 1;
            if not_ready.is_none() {
                let (ready, body) = api.call(reqwest::Method::GET, "/readyz", None, None).await;
                let why = body["error"]["message"].as_str().unwrap_or_default();
                if ready == StatusCode::SERVICE_UNAVAILABLE
                    && body["error"]["code"] == "unavailable"
                {
                    not_ready = Some(why.to_string());
                }
            }
            assert!(Instant::now() < deadline, "the API never came back");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    println!(
        "acknowledged {}, refusals while Redis was down {refused}, in {:?}",
        acknowledged.len(),
        started.elapsed()
    );
    assert!(refused > 0, "Redis was never seen down");
    let why = not_ready.expect("/readyz never answered 503 with a reason while Redis was down");
    assert!(
        why.starts_with("redis unreachable: ") && why.len() > "redis unreachable: ".len(),
        "{why}"
    );
    println!("/readyz while Redis was down: {why}");
    assert_eq!(acknowledged.len(), 300);
    for r in &acknowledged {
        let job = api.wait_done(r).await;
        assert_eq!(job["state"], "completed", "{job}");
    }
}

#[tokio::test]
async fn a_soak_of_hostile_jobs_fails_each_with_its_kind_and_keeps_memory_flat() {
    let count: usize = std::env::var("AIRLOCK_SOAK_JOBS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let redis = RedisServer::start();
    let admin = Admin::connect(&redis.url()).await;
    let tight = json!({"fuel": 5_000_000, "memoryBytes": 4 << 20, "timeoutMs": 5000});
    admin.deploy("good", "noop").await;
    admin
        .bind(
            "good",
            "good",
            json!({"concurrency": 8, "defaultJobOptions": {"removeOnComplete": true}}),
        )
        .await;
    let hostile = [
        ("spin", "hostile-infinite-loop", "fuel_exhausted"),
        ("bomb", "hostile-memory-bomb", "memory_limit"),
        ("panic", "hostile-panic", "guest_retry"),
        ("junk", "hostile-invalid-output", "invalid_output"),
    ];
    for (queue, guest, _) in hostile {
        admin.deploy(queue, guest).await;
        admin
            .bind(queue, queue, json!({"concurrency": 4, "limits": tight}))
            .await;
    }
    let hosts = [
        HostProcess::start(
            &redis.url(),
            HostOptions {
                id: "soak-1".into(),
                ..HostOptions::default()
            },
        ),
        HostProcess::start(
            &redis.url(),
            HostOptions {
                id: "soak-2".into(),
                ..HostOptions::default()
            },
        ),
    ];
    let bulk = |queue: &str, n: usize| {
        (0..n)
            .map(|_| airlock::queue::NewJob {
                name: queue.into(),
                data: json!({}),
                opts: Default::default(),
                producer: None,
                trace: None,
                parent: None,
            })
            .collect::<Vec<_>>()
    };
    for chunk in 0..(count / 1000).max(1) {
        let n = 1000.min(count - chunk * 1000);
        admin
            .queues
            .add_bulk("good", bulk("good", n))
            .await
            .unwrap();
        for (queue, _, _) in hostile {
            admin
                .queues
                .add_bulk(queue, bulk(queue, n / 4))
                .await
                .unwrap();
        }
    }
    let hostile_total = (count / 4) * 4;
    let started = Instant::now();
    let mut rss_samples: Vec<(usize, u64)> = Vec::new();
    loop {
        let good = admin.queues.counts("good").await.unwrap();
        let mut failed = 0;
        for (queue, _, _) in hostile {
            let c = admin.queues.counts(queue).await.unwrap();
            failed += (c.waiting + c.active) as i64;
        }
        let done =
            count - (good.waiting + good.active) as usize + hostile_total - failed.max(0) as usize;
        rss_samples.push((done, hosts.iter().map(|h| h.rss_bytes()).sum()));
        if good.waiting + good.active == 0 && failed == 0 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(600),
            "soak did not finish"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    // Every hostile job failed, each with its true kind.
    for (queue, _, kind) in hostile {
        let counts = admin.queues.counts(queue).await.unwrap();
        assert_eq!(counts.failed as usize, hostile_total / 4, "{queue}");
        let mut start = 0;
        loop {
            let page = admin
                .queues
                .list(queue, airlock::queue::JobState::Failed, start, start + 999)
                .await
                .unwrap();
            for job in &page {
                assert_eq!(job.failure_kind.as_deref(), Some(kind), "{job:#?}");
            }
            if page.len() < 1000 {
                break;
            }
            start += 1000;
        }
    }
    let completed_good = admin.queues.counts("good").await.unwrap();
    assert_eq!(completed_good.failed, 0, "a good job failed");
    // RSS is flat: after the first quarter (warm caches, pools), it grows by
    // less than 64 MiB until the end.
    let quarter = rss_samples
        .iter()
        .find(|(d, _)| *d >= (count + hostile_total) / 4)
        .map(|s| s.1)
        .unwrap_or(0);
    let last = rss_samples.last().unwrap().1;
    println!(
        "soak: {} good + {} hostile jobs in {:?}; host RSS at 25%: {} MiB, at the end: {} MiB",
        count,
        hostile_total,
        started.elapsed(),
        quarter >> 20,
        last >> 20
    );
    assert!(
        last <= quarter + (64 << 20),
        "host RSS grew from {quarter} to {last} bytes"
    );
}

#[tokio::test]
async fn a_rolling_restart_loses_or_fails_no_job() {
    let redis = RedisServer::start();
    let admin = Admin::connect(&redis.url()).await;
    admin.deploy("crunch", "cpu-bound").await;
    admin
        .bind(
            "crunch",
            "crunch",
            json!({"concurrency": 2, "limits": {"fuel": 1_000_000_000_000u64}}),
        )
        .await;
    let start = |id: &str| {
        HostProcess::start(
            &redis.url(),
            HostOptions {
                id: id.into(),
                grace: Duration::from_secs(20),
                ..HostOptions::default()
            },
        )
    };
    let mut hosts: Vec<HostProcess> = (0..3).map(|i| start(&format!("r{i}"))).collect();
    let mut ids = Vec::new();
    let producer = async {
        for i in 0..120 {
            ids.push(
                admin
                    .enqueue(
                        "crunch",
                        "c",
                        json!({"rounds": 300_000, "seed": format!("{i}")}),
                        json!({}),
                    )
                    .await,
            );
            tokio::time::sleep(Duration::from_millis(40)).await;
        }
    };
    let restarts = async {
        for (i, h) in hosts.iter_mut().enumerate() {
            tokio::time::sleep(Duration::from_millis(800)).await;
            assert_eq!(
                h.terminate(Duration::from_secs(60)),
                Some(0),
                "host r{i} did not exit cleanly"
            );
            *h = start(&format!("r{i}-new"));
        }
    };
    tokio::join!(producer, restarts);
    for id in &ids {
        let job = admin
            .wait_finished("crunch", id, Duration::from_secs(120))
            .await;
        assert_eq!(job.state, airlock::queue::JobState::Completed, "{job:#?}");
        assert_eq!(
            job.attempts_made, 1,
            "a job failed an attempt in the restart: {job:#?}"
        );
    }
    let counts = admin.queues.counts("crunch").await.unwrap();
    assert_eq!((counts.completed, counts.failed), (120, 0));
}

/// A host whose locks and key-slot leases last 10 minutes: within a test,
/// only the heartbeat path recovers its jobs. `extra` are more arguments.
fn long_lease_host(api: &Api, id: &str, extra: &[&str]) -> HostProcess {
    let long = Duration::from_secs(600);
    HostProcess::start(
        &api.redis.url(),
        HostOptions {
            id: id.into(),
            lock_duration: long,
            stalled_interval: long,
            extra: extra.iter().map(|a| a.to_string()).collect(),
            ..HostOptions::default()
        },
    )
}

/// A host killed holding both slots of a key: a live host finds it dead by
/// its heartbeat (its description expired) and gives everything back at
/// once — the slots to the key's line, the two jobs to waiting, their
/// stall counted. Locks and slot leases last 10 minutes here, so nothing
/// but the heartbeat path can bring them back within the test's minute.
#[tokio::test]
async fn a_killed_hosts_jobs_and_key_slots_come_back_by_its_heartbeat() {
    let (api, mut a, held, waiting) = a_host_holding_both_slots_of_a_key(3_000).await;
    let _b = long_lease_host(&api, "host-b", &[]);
    let killed_at = now_ms();
    a.kill9();

    let runs = came_back(&api, &held, &waiting, killed_at).await;
    let (_, hosts) = api.get("/v1/hosts", tokens::ADMIN).await;
    assert!(
        !hosts.to_string().contains("host-a"),
        "the dead host is not listed: {hosts}"
    );
    at_most_two_at_once(&runs);
}

/// A host under a fixed id (a systemd unit, a StatefulSet pod) killed
/// holding both slots of a key and restarted under the same id within a
/// second: no live host counts it dead (its description is still there
/// when the new process heartbeats), so the new process gives its
/// predecessor's slots and jobs back itself, once the predecessor must
/// have stopped its guests — its fence plus a heartbeat after its last
/// heartbeat. Locks and leases last 10 minutes: only that path brings
/// them back within the bounds.
#[tokio::test]
async fn a_host_restarted_under_its_own_id_gives_its_predecessors_work_back_at_once() {
    let (api, mut a, held, waiting) = a_host_holding_both_slots_of_a_key(2_000).await;
    let killed_at = now_ms();
    a.kill9();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let _again = long_lease_host(&api, "host-a", &[]);

    let runs = came_back(&api, &held, &waiting, killed_at).await;
    let started: Vec<u64> = runs[..2]
        .iter()
        .map(|r| r["processedOn"].as_u64().unwrap() - killed_at)
        .collect();
    assert!(
        started.iter().all(|ms| *ms <= 6_000),
        "the key's slots came back {started:?} ms after the kill (at most 6,000)"
    );
    let done: Vec<u64> = runs[2..]
        .iter()
        .map(|r| r["finishedOn"].as_u64().unwrap() - killed_at)
        .collect();
    assert!(
        done.iter().all(|ms| *ms <= 10_000),
        "the killed jobs finished {done:?} ms after the kill (at most 10,000)"
    );
    eprintln!(
        "after the kill: the key's slots back in {started:?} ms, the killed jobs done in {done:?} ms"
    );
    at_most_two_at_once(&runs);
}

/// An API host and host `host-a` (10-minute locks and leases) running two
/// jobs of customer `c1` (limit 2), each busy `hold_ms`, with two more of
/// `c1`'s jobs waiting in the key's line: (api, host-a, held, waiting).
async fn a_host_holding_both_slots_of_a_key(
    hold_ms: u64,
) -> (Api, HostProcess, Vec<String>, Vec<String>) {
    let api = Api::start_with(&["--no-workers"]);
    api.setup(
        "imports",
        "catalog-sync",
        json!({
            "metered": false,
            "concurrency": 4,
            "limits": {"timeoutMs": 60_000},
            "keyConcurrency": {"key": "$.customerId", "limit": 2},
        }),
    )
    .await;
    let a = long_lease_host(&api, "host-a", &[]);
    let mut held = Vec::new();
    for _ in 0..2 {
        let data = json!({"data": {"customerId": "c1", "holdMs": hold_ms}});
        held.push(api.enqueue("imports", data).await);
    }
    for job in &held {
        api.wait_until(job, "running on host-a", |j| j["state"] == "active")
            .await;
    }
    let mut waiting = Vec::new();
    for _ in 0..2 {
        let data = json!({"data": {"customerId": "c1", "holdMs": 20}});
        waiting.push(api.enqueue("imports", data).await);
    }
    for job in &waiting {
        api.wait_until(job, "waiting in the key's line", |j| {
            j["waiting"]["kind"] == "key_limit"
        })
        .await;
    }
    (api, a, held, waiting)
}

/// The killed host's work, done: the waiting jobs started after the kill,
/// the held ones ran again, their stall counted and no attempt used.
/// Answers the waiting jobs' then the held jobs' finished states.
async fn came_back(api: &Api, held: &[String], waiting: &[String], killed_at: u64) -> Vec<Value> {
    let mut runs = Vec::new();
    for job in waiting {
        let done = api.wait_done(job).await;
        assert_eq!(done["state"], "completed", "{done}");
        assert!(done["processedOn"].as_u64().unwrap() > killed_at, "{done}");
        runs.push(done);
    }
    for job in held {
        let done = api.wait_done(job).await;
        assert_eq!(done["state"], "completed", "{done}");
        assert_eq!(
            done["stalledCount"], 1,
            "the kill counted as a stall: {done}"
        );
        assert_eq!(done["attemptsMade"], 1, "the kill used no attempt: {done}");
        assert!(
            done["attemptsStarted"].as_u64() >= Some(2),
            "run again: {done}"
        );
        runs.push(done);
    }
    runs
}

/// The limit held after the kill: never more than 2 of c1's guests at once.
fn at_most_two_at_once(runs: &[Value]) {
    let mut edges: Vec<(u64, i32)> = Vec::new();
    for run in runs {
        edges.push((run["returnvalue"]["heldFromMs"].as_u64().unwrap(), 1));
        edges.push((run["returnvalue"]["heldToMs"].as_u64().unwrap(), -1));
    }
    edges.sort();
    let (mut now, mut most) = (0, 0);
    for (_, step) in edges {
        now += step;
        most = most.max(now);
    }
    assert!(most <= 2, "more than 2 of the key ran at once: {runs:?}");
}

/// Fairness by producer, a host killed holding producer `web`'s turns: a
/// live host with the secrets key finds it dead by its heartbeat, checks
/// each killed job's producer seal and gives `web`'s tenant slots back
/// before it puts the jobs back to waiting. Here the live host serves
/// another queue only, so nothing runs the jobs again and the slots show
/// what the recovery did: had it not found the producer (no seal check, or
/// no key to check it with), `web`'s turns would stay taken for the
/// 10-minute leases.
#[tokio::test]
async fn a_killed_hosts_producer_turns_come_back_by_its_heartbeat() {
    const SECRETS_KEY: &str = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0";
    let api = Api::start_with(&["--no-workers", "--secrets-key", SECRETS_KEY]);
    let spec = |fairness: bool| {
        let mut spec = json!({
            "metered": false,
            "concurrency": 4,
            "globalConcurrency": 4,
            "limits": {"timeoutMs": 60_000},
        });
        if fairness {
            spec["fairness"] = json!({"tenant": "producer"});
        }
        spec
    };
    api.setup("turns", "catalog-sync", spec(true)).await;
    api.setup("elsewhere", "catalog-sync", spec(false)).await;
    let host = |id: &str, serve: &[&str]| {
        let extra = [&["--secrets-key", SECRETS_KEY], serve].concat();
        long_lease_host(&api, id, &extra)
    };
    let mut a = host("host-a", &[]);
    let mut killed = Vec::new();
    for _ in 0..2 {
        // Keys out of sorted order: the seal is over the data's JSON in
        // the order sent, which the recovering host must encode alike.
        let body = json!({"data": {"sku": "a-1", "holdMs": 20_000}});
        killed.push(api.enqueue("turns", body).await);
    }
    for job in &killed {
        api.wait_until(job, "running on host-a", |j| j["state"] == "active")
            .await;
    }
    let web = airlock::state::key_limits::KeySlot::of("turns", &json!("web")).tenant();
    let web_slots = format!("bull:turns:airlock:kc:{}:slots", web.hash);
    let mut holders: Vec<String> = api
        .redis
        .cli(&["ZRANGE", &web_slots, "0", "-1"])
        .lines()
        .map(str::to_string)
        .collect();
    holders.sort();
    let mut ids: Vec<String> = killed
        .iter()
        .map(|r| r.strip_prefix("turns:").unwrap().to_string())
        .collect();
    ids.sort();
    assert_eq!(holders, ids, "web's two turns are its running jobs'");

    let _b = host("host-b", &["--queues", "elsewhere"]);
    a.kill9();
    for job in &killed {
        let back = api
            .wait_until(job, "back to waiting", |j| j["state"] == "waiting")
            .await;
        assert_eq!(back["stalledCount"], 1, "{back}");
    }
    // The slots went back before the jobs did.
    let left = api.redis.cli(&["ZCARD", &web_slots]);
    assert_eq!(left, "0", "web's turns given back");
}

/// A host frozen (SIGSTOP) past its death while it runs a job: the fleet
/// gives the job to another host, and the frozen host, as it thaws, stops
/// its guest (its last heartbeat is over 4 heartbeats old: it fences
/// itself) instead of letting it run on beside the new run.
#[tokio::test]
async fn a_host_frozen_past_its_death_stops_its_guest_as_it_thaws() {
    // Longer than any freeze: the guest's hold counts the frozen seconds
    // (a monotonic clock), so a freeze past it would let the guest end
    // at the thaw before the fence could stop it (a 20 s hold once failed
    // this way under the fault tier's load).
    const HOLD_MS: u64 = 30_000;
    let api = Api::start_with(&["--no-workers"]);
    api.setup(
        "imports",
        "catalog-sync",
        json!({"metered": false, "concurrency": 1, "limits": {"timeoutMs": 60_000}}),
    )
    .await;
    let host = |id: &str| long_lease_host(&api, id, &[]);
    let a = host("host-a");
    let job = api
        .enqueue("imports", json!({"data": {"holdMs": HOLD_MS}}))
        .await;
    let id = api
        .wait_until(&job, "taken by host-a", |j| j["state"] == "active")
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let admin = Admin::connect(&api.redis.url()).await;
    airlock_tests::eventually("host-a's guest running", || async {
        admin
            .logs("imports", &id)
            .await
            .iter()
            .any(|l| l.contains("holding"))
    })
    .await;
    let _b = host("host-b");
    a.signal("STOP");
    api.wait_until(&job, "taken by host-b", |j| {
        j["processedByHost"] == "host-b"
    })
    .await;
    a.signal("CONT");

    let done = api.wait_done(&job).await;
    assert_eq!(done["state"], "completed", "{done}");
    assert_eq!(done["processedByHost"], "host-b", "{done}");
    assert_eq!(done["attemptsMade"], 1, "{done}");
    let patience = airlock_tests::eventually::PATIENCE;
    let timeline_now = || async {
        let (_, t) = api
            .get(&format!("/v1/jobs/{job}/timeline"), tokens::ADMIN)
            .await;
        t
    };
    let both_runs = airlock_tests::eventually_some("host-a's run recorded", patience, || async {
        let t = timeline_now().await;
        let runs = t["runs"].as_array().cloned().unwrap_or_default();
        (runs.len() == 2).then_some(t)
    });
    // Short of the wait's own deadline: a failure shows what was recorded
    // and what host-a said.
    let Ok(timeline) = tokio::time::timeout(patience - Duration::from_secs(5), both_runs).await
    else {
        let log = a.log();
        let tail: Vec<&str> = log.lines().rev().take(40).collect();
        panic!(
            "host-a's run was never recorded; the timeline: {}\nhost-a's last log lines:\n{}",
            timeline_now().await,
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        );
    };
    let first = &timeline["runs"][0];
    assert_eq!(first["host"], "host-a", "{timeline}");
    assert_eq!(
        first["end"], "host_unavailable",
        "host-a's guest was stopped as it thawed, not run to its end: {timeline}"
    );
    // Its wall time counts the frozen seconds; it did not run its hold.
    assert!(
        first["wallTimeMs"].as_f64().unwrap() < HOLD_MS as f64,
        "{timeline}"
    );
}
