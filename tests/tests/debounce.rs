//! Debounce across two hosts: of a key's jobs added close together only
//! the last runs, `maxWaitMs` bounds how long a steady stream holds its
//! job back, events debounce the same way, and options that would fight
//! the debounce are refused.

use std::time::Duration;

use airlock_tests::api::{Api, error_field};
use airlock_tests::host::{HostOptions, HostProcess, tokens};
use reqwest::StatusCode;
use serde_json::{Value, json};

fn debounced() -> Value {
    json!({"debounce": {"key": "$.customerId", "periodMs": 400, "maxWaitMs": 1500}})
}

async fn setup() -> (Api, HostProcess) {
    let api = Api::start();
    api.setup("sync", "catalog-sync", debounced()).await;
    let b = HostProcess::start(
        &api.redis.url(),
        HostOptions {
            id: "host-b".into(),
            ..HostOptions::default()
        },
    );
    (api, b)
}

async fn completed_of(api: &Api, customer: &str) -> Vec<Value> {
    completed_in(api, "sync", customer).await
}

async fn completed_in(api: &Api, queue: &str, customer: &str) -> Vec<Value> {
    let (_, page) = api
        .get(
            &format!("/v1/queues/{queue}/jobs?state=completed&limit=500"),
            tokens::ADMIN,
        )
        .await;
    page["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|j| {
            j["data"]["customerId"] == customer || j["data"]["data"]["customerId"] == customer
        })
        .cloned()
        .collect()
}

#[tokio::test]
async fn only_the_last_job_of_a_burst_runs() {
    let (api, _b) = setup().await;
    let mut refs = Vec::new();
    for items in 1..=5 {
        refs.push(
            api.enqueue("sync", json!({"data": {"customerId": "A", "items": items}}))
                .await,
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let other = api
        .enqueue("sync", json!({"data": {"customerId": "B", "items": 9}}))
        .await;
    let done = api.wait_done(&refs[4]).await;
    assert_eq!(done["state"], "completed", "{done}");
    assert_eq!(done["returnvalue"]["synced"], 5, "the last one won");
    assert_eq!(api.wait_done(&other).await["returnvalue"]["synced"], 9);
    for replaced in &refs[..4] {
        let (status, _) = api
            .get(&format!("/v1/jobs/{replaced}"), tokens::ADMIN)
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{replaced} was replaced");
    }
    assert_eq!(completed_of(&api, "A").await.len(), 1);
}

#[tokio::test]
async fn max_wait_bounds_a_steady_stream() {
    let (api, _b) = setup().await;
    // One job every 200 ms for 3 s: the 400 ms quiet time never comes.
    let started = airlock_core::clock::now_ms();
    for items in 0..15 {
        api.enqueue("sync", json!({"data": {"customerId": "C", "items": items}}))
            .await;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let stream_ended = airlock_core::clock::now_ms();
    let ran_during: Vec<u64> = completed_of(&api, "C")
        .await
        .iter()
        .map(|j| j["processedOn"].as_u64().unwrap())
        .filter(|p| *p < stream_ended)
        .collect();
    assert!(
        !ran_during.is_empty(),
        "maxWait let a job run while the stream went on"
    );
    assert!(
        ran_during.iter().all(|p| p - started >= 1000),
        "no job ran before its burst's window: {ran_during:?}"
    );
}

#[tokio::test]
async fn events_debounce_by_key() {
    let (api, _b) = setup().await;
    // An event's job holds the event: its key is under `data`.
    let (status, body) = api
        .put(
            "/v1/queues/sync",
            tokens::ADMIN,
            json!({
                "handler": "catalog-sync",
                "events": ["customer.updated"],
                "debounce": {"key": "$.data.customerId", "periodMs": 400},
            }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let mut last = String::new();
    for n in 1..=3 {
        let (status, delivery) = api
            .post(
                "/v1/events",
                tokens::PRODUCER,
                json!({"name": "customer.updated", "data": {"customerId": "E", "items": n}}),
            )
            .await;
        assert_eq!(status, StatusCode::ACCEPTED, "{delivery}");
        last = delivery["jobs"][0].as_str().unwrap().to_string();
    }
    let done = api.wait_done(&last).await;
    assert_eq!(done["state"], "completed", "{done}");
    assert_eq!(done["data"]["data"]["items"], 3, "the last event won");
    assert_eq!(completed_of(&api, "E").await.len(), 1);
}

#[tokio::test]
async fn options_that_fight_the_debounce_are_refused() {
    let (api, _b) = setup().await;
    let (status, body) = api
        .post(
            "/v1/queues/sync/jobs",
            tokens::PRODUCER,
            json!({"data": {"customerId": "D"}, "opts": {"delay": 100}}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(error_field(&body), "opts.delay");
    let (status, body) = api
        .call(
            reqwest::Method::POST,
            "/v1/queues/sync/jobs",
            Some(tokens::PRODUCER),
            Some(json!({"data": {"customerId": "D"}})),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let (status, body) = api
        .post(
            "/v1/queues/sync/jobs/bulk",
            tokens::PRODUCER,
            json!({"jobs": [{"data": {"customerId": "D"}}, {"data": {"customerId": "D"}, "opts": {"deduplication": {"id": "x"}}}]}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(error_field(&body), "jobs[1].opts.deduplication");
    // A job without the key is not debounced: its own options stand.
    let (status, body) = api
        .post(
            "/v1/queues/sync/jobs",
            tokens::PRODUCER,
            json!({"data": {"items": 1}, "opts": {"delay": 10}}),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
}
