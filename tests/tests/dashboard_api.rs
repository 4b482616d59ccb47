//! The API the dashboard reads beyond the jobs themselves, against a real
//! host: who a token is, recent events with their jobs, per-key running
//! and queued counts, job search, and the hosts' memory budget.

use airlock_tests::api::Api;
use airlock_tests::host::tokens;
use reqwest::StatusCode;
use serde_json::{Value, json};

#[tokio::test]
async fn me_says_who_a_token_is() {
    let api = Api::start();
    for (token, name, role) in [
        (tokens::ADMIN, "ops", "admin"),
        (tokens::PRODUCER, "web", "producer"),
        (tokens::READER, "dash", "reader"),
    ] {
        let (status, me) = api.get("/v1/me", token).await;
        assert_eq!(status, StatusCode::OK, "{me}");
        assert_eq!(me, json!({"name": name, "role": role}));
    }
    let (status, _) = api.get("/v1/me", "not-a-token-at-all-0000").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn recent_events_list_their_jobs_per_tenant() {
    let api = Api::start();
    api.setup("orders", "noop", json!({"events": ["order.placed"]}))
        .await;
    for (token, id) in [
        (tokens::PRODUCER, "e-1"),
        (tokens::PRODUCER, "e-2"),
        (tokens::OTHER_PRODUCER, "e-3"),
    ] {
        let (status, body) = api
            .post(
                "/v1/events",
                token,
                json!({"name": "order.placed", "id": id, "data": {"n": id}}),
            )
            .await;
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    }
    let ids = |body: &Value| -> Vec<String> {
        body["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["id"].as_str().unwrap().to_string())
            .collect()
    };
    let (status, all) = api.get("/v1/events", tokens::READER).await;
    assert_eq!(status, StatusCode::OK, "{all}");
    assert_eq!(ids(&all), ["e-3", "e-2", "e-1"], "newest first: {all}");
    assert_eq!(all["events"][0]["producer"], "other", "{all}");
    assert_eq!(all["events"][1]["jobs"], json!(["orders:evt-e-2"]), "{all}");
    assert_eq!(all["events"][1]["data"], json!({"n": "e-2"}), "{all}");
    let (_, own) = api.get("/v1/events?limit=10", tokens::PRODUCER).await;
    assert_eq!(ids(&own), ["e-2", "e-1"], "a producer sees its own: {own}");
    let (status, body) = api.get("/v1/events?limit=0", tokens::READER).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error"]["field"], "limit");

    // Entries any Redis client added, over the bounds the API holds sent
    // events to, are left out: a 1 MB event, a 10,000-character name or
    // producer, a 1,000-character id.
    let admin = airlock_tests::host::Admin::connect(&api.redis.url()).await;
    let stream = admin.store.keys().recent_events();
    let mut conn = admin.store.conn();
    let event = |name: &str, id: &str, data: Value| {
        json!({"name": name, "id": id, "ts": 1, "data": data}).to_string()
    };
    let forged = [
        (
            event("order.placed", "big", json!("x".repeat(1 << 20))),
            "web",
        ),
        (event(&"n".repeat(10_000), "long-name", json!({})), "web"),
        (event("order.placed", &"i".repeat(1_000), json!({})), "web"),
        (
            event("order.placed", "long-producer", json!({})),
            &*"p".repeat(10_000),
        ),
    ];
    for (text, producer) in &forged {
        let _: String = redis::cmd("XADD")
            .arg(&stream)
            .arg("*")
            .arg("name")
            .arg("order.placed")
            .arg("event")
            .arg(text)
            .arg("producer")
            .arg(producer)
            .query_async(&mut conn)
            .await
            .unwrap();
    }
    let (status, all) = api.get("/v1/events", tokens::READER).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(ids(&all), ["e-3", "e-2", "e-1"], "forged entries shown");
}

#[tokio::test]
async fn per_key_counts_and_job_search() {
    let api = Api::start();
    api.setup(
        "keyed",
        "hostile-infinite-loop",
        json!({
            "metered": false,
            "concurrency": 4,
            "limits": {"timeoutMs": 120_000},
            "keyConcurrency": {"key": "$.customerId", "limit": 1}
        }),
    )
    .await;
    let mut jobs = Vec::new();
    for customer in ["acme", "acme", "acme", "globex"] {
        jobs.push(
            api.enqueue("keyed", json!({"data": {"customerId": customer}}))
                .await,
        );
    }
    // Both keys' first jobs run; acme's other two wait.
    for job in [&jobs[0], &jobs[3]] {
        api.wait_until(job, "active", |j| j["state"] == "active")
            .await;
    }
    let (status, keys) = api.get("/v1/queues/keyed/keys", tokens::READER).await;
    assert_eq!(status, StatusCode::OK, "{keys}");
    assert_eq!(keys["key"], "$.customerId");
    assert_eq!(keys["limit"], 1);
    assert_eq!(
        keys["keys"],
        json!([
            {"value": "acme", "running": 1, "queued": 2},
            {"value": "globex", "running": 1, "queued": 0}
        ]),
        "{keys}"
    );

    // Search: the data's text, over one state's page.
    let (status, page) = api
        .get(
            "/v1/queues/keyed/jobs?state=active&q=GLOBEX",
            tokens::READER,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let found: Vec<&str> = page["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["data"]["customerId"].as_str().unwrap())
        .collect();
    assert_eq!(found, ["globex"], "{page}");

    // The hosts' memory budget, and the part the two running guests hold
    // (as of the host's next heartbeat).
    airlock_tests::eventually_some(
        "a heartbeat with both guests running and their memory held",
        std::time::Duration::from_secs(15),
        || async {
            let (_, hosts) = api.get("/v1/hosts", tokens::READER).await;
            let host = &hosts["hosts"][0];
            let budget = host["memoryBudgetBytes"].as_u64().unwrap();
            let held = host["memoryHeldBytes"].as_u64().unwrap();
            assert!(held <= budget, "{host}");
            (held > 0 && host["running"] == 2).then_some(())
        },
    )
    .await;

    let (status, body) = api.get("/v1/queues/nope/keys", tokens::READER).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    for job in &jobs {
        api.post(
            &format!("/v1/jobs/{job}/cancel"),
            tokens::PRODUCER,
            json!({}),
        )
        .await;
    }
}

#[tokio::test]
async fn a_job_behind_a_full_host_says_so() {
    // One instance slot: a spinning job takes it; the next one waits.
    let api = Api::start_with(&["--max-instances", "1"]);
    api.setup(
        "spin",
        "hostile-infinite-loop",
        json!({"metered": false, "concurrency": 1, "limits": {"timeoutMs": 120_000}}),
    )
    .await;
    let running = api.enqueue("spin", json!({"data": {}})).await;
    api.wait_until(&running, "active", |j| j["state"] == "active")
        .await;
    let behind = api.enqueue("spin", json!({"data": {}})).await;
    let job = api
        .wait_until(&behind, "behind a full host", |j| {
            j["waiting"]["kind"] == "capacity_full"
        })
        .await;
    assert_eq!(
        job["waiting"]["message"],
        "host capacity full: 1 of 1 instance slots busy on the 1 host serving this queue",
        "{job}"
    );
    for job in [&behind, &running] {
        api.post(
            &format!("/v1/jobs/{job}/cancel"),
            tokens::PRODUCER,
            json!({}),
        )
        .await;
    }
}

/// Binds `parents` and `kids` to the no-op handler and adds a flow whose
/// parent runs on `parents` with `children`; answers the parent's ref and
/// the API's answer.
async fn add_flow(api: &Api, children: Value) -> (String, Value) {
    api.setup("parents", "noop", json!({})).await;
    api.setup("kids", "noop", json!({})).await;
    let (status, flow) = api
        .post(
            "/v1/flows",
            tokens::PRODUCER,
            json!({"name": "parent", "queue": "parents", "data": {}, "children": children}),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{flow}");
    (flow["ref"].as_str().unwrap().to_string(), flow)
}

#[tokio::test]
async fn a_flow_parents_timeline_lists_its_children() {
    let api = Api::start();
    let (parent, flow) = add_flow(
        &api,
        json!([
            {"name": "kid", "queue": "kids", "data": {"n": 1}},
            {"name": "kid", "queue": "kids", "data": {"n": 2}}
        ]),
    )
    .await;
    assert_eq!(api.wait_done(&parent).await["state"], "completed");
    let (status, timeline) = api
        .get(&format!("/v1/jobs/{parent}/timeline"), tokens::PRODUCER)
        .await;
    assert_eq!(status, StatusCode::OK, "{timeline}");
    let children: Vec<(String, String)> = timeline["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["ref"].as_str().unwrap().into(),
                c["state"].as_str().unwrap().into(),
            )
        })
        .collect();
    let mut expected: Vec<(String, String)> = flow["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["ref"].as_str().unwrap().into(), "completed".into()))
        .collect();
    expected.sort();
    assert_eq!(children, expected, "{timeline}");
}

/// A child that fails its parent (the default policy) is listed with its
/// reason in the parent's timeline: BullMQ keeps it apart from the other
/// children (`:unsuccessful`), and the parent's own reason only names the
/// child's Redis key.
#[tokio::test]
async fn a_flow_parents_timeline_lists_the_child_that_failed_it() {
    let api = Api::start();
    api.setup("flaky-kids", "flaky", json!({})).await;
    let (parent, flow) = add_flow(
        &api,
        json!([
            {"name": "kid", "queue": "kids", "data": {}},
            {"name": "bad-kid", "queue": "flaky-kids", "data": {}}
        ]),
    )
    .await;
    let done = api.wait_done(&parent).await;
    assert_eq!(done["state"], "failed", "{done}");
    let bad = flow["children"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["ref"].as_str().unwrap().starts_with("flaky-kids:"))
        .unwrap()["ref"]
        .as_str()
        .unwrap()
        .to_string();
    let reason = done["failedReason"].as_str().unwrap();
    assert!(
        reason.starts_with("child ") && reason.ends_with(&format!(":{bad} failed")),
        "{reason}"
    );
    let (status, timeline) = api
        .get(&format!("/v1/jobs/{parent}/timeline"), tokens::PRODUCER)
        .await;
    assert_eq!(status, StatusCode::OK, "{timeline}");
    let failed: Vec<&Value> = timeline["children"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["state"] == "failed")
        .collect();
    assert_eq!(failed.len(), 1, "{timeline}");
    assert_eq!(failed[0]["ref"], bad.as_str());
    assert_eq!(
        failed[0]["outcome"], "guest_retry: attempt 1 failed on purpose",
        "{timeline}"
    );
}

/// A job whose one run completed keeps a small job hash — Redis's compact
/// listpack encoding, which BullMQ's scripts on it rely on for their speed
/// — and still shows that run in its timeline, read back from the run's
/// measurements and BullMQ's own fields. Retrying it through Airlock writes
/// that entry down first, so the rerun does not replace it.
#[tokio::test]
async fn a_completed_first_run_keeps_the_job_hash_compact_and_its_timeline() {
    let api = Api::start();
    api.setup("compact", "noop", json!({})).await;
    let job = api.enqueue("compact", json!({"data": {}})).await;
    let recorded = api.wait_recorded(&job).await;
    let (queue, id) = job.split_once(':').unwrap();
    let client = redis::Client::open(api.redis.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let encoding: String = redis::cmd("OBJECT")
        .arg("ENCODING")
        .arg(format!("bull:{queue}:{id}"))
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(encoding, "listpack", "the job hash grew past a listpack");

    let first = timeline(&api, &job).await;
    let runs = first["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "{first}");
    let run = &runs[0];
    assert_eq!(run["run"], 1, "{first}");
    assert_eq!(run["attempt"], 1, "{first}");
    assert_eq!(run["end"], "completed", "{first}");
    assert_eq!(
        run["startedAt"], recorded["processedOn"],
        "{first} {recorded}"
    );
    assert_eq!(
        run["wallTimeMs"], recorded["metrics"]["wallTimeMs"],
        "{first}"
    );
    assert_eq!(run["fuelUsed"], recorded["metrics"]["fuelUsed"], "{first}");
    assert!(
        run["host"].as_str().is_some_and(|h| !h.is_empty()),
        "{first}"
    );

    let (status, body) = api
        .post(&format!("/v1/jobs/{job}/retry"), tokens::ADMIN, json!({}))
        .await;
    assert!(status.is_success(), "{status} {body}");
    let second = airlock_tests::eventually_some(
        "a second run in the timeline",
        std::time::Duration::from_secs(30),
        || async {
            let t = timeline(&api, &job).await;
            (t["runs"].as_array().unwrap().len() == 2).then_some(t)
        },
    )
    .await;
    assert_eq!(second["runs"][0], first["runs"][0], "{second}");
    assert_eq!(second["runs"][1]["run"], 2, "{second}");
    assert_eq!(second["runs"][1]["end"], "completed", "{second}");
}

/// The job's timeline, as its producer reads it.
async fn timeline(api: &Api, job: &str) -> Value {
    let (status, timeline) = api
        .get(&format!("/v1/jobs/{job}/timeline"), tokens::PRODUCER)
        .await;
    assert_eq!(status, StatusCode::OK, "{timeline}");
    timeline
}
