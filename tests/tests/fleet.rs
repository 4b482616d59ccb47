//! The fleet: hosts register and age out, drain, back-pressure, shared
//! compiled artifacts, fleet-wide concurrency and rate limits.

use std::time::{Duration, Instant};

use airlock_tests::api::Api;
use airlock_tests::eventually;
use airlock_tests::host::{HostOptions, HostProcess, tokens};
use reqwest::StatusCode;
use serde_json::{Value, json};

fn opts(id: &str, extra: &[&str]) -> HostOptions {
    HostOptions {
        id: id.into(),
        extra: extra.iter().map(|s| s.to_string()).collect(),
        ..HostOptions::default()
    }
}

async fn hosts(api: &Api) -> Vec<Value> {
    let (status, body) = api.get("/v1/hosts", tokens::READER).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["hosts"].as_array().unwrap().clone()
}

#[tokio::test]
async fn hosts_register_drain_and_age_out() {
    let api = Api::start_with(&["--heartbeat", "200ms"]);
    api.setup("payments", "payment-webhook", json!({})).await;
    let mut other = HostProcess::start(
        &api.redis.url(),
        opts("worker-b", &["--heartbeat", "200ms"]),
    );
    eventually("both hosts serving payments", || async {
        let listed = hosts(&api).await;
        listed.len() == 2 && listed.iter().all(|h| h["queues"] == json!(["payments"]))
    })
    .await;
    let listed = hosts(&api).await;
    let a = listed.iter().find(|h| h["id"] == "api-host").unwrap();
    assert_eq!(a["state"], "running");
    assert!(
        a["address"]
            .as_str()
            .unwrap()
            .starts_with("http://127.0.0.1:")
    );
    assert_eq!(a["queues"], json!(["payments"]));
    assert!(a["capacity"].as_u64().unwrap() > 0);
    assert!(a["version"].as_str().is_some() && a["startedAt"].as_u64().is_some());

    // Drain worker-b: it takes no more jobs.
    let (status, _) = api
        .post("/v1/hosts/worker-b/drain", tokens::ADMIN, json!({}))
        .await;
    assert_eq!(status, StatusCode::OK);
    eventually("worker-b drained", || async {
        hosts(&api)
            .await
            .iter()
            .any(|h| h["id"] == "worker-b" && h["state"] == "drained")
    })
    .await;
    for i in 0..10 {
        let (_, accepted) = api
            .post(
                "/v1/queues/payments/jobs",
                tokens::PRODUCER,
                json!({"data": {"transactionId": format!("d{i}"), "amount": 1}}),
            )
            .await;
        let job = api.wait_done(accepted["ref"].as_str().unwrap()).await;
        assert_eq!(
            job["processedByHost"], "api-host",
            "a drained host took a job: {job}"
        );
    }
    let (status, _) = api
        .post("/v1/hosts/worker-b/resume", tokens::ADMIN, json!({}))
        .await;
    assert_eq!(status, StatusCode::OK);
    eventually("worker-b running", || async {
        hosts(&api)
            .await
            .iter()
            .any(|h| h["id"] == "worker-b" && h["state"] == "running")
    })
    .await;
    let (status, _) = api
        .post("/v1/hosts/nobody/drain", tokens::ADMIN, json!({}))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = api
        .post("/v1/hosts/worker-b/drain", tokens::READER, json!({}))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    // A dead host ages out.
    other.kill9();
    eventually("worker-b aged out", || async {
        hosts(&api).await.len() == 1
    })
    .await;
}

#[tokio::test]
async fn a_full_host_makes_jobs_wait_instead_of_failing() {
    // Two instance slots; the queue asks for ten at a time.
    let api = Api::start_with(&["--max-instances", "2", "--heartbeat", "100ms"]);
    api.setup(
        "crunch",
        "cpu-bound",
        json!({"concurrency": 10, "limits": {"fuel": 1_000_000_000_000u64}}),
    )
    .await;
    let mut refs = Vec::new();
    for i in 0..6 {
        let (_, accepted) = api
            .post(
                "/v1/queues/crunch/jobs",
                tokens::PRODUCER,
                json!({"data": {"rounds": 2_000_000, "seed": format!("s{i}")}}),
            )
            .await;
        refs.push(accepted["ref"].as_str().unwrap().to_string());
    }
    // Sampled at every poll until the six finish.
    let most_running = std::cell::Cell::new(0);
    let most_active = std::cell::Cell::new(0);
    airlock_tests::eventually_some(
        "the six jobs to complete",
        Duration::from_secs(60),
        || async {
            let (_, q) = api.get("/v1/queues/crunch", tokens::READER).await;
            let active = q["counts"]["active"].as_u64().unwrap();
            most_active.set(most_active.get().max(active));
            if let Some(h) = hosts(&api).await.first() {
                let running = h["running"].as_u64().unwrap();
                most_running.set(most_running.get().max(running));
            }
            (q["counts"]["completed"] == 6).then_some(())
        },
    )
    .await;
    let (most_running, most_active) = (most_running.get(), most_active.get());
    assert!(
        most_running <= 2,
        "ran {most_running} guests at once on 2 slots"
    );
    assert!(
        most_active <= 2,
        "fetched {most_active} jobs at once with 2 slots"
    );
    for r in refs {
        assert_eq!(api.wait_done(&r).await["state"], "completed");
    }
}

