//! Run transcripts and `airlock replay` through a real host, Redis and
//! guests: a binding that records transcripts keeps what each run
//! received (the job, its configuration reads, its requests with their
//! responses, its waits' outcomes) and never a secret's value or a wait
//! token; `airlock replay` runs the recorded job against another version
//! with nothing sent anywhere and says "same" for the same version, a
//! changed request for a payment handler that now sends cents, and
//! "diverged" for a version that takes another path. A batch run is
//! recorded once for its jobs and replayed, and tested, as a batch.

use std::process::Command;

use airlock_tests::api::Api;
use airlock_tests::host::tokens;
use airlock_tests::http_server::TestServer;
use airlock_tests::mock_gateway::MockGateway;
use airlock_tests::{airlock_bin, guest_path};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// `airlock replay ARGS` against `api` as the admin: exit code, stdout,
/// stderr.
fn replay(api: &Api, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(airlock_bin())
        .arg("replay")
        .args(args)
        .env("AIRLOCK_URL", &api.url)
        .env("AIRLOCK_TOKEN", tokens::ADMIN)
        .output()
        .expect("run airlock");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn wasm(guest: &str) -> String {
    guest_path(guest).display().to_string()
}

/// `airlock test GUEST FIXTURES`: exit code and stdout.
fn airlock_test(guest: &str, fixtures: &std::path::Path) -> (i32, String) {
    let out = Command::new(airlock_bin())
        .args(["test", &wasm(guest)])
        .arg(fixtures)
        .output()
        .expect("run airlock test");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

async fn transcript(api: &Api, job: &str, token: &str) -> (StatusCode, Value) {
    api.get(&format!("/v1/jobs/{job}/transcript"), token).await
}

#[tokio::test]
async fn a_payment_handler_that_now_sends_cents_is_caught_as_a_changed_request() {
    let gateway = MockGateway::start("unused");
    let api = Api::start_with(&[
        "--egress-allow",
        &gateway.url,
        "--egress-allow-network",
        "127.0.0.1/32",
    ]);
    api.setup(
        "payments",
        "payment-webhook",
        json!({
            "egress": [gateway.url],
            "config": {"LEDGER_URL": gateway.url},
            "recordTranscripts": true,
        }),
    )
    .await;
    let job = api
        .enqueue(
            "payments",
            json!({"data": {"transactionId": "tx_replay", "amount": 42.5}}),
        )
        .await;
    let done = api.wait_recorded(&job).await;
    assert_eq!(done["state"], "completed", "{done}");

    // The transcript: the job, the configuration read, the request as the
    // handler wrote it with the ledger's response, the output.
    let (status, read) = transcript(&api, &job, tokens::READER).await;
    assert_eq!(status, StatusCode::OK, "{read}");
    let runs = read["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "{read}");
    let t = &runs[0]["transcript"];
    assert_eq!(runs[0]["run"], 1);
    assert_eq!(
        t["job"]["data"],
        r#"{"transactionId":"tx_replay","amount":42.5}"#
    );
    let calls = t["calls"].as_array().unwrap();
    let config = calls.iter().find(|c| c["call"] == "config").unwrap();
    assert_eq!(config["value"], gateway.url);
    let http: Vec<&Value> = calls.iter().filter(|c| c["call"] == "http").collect();
    assert_eq!(http.len(), 1, "{t}");
    assert_eq!(http[0]["method"], "POST");
    assert_eq!(http[0]["url"], format!("{}/v1/ledger", gateway.url));
    let sent: Value = serde_json::from_str(http[0]["body"]["text"].as_str().unwrap()).unwrap();
    assert_eq!(sent["amount"], 42.5, "{t}");
    assert_eq!(http[0]["response"]["status"], 201, "{t}");
    assert!(
        http[0]["response"]["body"]["text"]
            .as_str()
            .unwrap()
            .contains("led_tx_replay"),
        "{t}"
    );
    assert_eq!(t["outcome"]["end"], "completed");
    assert_eq!(
        serde_json::from_str::<Value>(t["outcome"]["output"].as_str().unwrap()).unwrap(),
        done["returnvalue"]
    );
    // Another producer does not read it; an unknown job is a 404.
    let (status, _) = transcript(&api, &job, tokens::OTHER_PRODUCER).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    let ledger_calls = gateway_requests(&gateway).await;
    assert_eq!(ledger_calls, 1);
    // The same version: the same.
    let (code, out, err) = replay(&api, &[&job, "--handler", &wasm("payment-webhook")]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains(&format!("{job}: same")), "{out}");

    // The version that sends cents: the request changed, nothing else.
    let (code, out, err) = replay(
        &api,
        &[&job, "--handler", &wasm("payment-webhook-cents"), "--json"],
    );
    assert_eq!(code, 2, "different: {out}{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["verdict"], "different", "{report}");
    assert_eq!(report["divergedAt"], Value::Null);
    let changed = report["requests"]["changed"].as_array().unwrap();
    assert_eq!(changed.len(), 1, "{report}");
    assert_eq!(changed[0]["url"], format!("{}/v1/ledger", gateway.url));
    let (was, now): (Value, Value) = (
        serde_json::from_str(changed[0]["recorded"].as_str().unwrap()).unwrap(),
        serde_json::from_str(changed[0]["replayed"].as_str().unwrap()).unwrap(),
    );
    assert_eq!(
        (&was["amount"], &now["amount"]),
        (&json!(42.5), &json!(4250))
    );
    assert_eq!(report["requests"]["added"], json!([]));
    assert_eq!(report["requests"]["missing"], json!([]));
    assert_eq!(report["runs"][0]["replayed"]["end"], "completed");

    // Nothing was sent anywhere by either replay.
    assert_eq!(gateway_requests(&gateway).await, ledger_calls);

    // The same from a file `airlock job export` wrote, without the API.
    let file = tempfile::NamedTempFile::new().unwrap();
    let exported = Command::new(airlock_bin())
        .args(["job", "export", &job, "-o", file.path().to_str().unwrap()])
        .env("AIRLOCK_URL", &api.url)
        .env("AIRLOCK_TOKEN", tokens::READER)
        .output()
        .unwrap();
    assert!(exported.status.success(), "{exported:?}");
    let written: Value = serde_json::from_slice(&std::fs::read(file.path()).unwrap()).unwrap();
    assert_eq!(written, read, "the export is the API's answer");
    let (code, out, err) = replay(
        &api,
        &[
            "--transcript",
            file.path().to_str().unwrap(),
            "--handler",
            &wasm("payment-webhook-cents"),
        ],
    );
    assert_eq!(code, 2, "{out}{err}");
    assert!(out.contains("changed request: POST"), "{out}");

    // A version that takes another path (the no-op sends nothing):
    // diverged at step 1.
    let (code, out, err) = replay(&api, &[&job, "--handler", &wasm("noop")]);
    assert_eq!(code, 3, "{out}{err}");
    assert!(
        out.contains(&format!(
            "{job}: diverged at step 1 (run 1): recorded POST {}/v1/ledger; the new version: nothing more",
            gateway.url
        )),
        "{out}"
    );

    // A queue sample: the newest jobs that have transcripts.
    let (code, out, err) = replay(
        &api,
        &[
            "--queue",
            "payments",
            "--last",
            "5",
            "--handler",
            &wasm("payment-webhook"),
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains(&format!("{job}: same")), "{out}");
}

/// How many bulk POSTs (`/v1/ledger/bulk`) the mock ledger has received.
async fn bulk_posts(gateway: &MockGateway) -> u64 {
    let ledger: Value = reqwest::get(format!("{}/v1/ledger", gateway.url))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    ledger["bulkPosts"].as_u64().unwrap()
}

/// How many POSTs the mock ledger has received.
async fn gateway_requests(gateway: &MockGateway) -> u64 {
    let ledger: Value = reqwest::get(format!("{}/v1/ledger", gateway.url))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    ledger["posts"].as_u64().unwrap()
}

/// The refund example parks for its approval token and its settlement
/// event: its three transcripts hold the waits' outcomes, never the token
/// (not even in the approval request's body, where the handler put it) —
/// and the same version replays through all three runs as the same.
#[tokio::test]
async fn waits_replay_with_their_recorded_outcomes_and_no_token_is_kept() {
    let approvals = TestServer::start();
    let api = Api::start_with(&[
        "--egress-allow",
        &approvals.url,
        "--egress-allow-network",
        "127.0.0.1/32",
    ]);
    api.setup(
        "refunds",
        "refund-request",
        json!({
            "egress": [approvals.url],
            "config": {"APPROVAL_URL": approvals.url},
            "recordTranscripts": true,
        }),
    )
    .await;
    let job = api
        .enqueue(
            "refunds",
            json!({"data": {"refundId": "r-9", "orderId": "o-9", "amount": 30.0}}),
        )
        .await;
    let token = airlock_tests::eventually_some(
        "the approval request",
        std::time::Duration::from_secs(20),
        || async {
            approvals
                .seen()
                .iter()
                .find(|s| s.uri == "/v1/approvals")
                .and_then(|s| serde_json::from_str::<Value>(&s.body).ok())
                .and_then(|b| b["token"].as_str().map(String::from))
        },
    )
    .await;
    api.wait_until(&job, "parked on its token", |j| j["state"] == "delayed")
        .await;
    let (status, body) = api
        .call(
            Method::POST,
            &format!("/v1/tokens/{token}/complete"),
            None,
            Some(json!({"approved": true, "by": "ana"})),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    api.wait_until(&job, "parked on its event", |j| {
        j["state"] == "delayed" && j["waiting"]["kind"] == "event"
    })
    .await;
    let (status, sent) = api
        .post(
            "/v1/events",
            tokens::PRODUCER,
            json!({"name": "refund.settled", "data": {"refundId": "r-9"}}),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{sent}");
    assert_eq!(api.wait_done(&job).await["state"], "completed");

    let read = airlock_tests::eventually_some(
        "three transcripts",
        std::time::Duration::from_secs(10),
        || async {
            let (_, read) = transcript(&api, &job, tokens::ADMIN).await;
            (read["runs"].as_array().map_or(0, Vec::len) == 3).then_some(read)
        },
    )
    .await;
    let text = read.to_string();
    assert!(!text.contains(&token), "the wait token is kept: {text}");
    assert!(text.contains("[wait-token:approval]"), "{text}");
    let ends: Vec<&Value> = read["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["transcript"]["outcome"]["end"])
        .collect();
    assert_eq!(
        ends,
        [&json!("waited"), &json!("waited"), &json!("completed")]
    );

    let (code, out, err) = replay(
        &api,
        &[&job, "--handler", &wasm("refund-request"), "--json"],
    );
    assert_eq!(code, 0, "{out}{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["verdict"], "same", "{report}");
    let replayed: Vec<&Value> = report["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["replayed"]["end"])
        .collect();
    assert_eq!(
        replayed,
        [&json!("waited"), &json!("waited"), &json!("completed")]
    );
    assert_eq!(
        report["stepsReplayed"],
        json!(["open-refund", "ask-approval", "issue-refund"]),
        "{report}"
    );
}

/// A secret the handler sends is in its transcript as `[secret:NAME]`,
/// never its value, though the service received the value.
#[tokio::test]
async fn a_transcript_names_a_secret_and_never_holds_its_value() {
    const SECRETS_KEY: &str = "5f2b7c1d9e3a4b6c8d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e";
    const VALUE: &str = "sk_live_transcript_never_holds_this";
    let service = TestServer::start();
    let api = Api::start_with(&[
        "--egress-allow",
        &service.url,
        "--egress-allow-network",
        "127.0.0.1/32",
        "--secrets-key",
        SECRETS_KEY,
    ]);
    api.setup(
        "mail",
        "http-probe",
        json!({"egress": [service.url], "recordTranscripts": true}),
    )
    .await;
    let (status, body) = api
        .put(
            "/v1/queues/mail/secrets/MAIL_API_KEY",
            tokens::ADMIN,
            json!({"value": VALUE, "allow": [service.url]}),
        )
        .await;
    assert!(status.is_success(), "{body}");
    let job = api
        .enqueue(
            "mail",
            json!({"data": {"secret": "MAIL_API_KEY", "requests": [
                {"method": "POST", "url": format!("{}/echo", service.url), "body": "key={{secret}}"}
            ]}}),
        )
        .await;
    assert_eq!(api.wait_done(&job).await["state"], "completed");
    assert!(service.received(VALUE), "the service got the value");
    let (_, read) = transcript(&api, &job, tokens::ADMIN).await;
    let text = read.to_string();
    assert!(!text.contains(VALUE), "a secret's value is kept: {text}");
    let http = &read["runs"][0]["transcript"]["calls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["call"] == "http")
        .unwrap()
        .clone();
    assert_eq!(http["body"]["text"], "key=[secret:MAIL_API_KEY]", "{http}");
    let auth = http["headers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h[0] == "authorization")
        .unwrap();
    assert_eq!(auth[1], "Bearer [secret:MAIL_API_KEY]");
    // The echo service sent the filled-in request back: its response, as
    // kept, names the secret instead of holding its value.
    let echoed = http["response"]["body"]["text"].as_str().unwrap();
    assert!(echoed.contains("key=[secret:MAIL_API_KEY]"), "{echoed}");
    let secret = read["runs"][0]["transcript"]["calls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["call"] == "secret")
        .unwrap()
        .clone();
    assert_eq!(secret["name"], "MAIL_API_KEY");
    assert_eq!(secret["answer"]["ok"], true);
}

/// Two orders parked in their 24 h review sleep, recorded by the Rust
/// version: a version that diverges before the sleep (the no-op, uploaded
/// under the same name) is refused for both, on the host and by the CLI;
/// the Python port (the same steps and KV counter) takes both, and a
/// migrated order woken now finishes on it without charging again.
#[tokio::test]
async fn parked_jobs_migrate_only_to_a_version_that_reaches_their_sleep() {
    let api = Api::start();
    let rust = api.upload_version("orders", "order-workflow").await;
    let (status, body) = api
        .put(
            "/v1/queues/orders",
            tokens::ADMIN,
            json!({"handler": "orders", "recordTranscripts": true}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let mut jobs = Vec::new();
    for n in 1..=2 {
        let job = api
            .enqueue(
                "orders",
                json!({"data": {"orderId": format!("o-{n}"), "amount": 20.0, "reviewDelayMs": 86_400_000}}),
            )
            .await;
        api.wait_until(&job, "parked in its review sleep", |j| {
            j["state"] == "delayed" && j["waiting"]["kind"] == "sleeping"
        })
        .await;
        jobs.push(job);
    }
    let python = api.upload_version("orders", "py-order-workflow").await;
    let noop = api.upload_version("orders", "noop").await;

    // A diverging version: both refused, nothing moved.
    let (status, done) = api
        .post(
            "/v1/queues/orders/migrate",
            tokens::ADMIN,
            json!({"to": noop}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(done["migrated"], json!([]), "{done}");
    let refused = done["refused"].as_array().unwrap();
    assert_eq!(refused.len(), 2, "{done}");
    for r in refused {
        let reason = r["reason"].as_str().unwrap();
        assert!(
            reason.contains("diverged at step 1 (run 1): recorded step `verify-fraud-risk`"),
            "{reason}"
        );
        assert_eq!(r["report"]["verdict"], "diverged");
    }
    for job in &jobs {
        assert_eq!(api.job(job).await["handlerDigest"], rust, "not moved");
    }
    // The CLI says the same, and exits 3.
    let out = Command::new(airlock_bin())
        .args(["jobs", "migrate", "orders", "--to", &noop])
        .env("AIRLOCK_URL", &api.url)
        .env("AIRLOCK_TOKEN", tokens::ADMIN)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{text}");
    assert!(text.contains("0 moved, 2 refused"), "{text}");

    // Bad input names the field; another handler's version is refused.
    let (status, body) = api
        .post(
            "/v1/queues/orders/migrate",
            tokens::ADMIN,
            json!({"to": "nope"}),
        )
        .await;
    assert_eq!(
        (status, &body["error"]["field"]),
        (StatusCode::BAD_REQUEST, &json!("to"))
    );
    let other = api.upload_version("other", "payment-webhook").await;
    let (status, body) = api
        .post(
            "/v1/queues/orders/migrate",
            tokens::ADMIN,
            json!({"to": other}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, _) = api
        .post(
            "/v1/queues/orders/migrate",
            tokens::READER,
            json!({"to": python}),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    // The Python port reaches the same sleep: a dry run moves nothing,
    // then both move.
    let (_, dry) = api
        .post(
            "/v1/queues/orders/migrate",
            tokens::ADMIN,
            json!({"to": python, "dryRun": true}),
        )
        .await;
    assert_eq!(dry["migrated"].as_array().unwrap().len(), 2, "{dry}");
    assert_eq!(api.job(&jobs[0]).await["handlerDigest"], rust);
    let (status, done) = api
        .post(
            "/v1/queues/orders/migrate",
            tokens::ADMIN,
            json!({"to": python}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(done["refused"], json!([]), "{done}");
    let mut moved: Vec<&str> = done["migrated"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j.as_str().unwrap())
        .collect();
    moved.sort();
    assert_eq!(moved, jobs.iter().map(String::as_str).collect::<Vec<_>>());

    // Woken now, the first finishes on the Python version, its charge
    // replayed (recorded by the Rust run), not made again.
    let (status, body) = api
        .post(
            &format!("/v1/jobs/{}/promote", jobs[0]),
            tokens::ADMIN,
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let finished = api.wait_done(&jobs[0]).await;
    assert_eq!(finished["state"], "completed", "{finished}");
    assert_eq!(finished["handlerDigest"], python, "{finished}");
    assert_eq!(finished["returnvalue"]["chargeId"], "ch_o-1", "{finished}");
    let (_, timeline) = api
        .get(&format!("/v1/jobs/{}/timeline", jobs[0]), tokens::ADMIN)
        .await;
    let charges = timeline["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["id"] == "charge-payment")
        .count();
    assert_eq!(charges, 1, "charged once: {timeline}");
    // And the replay of the migrated job against its new version, on the
    // host through the CLI (NAME@DIGEST): the same.
    let (code, out, err) = replay(&api, &[&jobs[0], "--handler", &format!("orders@{python}")]);
    assert_eq!(code, 0, "{out}{err}");
}

/// The catalog sync returns when its busy time began and ended, read from
/// the wall clock: its transcript keeps those readings, and a replay gives
/// them back, so the same version returns the same — the replay is not
/// "different" for the time it runs at.
#[tokio::test]
async fn a_replay_reads_the_clock_the_recorded_run_read() {
    let api = Api::start();
    api.setup(
        "catalog",
        "catalog-sync",
        json!({"recordTranscripts": true}),
    )
    .await;
    let job = api
        .enqueue(
            "catalog",
            json!({"data": {"catalog": "main", "items": 3, "holdMs": 20}}),
        )
        .await;
    let done = api.wait_recorded(&job).await;
    assert_eq!(done["state"], "completed", "{done}");
    let (_, read) = transcript(&api, &job, tokens::ADMIN).await;
    let clock: Vec<u64> = read["runs"][0]["transcript"]["clock"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap())
        .collect();
    let held = |field: &str| done["returnvalue"][field].as_u64().unwrap();
    assert!(
        clock.iter().any(|ns| ns / 1_000_000 == held("heldFromMs"))
            && clock.iter().any(|ns| ns / 1_000_000 == held("heldToMs")),
        "the readings the output came from: {clock:?} {done}"
    );
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let (code, out, err) = replay(&api, &[&job, "--handler", &wasm("catalog-sync")]);
    assert_eq!(code, 0, "the same, at another time: {out}{err}");
}

/// `airlock test` on the examples' fixtures: the payment handler passes
/// and the version that sends cents fails on the request's body; the
/// refund fixture (its token, two waits, a KV counter) passes for the Rust
/// and the Python port alike; a wait the fixture leaves out is named.
#[test]
fn airlock_test_checks_fixtures_against_the_component_in_any_language() {
    let root = airlock_tests::workspace_root();
    let payments = root.join("jobs/payment-webhook/fixtures");
    let (code, out) = airlock_test("payment-webhook", &payments);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("2 passed, 0 failed"), "{out}");
    let (code, out) = airlock_test("payment-webhook-cents", &payments);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("expected body {\"transactionId\":\"tx_1\",\"amount\":42.5,\"currency\":\"EUR\"}, got {\"amount\":4250,"),
        "{out}"
    );
    assert!(out.contains("1 passed, 1 failed"), "{out}");

    let refunds = root.join("jobs/refund-request/fixtures");
    for guest in ["refund-request", "py-refund-request"] {
        let (code, out) = airlock_test(guest, &refunds);
        assert_eq!(code, 0, "{guest}: {out}");
    }

    let mut fixture: Value = serde_json::from_str(
        &std::fs::read_to_string(refunds.join("approved-and-settled.json")).unwrap(),
    )
    .unwrap();
    fixture["waits"]
        .as_object_mut()
        .unwrap()
        .remove("settlement");
    let file = tempfile::Builder::new().suffix(".json").tempfile().unwrap();
    std::fs::write(file.path(), fixture.to_string()).unwrap();
    let (code, out) = airlock_test("refund-request", file.path());
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("the job parked in wait `settlement`, which the fixture gives no outcome"),
        "{out}"
    );
}

/// `airlock test` answers an invoke from the fixture's `invokes`: the order
/// workflow charging through the payment handler takes the child's charge,
/// and fails when the charge failed for good — in every language; an
/// invoke the fixture leaves out is named.
#[test]
fn airlock_test_answers_invokes_from_the_fixture_in_any_language() {
    let root = airlock_tests::workspace_root();
    let fixtures = root.join("jobs/order-workflow/fixtures");
    for guest in ["order-workflow", "js-order-workflow", "py-order-workflow"] {
        let (code, out) = airlock_test(guest, &fixtures);
        assert_eq!(code, 0, "{guest}: {out}");
        assert!(out.contains("2 passed, 0 failed"), "{guest}: {out}");
    }
    let mut fixture: Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures.join("charged-through-payments.json")).unwrap(),
    )
    .unwrap();
    fixture.as_object_mut().unwrap().remove("invokes");
    let file = tempfile::Builder::new().suffix(".json").tempfile().unwrap();
    std::fs::write(file.path(), fixture.to_string()).unwrap();
    let (code, out) = airlock_test("order-workflow", file.path());
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(
            "the job parked in invoke `charge-payment`, which the fixture gives no children's ends"
        ),
        "{out}"
    );
}

/// The SDKs' thin wrappers: `fixtureTests` under `node --test` and
/// `FixtureTests` under `python -m unittest` pass for the payment handler
/// and fail, naming the body, for the version that sends cents.
#[test]
fn npm_test_and_python_unittest_drive_airlock_test() {
    let root = airlock_tests::workspace_root();
    let fixtures = root.join("jobs/payment-webhook/fixtures");
    let dir = tempfile::tempdir().unwrap();
    let node_test = dir.path().join("payments.test.mjs");
    std::fs::write(
        &node_test,
        format!(
            "import {{ fixtureTests }} from '{}';\nfixtureTests(process.env.COMPONENT, [process.env.FIXTURES]);\n",
            url_of(&root.join("guest-sdk/js/lib/testing.mjs"))
        ),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("test_payments.py"),
        "import os\nfrom airlock_sdk.fixtures import FixtureTests\n\n\nclass Payments(FixtureTests):\n    component = os.environ['COMPONENT']\n    fixtures = [os.environ['FIXTURES']]\n",
    )
    .unwrap();
    for (guest, passes) in [("payment-webhook", true), ("payment-webhook-cents", false)] {
        let run = |command: &mut Command| {
            let out = command
                .env("COMPONENT", wasm(guest))
                .env("FIXTURES", &fixtures)
                .env("AIRLOCK_BIN", airlock_bin())
                .output()
                .expect("run the test runner");
            (
                out.status.success(),
                format!(
                    "{}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                ),
            )
        };
        let node = run(Command::new("node").arg("--test").arg(&node_test));
        let python = run(Command::new("python3")
            .args(["-m", "unittest", "discover", "-s"])
            .arg(dir.path())
            .env("PYTHONPATH", root.join("guest-sdk/python/src")));
        for (runner, (ok, out)) in [("node --test", node), ("python -m unittest", python)] {
            assert_eq!(ok, passes, "{runner} on {guest}: {out}");
            if !passes {
                assert!(out.contains("expected body"), "{runner}: {out}");
            }
        }
    }
}

/// A `file://` URL of `path` (for an ES module import).
fn url_of(path: &std::path::Path) -> String {
    format!("file://{}", path.display())
}

/// A recorded invoke replays from its transcript: the children the
/// recorded run started get the recorded ids (nothing is added), the
/// recorded ends answer the resumed run, and the same version is the
/// same; an event sent is answered likewise.
#[tokio::test]
async fn a_recorded_invoke_and_event_replay_from_the_transcript() {
    let api = Api::start();
    api.setup(
        "parents",
        "work-probe",
        json!({"recordTranscripts": true, "starts": {"queues": ["kids"], "events": ["order.*"]}}),
    )
    .await;
    let (status, body) = api
        .put(
            "/v1/queues/kids",
            tokens::ADMIN,
            json!({"handler": "work-probe"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let job = api
        .enqueue(
            "parents",
            json!({"name": "fan", "data": {"invoke": [
                {"queue": "kids", "name": "a", "data": {"echo": 1}},
                {"queue": "kids", "name": "b", "data": {"fatal": true}},
            ]}}),
        )
        .await;
    let done = api.wait_recorded(&job).await;
    assert_eq!(done["state"], "completed", "{done}");
    let (status, recorded) = transcript(&api, &job, tokens::ADMIN).await;
    assert_eq!(status, StatusCode::OK, "{recorded}");
    let calls: Vec<&str> = recorded["runs"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["transcript"]["calls"].as_array().unwrap())
        .filter_map(|c| c["call"].as_str())
        .collect();
    assert!(calls.contains(&"startJobs"), "{calls:?}");
    assert!(calls.contains(&"invokeState"), "{calls:?}");
    let kids_before = api.redis.cli(&["ZCARD", "bull:kids:completed"]);
    let (code, out, err) = replay(&api, &[&job, "--handler", &wasm("work-probe")]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains(&format!("{job}: same")), "{out}");
    assert_eq!(
        api.redis.cli(&["ZCARD", "bull:kids:completed"]),
        kids_before,
        "a replay adds no job"
    );

    let sender = api
        .enqueue(
            "parents",
            json!({"name": "tell", "data": {"event": {"name": "order.told", "data": {"n": 1}}}}),
        )
        .await;
    api.wait_recorded(&sender).await;
    let (code, out, err) = replay(&api, &[&sender, "--handler", &wasm("work-probe")]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains(&format!("{sender}: same")), "{out}");
}

/// A batch run is recorded once, for all its jobs: each job's transcript
/// is the batch's (its jobs with their ends, the one ledger request), its
/// own field holding a pointer, not a copy; a pointer aimed at a batch the
/// job was not in is left out. `airlock replay` of any job of the batch
/// runs the whole batch again, on the host or locally: the same handler is
/// the same, job by job; a handler that records nothing diverges at the
/// ledger request; nothing is sent anywhere.
#[tokio::test(flavor = "multi_thread")]
async fn a_batch_is_recorded_once_and_replays_as_a_batch() {
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
    api.setup(
        "ledger",
        "bulk-insert",
        json!({"egress": [gateway.url], "config": {"LEDGER_URL": gateway.url},
               "recordTranscripts": true, "batch": {"size": 3, "timeoutMs": 3000}}),
    )
    .await;
    let mut refs = Vec::new();
    for (tx, amount) in [("tx_a", 5.5), ("tx_b", -1.0), ("tx_c", 7.25)] {
        let data = json!({"transactionId": tx, "amount": amount});
        refs.push(api.enqueue("ledger", json!({"data": data})).await);
    }
    let mut batch_ids = Vec::new();
    for job_ref in &refs {
        let done = api.wait_recorded(job_ref).await;
        batch_ids.push(done["batch"]["id"].as_str().unwrap().to_string());
    }
    assert!(
        batch_ids.iter().all(|b| *b == batch_ids[0]),
        "one batch: {batch_ids:?}"
    );
    let batch = &batch_ids[0];
    let ledger_calls = bulk_posts(&gateway).await;
    assert_eq!(ledger_calls, 1, "one request for the batch");

    // Every job reads the batch's one transcript.
    let mut read = Vec::new();
    for job_ref in &refs {
        let (status, body) = transcript(&api, job_ref, tokens::READER).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["runs"].as_array().unwrap().len(), 1, "{body}");
        read.push(body["runs"][0]["transcript"].clone());
    }
    assert!(read.iter().all(|t| *t == read[0]), "the same transcript");
    let t = &read[0];
    assert_eq!(t["outcome"]["end"], "completed", "{t}");
    // Each job with its own end, in the order the batch got them (the
    // order the host fetched them).
    let ids: Vec<String> = refs
        .iter()
        .map(|r| r.split_once(':').unwrap().1.to_string())
        .collect();
    let end_of = |jobs: &Value, id: &str, end: &str| -> Value {
        jobs.as_array()
            .unwrap()
            .iter()
            .find(|j| j["job"]["id"] == id || j["job"] == format!("ledger:{id}"))
            .unwrap_or_else(|| panic!("{id} not in {jobs}"))[end]
            .clone()
    };
    assert_eq!(t["batch"].as_array().unwrap().len(), 3, "{t}");
    for (id, want) in ids.iter().zip(["completed", "failed", "completed"]) {
        assert_eq!(end_of(&t["batch"], id, "outcome")["end"], want, "{id}: {t}");
    }
    assert_eq!(
        end_of(&t["batch"], &ids[1], "outcome")["kind"],
        "guest_fatal",
        "{t}"
    );
    let http: Vec<&Value> = t["calls"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["call"] == "http")
        .collect();
    assert_eq!(http.len(), 1, "one request for the batch: {t}");
    assert_eq!(http[0]["url"], format!("{}/v1/ledger/bulk", gateway.url));

    // Stored once: each job's field is a pointer to the batch's key.
    let field = api.redis.cli(&[
        "HGET",
        &format!("bull:ledger:{}", ids[0]),
        "airlock.transcript:1",
    ]);
    assert_eq!(field.trim(), json!({"batch": batch}).to_string());
    let kept = api.redis.cli(&[
        "GET",
        &format!("bull:ledger:airlock:batch:{batch}:transcript"),
    ]);
    assert!(kept.contains("/v1/ledger/bulk"), "{kept}");

    // A job of another batch pointed at this one lists nothing from it.
    let other = api
        .enqueue(
            "ledger",
            json!({"data": {"transactionId": "tx_d", "amount": 1.5}}),
        )
        .await;
    let done = api.wait_recorded(&other).await;
    assert_ne!(done["batch"]["id"], batch.as_str(), "{done}");
    let other_id = other.split_once(':').unwrap().1;
    api.redis.cli(&[
        "HSET",
        &format!("bull:ledger:{other_id}"),
        "airlock.transcript:1",
        &json!({"batch": batch}).to_string(),
    ]);
    let (status, body) = transcript(&api, &other, tokens::READER).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["runs"], json!([]), "{body}");

    // Replayed from the middle job, on the host and locally: the batch,
    // job by job.
    let digest = api.upload_version("bulk-insert", "bulk-insert").await;
    let handler = format!("bulk-insert@{digest}");
    for with in [handler.as_str(), &wasm("bulk-insert")] {
        let (code, out, err) = replay(&api, &[&refs[1], "--handler", with, "--json"]);
        assert_eq!(code, 0, "{with}: {out}{err}");
        let report: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(report["job"], refs[1].as_str(), "{report}");
        assert_eq!(report["verdict"], "same", "{report}");
        let jobs = &report["runs"][0]["jobs"];
        assert_eq!(jobs.as_array().unwrap().len(), 3, "{report}");
        assert_eq!(
            end_of(jobs, &ids[1], "replayed")["end"],
            "failed",
            "{report}"
        );
        assert_eq!(
            end_of(jobs, &ids[2], "replayed")["end"],
            "completed",
            "{report}"
        );
    }
    let (code, out, err) = replay(&api, &[&refs[0], "--handler", &wasm("noop-batch")]);
    assert_eq!(code, 3, "{out}{err}");
    assert!(
        out.contains(&format!(
            "{}: diverged at step 1 (run 1): recorded POST {}/v1/ledger/bulk; the new version: nothing more",
            refs[0], gateway.url
        )),
        "{out}"
    );
    assert_eq!(
        bulk_posts(&gateway).await,
        ledger_calls + 1,
        "only tx_d's batch posted"
    );
}

/// `airlock test` runs a batch fixture (`jobs`, `expect.jobs`) as one
/// batch, in every language: the bulk-insert example records the valid
/// payments in one request and fails the bad one alone; an expected end
/// that does not hold is named with its job.
#[test]
fn airlock_test_runs_a_batch_fixture_in_any_language() {
    let root = airlock_tests::workspace_root();
    let fixtures = root.join("jobs/bulk-insert/fixtures");
    for guest in ["bulk-insert", "js-bulk-insert", "py-bulk-insert"] {
        let (code, out) = airlock_test(guest, &fixtures);
        assert_eq!(code, 0, "{guest}: {out}");
        assert!(out.contains("1 passed, 0 failed"), "{guest}: {out}");
    }
    let mut fixture: Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures.join("records-a-batch-in-one-request.json")).unwrap(),
    )
    .unwrap();
    fixture["expect"]["jobs"][1] = json!({"output": {"processed": true}});
    let file = tempfile::Builder::new().suffix(".json").tempfile().unwrap();
    std::fs::write(file.path(), fixture.to_string()).unwrap();
    let (code, out) = airlock_test("bulk-insert", file.path());
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("job 2: expected an output, but the job failed (guest_fatal)"),
        "{out}"
    );
}
