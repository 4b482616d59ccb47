//! Producer tokens are hostile to each other. Two producers (`web`, the
//! victim, and `other`, the intruder) share a queue; whatever the intruder
//! sends with the victim's job id — an enqueue with limits, a flow node,
//! a flow child — changes nothing about the victim's job and reveals no
//! more than BullMQ's id semantics force: that an id is taken.

use airlock_tests::api::{Api, error_code, error_field};
use airlock_tests::host::tokens;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

const VICTIM: &str = tokens::PRODUCER;
const INTRUDER: &str = tokens::OTHER_PRODUCER;

/// A queue whose jobs wait (paused) until the test resumes it.
async fn paused_payments(api: &Api) {
    api.setup("payments", "payment-webhook", json!({})).await;
    let (status, body) = api
        .post("/v1/queues/payments/pause", tokens::ADMIN, json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

async fn resume(api: &Api) {
    let (status, body) = api
        .post("/v1/queues/payments/resume", tokens::ADMIN, json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

async fn enqueue(api: &Api, token: &str, body: Value) -> (StatusCode, Value) {
    api.post("/v1/queues/payments/jobs", token, body).await
}

#[tokio::test]
async fn a_flow_cannot_take_over_another_producers_job() {
    let api = Api::start();
    paused_payments(&api).await;
    api.setup("data-extraction", "data-extraction", json!({}))
        .await;
    let (status, accepted) = enqueue(
        &api,
        VICTIM,
        json!({"data": {"transactionId": "victim", "amount": 5}, "opts": {"jobId": "order-42"}}),
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{accepted}");

    // As the flow's parent...
    let (status, body) = api
        .post(
            "/v1/flows",
            INTRUDER,
            json!({"name": "p", "queue": "payments", "data": {}, "opts": {"jobId": "order-42"},
                   "children": [{"name": "c", "queue": "data-extraction", "data": {"source": "x"}}]}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(error_field(&body), "opts.jobId");
    // ... or as a child of the intruder's own parent.
    let (status, body) = api
        .post(
            "/v1/flows",
            INTRUDER,
            json!({"name": "p", "queue": "data-extraction", "data": {"source": "x"},
                   "children": [{"name": "c", "queue": "payments", "data": {}, "opts": {"jobId": "order-42"}}]}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(error_field(&body), "children[0].opts.jobId");
    // A refused flow adds nothing at all.
    let (_, page) = api
        .get(
            "/v1/queues/data-extraction/jobs?state=waiting",
            tokens::ADMIN,
        )
        .await;
    assert_eq!(page["jobs"], json!([]), "{page}");

    // The victim still owns its job; the intruder cannot see or delete it.
    let (status, _) = api.get("/v1/jobs/payments:order-42", INTRUDER).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = api
        .call(
            Method::DELETE,
            "/v1/jobs/payments:order-42",
            Some(INTRUDER),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, job) = api.get("/v1/jobs/payments:order-42", VICTIM).await;
    assert_eq!(status, StatusCode::OK, "{job}");
    assert_eq!(job["producer"], "web");
    assert_eq!(job["parentKey"], Value::Null, "no parent was attached");
    resume(&api).await;
    let done = api.wait_done("payments:order-42").await;
    assert_eq!(
        done["returnvalue"]["ledgerRecordId"], "led_victim",
        "{done}"
    );
}

#[tokio::test]
async fn a_duplicate_enqueue_changes_nothing_about_the_existing_job() {
    let api = Api::start();
    paused_payments(&api).await;
    let (status, _) = enqueue(
        &api,
        VICTIM,
        json!({"data": {"transactionId": "mine", "amount": 5}, "opts": {"jobId": "tx-7"}}),
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    // The intruder tries to starve the victim's job of fuel.
    let (status, dup) = enqueue(
        &api,
        INTRUDER,
        json!({"data": {"transactionId": "theirs", "amount": 1}, "opts": {"jobId": "tx-7", "limits": {"fuel": 1}}}),
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{dup}");
    // All a duplicate reveals: the id is taken (BullMQ's id semantics).
    assert_eq!(
        dup,
        json!({"id": "tx-7", "queue": "payments", "ref": "payments:tx-7", "duplicate": true})
    );
    let (status, _) = api.get("/v1/jobs/payments:tx-7", INTRUDER).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    resume(&api).await;
    let done = api.wait_recorded("payments:tx-7").await;
    assert_eq!(done["state"], "completed", "{done}");
    assert_eq!(done["data"]["transactionId"], "mine");
    assert_eq!(done["producer"], "web");
    assert!(
        done["metrics"]["fuelUsed"].as_u64().unwrap() > 1,
        "ran with the binding's limits: {done}"
    );
}

#[tokio::test]
async fn per_job_limits_apply_from_the_first_run() {
    let api = Api::start();
    api.setup("payments", "payment-webhook", json!({})).await;
    let (status, accepted) = enqueue(
        &api,
        VICTIM,
        json!({"data": {"transactionId": "t", "amount": 5}, "opts": {"limits": {"fuel": 1000}}}),
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{accepted}");
    let done = api.wait_done(accepted["ref"].as_str().unwrap()).await;
    assert_eq!(done["state"], "failed", "{done}");
    assert_eq!(done["failureKind"], "fuel_exhausted", "{done}");
}

#[tokio::test]
async fn the_cron_role_triggers_schedules_and_reads_nothing() {
    let api = Api::start();
    api.setup("sync", "catalog-sync", json!({})).await;
    let (status, body) = api
        .put(
            "/v1/queues/sync/schedules/nightly",
            tokens::ADMIN,
            json!({"pattern": "0 3 * * *", "data": {"catalog": "c", "items": 1}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    for path in [
        "/v1/queues/sync/schedules",
        "/v1/queues/sync/schedules/nightly",
        "/v1/queues/sync",
        "/v1/queues/sync/jobs?state=waiting",
    ] {
        let (status, body) = api.get(path, tokens::CRON).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{path}: {body}");
        assert_eq!(error_code(&body), "forbidden");
    }
    let (status, body) = api
        .post(
            "/v1/queues/sync/schedules/nightly/trigger",
            tokens::CRON,
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    // What a trigger answers is the run's ref, nothing of the schedule.
    assert_eq!(
        body.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["ref", "coalesced"]
    );
}

#[tokio::test]
async fn a_producer_reads_its_job_as_soon_as_it_is_accepted() {
    let api = Api::start();
    api.setup("payments", "payment-webhook", json!({})).await;
    for opts in [
        json!({}),
        json!({"jobId": "fast-1"}),
        json!({"deduplication": {"id": "d-1"}}),
    ] {
        let (status, accepted) = enqueue(
            &api,
            VICTIM,
            json!({"data": {"transactionId": "fast", "amount": 1}, "opts": opts}),
        )
        .await;
        assert_eq!(status, StatusCode::ACCEPTED, "{accepted}");
        let job_ref = accepted["ref"].as_str().unwrap();
        let (status, job) = api.get(&format!("/v1/jobs/{job_ref}"), VICTIM).await;
        assert_eq!(status, StatusCode::OK, "{opts}: {job}");
        assert_eq!(job["producer"], "web", "{job}");
        let (status, _) = api.get(&format!("/v1/jobs/{job_ref}"), INTRUDER).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }
}
