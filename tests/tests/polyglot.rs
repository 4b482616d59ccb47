//! The TypeScript (StarlingMonkey and QuickJS) and Python ports of the
//! examples, through a real host and Redis, held to what the Rust examples
//! are held to (the order workflow's cases run the Rust original too): results, progress, logs (stdout too), fatal vs retry, steps
//! replayed after a host kill, durable sleeps, KV idempotency, outbound
//! HTTP with config and a secret, and hostile guests stopped by fuel,
//! memory and the deadline. Built by `make guests` (`jobs/js/build.sh`,
//! `jobs/python/build.sh`) as `js-*`, `js-*-qjs` and `py-*`.

use std::time::Duration;

use airlock_tests::api::Api;
use airlock_tests::host::{HostOptions, HostProcess, tokens};
use airlock_tests::mock_gateway::MockGateway;
use reqwest::StatusCode;
use serde_json::{Value, json};

const FINISH: Duration = Duration::from_secs(90);

async fn job(api: &Api, job_ref: &str) -> Value {
    let (status, body) = api.get(&format!("/v1/jobs/{job_ref}"), tokens::ADMIN).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

async fn wait_for(api: &Api, job_ref: &str, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
    api.wait_until_within(job_ref, what, FINISH, pred).await
}

async fn enqueue(api: &Api, queue: &str, body: Value) -> String {
    let (status, accepted) = api
        .post(&format!("/v1/queues/{queue}/jobs"), tokens::PRODUCER, body)
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{accepted}");
    accepted["ref"].as_str().unwrap().to_string()
}

fn logs(job: &Value) -> Vec<String> {
    job["logs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap().to_string())
        .collect()
}

/// The payment webhook: result, progress, log lines, and a bad amount
/// failing fatally on its first attempt.
async fn payment_webhook(guest: &str) {
    let api = Api::start();
    api.setup("payments", guest, json!({})).await;
    let ok = enqueue(
        &api,
        "payments",
        json!({"data": {"transactionId": "tx_1", "amount": 42.5, "currency": "EUR"}}),
    )
    .await;
    let done = api.wait_recorded(&ok).await;
    assert_eq!(done["state"], "completed", "{guest}: {done}");
    assert_eq!(
        done["returnvalue"],
        json!({"processed": true, "ledgerRecordId": "led_tx_1"}),
        "{guest}"
    );
    assert_eq!(done["progress"], 100, "{guest}");
    assert!(done["metrics"]["fuelUsed"].as_u64().unwrap() > 0, "{done}");
    let lines = logs(&job(&api, &ok).await);
    for expected in [
        "processing transaction tx_1 for 42.5 EUR",
        "recorded ledger entry led_tx_1",
    ] {
        assert!(
            lines.iter().any(|l| l.contains(expected)),
            "{guest}: no `{expected}` in {lines:?}"
        );
    }

    let bad = enqueue(
        &api,
        "payments",
        json!({"data": {"transactionId": "tx_2", "amount": 0},
               "opts": {"attempts": 3, "backoff": {"type": "fixed", "delay": 10}}}),
    )
    .await;
    let failed = api.wait_done(&bad).await;
    assert_eq!(failed["state"], "failed", "{guest}: {failed}");
    assert_eq!(failed["attemptsMade"], 1, "{guest}: fatal is never retried");
    assert_eq!(
        failed["failedReason"], "guest_fatal: Invalid transaction amount",
        "{guest}"
    );
}

#[tokio::test]
async fn typescript_payment_webhook() {
    payment_webhook("js-payment-webhook").await;
}

#[tokio::test]
async fn typescript_payment_webhook_on_quickjs() {
    payment_webhook("js-payment-webhook-qjs").await;
}

#[tokio::test]
async fn python_payment_webhook() {
    payment_webhook("py-payment-webhook").await;
}

/// The order workflow: a durable sleep parks the job (no attempt used),
/// and a host killed between two steps leaves the charge recorded once.
async fn order_workflow(guest: &str) {
    let mut api = Api::start();
    // The pause between the steps spins on the clock: the JavaScript port
    // burnt its default budget of 2e9 fuel in 0.6 s of it.
    api.setup(
        "orders",
        guest,
        json!({"limits": {"fuel": 100_000_000_000u64}}),
    )
    .await;
    let kv = |order: &str| format!("bull:airlock:kv:{guest}:charges:{order}");

    let sleeper = enqueue(
        &api,
        "orders",
        json!({"data": {"orderId": "A", "amount": 10, "reviewDelayMs": 1500}}),
    )
    .await;
    let parked = wait_for(&api, &sleeper, "delayed", |j| j["state"] == "delayed").await;
    assert_eq!(
        parked["attemptsMade"], 0,
        "{guest}: a sleep uses no attempt"
    );
    assert!(
        parked["steps"]
            .as_array()
            .unwrap()
            .contains(&json!("charge-payment")),
        "{guest}: {parked}"
    );
    let woke = api.wait_done(&sleeper).await;
    assert_eq!(woke["state"], "completed", "{guest}: {woke}");
    assert_eq!(woke["returnvalue"]["chargeId"], "ch_A", "{guest}: {woke}");
    assert_eq!(woke["returnvalue"]["reviewRequested"], true, "{guest}");
    assert!(woke["finishedOn"].as_u64().unwrap() - woke["timestamp"].as_u64().unwrap() >= 1500);
    assert_eq!(
        api.redis.cli(&["GET", &kv("A")]),
        "1",
        "{guest}: charged once"
    );

    let order = enqueue(
        &api,
        "orders",
        json!({"data": {"orderId": "K", "amount": 20, "reviewDelayMs": 0, "pauseAfterChargeMs": 4000}}),
    )
    .await;
    wait_for(&api, &order, "charged", |j| {
        j["steps"]
            .as_array()
            .unwrap()
            .contains(&json!("charge-payment"))
    })
    .await;
    api.host.kill9();
    let second = HostProcess::start(
        &api.redis.url(),
        HostOptions {
            id: "second".into(),
            api: true,
            ..HostOptions::default()
        },
    );
    api.url = second.api_url();
    let done = api.wait_done(&order).await;
    assert_eq!(done["state"], "completed", "{guest}: {done}");
    assert_eq!(done["processedByHost"], "second");
    assert!(done["stalledCount"].as_u64().unwrap() >= 1, "{done}");
    assert_eq!(
        api.redis.cli(&["GET", &kv("K")]),
        "1",
        "{guest}: the charge ran exactly once"
    );
}

/// The Rust original, held to the same: its host-kill case lived in
/// `workflows.rs` as a copy of this one.
#[tokio::test]
async fn rust_order_workflow_sleeps_and_survives_a_host_kill() {
    order_workflow("order-workflow").await;
}

#[tokio::test]
async fn typescript_order_workflow_sleeps_and_survives_a_host_kill() {
    order_workflow("js-order-workflow").await;
}

#[tokio::test]
async fn python_order_workflow_sleeps_and_survives_a_host_kill() {
    order_workflow("py-order-workflow").await;
}

/// The e-mail handler in TypeScript, as `make run` wires the Rust one:
/// `fetch` to the gateway named by its config with the secret's value put in
/// by the host, and a second delivery of the same mail skipped through KV.
#[tokio::test]
async fn typescript_email_delivery_through_the_gateway_with_a_secret() {
    const KEY: &str = "sk_test_gateway_key_51c0";
    let gateway = MockGateway::start(KEY);
    let api = Api::start_with(&[
        "--egress-allow",
        &gateway.url,
        "--egress-allow-network",
        "127.0.0.1/32",
        "--secrets-key",
        "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
    ]);
    api.setup(
        "emails",
        "js-email-delivery",
        json!({"egress": [gateway.url], "config": {"GATEWAY_URL": gateway.url}}),
    )
    .await;
    let (status, body) = api
        .put(
            "/v1/queues/emails/secrets/MAIL_API_KEY",
            tokens::ADMIN,
            json!({"value": KEY, "allow": [gateway.url]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let mail = json!({"data": {"to": "ada@example.com", "subject": "Welcome", "idempotencyKey": "welcome-ada"}});
    let first = api
        .wait_recorded(&enqueue(&api, "emails", mail.clone()).await)
        .await;
    assert_eq!(first["state"], "completed", "{first}");
    assert_eq!(first["returnvalue"]["status"], "sent", "{first}");
    let id = first["returnvalue"]["messageId"].as_str().unwrap();
    assert!(
        id.starts_with("msg_") && id.len() == 12,
        "the gateway's id: {first}"
    );
    assert_eq!(first["metrics"]["httpRequests"], 1, "{first}");
    assert!(!first.to_string().contains(KEY));

    let second = api.wait_done(&enqueue(&api, "emails", mail).await).await;
    assert_eq!(
        second["returnvalue"]["status"], "skipped_duplicate",
        "{second}"
    );
    assert_eq!(
        api.redis.keys("bull:airlock:kv:js-email-delivery:*"),
        ["bull:airlock:kv:js-email-delivery:email-sent:welcome-ada"]
    );
}

/// The payment handlers record their entry in the ledger over HTTP when the
/// binding names one (`fetch` in TypeScript, `ctx.http` in Python).
#[tokio::test]
async fn typescript_and_python_payments_post_to_the_ledger() {
    let gateway = MockGateway::start("unused");
    let api = Api::start_with(&[
        "--egress-allow",
        &gateway.url,
        "--egress-allow-network",
        "127.0.0.1/32",
    ]);
    for (queue, guest) in [("js", "js-payment-webhook"), ("py", "py-payment-webhook")] {
        api.setup(
            queue,
            guest,
            json!({"egress": [gateway.url], "config": {"LEDGER_URL": gateway.url}}),
        )
        .await;
        let tx = format!("tx_{queue}");
        let done = api
            .wait_recorded(
                &enqueue(
                    &api,
                    queue,
                    json!({"data": {"transactionId": tx, "amount": 5}}),
                )
                .await,
            )
            .await;
        assert_eq!(done["state"], "completed", "{guest}: {done}");
        assert_eq!(
            done["returnvalue"]["ledgerRecordId"],
            format!("led_{tx}"),
            "{guest}: {done}"
        );
        assert_eq!(done["metrics"]["httpRequests"], 1, "{guest}: {done}");
    }

    // A ledger outside the binding's egress list: the POST (with its body)
    // is refused and the job fails at once (fatal: a retry would be refused
    // again) with the host's reason, not a trap or a bare network error —
    // the SDKs ask the host why (`context.http-refusals`) in every
    // language.
    let reason = "POST http://127.0.0.1:9/v1/ledger is not in this queue's egress list";
    for (queue, guest) in [
        ("rust-out", "payment-webhook"),
        ("js-out", "js-payment-webhook"),
        ("py-out", "py-payment-webhook"),
    ] {
        api.setup(
            queue,
            guest,
            json!({"egress": [gateway.url], "config": {"LEDGER_URL": "http://127.0.0.1:9"}}),
        )
        .await;
        let job_ref = enqueue(
            &api,
            queue,
            json!({"data": {"transactionId": "tx_out", "amount": 5},
                   "opts": {"attempts": 3, "backoff": {"type": "fixed", "delay": 10}}}),
        )
        .await;
        let failed = api.wait_done(&job_ref).await;
        assert_eq!(failed["state"], "failed", "{guest}: {failed}");
        let failed_reason = failed["failedReason"].as_str().unwrap();
        assert!(
            failed_reason.starts_with("guest_fatal: ") && failed_reason.contains(reason),
            "{guest}: {failed}"
        );
        assert_eq!(failed["attemptsMade"], 1, "{guest}: retried: {failed}");
        let lines = logs(&job(&api, &job_ref).await);
        assert!(
            lines
                .iter()
                .any(|l| l.contains("HTTP request refused: POST http://127.0.0.1:9/v1/ledger")),
            "{guest}: {lines:?}"
        );
    }
}

/// Hostile guests in both languages are stopped with their true kind, and
/// the host goes on running good jobs.
#[tokio::test]
async fn hostile_javascript_and_python_guests_are_stopped() {
    let api = Api::start();
    let cases = [
        (
            "js-hostile-infinite-loop",
            json!({"limits": {"fuel": 200_000_000u64}}),
            "fuel_exhausted",
        ),
        (
            "py-hostile-infinite-loop",
            json!({"limits": {"fuel": 200_000_000u64}}),
            "fuel_exhausted",
        ),
        (
            "js-hostile-infinite-loop",
            json!({"metered": false, "limits": {"timeoutMs": 1000}}),
            "timeout",
        ),
        ("js-hostile-memory-bomb", json!({}), "memory_limit"),
        ("py-hostile-memory-bomb", json!({}), "memory_limit"),
    ];
    for (i, (guest, spec, kind)) in cases.into_iter().enumerate() {
        let queue = format!("hostile-{i}");
        api.setup(&queue, guest, spec).await;
        let failed = api
            .wait_done(&enqueue(&api, &queue, json!({"data": {}, "opts": {"attempts": 3}})).await)
            .await;
        assert_eq!(failed["state"], "failed", "{guest}: {failed}");
        assert_eq!(
            failed["attemptsMade"], 1,
            "{guest}: a sandbox kill is final"
        );
        assert!(
            failed["failedReason"]
                .as_str()
                .unwrap()
                .starts_with(&format!("{kind}: ")),
            "{guest}: {failed}"
        );
    }
    api.setup("payments", "js-payment-webhook", json!({})).await;
    let ok = api
        .wait_done(
            &enqueue(
                &api,
                "payments",
                json!({"data": {"transactionId": "after", "amount": 1}}),
            )
            .await,
        )
        .await;
    assert_eq!(ok["state"], "completed", "{ok}");
}

/// A built guest with a fresh digest, so that loading it really compiles
/// (no artifact cache has it): the component with a custom section
/// appended, which wasmtime ignores.
fn fresh_copy(guest: &str) -> Vec<u8> {
    let mut bytes = airlock_tests::guest_bytes(guest);
    let nonce = format!(
        "{:?}",
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)
    );
    bytes.push(0); // custom section id
    bytes.push((1 + 5 + nonce.len()) as u8); // section size (< 128)
    bytes.push(5); // name length
    bytes.extend_from_slice(b"nonce");
    bytes.extend_from_slice(nonce.as_bytes());
    bytes
}

/// The first job of an unmetered queue compiles the component for the
/// unmetered engine — seconds for Python — and that compile is not
/// counted against the job's deadline.
#[tokio::test]
async fn a_first_run_that_compiles_does_not_eat_the_deadline() {
    let api = Api::start();
    let (status, body) = api
        .upload(
            "fresh",
            fresh_copy("py-noop"),
            "application/wasm",
            tokens::ADMIN,
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (status, body) = api
        .put(
            "/v1/queues/quick",
            tokens::ADMIN,
            json!({"handler": "fresh", "metered": false, "limits": {"timeoutMs": 1500}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let done = api
        .wait_recorded(&enqueue(&api, "quick", json!({"data": {}})).await)
        .await;
    assert_eq!(done["state"], "completed", "{done}");
    assert!(
        done["metrics"]["wallTimeMs"].as_f64().unwrap() < 1500.0,
        "{done}"
    );
}

/// Compiling a JavaScript upload takes seconds: the API answers other
/// requests meanwhile, and the upload then succeeds.
#[tokio::test]
async fn the_api_answers_while_a_large_upload_compiles() {
    let api = Api::start();
    let bytes = fresh_copy("js-order-workflow");
    let upload = {
        let url = api.url.clone();
        tokio::spawn(async move {
            let resp = airlock_tests::http_client()
                .post(format!("{url}/v1/handlers/big"))
                .bearer_auth(tokens::ADMIN)
                .header("content-type", "application/wasm")
                .body(bytes)
                .send()
                .await
                .unwrap();
            resp.status()
        })
    };
    // While it compiles: other requests are served, one after another.
    let mut answered = 0;
    while !upload.is_finished() {
        let (status, _) = api.get("/v1/queues", tokens::ADMIN).await;
        assert_eq!(status, StatusCode::OK);
        answered += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(upload.await.unwrap(), StatusCode::CREATED);
    assert!(
        answered >= 3,
        "only {answered} requests were answered while the upload compiled"
    );
}

/// A pool of N slots holds N live instances of any mix of supported
/// handlers: a Python component has 14 core instances and a JavaScript one
/// up to 9, and neither needs more than its one slot (with the old sizing
/// of 8 core instances per slot, only 4 of 8 Python instances fit and the
/// 5th failed as `capacity` while the host's permits said there was room).
#[test]
fn every_pool_slot_fits_a_javascript_or_python_instance() {
    use airlock::sandbox::{Limits, Sandbox, SandboxConfig};
    const SLOTS: u32 = 8;
    let sandbox = Sandbox::new(SandboxConfig {
        max_instances: SLOTS,
        ..airlock_tests::shared_cache_config()
    })
    .unwrap();
    let limits = Limits {
        memory_bytes: 256 << 20,
        ..Limits::default()
    };
    for mix in [
        vec!["py-noop"; SLOTS as usize],
        vec!["js-noop-qjs"; SLOTS as usize],
        vec!["js-noop"; SLOTS as usize],
        ["py-noop", "js-noop", "js-noop-qjs", "noop"].repeat(SLOTS as usize / 4),
    ] {
        let mut live = Vec::new();
        for guest in &mix {
            let component = sandbox
                .load(&airlock_tests::guest_bytes(guest))
                .unwrap_or_else(|e| panic!("{guest}: {e}"));
            let instance = sandbox
                .instantiate_idle(&component, &limits)
                .unwrap_or_else(|e| panic!("{guest} #{}: {e:#}", live.len() + 1));
            live.push(instance);
        }
        assert_eq!(live.len(), SLOTS as usize);
        // One more than the slots is refused: the pool is exactly full.
        let component = sandbox.load(&airlock_tests::guest_bytes("noop")).unwrap();
        assert!(sandbox.instantiate_idle(&component, &limits).is_err());
    }
}

/// Every way a handler writes to its log lands in the job's BullMQ log:
/// `console.*` with its level in TypeScript, `print` (stdout) and stderr
/// in Python, and the SDKs' own `log`.
#[tokio::test]
async fn console_print_and_stderr_land_in_the_job_log() {
    let api = Api::start();
    for (queue, guest, expected) in [
        (
            "js",
            "js-log-probe",
            [
                "[info] console.log says o1",
                "[error] console.error says {\"code\":7}",
                "[warn] ctx.log.warn says",
            ],
        ),
        (
            "py",
            "py-log-probe",
            [
                "[stdout] print says o1",
                "[stderr] stderr says",
                "[warn] ctx.log.warn says",
            ],
        ),
    ] {
        api.setup(queue, guest, json!({})).await;
        let job_ref = enqueue(&api, queue, json!({"data": {"order": "o1"}})).await;
        let done = api.wait_done(&job_ref).await;
        assert_eq!(done["returnvalue"], json!({"lines": 3}), "{guest}: {done}");
        let lines = logs(&job(&api, &job_ref).await);
        for line in expected {
            assert!(
                lines.iter().any(|l| l == line),
                "{guest}: no `{line}` in {lines:?}"
            );
        }
    }
}

/// A step that failed is retried on the next attempt without re-running
/// the steps before it, and repeated ids are recorded per occurrence — the
/// Rust step probe's contract, in TypeScript.
#[tokio::test]
async fn typescript_steps_replay_on_retry() {
    let api = Api::start();
    api.setup(
        "probe",
        "js-step-probe",
        json!({"defaultJobOptions": {"attempts": 3, "backoff": {"type": "fixed", "delay": 20}}}),
    )
    .await;
    let done = api
        .wait_done(&enqueue(&api, "probe", json!({"data": {}})).await)
        .await;
    assert_eq!(done["state"], "completed", "{done}");
    assert_eq!(
        done["returnvalue"],
        json!({"firstRuns": 1, "repeats": [0, 1, 2], "attempt": 2})
    );
    assert_eq!(
        done["steps"],
        json!(["first", "flaky", "repeat", "repeat#2", "repeat#3"])
    );
}

/// The order workflow charging through the payment handler: the order
/// invokes a `charge` job on the charges' queue (the same component is
/// that handler), parks until it completed, then notifies with an event;
/// the charge ran once, as a child of the order, and the listener heard
/// the event once.
async fn order_workflow_invokes(guest: &str) {
    let api = Api::start();
    api.setup(
        "orders",
        guest,
        json!({"starts": {"queues": ["charges"], "events": ["order.reviewed"]}}),
    )
    .await;
    for (queue, spec) in [
        ("charges", json!({"handler": guest})),
        (
            "order-listener",
            json!({"handler": guest, "events": ["order.reviewed"]}),
        ),
    ] {
        let (status, body) = api
            .put(&format!("/v1/queues/{queue}"), tokens::ADMIN, spec)
            .await;
        assert_eq!(status, StatusCode::OK, "{guest}: {body}");
    }
    let order = enqueue(
        &api,
        "orders",
        json!({"data": {"orderId": "I", "amount": 12, "reviewDelayMs": 0,
                        "chargeQueue": "charges", "notifyEvent": "order.reviewed"}}),
    )
    .await;
    let done = api.wait_done(&order).await;
    assert_eq!(done["state"], "completed", "{guest}: {done}");
    assert_eq!(done["returnvalue"]["chargeId"], "ch_I", "{guest}: {done}");
    let event_id = done["returnvalue"]["notified"]
        .as_str()
        .unwrap_or_else(|| panic!("{guest}: no event sent: {done}"));
    let kv = format!("bull:airlock:kv:{guest}:charges:I");
    assert_eq!(api.redis.cli(&["GET", &kv]), "1", "{guest}: charged once");
    let (status, charges) = api
        .get("/v1/queues/charges/jobs?state=completed", tokens::ADMIN)
        .await;
    assert_eq!(status, StatusCode::OK, "{charges}");
    let charges = charges["jobs"].as_array().unwrap();
    assert_eq!(charges.len(), 1, "{guest}: {charges:?}");
    assert_eq!(charges[0]["name"], "charge");
    assert_eq!(charges[0]["returnvalue"]["chargeId"], "ch_I");
    // The listener is the same handler: the event's job ran as an order
    // without an amount, and failed as one — what matters is that it came.
    let heard = api
        .wait_done(&format!("order-listener:evt-{event_id}"))
        .await;
    assert_eq!(
        heard["data"]["data"],
        json!({"orderId": "I", "chargeId": "ch_I"}),
        "{guest}: {heard}"
    );
}

#[tokio::test]
async fn rust_order_workflow_charges_through_the_payment_handler() {
    order_workflow_invokes("order-workflow").await;
}

#[tokio::test]
async fn typescript_order_workflow_charges_through_the_payment_handler() {
    order_workflow_invokes("js-order-workflow").await;
}

#[tokio::test]
async fn python_order_workflow_charges_through_the_payment_handler() {
    order_workflow_invokes("py-order-workflow").await;
}

/// The bulk-insert example in Rust, TypeScript and Python, on a queue
/// bound with `batch`: four payments of one producer run as one batch,
/// which records the valid ones in one request to the ledger; the invalid
/// one fails alone, fatally; each job shows its batch.
#[tokio::test(flavor = "multi_thread")]
async fn bulk_inserts_record_a_batch_in_one_request_in_every_language() {
    let gateway = MockGateway::start("unused");
    let api = Api::start_with(&[
        "--egress-allow",
        &gateway.url,
        "--egress-allow-network",
        "127.0.0.1/32",
        // Seals producers, which batches are grouped by.
        "--secrets-key",
        "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
    ]);
    let mut bulk_posts = 0;
    for (queue, guest) in [
        ("rust-bulk", "bulk-insert"),
        ("js-bulk", "js-bulk-insert"),
        ("py-bulk", "py-bulk-insert"),
    ] {
        api.setup(
            queue,
            guest,
            json!({"egress": [gateway.url], "config": {"LEDGER_URL": gateway.url},
                   "batch": {"size": 4, "timeoutMs": 10_000}}),
        )
        .await;
        let mut refs = Vec::new();
        for (i, amount) in [5.0, 7.5, 0.0, 2.0].into_iter().enumerate() {
            let data = json!({"transactionId": format!("tx_{queue}_{i}"), "amount": amount});
            refs.push(enqueue(&api, queue, json!({"data": data, "opts": {"attempts": 2}})).await);
        }
        for (i, job_ref) in refs.iter().enumerate() {
            let done = api.wait_recorded(job_ref).await;
            assert_eq!(done["batch"]["size"], 4, "{guest}: {done}");
            if i == 2 {
                assert_eq!(done["state"], "failed", "{guest}: {done}");
                assert_eq!(done["attemptsMade"], 1, "fatal: {guest}: {done}");
                assert!(
                    done["failedReason"]
                        .as_str()
                        .is_some_and(|r| r.contains("Invalid transaction amount")),
                    "{guest}: {done}"
                );
                continue;
            }
            assert_eq!(done["state"], "completed", "{guest}: {done}");
            assert_eq!(
                done["returnvalue"]["ledgerRecordId"],
                format!("led_tx_{queue}_{i}"),
                "{guest}: {done}"
            );
            assert_eq!(done["returnvalue"]["batchSize"], 4, "{guest}: {done}");
        }
        bulk_posts += 1;
        let ledger: Value = reqwest::get(format!("{}/v1/ledger", gateway.url))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(
            ledger["bulkPosts"], bulk_posts,
            "{guest}: one request for the batch: {ledger}"
        );
    }
}
