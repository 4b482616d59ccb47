//! Flows, durable steps and sleeps, schedules, event triggers and
//! idempotency, end to end through the API with real guests.

use std::time::Duration;

use airlock_tests::api::{Api, error_code, error_field};
use airlock_tests::host::{HostOptions, HostProcess, tokens};
use airlock_tests::interop_script;
use reqwest::StatusCode;
use serde_json::{Value, json};

const FINISH: Duration = Duration::from_secs(60);

async fn job(api: &Api, job_ref: &str) -> Value {
    let (status, body) = api.get(&format!("/v1/jobs/{job_ref}"), tokens::ADMIN).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

async fn wait_for(api: &Api, job_ref: &str, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
    api.wait_until_within(job_ref, what, FINISH, pred).await
}

fn redis_get(api: &Api, key: &str) -> String {
    api.redis.cli(&["GET", key])
}

async fn report_pipeline(api: &Api) {
    api.setup("data-extraction", "data-extraction", json!({}))
        .await;
    api.setup("report-aggregator", "report-aggregator", json!({}))
        .await;
}

fn extraction(source: &str, records: u64, on_failure: Option<&str>) -> Value {
    let mut child = json!({
        "name": "data-extraction",
        "queue": "data-extraction",
        "data": {"source": source, "records": records, "amountCents": records * 10},
        "opts": {"attempts": 3, "backoff": {"type": "fixed", "delay": 50}},
    });
    if let Some(p) = on_failure {
        child["onFailure"] = json!(p);
    }
    child
}

#[tokio::test]
async fn a_flow_parent_runs_after_its_children_and_reads_their_results() {
    let api = Api::start();
    report_pipeline(&api).await;
    let flow = json!({
        "name": "aggregate-final-report",
        "queue": "report-aggregator",
        "data": {"reportId": "2026-11"},
        "children": [extraction("sales-eu", 120, None), extraction("flaky-once", 30, None)],
    });
    let (status, node) = api.post("/v1/flows", tokens::PRODUCER, flow).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{node}");
    assert_eq!(node["children"].as_array().unwrap().len(), 2);
    let parent_ref = node["ref"].as_str().unwrap();
    assert!(parent_ref.starts_with("report-aggregator:"));
    let parent = api.wait_done(parent_ref).await;
    assert_eq!(parent["state"], "completed", "{parent}");
    assert_eq!(
        parent["returnvalue"],
        json!({"reportId": "2026-11", "sources": ["flaky-once", "sales-eu"], "records": 150, "amountCents": 1500, "failedChildren": []})
    );
    // The flaky child was retried per its own attempts.
    let flaky = job(&api, node["children"][1]["ref"].as_str().unwrap()).await;
    assert_eq!(flaky["attemptsMade"], 2, "{flaky}");

    // Bad trees are refused with the path of the bad node.
    let (status, body) = api
        .post("/v1/flows", tokens::PRODUCER, json!({"name": "p", "queue": "report-aggregator", "data": {}, "children": [{"name": "c", "queue": "nowhere", "data": {}}]}))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert_eq!(error_field(&body), "children[0].queue");
    let (status, body) = api
        .post("/v1/flows", tokens::PRODUCER, json!({"name": "p", "queue": "report-aggregator", "data": {}, "children": [{"name": "c", "queue": "data-extraction", "data": {}, "onFailure": "explode"}]}))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
}

#[tokio::test]
async fn child_failure_policies_decide_the_parent() {
    let api = Api::start();
    report_pipeline(&api).await;
    let flow = |policy: Option<&str>| {
        json!({
            "name": "aggregate-final-report",
            "queue": "report-aggregator",
            "data": {"reportId": policy.unwrap_or("default")},
            "children": [extraction("sales-us", 10, None), extraction("broken", 5, policy)],
        })
    };
    // Default: the parent fails, naming the child — never waits forever.
    let (_, node) = api.post("/v1/flows", tokens::PRODUCER, flow(None)).await;
    let parent = api.wait_done(node["ref"].as_str().unwrap()).await;
    assert_eq!(parent["state"], "failed", "{parent}");
    let broken_id = node["children"][1]["id"].as_str().unwrap();
    assert!(
        parent["failedReason"]
            .as_str()
            .unwrap()
            .contains(&format!("data-extraction:{broken_id} failed")),
        "{parent}"
    );

    // ignore: the parent runs and sees the failure.
    let (_, node) = api
        .post("/v1/flows", tokens::PRODUCER, flow(Some("ignore")))
        .await;
    let parent = api.wait_done(node["ref"].as_str().unwrap()).await;
    assert_eq!(parent["state"], "completed", "{parent}");
    assert_eq!(parent["returnvalue"]["sources"], json!(["sales-us"]));
    let broken = node["children"][1]["ref"].as_str().unwrap();
    assert_eq!(parent["returnvalue"]["failedChildren"], json!([broken]));

    // remove: the parent runs as if the child had never been there.
    let (_, node) = api
        .post("/v1/flows", tokens::PRODUCER, flow(Some("remove")))
        .await;
    let parent = api.wait_done(node["ref"].as_str().unwrap()).await;
    assert_eq!(parent["state"], "completed", "{parent}");
    assert_eq!(parent["returnvalue"]["sources"], json!(["sales-us"]));
    assert_eq!(parent["returnvalue"]["failedChildren"], json!([]));

    // continue: the parent runs at once and sees the failure.
    let (_, node) = api
        .post("/v1/flows", tokens::PRODUCER, flow(Some("continue")))
        .await;
    let parent = api.wait_done(node["ref"].as_str().unwrap()).await;
    assert_eq!(parent["state"], "completed", "{parent}");
    assert!(
        parent["returnvalue"]["failedChildren"]
            .as_array()
            .unwrap()
            .len()
            == 1,
        "{parent}"
    );
}

#[tokio::test]
async fn a_node_flow_producer_flow_runs_on_airlock() {
    let api = Api::start();
    report_pipeline(&api).await;
    let flow = json!({
        "name": "aggregate-final-report",
        "queueName": "report-aggregator",
        "data": {"reportId": "node"},
        "children": [
            {"name": "data-extraction", "queueName": "data-extraction", "data": {"source": "crm", "records": 7, "amountCents": 70}, "opts": {"attempts": 3}},
            {"name": "data-extraction", "queueName": "data-extraction", "data": {"source": "erp", "records": 3, "amountCents": 30}, "opts": {"attempts": 3}},
        ],
    });
    let out = std::process::Command::new("node")
        .arg(interop_script("flow-producer.js"))
        .args([
            "--redis",
            &api.redis.url(),
            "--prefix",
            "bull",
            "--flow",
            &flow.to_string(),
            "--timeout-ms",
            "60000",
        ])
        .output()
        .expect("node");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let outcome: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(outcome["event"], "completed", "{stdout}");
    assert_eq!(outcome["returnvalue"]["records"], 10);
    assert_eq!(outcome["returnvalue"]["sources"], json!(["crm", "erp"]));
}

#[tokio::test]
async fn a_durable_sleep_parks_the_job_without_holding_a_worker() {
    let api = Api::start();
    api.setup("orders", "order-workflow", json!({"concurrency": 1}))
        .await;
    let (_, sleeper) = api
        .post(
            "/v1/queues/orders/jobs",
            tokens::PRODUCER,
            json!({"data": {"orderId": "A", "amount": 10, "reviewDelayMs": 1500}}),
        )
        .await;
    let sleeper_ref = sleeper["ref"].as_str().unwrap().to_string();
    let parked = wait_for(&api, &sleeper_ref, "delayed", |j| j["state"] == "delayed").await;
    assert_eq!(parked["attemptsMade"], 0, "a sleep uses up no attempt");
    assert!(
        parked["steps"]
            .as_array()
            .unwrap()
            .contains(&json!("charge-payment"))
    );

    // The only worker slot is free while A sleeps: B runs to the end.
    let (_, other) = api
        .post(
            "/v1/queues/orders/jobs",
            tokens::PRODUCER,
            json!({"data": {"orderId": "B", "amount": 10, "reviewDelayMs": 0}}),
        )
        .await;
    let b = api.wait_done(other["ref"].as_str().unwrap()).await;
    assert_eq!(b["state"], "completed");
    assert_eq!(
        job(&api, &sleeper_ref).await["state"],
        "delayed",
        "A still sleeps"
    );

    let a = api.wait_done(&sleeper_ref).await;
    assert_eq!(a["state"], "completed", "{a}");
    assert_eq!(a["returnvalue"]["chargeId"], "ch_A");
    assert!(a["finishedOn"].as_u64().unwrap() - a["timestamp"].as_u64().unwrap() >= 1500);
    assert_eq!(
        redis_get(&api, "bull:airlock:kv:order-workflow:charges:A"),
        "1",
        "charged once"
    );
    let details = job(&api, &sleeper_ref).await;
    let logs: Vec<&str> = details["logs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert_eq!(
        logs.iter()
            .filter(|l| l.contains("charging order A"))
            .count(),
        1,
        "{logs:?}"
    );
    assert!(
        logs.iter()
            .any(|l| l.starts_with("[airlock] run suspended until")),
        "{logs:?}"
    );

    // A day-long sleep is cut short through promote.
    let (_, long) = api
        .post(
            "/v1/queues/orders/jobs",
            tokens::PRODUCER,
            json!({"data": {"orderId": "C", "amount": 10}}),
        )
        .await;
    let long_ref = long["ref"].as_str().unwrap();
    wait_for(&api, long_ref, "delayed", |j| j["state"] == "delayed").await;
    let (status, body) = api
        .post(
            &format!("/v1/jobs/{long_ref}/promote"),
            tokens::PRODUCER,
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let c = api.wait_done(long_ref).await;
    assert_eq!(c["state"], "completed", "{c}");
    assert_eq!(c["returnvalue"]["reviewRequested"], true);
}

#[tokio::test]
async fn a_failed_step_is_retried_without_rerunning_the_steps_before_it() {
    let api = Api::start();
    api.setup(
        "probe",
        "step-probe",
        json!({"defaultJobOptions": {"attempts": 3, "backoff": {"type": "fixed", "delay": 20}}}),
    )
    .await;
    let (_, accepted) = api
        .post(
            "/v1/queues/probe/jobs",
            tokens::PRODUCER,
            json!({"data": {}}),
        )
        .await;
    let done = api.wait_done(accepted["ref"].as_str().unwrap()).await;
    assert_eq!(done["state"], "completed", "{done}");
    assert_eq!(
        done["returnvalue"],
        json!({"firstRuns": 1, "repeats": [0, 1, 2], "attempt": 2})
    );
    let steps: Vec<&str> = done["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    assert_eq!(steps, ["first", "flaky", "repeat", "repeat#2", "repeat#3"]);
}

#[tokio::test]
async fn step_limits_fail_a_run_clearly() {
    let api = Api::start();
    api.setup(
        "few-steps",
        "order-workflow",
        json!({"limits": {"maxSteps": 1}}),
    )
    .await;
    let (_, accepted) = api
        .post("/v1/queues/few-steps/jobs", tokens::PRODUCER, json!({"data": {"orderId": "L", "amount": 1, "reviewDelayMs": 0}, "opts": {"attempts": 3}}))
        .await;
    let done = api.wait_done(accepted["ref"].as_str().unwrap()).await;
    assert_eq!(done["state"], "failed", "{done}");
    assert_eq!(done["attemptsMade"], 1, "a limit is not retried");
    let reason = done["failedReason"].as_str().unwrap();
    assert!(
        reason.starts_with(
            "guest_fatal: step record: limit exceeded: a run may record at most 1 steps"
        ),
        "{reason}"
    );

    let (_, accepted) = api
        .post(
            "/v1/queues/few-steps/jobs",
            tokens::PRODUCER,
            json!({"data": {"orderId": "M", "amount": 1}, "opts": {"limits": {"maxStepBytes": 8}}}),
        )
        .await;
    let done = api.wait_done(accepted["ref"].as_str().unwrap()).await;
    assert!(
        done["failedReason"]
            .as_str()
            .unwrap()
            .contains("step result is"),
        "{done}"
    );
}

#[tokio::test]
async fn a_schedule_ticks_once_per_tick_across_two_hosts() {
    let api = Api::start();
    api.setup("sync", "catalog-sync", json!({})).await;
    let _second = HostProcess::start(
        &api.redis.url(),
        HostOptions {
            id: "second".into(),
            ..HostOptions::default()
        },
    );

    // Invalid schedules name the field.
    for (spec, field) in [
        (json!({"pattern": "not cron"}), "pattern"),
        (json!({"pattern": "0 3 * * *", "tz": "Mars/Olympus"}), "tz"),
        (json!({"pattern": "0 3 * * *", "every": 1000}), "every"),
        (json!({}), "pattern"),
    ] {
        let (status, body) = api
            .put("/v1/queues/sync/schedules/bad", tokens::ADMIN, spec.clone())
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{spec}: {body}");
        assert_eq!(error_field(&body), field, "{spec}: {body}");
    }

    // The seeds' nightly sync: next run at 03:00 in its zone.
    let (status, nightly) = api
        .put("/v1/queues/sync/schedules/nightly-catalog-sync", tokens::ADMIN, json!({"pattern": "0 3 * * *", "tz": "Europe/Paris", "data": {"catalog": "main", "items": 500}}))
        .await;
    assert_eq!(status, StatusCode::OK, "{nightly}");
    let next = nightly["nextRunAt"].as_u64().unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    assert!(next > now && next - now <= 24 * 3600 * 1000, "{nightly}");
    // 03:00 Paris is 01:00 or 02:00 UTC.
    let utc_hour = (next / 3_600_000) % 24;
    assert!(utc_hour == 1 || utc_hour == 2, "{nightly}");

    let (status, every) = api
        .put(
            "/v1/queues/sync/schedules/every-second",
            tokens::ADMIN,
            json!({"every": 1000, "data": {"catalog": "fast", "items": 1}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{every}");
    let ticks_done = || async {
        let (_, page) = api
            .get(
                "/v1/queues/sync/jobs?state=completed&limit=100",
                tokens::READER,
            )
            .await;
        page["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|j| {
                j["id"]
                    .as_str()
                    .unwrap()
                    .starts_with("repeat:every-second:")
            })
            .cloned()
            .collect::<Vec<Value>>()
    };
    airlock_tests::eventually("four ticks of the schedule", || async {
        ticks_done().await.len() >= 4
    })
    .await;
    let (status, _) = api
        .call(
            reqwest::Method::DELETE,
            "/v1/queues/sync/schedules/every-second",
            Some(tokens::ADMIN),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    // Whatever tick was already queued finishes; then nothing is left.
    // ... but the nightly schedule's next run, delayed.
    airlock_tests::eventually("the queue to hold only the nightly run", || async {
        let (_, q) = api.get("/v1/queues/sync", tokens::READER).await;
        let c = &q["counts"];
        c["waiting"] == 0 && c["active"] == 0 && c["delayed"] == 1
    })
    .await;
    let ticks = ticks_done().await;
    assert!(ticks.len() >= 4, "{ticks:?}");
    let mut times: Vec<u64> = ticks
        .iter()
        .map(|j| {
            j["id"]
                .as_str()
                .unwrap()
                .rsplit(':')
                .next()
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect();
    times.sort();
    let unique = times.len();
    times.dedup();
    assert_eq!(times.len(), unique, "a tick ran twice");
    // Ticks are a whole number of intervals apart: one job per tick.
    for pair in times.windows(2) {
        assert!(
            pair[1] - pair[0] >= 1000 && (pair[1] - pair[0]) % 1000 == 0,
            "ticks {pair:?}"
        );
    }
    for tick in &ticks {
        assert_eq!(tick["attemptsStarted"], 1, "{tick}");
    }
    let hosts: std::collections::HashSet<&str> = ticks
        .iter()
        .filter_map(|j| j["processedByHost"].as_str())
        .collect();
    assert!(!hosts.is_empty());
    let (_, list) = api.get("/v1/queues/sync/schedules", tokens::READER).await;
    let ids: Vec<&str> = list["schedules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["nightly-catalog-sync"]);
}

#[tokio::test]
async fn a_trigger_is_refused_while_a_run_is_active_and_joined_while_one_waits() {
    let api = Api::start();
    api.setup("sync", "catalog-sync", json!({})).await;
    let (status, _) = api
        .put(
            "/v1/queues/sync/schedules/nightly",
            tokens::ADMIN,
            json!({"pattern": "0 3 * * *", "data": {"items": 9, "holdMs": 3000}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = api
        .post(
            "/v1/queues/sync/schedules/nightly/trigger",
            tokens::READER,
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, first) = api
        .post(
            "/v1/queues/sync/schedules/nightly/trigger",
            tokens::CRON,
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{first}");
    let first_ref = first["ref"].as_str().unwrap().to_string();
    wait_for(&api, &first_ref, "active", |j| j["state"] == "active").await;
    let (status, body) = api
        .post(
            "/v1/queues/sync/schedules/nightly/trigger",
            tokens::CRON,
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(error_code(&body), "already_running");
    let done = api.wait_done(&first_ref).await;
    assert_eq!(done["returnvalue"]["synced"], 9);

    // With the queue paused, a second trigger joins the waiting one.
    api.post("/v1/queues/sync/pause", tokens::ADMIN, json!({}))
        .await;
    let (_, a) = api
        .post(
            "/v1/queues/sync/schedules/nightly/trigger",
            tokens::CRON,
            json!({}),
        )
        .await;
    let (status, b) = api
        .post(
            "/v1/queues/sync/schedules/nightly/trigger",
            tokens::CRON,
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    assert_eq!(a["coalesced"], false, "{a}");
    assert_eq!(b["coalesced"], true, "{b}");
    assert_eq!(a["ref"], b["ref"]);
    let (_, q) = api.get("/v1/queues/sync", tokens::READER).await;
    assert_eq!(q["counts"]["waiting"], 1, "never doubled: {q}");
    let (status, _) = api
        .post(
            "/v1/queues/sync/schedules/missing/trigger",
            tokens::CRON,
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn events_fan_out_to_subscribed_queues_once_per_id() {
    let api = Api::start();
    api.setup("fulfilment", "noop", json!({"events": ["order.placed"]}))
        .await;
    api.setup(
        "catalog",
        "catalog-sync",
        json!({"events": ["order.placed", "user.signed_up"]}),
    )
    .await;
    let event =
        json!({"name": "order.placed", "id": "ord-991", "data": {"orderId": "991", "items": 3}});
    let (status, first) = api
        .post("/v1/events", tokens::PRODUCER, event.clone())
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{first}");
    assert_eq!(first["duplicate"], false);
    let mut jobs: Vec<&str> = first["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j.as_str().unwrap())
        .collect();
    jobs.sort();
    assert_eq!(jobs, ["catalog:evt-ord-991", "fulfilment:evt-ord-991"]);
    // The job's data is the event itself.
    let delivered = api.wait_done("catalog:evt-ord-991").await;
    assert_eq!(delivered["state"], "completed", "{delivered}");
    assert_eq!(delivered["name"], "order.placed");
    assert_eq!(delivered["data"]["name"], "order.placed");
    assert_eq!(delivered["data"]["id"], "ord-991");
    assert_eq!(
        delivered["data"]["data"],
        json!({"orderId": "991", "items": 3})
    );
    assert!(delivered["data"]["ts"].as_u64().is_some());

    let (status, again) = api.post("/v1/events", tokens::PRODUCER, event).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    assert_eq!(again["duplicate"], true, "{again}");
    assert_eq!(again["jobs"], first["jobs"]);
    api.wait_done("fulfilment:evt-ord-991").await;
    for queue in ["catalog", "fulfilment"] {
        let (_, q) = api
            .get(&format!("/v1/queues/{queue}"), tokens::READER)
            .await;
        assert_eq!(q["counts"]["completed"], 1, "no second job: {q}");
        assert_eq!(q["counts"]["waiting"], 0, "no second job: {q}");
    }

    // Without an id every event is new; an unsubscribed name reaches nobody.
    let (_, anon) = api
        .post(
            "/v1/events",
            tokens::PRODUCER,
            json!({"name": "user.signed_up", "data": {"to": "b@example.com", "subject": "Hi"}}),
        )
        .await;
    assert_eq!(anon["jobs"].as_array().unwrap().len(), 1);
    let (_, nobody) = api
        .post(
            "/v1/events",
            tokens::PRODUCER,
            json!({"name": "nobody.listens", "data": {}}),
        )
        .await;
    assert_eq!(nobody["jobs"], json!([]));
    let (status, body) = api
        .post(
            "/v1/events",
            tokens::PRODUCER,
            json!({"name": "x", "id": "has space"}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error_field(&body), "id");
}

#[tokio::test]
async fn an_event_that_failed_part_way_is_completed_by_sending_it_again() {
    let api = Api::start();
    for queue in ["a-fulfilment", "b-billing", "c-audit"] {
        api.setup(queue, "noop", json!({"events": ["order.placed"]}))
            .await;
    }
    // Break the second queue's adds (its id counter is not a number), so a
    // delivery gets one queue in and fails on the next.
    api.redis.cli(&["SET", "bull:b-billing:id", "broken"]);
    let event = json!({"name": "order.placed", "id": "ord-5", "data": {"orderId": "5"}});
    let (status, body) = api
        .post("/v1/events", tokens::PRODUCER, event.clone())
        .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("is unknown"),
        "a failure part-way says the outcome is unknown: {body}"
    );
    api.redis.cli(&["DEL", "bull:b-billing:id"]);

    // Sending it again completes the delivery: one job per queue, no more.
    let (status, retry) = api
        .post("/v1/events", tokens::PRODUCER, event.clone())
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{retry}");
    assert_eq!(retry["duplicate"], false, "the retry created jobs: {retry}");
    assert_eq!(
        retry["jobs"],
        json!([
            "a-fulfilment:evt-ord-5",
            "b-billing:evt-ord-5",
            "c-audit:evt-ord-5"
        ])
    );
    for job_ref in [
        "a-fulfilment:evt-ord-5",
        "b-billing:evt-ord-5",
        "c-audit:evt-ord-5",
    ] {
        assert_eq!(api.wait_done(job_ref).await["state"], "completed");
    }
    let (status, again) = api.post("/v1/events", tokens::PRODUCER, event).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    assert_eq!(again["duplicate"], true, "{again}");
    for queue in ["a-fulfilment", "b-billing", "c-audit"] {
        let (_, q) = api
            .get(&format!("/v1/queues/{queue}"), tokens::READER)
            .await;
        assert_eq!(q["counts"]["completed"], 1, "exactly one job: {q}");
        assert_eq!(q["counts"]["waiting"], 0, "exactly one job: {q}");
    }
}

#[tokio::test]
async fn idempotency_through_job_ids_deduplication_and_the_kv_store() {
    let api = Api::start();
    api.setup("emails", "email-delivery", json!({})).await;
    let mail =
        json!({"to": "ada@example.com", "subject": "Welcome", "idempotencyKey": "welcome-ada"});

    // Enqueue-side: BullMQ deduplication by id with a TTL.
    let opts = json!({"deduplication": {"id": "welcome-ada", "ttl": 60000}});
    let (_, a) = api
        .post(
            "/v1/queues/emails/jobs",
            tokens::PRODUCER,
            json!({"data": mail, "opts": opts}),
        )
        .await;
    let (_, b) = api
        .post(
            "/v1/queues/emails/jobs",
            tokens::PRODUCER,
            json!({"data": mail, "opts": opts}),
        )
        .await;
    assert_eq!(a["duplicate"], false, "{a}");
    assert_eq!(b["duplicate"], true, "{b}");
    assert_eq!(a["id"], b["id"]);
    let first = api.wait_done(a["ref"].as_str().unwrap()).await;
    assert_eq!(first["returnvalue"]["status"], "sent");

    // Handler-side: a second delivery of the same mail (a new job) is
    // skipped through the handler's KV store.
    let (_, c) = api
        .post(
            "/v1/queues/emails/jobs",
            tokens::PRODUCER,
            json!({"data": mail}),
        )
        .await;
    let second = api.wait_done(c["ref"].as_str().unwrap()).await;
    assert_eq!(
        second["returnvalue"]["status"], "skipped_duplicate",
        "{second}"
    );
    let kv = api.redis.keys("bull:airlock:kv:email-delivery:*");
    assert_eq!(
        kv,
        ["bull:airlock:kv:email-delivery:email-sent:welcome-ada"]
    );
    let ttl: i64 = api.redis.cli(&["TTL", &kv[0]]).parse().unwrap();
    assert!(
        ttl > 0 && ttl <= 24 * 3600,
        "the idempotency key expires: {ttl}"
    );
}
