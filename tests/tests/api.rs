//! The HTTP API through a real `airlock serve --listen`: every route with
//! good and bad input, authentication and roles, uploads, SSE, wait, the
//! OpenAPI document.

use std::time::Duration;

use airlock_tests::api::{Api, error_code, error_field};
use airlock_tests::guest_bytes;
use airlock_tests::host::tokens;
use futures::StreamExt;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

#[tokio::test]
async fn tokens_and_roles_guard_every_route_but_health_and_the_document() {
    let api = Api::start();
    let (status, body) = api.call(Method::GET, "/healthz", None, None).await;
    assert_eq!((status, body), (StatusCode::OK, json!("ok")));
    let (status, _) = api.call(Method::GET, "/readyz", None, None).await;
    assert_eq!(status, StatusCode::OK);
    // The OpenAPI document holds no secrets: tools read it without a token.
    let (status, doc) = api.call(Method::GET, "/openapi.json", None, None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(doc["paths"]["/v1/queues/{queue}/jobs"].is_object(), "{doc}");

    for path in ["/v1/queues", "/v1/handlers", "/metrics", "/v1/hosts"] {
        let (status, body) = api.call(Method::GET, path, None, None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{path}");
        assert_eq!(error_code(&body), "unauthorized", "{path}: {body}");
        let (status, _) = api
            .call(Method::GET, path, Some("not-a-real-token-at-all"), None)
            .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{path}");
    }
    // Wrong role → 403.
    let (status, body) = api
        .put("/v1/queues/q", tokens::READER, json!({"handler": "x"}))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(error_code(&body), "forbidden");
    let (status, _) = api
        .upload(
            "x",
            guest_bytes("noop"),
            "application/wasm",
            tokens::PRODUCER,
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = api.get("/metrics", tokens::READER).await;
    assert_eq!(status, StatusCode::OK);
    // Tokens never reach the log.
    assert!(!api.host.log().contains(tokens::ADMIN));
    assert!(!api.host.log().contains(tokens::PRODUCER));
}

/// An API with handler `payment` (the payment example) uploaded.
async fn with_payment_handler() -> Api {
    let api = Api::start();
    let (status, body) = api
        .upload(
            "payment",
            guest_bytes("payment-webhook"),
            "application/wasm",
            tokens::ADMIN,
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["digest"].as_str().unwrap().len(), 64);

    api
}

#[tokio::test]
async fn a_bad_upload_is_refused_with_its_reason_and_nothing_is_stored() {
    let api = with_payment_handler().await;
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("not wasm", b"hello, this is text".to_vec(), "not_wasm"),
        (
            "core module",
            wat::parse_str("(module)").unwrap(),
            "core_module",
        ),
        (
            "wrong world",
            wat::parse_str("(component)").unwrap(),
            "wrong_world",
        ),
        (
            "extra imports",
            wat::parse_str(r#"(component (import "acme:exfil/socket@1.0.0" (instance)))"#).unwrap(),
            "unsupported_imports",
        ),
    ];
    for (what, bytes, code) in cases {
        let (status, body) = api
            .upload("bad", bytes, "application/wasm", tokens::ADMIN)
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{what}: {body}");
        assert_eq!(error_code(&body), code, "{what}: {body}");
    }
    let (_, body) = api
        .upload(
            "bad",
            wat::parse_str(r#"(component (import "acme:exfil/socket@1.0.0" (instance)))"#).unwrap(),
            "application/wasm",
            tokens::ADMIN,
        )
        .await;
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("acme:exfil/socket"),
        "{body}"
    );

    let (status, body) = api
        .upload("bad", guest_bytes("noop"), "text/plain", tokens::ADMIN)
        .await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{body}");
    // Over the 32 MiB cap: the server answers 413 as soon as it knows,
    // which may be before the client finished sending.
    // (A client of its own: the server closes that connection.)
    let oversized = airlock_tests::http_client()
        .post(format!("{}/v1/handlers/big", api.url))
        .bearer_auth(tokens::ADMIN)
        .header("content-type", "application/wasm")
        .body(vec![0u8; 33 << 20])
        .send()
        .await;
    match oversized {
        Ok(resp) => assert_eq!(resp.status(), StatusCode::PAYLOAD_TOO_LARGE),
        Err(e) => assert!(e.is_request() || e.is_body(), "unexpected error: {e}"),
    }
    let (status, body) = api
        .upload(
            "bad name!",
            guest_bytes("noop"),
            "application/wasm",
            tokens::ADMIN,
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(error_field(&body), "name");

    // Nothing bad was stored.
    let (_, list) = api.get("/v1/handlers", tokens::READER).await;
    let names: Vec<&str> = list["handlers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["payment"]);
}

/// A 12 MB upload (the JavaScript noop, with its compiled artifact sent
/// to Redis for the fleet) does not make Redis look down: requests sent
/// while the upload is stored, and right after it, are served, none with
/// `503 unavailable`.
#[tokio::test]
async fn the_api_answers_during_and_right_after_a_large_upload() {
    // Redis as `make run` starts it: with its append-only file.
    let api = Api::start_with_redis(airlock_tests::redis_server::RedisOptions {
        appendonly: true,
        ..Default::default()
    });
    api.setup("payments", "payment-webhook", json!({})).await;
    let bytes = guest_bytes("js_noop");
    assert!(bytes.len() > 12_000_000, "{} bytes", bytes.len());
    for round in 0..3 {
        let uploaded = std::sync::atomic::AtomicBool::new(false);
        let upload = async {
            let name = format!("big-{round}");
            let answer = api
                .upload(&name, bytes.clone(), "application/wasm", tokens::ADMIN)
                .await;
            uploaded.store(true, std::sync::atomic::Ordering::Relaxed);
            answer
        };
        // Every 20 ms until the upload is answered (it compiles first,
        // unless the run's shared cache has the artifact).
        let traffic = async {
            let mut answers = Vec::new();
            while !uploaded.load(std::sync::atomic::Ordering::Relaxed) {
                answers.push(api.get("/v1/queues/payments", tokens::READER).await);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            answers
        };
        let ((status, body), during) = tokio::join!(upload, traffic);
        assert_eq!(status, StatusCode::CREATED, "{body}");
        let mut after = Vec::new();
        for i in 0..20 {
            after.push(
                api.post(
                    "/v1/queues/payments/jobs",
                    tokens::PRODUCER,
                    json!({"data": {"transactionId": format!("tx_{round}_{i}"), "amount": 1, "currency": "EUR"}}),
                )
                .await,
            );
        }
        for (status, body) in during {
            assert_eq!(status, StatusCode::OK, "round {round}, during: {body}");
        }
        for (status, body) in after {
            assert_eq!(status, StatusCode::ACCEPTED, "round {round}, after: {body}");
        }
    }
}

#[tokio::test]
async fn a_handler_keeps_its_versions_and_cannot_be_deleted_while_bound() {
    let api = with_payment_handler().await;
    // Versions and the import/export summary.
    let (status, body) = api
        .upload(
            "payment",
            guest_bytes("noop"),
            "application/wasm",
            tokens::ADMIN,
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (_, details) = api.get("/v1/handlers/payment", tokens::READER).await;
    assert_eq!(details["versions"].as_array().unwrap().len(), 2);
    assert!(
        details["component"]["imports"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i.as_str().unwrap().starts_with("airlock:job/context@0.6")),
        "{details}"
    );
    assert_eq!(details["component"]["exports"], json!(["run"]));
    let (status, _) = api.get("/v1/handlers/nope", tokens::READER).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // Delete: refused while bound.
    let (status, _) = api
        .put(
            "/v1/queues/pay",
            tokens::ADMIN,
            json!({"handler": "payment"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = api
        .call(
            Method::DELETE,
            "/v1/handlers/payment",
            Some(tokens::ADMIN),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    let (status, _) = api
        .call(Method::DELETE, "/v1/queues/pay", Some(tokens::ADMIN), None)
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = api
        .call(
            Method::DELETE,
            "/v1/handlers/payment",
            Some(tokens::ADMIN),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
}

/// A payments binding with its own concurrency, memory cap and retries.
async fn bound_payments() -> Api {
    let api = Api::start();
    api.setup("payments", "payment-webhook", json!({"concurrency": 4, "limits": {"memoryBytes": 33554432}, "defaultJobOptions": {"attempts": 5, "backoff": {"type": "exponential", "delay": 2000}}})).await;
    api
}

#[tokio::test]
async fn a_binding_shows_its_settings_and_a_bad_spec_names_the_field() {
    let api = bound_payments().await;
    let (_, q) = api.get("/v1/queues/payments", tokens::READER).await;
    assert_eq!(q["concurrency"], 4);
    assert_eq!(q["limits"]["memoryBytes"], 33554432);
    assert_eq!(q["counts"]["waiting"], 0);

    for (spec, field) in [
        (
            json!({"handler": "payment-webhook", "concurrency": 0}),
            "concurrency",
        ),
        (
            json!({"handler": "payment-webhook", "limits": {"memoryBytes": 1u64 << 40}}),
            "limits.memoryBytes",
        ),
        (
            json!({"handler": "payment-webhook", "concurency": 3}),
            "concurency",
        ),
        (
            json!({"handler": "payment-webhook", "concurrency": "ten"}),
            "concurrency",
        ),
        (
            json!({"handler": "payment-webhook", "defaultJobOptions": {"priority": 99999999}}),
            "defaultJobOptions.priority",
        ),
    ] {
        let (status, body) = api
            .put("/v1/queues/payments", tokens::ADMIN, spec.clone())
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{spec}: {body}");
        assert_eq!(error_field(&body), field, "{spec}: {body}");
    }
    // A handler that does not exist is a reference to nothing: 404.
    let (status, body) = api
        .put(
            "/v1/queues/payments",
            tokens::ADMIN,
            json!({"handler": "ghost"}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert_eq!(error_field(&body), "handler", "{body}");
    // The misspelled field is named in the message.
    let (_, body) = api
        .put(
            "/v1/queues/payments",
            tokens::ADMIN,
            json!({"handler": "payment-webhook", "concurency": 3}),
        )
        .await;
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("concurency"),
        "{body}"
    );
    let (status, _) = api
        .put(
            "/v1/queues/bad%20name",
            tokens::ADMIN,
            json!({"handler": "payment-webhook"}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, body) = api
        .call(
            Method::PUT,
            "/v1/queues/payments",
            Some(tokens::ADMIN),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{body}");
    let (status, _) = api.get("/v1/queues/unknown", tokens::READER).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn pause_holds_new_jobs_and_drain_removes_them() {
    let api = bound_payments().await;
    let (status, body) = api
        .post("/v1/queues/payments/pause", tokens::ADMIN, json!({}))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["counts"]["paused"], true);
    let (_, accepted) = api
        .post(
            "/v1/queues/payments/jobs",
            tokens::PRODUCER,
            json!({"data": {"transactionId": "t", "amount": 1}}),
        )
        .await;
    let (_, list) = api.get("/v1/queues", tokens::READER).await;
    assert_eq!(list["queues"][0]["counts"]["waiting"], 1);

    let (status, body) = api
        .post(
            "/v1/queues/payments/drain",
            tokens::ADMIN,
            json!({"confirm": "wrong"}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error_field(&body), "confirm");
    let (status, body) = api
        .post(
            "/v1/queues/payments/drain",
            tokens::ADMIN,
            json!({"confirm": "payments"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["counts"]["waiting"], 0);
    let (status, _) = api
        .get(
            &format!("/v1/jobs/{}", accepted["ref"].as_str().unwrap()),
            tokens::ADMIN,
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "drained");
}

#[tokio::test]
async fn clean_removes_finished_jobs_and_obliterate_the_queue() {
    let api = bound_payments().await;
    let (status, _) = api
        .post("/v1/queues/payments/resume", tokens::ADMIN, json!({}))
        .await;
    assert_eq!(status, StatusCode::OK);
    let (_, accepted) = api
        .post(
            "/v1/queues/payments/jobs",
            tokens::PRODUCER,
            json!({"data": {"transactionId": "t2", "amount": 1}}),
        )
        .await;
    api.wait_done(accepted["ref"].as_str().unwrap()).await;
    let (status, body) = api
        .post(
            "/v1/queues/payments/clean",
            tokens::ADMIN,
            json!({"confirm": "payments", "state": "completed"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["removed"].as_array().unwrap().len(), 1);
    let (status, body) = api
        .post(
            "/v1/queues/payments/clean",
            tokens::ADMIN,
            json!({"confirm": "payments", "state": "finished"}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error_field(&body), "state");

    let (status, _) = api
        .post(
            "/v1/queues/payments/obliterate",
            tokens::ADMIN,
            json!({"confirm": "payments"}),
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = api.get("/v1/queues/payments", tokens::READER).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

/// A payments binding whose jobs retry once, 10 ms apart.
async fn payments_api() -> Api {
    let api = Api::start();
    api.setup(
        "payments",
        "payment-webhook",
        json!({"defaultJobOptions": {"attempts": 2, "backoff": {"type": "fixed", "delay": 10}}}),
    )
    .await;
    api
}

#[tokio::test]
async fn an_enqueued_job_runs_and_its_producer_and_readers_see_it() {
    let api = payments_api().await;
    let (status, accepted) = api
        .post(
            "/v1/queues/payments/jobs",
            tokens::PRODUCER,
            json!({"name": "payment", "data": {"transactionId": "tx_1", "amount": 12}}),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{accepted}");
    let job_ref = accepted["ref"].as_str().unwrap().to_string();
    assert_eq!(
        job_ref,
        format!("payments:{}", accepted["id"].as_str().unwrap())
    );
    let job = api.wait_recorded(&job_ref).await;
    assert_eq!(job["state"], "completed");
    assert_eq!(job["returnvalue"]["ledgerRecordId"], "led_tx_1");
    let (status, details) = api
        .get(&format!("/v1/jobs/{job_ref}"), tokens::PRODUCER)
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(details["progress"], 100);
    assert_eq!(details["producer"], "web");
    assert!(details["metrics"]["fuelUsed"].as_u64().unwrap() > 0);
    assert!(details["handlerDigest"].as_str().is_some());
    assert!(
        details["logs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l.as_str().unwrap().contains("processing transaction tx_1")),
        "{details}"
    );

    // Another producer cannot see it; readers can.
    let (status, _) = api
        .get(&format!("/v1/jobs/{job_ref}"), tokens::OTHER_PRODUCER)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = api
        .get(&format!("/v1/jobs/{job_ref}"), tokens::READER)
        .await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn a_bad_enqueue_names_the_field_and_adds_nothing() {
    let api = payments_api().await;
    // Bad input names the field and enqueues nothing.
    for (body, code, field) in [
        (json!({"name": "x"}), StatusCode::BAD_REQUEST, "body"),
        (
            json!({"data": {}, "opts": {"priority": 3_000_000}}),
            StatusCode::BAD_REQUEST,
            "opts.priority",
        ),
        (
            json!({"data": {}, "opts": {"attempts": "three"}}),
            StatusCode::BAD_REQUEST,
            "opts.attempts",
        ),
        (
            json!({"data": {}, "opts": {"jobId": "42"}}),
            StatusCode::BAD_REQUEST,
            "opts.jobId",
        ),
        (
            json!({"data": {}, "opts": {"limits": {"memoryBytes": 1u64 << 30}}}),
            StatusCode::BAD_REQUEST,
            "opts.limits.memoryBytes",
        ),
        (
            json!({"data": {}, "extra": 1}),
            StatusCode::BAD_REQUEST,
            "extra",
        ),
    ] {
        let (status, resp) = api
            .post("/v1/queues/payments/jobs", tokens::PRODUCER, body.clone())
            .await;
        assert_eq!(status, code, "{body}: {resp}");
        assert_eq!(error_field(&resp), field, "{body}: {resp}");
    }
    let (status, resp) = api
        .post(
            "/v1/queues/nowhere/jobs",
            tokens::PRODUCER,
            json!({"data": {}}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{resp}");
    let big = "x".repeat(1_100_000);
    let (status, resp) = api
        .post(
            "/v1/queues/payments/jobs",
            tokens::PRODUCER,
            json!({"data": {"blob": big}}),
        )
        .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{resp}");
    let (status, _) = api
        .post(
            "/v1/queues/payments/jobs",
            tokens::READER,
            json!({"data": {}}),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    // Bulk: one bad job rejects all, naming which.
    let before = api.get("/v1/queues/payments", tokens::ADMIN).await.1["counts"].clone();
    let (status, resp) = api
        .post(
            "/v1/queues/payments/jobs/bulk",
            tokens::PRODUCER,
            json!({"jobs": [{"data": {"transactionId": "b1", "amount": 1}}, {"data": {}, "opts": {"priority": -1}}]}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{resp}");
    assert_eq!(error_field(&resp), "jobs[1].opts.priority");
    let (status, resp) = api
        .post(
            "/v1/queues/payments/jobs/bulk",
            tokens::PRODUCER,
            json!({"jobs": [{"data": {}, "opts": {"priority": 5_000_000}}, {"data": {}}]}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{resp}");
    assert_eq!(error_field(&resp), "jobs[0].opts.priority");
    assert_eq!(
        api.get("/v1/queues/payments", tokens::ADMIN).await.1["counts"],
        before,
        "nothing was enqueued"
    );
}

#[tokio::test]
async fn bulk_jobs_list_by_state_in_pages_retry_and_count_in_metrics() {
    let api = payments_api().await;
    let jobs: Vec<Value> = (0..5)
        .map(|i| json!({"data": {"transactionId": format!("b{i}"), "amount": i}}))
        .collect();
    let (status, resp) = api
        .post(
            "/v1/queues/payments/jobs/bulk",
            tokens::PRODUCER,
            json!({"jobs": jobs}),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{resp}");
    let refs: Vec<String> = resp["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["ref"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(refs.len(), 5);
    for r in &refs {
        api.wait_done(r).await;
    }

    // Listing with pagination: b0 (amount 0) failed, the rest completed.
    let (status, page) = api
        .get(
            "/v1/queues/payments/jobs?state=completed&limit=2",
            tokens::PRODUCER,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!(page["jobs"].as_array().unwrap().len(), 2);
    assert_eq!(page["next"], 2);
    let (_, failed) = api
        .get("/v1/queues/payments/jobs?state=failed", tokens::PRODUCER)
        .await;
    assert_eq!(failed["jobs"].as_array().unwrap().len(), 1, "{failed}");
    let failed_ref = format!("payments:{}", failed["jobs"][0]["id"].as_str().unwrap());
    assert_eq!(
        failed["jobs"][0]["failedReason"],
        "guest_fatal: Invalid transaction amount"
    );
    let (_, other) = api
        .get(
            "/v1/queues/payments/jobs?state=failed",
            tokens::OTHER_PRODUCER,
        )
        .await;
    assert_eq!(
        other["jobs"],
        json!([]),
        "producers only list their own jobs"
    );
    let (status, resp) = api
        .get("/v1/queues/payments/jobs?state=finished", tokens::READER)
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error_field(&resp), "state");

    // Retry a failed job; a completed... retry of a waiting one is refused.
    let (status, resp) = api
        .post(
            &format!("/v1/jobs/{failed_ref}/retry"),
            tokens::PRODUCER,
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{resp}");
    let job = api.wait_done(&failed_ref).await;
    assert_eq!(job["state"], "failed");
    assert_eq!(job["attemptsMade"], 2);

    // Metrics count the runs.
    let (_, metrics) = api.get("/metrics", tokens::READER).await;
    let text = metrics.as_str().unwrap();
    assert!(
        text.contains("airlock_jobs_total{queue=\"payments\",outcome=\"completed\"}"),
        "{text}"
    );
    assert!(
        text.contains("airlock_job_failures_total{queue=\"payments\",kind=\"guest_fatal\"}"),
        "{text}"
    );
    assert!(
        text.contains("airlock_queue_jobs{queue=\"payments\",state=\"completed\"}"),
        "{text}"
    );
}

#[tokio::test]
async fn a_delayed_job_is_promoted_or_removed() {
    let api = payments_api().await;
    // Promote a delayed job; remove another.
    let (_, delayed) = api
        .post(
            "/v1/queues/payments/jobs",
            tokens::PRODUCER,
            json!({"data": {"transactionId": "late", "amount": 1}, "opts": {"delay": 3_600_000}}),
        )
        .await;
    let delayed_ref = delayed["ref"].as_str().unwrap();
    let (status, resp) = api
        .post(
            &format!("/v1/jobs/{delayed_ref}/promote"),
            tokens::PRODUCER,
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{resp}");
    assert_eq!(api.wait_done(delayed_ref).await["state"], "completed");
    let (status, resp) = api
        .post(
            &format!("/v1/jobs/{delayed_ref}/promote"),
            tokens::PRODUCER,
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{resp}");
    let (_, doomed) = api
        .post(
            "/v1/queues/payments/jobs",
            tokens::PRODUCER,
            json!({"data": {}, "opts": {"delay": 3_600_000}}),
        )
        .await;
    let doomed_ref = doomed["ref"].as_str().unwrap();
    let (status, _) = api
        .call(
            Method::DELETE,
            &format!("/v1/jobs/{doomed_ref}"),
            Some(tokens::PRODUCER),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = api
        .get(&format!("/v1/jobs/{doomed_ref}"), tokens::PRODUCER)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, resp) = api.get("/v1/jobs/no-colon-here", tokens::READER).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error_field(&resp), "ref");
}

#[tokio::test]
async fn wait_times_out_cleanly_and_sse_streams_progress_then_completion() {
    let api = Api::start();
    api.setup("payments", "payment-webhook", json!({})).await;

    // A job on a paused queue never finishes: wait answers in time.
    api.post("/v1/queues/payments/pause", tokens::ADMIN, json!({}))
        .await;
    let (_, accepted) = api
        .post(
            "/v1/queues/payments/jobs",
            tokens::PRODUCER,
            json!({"data": {"transactionId": "w", "amount": 1}}),
        )
        .await;
    let job_ref = accepted["ref"].as_str().unwrap().to_string();
    let started = std::time::Instant::now();
    let (status, body) = api
        .get(
            &format!("/v1/jobs/{job_ref}/wait?timeout=700ms"),
            tokens::PRODUCER,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["finished"], false);
    assert_eq!(body["job"]["state"], "waiting");
    assert!(started.elapsed() >= Duration::from_millis(700));
    let (status, body) = api
        .get(
            &format!("/v1/jobs/{job_ref}/wait?timeout=soon"),
            tokens::PRODUCER,
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error_field(&body), "timeout");

    // The job's SSE stream: its state first, then progress, then completion.
    let resp = api
        .http
        .get(format!("{}/v1/jobs/{job_ref}/events", api.url))
        .bearer_auth(tokens::PRODUCER)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let mut events = eventsource_stream::Eventsource::eventsource(resp.bytes_stream());
    api.post("/v1/queues/payments/resume", tokens::ADMIN, json!({}))
        .await;
    let mut seen = Vec::new();
    let collect = async {
        while let Some(event) = events.next().await {
            let event = event.unwrap();
            let data: Value = serde_json::from_str(&event.data).unwrap();
            seen.push((event.event.clone(), data));
            if event.event == "completed" || event.event == "failed" {
                break;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(60), collect)
        .await
        .expect("stream ended");
    let names: Vec<&str> = seen.iter().map(|(e, _)| e.as_str()).collect();
    assert_eq!(names.first(), Some(&"state"), "{names:?}");
    assert_eq!(names.last(), Some(&"completed"), "{names:?}");
    let progress: Vec<Value> = seen
        .iter()
        .filter(|(e, _)| e == "progress")
        .map(|(_, d)| d["data"]["progress"].clone())
        .collect();
    assert_eq!(progress, [json!(10), json!(50), json!(100)], "{seen:?}");
    let completed = &seen.last().unwrap().1;
    assert_eq!(completed["data"]["returnvalue"]["ledgerRecordId"], "led_w");

    // A finished job's stream is just its state; wait returns at once.
    let resp = api
        .http
        .get(format!("{}/v1/jobs/{job_ref}/events", api.url))
        .bearer_auth(tokens::PRODUCER)
        .send()
        .await
        .unwrap();
    let text = tokio::time::timeout(Duration::from_secs(10), resp.text())
        .await
        .expect("stream closed")
        .unwrap();
    assert!(text.contains("event: state"), "{text}");
    assert_eq!(api.wait_done(&job_ref).await["state"], "completed");

    // The queue stream sees other jobs' events.
    let resp = api
        .http
        .get(format!("{}/v1/queues/payments/events", api.url))
        .bearer_auth(tokens::READER)
        .send()
        .await
        .unwrap();
    let mut events = eventsource_stream::Eventsource::eventsource(resp.bytes_stream());
    let (_, accepted) = api
        .post(
            "/v1/queues/payments/jobs",
            tokens::PRODUCER,
            json!({"data": {"transactionId": "q", "amount": 1}}),
        )
        .await;
    let id = accepted["id"].as_str().unwrap().to_string();
    let mut kinds = Vec::new();
    let collect = async {
        while let Some(event) = events.next().await {
            let event = event.unwrap();
            let data: Value = serde_json::from_str(&event.data).unwrap();
            if data["jobId"] == json!(id) {
                kinds.push(event.event.clone());
                if event.event == "completed" {
                    break;
                }
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(60), collect)
        .await
        .expect("queue stream");
    assert!(
        kinds.contains(&"added".to_string()) && kinds.contains(&"active".to_string()),
        "{kinds:?}"
    );
}

#[tokio::test]
async fn the_openapi_document_is_valid_and_covers_every_route() {
    let api = Api::start();
    let (status, doc) = api.get("/openapi.json", tokens::READER).await;
    assert_eq!(status, StatusCode::OK);
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    // The dashboard's types are generated from a copy of this document
    // (host/ui/openapi.json → src/api-types.ts, checked by `npm run check`);
    // the copy must be what the server serves.
    let copy: Value = serde_json::from_str(
        &std::fs::read_to_string(airlock_tests::workspace_root().join("host/ui/openapi.json"))
            .expect("read host/ui/openapi.json"),
    )
    .expect("host/ui/openapi.json is JSON");
    assert!(
        copy == doc,
        "host/ui/openapi.json is not the served document: run host/scripts/refresh-openapi.sh"
    );

    let expected = airlock_tests::api::ROUTES;
    let paths = doc["paths"].as_object().unwrap();
    let documented: usize = paths.values().map(|p| p.as_object().unwrap().len()).sum();
    for (method, path) in expected {
        let op = &doc["paths"][path][method];
        assert!(op.is_object(), "{method} {path} is not documented");
        assert!(
            op["responses"].is_object(),
            "{method} {path} has no responses"
        );
        // Every documented route is served: an unauthenticated call gets
        // 401 (or 200 for health), never 404/405.
        let concrete = path
            .replace("{name}", "x")
            .replace("{queue}", "q")
            .replace("{ref}", "q:1")
            .replace("{id}", "s");
        let m = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
        let (status, _) = api.call(m, &concrete, None, None).await;
        assert!(
            status != StatusCode::NOT_FOUND && status != StatusCode::METHOD_NOT_ALLOWED,
            "{method} {path} is documented but not served ({status})"
        );
    }
    assert_eq!(
        documented,
        expected.len(),
        "the document has routes this test does not know"
    );
    assert!(doc["components"]["securitySchemes"]["bearer"].is_object());

    // Validate against the OpenAPI specification with an independent
    // validator (Python's openapi-spec-validator).
    let file = std::env::temp_dir().join(format!("airlock-openapi-{}.json", std::process::id()));
    std::fs::write(&file, serde_json::to_vec(&doc).unwrap()).unwrap();
    let out = std::process::Command::new(airlock_tests::python_tool("python"))
        .args(["-m", "openapi_spec_validator"])
        .arg(&file)
        .output()
        .expect("python");
    assert!(
        out.status.success(),
        "openapi-spec-validator rejected the document:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn out_of_range_options_and_malformed_requests_get_json_errors_naming_the_field() {
    let api = Api::start();
    api.setup("payments", "payment-webhook", json!({})).await;
    let enqueue = |opts: Value| {
        api.post(
            "/v1/queues/payments/jobs",
            tokens::PRODUCER,
            json!({"data": {"transactionId": "t", "amount": 1}, "opts": opts}),
        )
    };
    for (opts, field) in [
        (json!({"delay": 1u64 << 63}), "opts.delay"),
        (
            json!({"attempts": 3, "backoff": {"type": "fixed", "delay": 1u64 << 53}}),
            "opts.backoff.delay",
        ),
        (
            json!({"attempts": 60, "backoff": {"type": "exponential", "delay": 1000}}),
            "opts.backoff.delay",
        ),
        (
            json!({"deduplication": {"id": "d", "ttl": i64::MAX}}),
            "opts.deduplication.ttl",
        ),
        (
            json!({"deduplication": {"id": "d", "ttl": u64::MAX}}),
            "opts.deduplication.ttl",
        ),
        (json!({"attempts": 3_000_000_000u64}), "opts.attempts"),
        (
            json!({"removeOnComplete": {"age": 1, "extra": 2}}),
            "opts.removeOnComplete",
        ),
    ] {
        let (status, body) = enqueue(opts.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{opts}: {body}");
        assert!(
            error_field(&body).starts_with(field),
            "{opts}: expected field {field}: {body}"
        );
    }
    // Trailing bytes after the JSON document are refused, not ignored.
    let resp = api
        .http
        .post(format!("{}/v1/queues/payments/jobs", api.url))
        .bearer_auth(tokens::PRODUCER)
        .header("content-type", "application/json")
        .body(r#"{"data": {}} {"data": {}}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(error_field(&body), "body", "{body}");

    // Every refusal is the JSON error shape, axum's own included.
    let too_big = vec![0u8; (32 << 20) + 1];
    let (status, body) = api
        .upload("big", too_big, "application/wasm", tokens::ADMIN)
        .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(error_code(&body), "body_too_large", "{body}");
    for (path, field) in [
        ("/v1/queues/payments/jobs?state=sleeping", "state"),
        ("/v1/queues/payments/jobs?state=waiting&limit=abc", "limit"),
        ("/v1/queues/payments/jobs?state=waiting&limit=0", "limit"),
        ("/v1/jobs/payments:1/wait?timeout=soon", "timeout"),
    ] {
        let (status, body) = api.get(path, tokens::READER).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path}: {body}");
        assert_eq!(error_field(&body), field, "{path}: {body}");
    }
    let (status, body) = api.get("/v1/nothing-here", tokens::READER).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(error_code(&body), "not_found", "{body}");
    let (status, body) = api
        .call(Method::PATCH, "/v1/queues", Some(tokens::READER), None)
        .await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(error_code(&body), "method_not_allowed", "{body}");

    // Reading an unknown queue is a 404 and writes nothing to Redis.
    let before = api.redis.keys("*").len();
    let (status, body) = api
        .get(
            "/v1/queues/nobody-binds-this/jobs?state=waiting",
            tokens::READER,
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert!(api.redis.keys("bull:nobody-binds-this:*").is_empty());
    assert_eq!(api.redis.keys("*").len(), before);
}

#[tokio::test]
async fn a_failed_obliterate_leaves_the_queue_running() {
    let api = Api::start();
    api.setup(
        "spin",
        "hostile-infinite-loop",
        json!({"limits": {"timeoutMs": 4000, "fuel": 1_000_000_000_000u64}}),
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
    api.wait_until(&job_ref, "active", |job| job["state"] == "active")
        .await;
    // BullMQ refuses to obliterate a queue with active jobs (without force).
    let (status, body) = api
        .post(
            "/v1/queues/spin/obliterate",
            tokens::ADMIN,
            json!({"confirm": "spin"}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    let (_, queue) = api.get("/v1/queues/spin", tokens::READER).await;
    assert_eq!(queue["counts"]["paused"], false, "{queue}");
}

#[tokio::test]
async fn job_data_reaches_the_guest_as_the_wit_promises() {
    let api = Api::start();
    api.setup("probe", "data-probe", json!({})).await;
    let api = &api;
    let raw_of = |body: &'static str| async move {
        let resp = api
            .http
            .post(format!("{}/v1/queues/probe/jobs", api.url))
            .bearer_auth(tokens::PRODUCER)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::ACCEPTED);
        let accepted: Value = resp.json().await.unwrap();
        let done = api.wait_done(accepted["ref"].as_str().unwrap()).await;
        assert_eq!(done["state"], "completed", "{done}");
        done["returnvalue"]["raw"].as_str().unwrap().to_string()
    };
    // Compact JSON arrives byte for byte, 64-bit integers and key order too.
    let compact = r#"{"n":12345678901234567890,"m":-9223372036854775808,"s":"é ☃","z":{"b":1,"a":[true,null,-5,1.5]}}"#;
    assert_eq!(
        raw_of(r#"{"data":{"n":12345678901234567890,"m":-9223372036854775808,"s":"é ☃","z":{"b":1,"a":[true,null,-5,1.5]}}}"#).await,
        compact
    );
    // Other spellings arrive re-encoded, as the WIT says.
    assert_eq!(
        raw_of(r#"{"data": { "e" : 1e2, "u": "\u00e9", "w" : [ 1 , 2 ] } }"#).await,
        r#"{"e":100.0,"u":"é","w":[1,2]}"#
    );

    // A flow's child is told its parent (`job-info.parent`); the parent,
    // and a job outside a flow, are told none.
    let (status, flow) = api
        .post(
            "/v1/flows",
            tokens::PRODUCER,
            json!({
                "name": "parent", "queue": "probe", "data": {},
                "children": [{"name": "child", "queue": "probe", "data": {"n": 1}}],
            }),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{flow}");
    let child = api
        .wait_done(flow["children"][0]["ref"].as_str().unwrap())
        .await;
    assert_eq!(child["returnvalue"]["parent"], flow["ref"], "{child}");
    let parent = api.wait_done(flow["ref"].as_str().unwrap()).await;
    assert_eq!(parent["returnvalue"]["parent"], Value::Null, "{parent}");
}
