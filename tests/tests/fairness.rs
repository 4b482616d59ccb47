//! Fair shares between tenants (`fairness`, `flow::tenants`): a tenant's
//! first jobs do not wait behind another tenant's backlog, whether the
//! backlog came through the API or from Node's `queue.addBulk`; tenants
//! that both have backlogs share the queue's capacity by weight; a job
//! held for its tenant's turn says so.

use std::process::Command;
use std::time::Duration;

use airlock_tests::api::Api;
use airlock_tests::host::{HostOptions, HostProcess, tokens};
use airlock_tests::{eventually, eventually_some, interop_script};
use serde_json::{Value, json};

/// A queue of catalog syncs whose 4 fleet slots tenants share.
fn fair(weights: Value) -> Value {
    json!({
        "metered": false,
        "concurrency": 4,
        "globalConcurrency": 4,
        "limits": {"timeoutMs": 60_000},
        "fairness": {"tenant": "$.tenant", "weights": weights},
    })
}

fn host(api: &Api, id: &str) -> HostProcess {
    HostProcess::start(
        &api.redis.url(),
        HostOptions {
            id: id.into(),
            ..HostOptions::default()
        },
    )
}

/// Adds `count` jobs with `data` through Node's `Queue.addBulk`.
fn node_enqueue(api: &Api, queue: &str, count: usize, data: Value) {
    let out = Command::new("node")
        .arg(interop_script("enqueue.js"))
        .args(["--redis", &api.redis.url(), "--prefix", "bull"])
        .args(["--queue", queue, "--count", &count.to_string()])
        .args(["--name", "sync", "--data", &data.to_string()])
        .output()
        .expect("run node");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Adds `jobs` through the API's bulk enqueue, 1,000 per request.
async fn api_enqueue(api: &Api, queue: &str, jobs: Vec<Value>) -> Vec<String> {
    let mut refs = Vec::new();
    for chunk in jobs.chunks(1000) {
        let (status, body) = api
            .post(
                &format!("/v1/queues/{queue}/jobs/bulk"),
                tokens::PRODUCER,
                json!({ "jobs": chunk }),
            )
            .await;
        assert_eq!(status, reqwest::StatusCode::ACCEPTED, "{body}");
        for job in body["jobs"].as_array().unwrap() {
            refs.push(job["ref"].as_str().unwrap().to_string());
        }
    }
    refs
}

/// The time (ms) tenants `a` and `b` held slots over `runs` — each job from
/// its start (`processedOn`, when it got its slots) to its recorded end
/// (`finishedOn`) — counted from the first start to the last start of
/// whichever tenant ran out first: while both had jobs left to start.
fn busy_while_both_wait(runs: &[Value], a: &str, b: &str) -> (f64, f64) {
    let span = |j: &Value| {
        (
            j["processedOn"].as_u64().unwrap(),
            j["finishedOn"].as_u64().unwrap(),
        )
    };
    let last_start = |tenant: &str| {
        runs.iter()
            .filter(|j| j["data"]["tenant"] == tenant)
            .map(|j| span(j).0)
            .max()
            .unwrap()
    };
    let first = runs.iter().map(|j| span(j).0).min().unwrap();
    let until = last_start(a).min(last_start(b));
    let busy = |tenant: &str| -> f64 {
        runs.iter()
            .filter(|j| j["data"]["tenant"] == tenant)
            .map(|j| {
                let (from, to) = span(j);
                to.min(until).saturating_sub(from.max(first))
            })
            .sum::<u64>() as f64
    };
    (busy(a), busy(b))
}

async fn completed_count(api: &Api, queue: &str) -> u64 {
    let (_, q) = api.get(&format!("/v1/queues/{queue}"), tokens::ADMIN).await;
    q["counts"]["completed"].as_u64().unwrap()
}

/// With `big` jobs of tenant `big` queued (4 slots, 25 ms each: a second
/// and a half of work at least), three other tenants' jobs, added through
/// the API, all finish while most of the backlog still waits.
async fn small_tenants_go_first(api: &Api, queue: &str, big: u64) {
    eventually("the backlog to start", || async {
        completed_count(api, queue).await > 0
    })
    .await;
    let mut small = Vec::new();
    for t in ["s1", "s2", "s3"] {
        small.push(
            api.enqueue(queue, json!({"data": {"tenant": t, "holdMs": 25}}))
                .await,
        );
    }
    for job in &small {
        let done = api.wait_done(job).await;
        assert_eq!(done["state"], "completed", "{done}");
    }
    let done = completed_count(api, queue).await;
    assert!(
        done < big / 2,
        "the small tenants waited behind the backlog: {done} of its {big} jobs completed first"
    );
}

#[tokio::test]
async fn a_tenants_first_jobs_jump_another_tenants_backlog_from_node_and_the_api() {
    let api = Api::start();
    let _b = host(&api, "host-b");

    // A backlog from Node's BullMQ: one tenant, in the FIFO wait list.
    api.setup("node-imports", "catalog-sync", fair(json!({})))
        .await;
    node_enqueue(
        &api,
        "node-imports",
        600,
        json!({"tenant": "big", "holdMs": 25}),
    );
    small_tenants_go_first(&api, "node-imports", 600).await;

    // The same backlog through the API.
    api.setup("api-imports", "catalog-sync", fair(json!({})))
        .await;
    let jobs = (0..600)
        .map(|_| json!({"data": {"tenant": "big", "holdMs": 25}}))
        .collect();
    api_enqueue(&api, "api-imports", jobs).await;
    small_tenants_go_first(&api, "api-imports", 600).await;
}

#[tokio::test]
async fn backlogged_tenants_share_the_slots_by_weight_and_say_why_they_wait() {
    let api = Api::start();
    let _b = host(&api, "host-b");
    api.setup("imports", "catalog-sync", fair(json!({"gold": 3})))
        .await;
    // Interleaved in one FIFO: without fairness each would get half.
    let jobs: Vec<Value> = (0..120)
        .map(|i| {
            let tenant = if i % 2 == 0 { "gold" } else { "silver" };
            json!({"data": {"tenant": tenant, "holdMs": 150}})
        })
        .collect();
    let refs = api_enqueue(&api, "imports", jobs).await;

    // A silver job held for its tenant's turn says so.
    let silver: Vec<&String> = refs.iter().skip(1).step_by(2).collect();
    let held = eventually_some(
        "a silver job waiting for its tenant's turn",
        Duration::from_secs(30),
        || async {
            for job in silver.iter().skip(4).take(20) {
                let job = api.job(job).await;
                if job["waiting"]["kind"] == "tenant_turn" {
                    return Some(job);
                }
            }
            None
        },
    )
    .await;
    let why = &held["waiting"];
    assert_eq!(why["key"], "silver", "{why}");
    assert_eq!(
        why["limit"], 1,
        "silver's share of 4 against gold's weight 3: {why}"
    );
    assert!(
        why["message"]
            .as_str()
            .unwrap()
            .starts_with(r#"tenant "silver" ($.tenant) runs its share: "#),
        "{why}"
    );

    let mut runs = Vec::new();
    for job in &refs {
        let done = api.wait_done(job).await;
        assert_eq!(done["state"], "completed", "{done}");
        runs.push(done);
    }
    // While both tenants had jobs left to start, gold held the slots about
    // three quarters of the time.
    let (gold, silver) = busy_while_both_wait(&runs, "gold", "silver");
    let share = gold / (gold + silver);
    eprintln!("gold's share of the slot time: {share:.2}");
    assert!(
        (0.65..=0.85).contains(&share),
        "gold's share of the slot time while both waited: {share:.2} (gold {gold} ms, silver {silver} ms)"
    );
}

#[tokio::test]
async fn a_turn_is_charged_by_the_time_its_job_holds_the_slot() {
    let api = Api::start();
    api.setup("imports", "catalog-sync", fair(json!({}))).await;
    // One job of each in turn at first (800 ms jobs against 100 ms ones):
    // first in, first out, the slow tenant holds the slots 85–86 % of the
    // time; with fairness 47–57 % (nine runs, some beside another test).
    let jobs: Vec<Value> = (0..90)
        .map(|i| {
            let (tenant, hold) = if i % 2 == 0 && i < 20 {
                ("slow", 800)
            } else {
                ("fast", 100)
            };
            json!({"data": {"tenant": tenant, "holdMs": hold}})
        })
        .collect();
    let refs = api_enqueue(&api, "imports", jobs).await;
    let mut runs = Vec::new();
    for job in &refs {
        let done = api.wait_done(job).await;
        assert_eq!(done["state"], "completed", "{done}");
        runs.push(done);
    }
    let (slow, fast) = busy_while_both_wait(&runs, "slow", "fast");
    let share = slow / (slow + fast);
    eprintln!("the slow tenant's share of the slot time: {share:.2}");
    assert!(
        (0.35..=0.62).contains(&share),
        "the slow tenant's share of the slot time while both waited: {share:.2} (slow {slow} ms, fast {fast} ms)"
    );
}

#[tokio::test]
async fn a_tenants_waiting_jobs_run_once_fairness_is_taken_off() {
    let api = Api::start();
    api.setup("imports", "catalog-sync", fair(json!({"gold": 3})))
        .await;
    let jobs: Vec<Value> = (0..40)
        .map(|i| {
            let tenant = if i % 2 == 0 { "gold" } else { "silver" };
            json!({"data": {"tenant": tenant, "holdMs": 400}})
        })
        .collect();
    let refs = api_enqueue(&api, "imports", jobs).await;
    let silver: Vec<&String> = refs.iter().skip(1).step_by(2).collect();
    eventually_some(
        "a silver job waiting in its tenant's line",
        Duration::from_secs(30),
        || async {
            for job in silver.iter().skip(2) {
                if api.job(job).await["waiting"]["kind"] == "tenant_turn" {
                    return Some(());
                }
            }
            None
        },
    )
    .await;
    // The same binding without fairness: what waited in the tenants' lines
    // runs (the key-line pump empties them), not after its parking's hour.
    let mut spec = fair(json!({}));
    spec.as_object_mut().unwrap().remove("fairness");
    spec["handler"] = json!("catalog-sync");
    let (status, body) = api.put("/v1/queues/imports", tokens::ADMIN, spec).await;
    assert_eq!(status, reqwest::StatusCode::OK, "{body}");
    for job in &refs {
        let done = api.wait_done(job).await;
        assert_eq!(done["state"], "completed", "{done}");
    }
}

#[tokio::test]
async fn fairness_settings_are_checked_and_name_the_field() {
    let api = Api::start();
    api.setup("imports", "catalog-sync", fair(json!({}))).await;
    let put = |spec: Value| {
        let mut spec = spec;
        spec["handler"] = json!("catalog-sync");
        api.put("/v1/queues/imports", tokens::ADMIN, spec)
    };
    let mut no_capacity = fair(json!({}));
    no_capacity
        .as_object_mut()
        .unwrap()
        .remove("globalConcurrency");
    for (spec, field) in [
        (no_capacity, "globalConcurrency"),
        (fair(json!({"acme": 0})), "fairness.weights.acme"),
        (fair(json!({"acme": 1001})), "fairness.weights.acme"),
    ] {
        let (status, body) = put(spec).await;
        assert_eq!(status, reqwest::StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(airlock_tests::api::error_field(&body), field, "{body}");
    }
    let (status, body) = put(fair(json!({"acme": 1000}))).await;
    assert_eq!(status, reqwest::StatusCode::OK, "{body}");
    assert_eq!(body["fairness"]["weights"]["acme"], 1000, "{body}");
    // A weight is an integer as JSON Schema counts one: `3.0` is 3 (the
    // OpenAPI fuzzer found `1.0` refused); `2.5` is not.
    let (status, body) = put(fair(json!({"acme": 3.0}))).await;
    assert_eq!(status, reqwest::StatusCode::OK, "{body}");
    assert_eq!(body["fairness"]["weights"]["acme"], 3, "{body}");
    let (status, body) = put(fair(json!({"acme": 2.5}))).await;
    assert_eq!(status, reqwest::StatusCode::BAD_REQUEST, "{body}");
}