#[tokio::test]
async fn a_host_loads_the_artifact_another_host_compiled() {
    let api = Api::start();
    api.setup("payments", "payment-webhook", json!({})).await;
    // A host with an empty cache directory of its own.
    let dir = tempfile::tempdir().unwrap();
    let fresh = HostProcess::start(
        &api.redis.url(),
        HostOptions {
            id: "fresh".into(),
            api: true,
            extra: vec![
                "--cache-dir".into(),
                dir.path().display().to_string(),
                "--queues".into(),
                "payments".into(),
            ],
            ..HostOptions::default()
        },
    );
    let url = fresh.api_url();
    // Only the fresh host runs the queue now.
    let mut first = api.host;
    first.kill9();
    let http = airlock_tests::http_client();
    let accepted: Value = http
        .post(format!("{url}/v1/queues/payments/jobs"))
        .bearer_auth(tokens::PRODUCER)
        .json(&json!({"data": {"transactionId": "art", "amount": 1}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let job_ref = accepted["ref"].as_str().unwrap();
    let done: Value = http
        .get(format!("{url}/v1/jobs/{job_ref}/wait?timeout=60s"))
        .bearer_auth(tokens::PRODUCER)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(done["job"]["state"], "completed", "{done}");
    assert_eq!(done["job"]["processedByHost"], "fresh");
    let metrics = http
        .get(format!("{url}/metrics"))
        .bearer_auth(tokens::READER)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("airlock_components_compiled 0"),
        "the fresh host compiled: {metrics}"
    );
    assert!(
        std::fs::read_dir(dir.path()).unwrap().count() > 0,
        "the artifact landed in its cache"
    );
}

#[tokio::test]
async fn fleet_wide_concurrency_and_rate_limits_hold_across_hosts() {
    let api = Api::start();
    let _b = HostProcess::start(&api.redis.url(), opts("b", &[]));
    api.setup(
        "serial",
        "catalog-sync",
        json!({"concurrency": 5, "globalConcurrency": 1}),
    )
    .await;
    api.setup(
        "limited",
        "noop",
        json!({"concurrency": 5, "rateLimit": {"max": 2, "durationMs": 1000}}),
    )
    .await;
    let mut refs = Vec::new();
    for i in 0..6 {
        let (_, a) = api
            .post(
                "/v1/queues/serial/jobs",
                tokens::PRODUCER,
                json!({"data": {"items": i, "holdMs": 200}}),
            )
            .await;
        refs.push(a["ref"].as_str().unwrap().to_string());
    }
    let mut spans = Vec::new();
    for r in &refs {
        let j = api.wait_done(r).await;
        spans.push((
            j["processedOn"].as_u64().unwrap(),
            j["finishedOn"].as_u64().unwrap(),
        ));
    }
    spans.sort();
    for w in spans.windows(2) {
        assert!(
            w[1].0 >= w[0].1,
            "two jobs overlapped despite globalConcurrency 1: {spans:?}"
        );
    }

    let mut starts = Vec::new();
    let mut refs = Vec::new();
    for _ in 0..6 {
        let (_, a) = api
            .post(
                "/v1/queues/limited/jobs",
                tokens::PRODUCER,
                json!({"data": {}}),
            )
            .await;
        refs.push(a["ref"].as_str().unwrap().to_string());
    }
    for r in &refs {
        starts.push(api.wait_done(r).await["processedOn"].as_u64().unwrap());
    }
    starts.sort();
    // At most 2 starts in any 1 s window: 6 jobs need at least 2 s. The
    // window expires on Redis's clock (the limiter key's PEXPIRE) while
    // `processedOn` is the worker's timestamp, taken a moment before its
    // script runs, so starts of two windows may look up to a few ms closer
    // than 1 s (seen: 999 ms).
    const SLACK_MS: u64 = 50;
    for w in starts.windows(3) {
        assert!(
            w[2] - w[0] >= 1000 - SLACK_MS,
            "3 starts within a second: {starts:?}"
        );
    }
    assert!(
        starts[5] - starts[0] >= 2000 - SLACK_MS,
        "6 jobs at 2 per second need 2 s: {starts:?}"
    );
}

#[tokio::test]
async fn a_host_stays_listed_and_drainable_while_a_queue_with_a_long_job_closes() {
    // Heartbeats every 200 ms: a host silent for 1 s ages out.
    let api = Api::start_with(&["--heartbeat", "200ms"]);
    api.setup(
        "spin",
        "hostile-infinite-loop",
        json!({"limits": {"timeoutMs": 6000, "fuel": 1_000_000_000_000u64}}),
    )
    .await;
    let (_, accepted) = api
        .post(
            "/v1/queues/spin/jobs",
            tokens::PRODUCER,
            json!({"data": {}}),
        )
        .await;
    let job_ref = accepted["ref"].as_str().unwrap().to_string();
    eventually("the long job running", || async {
        api.get(&format!("/v1/jobs/{job_ref}"), tokens::READER)
            .await
            .1["state"]
            == "active"
    })
    .await;

    // Unbinding closes the queue's worker, which waits for the running job
    // (up to the grace period): the heartbeat must go on meanwhile.
    let (status, _) = api
        .call(
            reqwest::Method::DELETE,
            "/v1/queues/spin",
            Some(tokens::ADMIN),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = api
        .post("/v1/hosts/api-host/drain", tokens::ADMIN, json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "the host is live and drainable");
    let watched = Instant::now();
    let mut saw_draining = false;
    while watched.elapsed() < Duration::from_secs(3) {
        let listed = hosts(&api).await;
        let me = listed
            .iter()
            .find(|h| h["id"] == "api-host")
            .unwrap_or_else(|| panic!("the host aged out while a queue closed: {listed:?}"));
        saw_draining |= me["state"] == "draining";
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        saw_draining,
        "the drain request was applied during the close"
    );
    assert_eq!(
        api.get(&format!("/v1/jobs/{job_ref}"), tokens::READER)
            .await
            .1["state"],
        "active",
        "the job was still running: the close was still under way"
    );
}

/// Two processes under one host id (a unit started twice, a host that was
/// only cut off): the later one takes the id over. The earlier one's next
/// heartbeat is refused, so it stops its guest at once and exits with
/// code 3; its job goes back to waiting (the stopped run, or the later
/// process giving it back) and completes on the later process, no attempt
/// used. The id is listed once.
#[tokio::test]
async fn a_later_process_under_a_hosts_id_takes_it_over_and_the_earlier_one_stops() {
    let api = Api::start_with(&["--no-workers"]);
    api.setup(
        "imports",
        "catalog-sync",
        json!({"metered": false, "limits": {"timeoutMs": 60_000}}),
    )
    .await;
    let mut earlier = HostProcess::start(&api.redis.url(), opts("worker-a", &[]));
    let job = api
        .enqueue(
            "imports",
            json!({"data": {"customerId": "c1", "holdMs": 3_000}}),
        )
        .await;
    api.wait_until(&job, "running on worker-a", |j| j["state"] == "active")
        .await;
    let _later = HostProcess::start(&api.redis.url(), opts("worker-a", &[]));
    let code = earlier.wait_exit(Duration::from_secs(20));
    assert_eq!(code, Some(3), "{}", earlier.log());
    assert!(
        earlier
            .log()
            .contains("a later process took this host's id over"),
        "{}",
        earlier.log()
    );
    let done = api.wait_done(&job).await;
    assert_eq!(done["state"], "completed", "{done}");
    // BullMQ counts the completion as the one attempt made.
    assert_eq!(done["attemptsMade"], 1, "the stop used an attempt: {done}");
    assert!(
        done["attemptsStarted"].as_u64() >= Some(2),
        "run again: {done}"
    );
    let listed = hosts(&api).await;
    let ids: Vec<&Value> = listed.iter().map(|h| &h["id"]).collect();
    assert_eq!(ids, [&json!("worker-a")], "{listed:?}");
}
