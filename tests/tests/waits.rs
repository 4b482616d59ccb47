//! Durable waits through real hosts and Redis, with the refund example in
//! each language: a job parks for its approval token and then for its
//! settlement event, holding no worker, and resumes with what came; early
//! events and completions are kept for it; timeouts end a wait with
//! nothing; tenants cannot resume each other's jobs; a killed host loses
//! no wait.

use airlock_tests::api::Api;
use airlock_tests::host::{HostOptions, HostProcess, tokens};
use airlock_tests::http_server::TestServer;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// Completes a wait token without any bearer token, as a third party would.
async fn complete(api: &Api, token: &str, body: Value) -> (StatusCode, Value) {
    api.call(
        Method::POST,
        &format!("/v1/tokens/{token}/complete"),
        None,
        Some(body),
    )
    .await
}

async fn send_event(api: &Api, token: &str, name: &str, data: Value) -> Value {
    let (status, delivery) = api
        .post("/v1/events", token, json!({"name": name, "data": data}))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{delivery}");
    delivery
}

/// Event `id` as `GET /v1/events` lists it (among the newest 50).
async fn listed_event(api: &Api, id: &Value) -> Value {
    let (status, body) = api.get("/v1/events?limit=50", tokens::ADMIN).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| &e["id"] == id)
        .unwrap_or_else(|| panic!("event {id} not listed: {body}"))
        .clone()
}

/// Waits until the job is parked in a wait of `kind`; returns it.
async fn parked(api: &Api, job: &str, kind: &str) -> Value {
    api.wait_until(job, &format!("a wait of kind {kind}"), |j| {
        j["state"] == "delayed" && j["waiting"]["kind"] == kind
    })
    .await
}

/// Arguments that let a host reach the approval service.
fn egress_args(approvals: &TestServer) -> Vec<String> {
    [
        "--egress-allow",
        &approvals.url,
        "--egress-allow-network",
        "127.0.0.1/32",
    ]
    .map(String::from)
    .to_vec()
}

/// An API host that may reach a loopback approval service (which records
/// what the refund handler sends it), and the queue `refunds` bound to
/// `guest` with `binding` and that service as its `APPROVAL_URL`.
async fn start_refunds(guest: &str, mut binding: Value) -> (Api, TestServer) {
    let approvals = TestServer::start();
    let args = egress_args(&approvals);
    let api = Api::start_with(&args.iter().map(String::as_str).collect::<Vec<_>>());
    binding["egress"] = json!([approvals.url]);
    binding["config"] = json!({"APPROVAL_URL": approvals.url});
    api.setup("refunds", guest, binding).await;
    (api, approvals)
}

/// The approval token of refund job `job` (once it asked for it), as the approval
/// service received it — and only there: the token is a credential, so it
/// is nowhere in what a reader of the job sees (its progress, logs, steps,
/// runs).
async fn approval_token(api: &Api, approvals: &TestServer, job: &str) -> String {
    let (status, seen) = api.get(&format!("/v1/jobs/{job}"), tokens::READER).await;
    assert_eq!(status, StatusCode::OK, "{seen}");
    let data = &seen["data"];
    let asked: Vec<Value> = approvals
        .seen()
        .iter()
        .filter(|s| s.method == "POST" && s.uri == "/v1/approvals")
        .map(|s| serde_json::from_str(&s.body).expect("a JSON approval request"))
        .filter(|body: &Value| body["refundId"] == data["refundId"])
        .collect();
    assert_eq!(asked.len(), 1, "one approval request for {data}: {asked:?}");
    let token = asked[0]["token"].as_str().expect("a token").to_string();
    assert!(token.starts_with("wt_"), "{token}");
    // The amount as each language writes it: 25 or 25.0.
    assert_eq!(asked[0]["amount"].as_f64(), data["amount"].as_f64());
    assert_eq!(
        (&asked[0]["refundId"], &asked[0]["orderId"]),
        (&data["refundId"], &data["orderId"])
    );
    let (_, timeline) = api
        .get(&format!("/v1/jobs/{job}/timeline"), tokens::READER)
        .await;
    for shown in [&seen, &timeline] {
        assert!(
            !shown.to_string().contains(&token),
            "the token leaks: {shown}"
        );
    }
    token
}

/// Enqueues a refund, approves it by `by` once it parks on its token, and
/// waits until it runs again, spinning before its settlement wait (give it
/// `pauseBeforeSettleMs`); returns its ref and that snapshot.
async fn approved_and_spinning(
    api: &Api,
    approvals: &TestServer,
    data: Value,
    by: &str,
) -> (String, Value) {
    let job = api.enqueue("refunds", json!({ "data": data })).await;
    parked(api, &job, "token").await;
    let token = approval_token(api, approvals, &job).await;
    assert_eq!(
        complete(api, &token, json!({"approved": true, "by": by}))
            .await
            .0,
        StatusCode::ACCEPTED
    );
    let running = api
        .wait_until(&job, "running before its settlement wait", |j| {
            j["state"] == "active" && j["progress"]["stage"] == "awaiting-settlement"
        })
        .await;
    (job, running)
}

/// The whole refund in one language, on two hosts: approval token, then
/// settlement event, with the refusals around them.
async fn refund_is_approved_and_settled(guest: &str) {
    let (api, approvals) = start_refunds(guest, json!({})).await;
    // Two hosts: a job parks on one and may resume on either.
    let _b = HostProcess::start(
        &api.redis.url(),
        HostOptions {
            id: "host-b".into(),
            extra: egress_args(&approvals),
            ..HostOptions::default()
        },
    );
    let job = api
        .enqueue(
            "refunds",
            json!({"data": {"refundId": "r-1", "orderId": "o-1", "amount": 25.0}}),
        )
        .await;

    let waiting = parked(&api, &job, "token").await;
    let token = approval_token(&api, &approvals, &job).await;
    assert!(
        waiting["waiting"]["message"]
            .as_str()
            .unwrap()
            .contains("the completion of its wait token"),
        "{waiting}"
    );
    assert!(waiting["waiting"]["until"].as_u64().is_some(), "{waiting}");

    // Unknown and malformed tokens; then the manager's decision, once.
    let unknown = format!("wt_{}", "0".repeat(64));
    assert_eq!(
        complete(&api, &unknown, json!({})).await.0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        complete(&api, "nope", json!({})).await.0,
        StatusCode::NOT_FOUND
    );
    let (status, body) = complete(&api, &token, json!({"approved": true, "by": "ana"})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let (status, body) = complete(&api, &token, json!({"approved": false})).await;
    assert_eq!(status, StatusCode::CONFLICT, "single use: {body}");

    let waiting = parked(&api, &job, "event").await;
    let message = waiting["waiting"]["message"].as_str().unwrap();
    assert!(
        message.contains("event `refund.settled` with $.refundId = \"r-1\""),
        "{message}"
    );
    // Another tenant's event, and another refund's, resume nothing.
    let other = send_event(
        &api,
        tokens::OTHER_PRODUCER,
        "refund.settled",
        json!({"refundId": "r-1"}),
    )
    .await;
    assert_eq!(other["resumed"], json!([]), "{other}");
    let wrong = send_event(
        &api,
        tokens::PRODUCER,
        "refund.settled",
        json!({"refundId": "r-2"}),
    )
    .await;
    assert_eq!(wrong["resumed"], json!([]), "{wrong}");
    assert_eq!(api.job(&job).await["state"], "delayed");

    let settled = send_event(
        &api,
        tokens::PRODUCER,
        "refund.settled",
        json!({"refundId": "r-1"}),
    )
    .await;
    assert_eq!(settled["resumed"], json!([job]), "{settled}");
    // The events view links the job each event resumed, and none for the
    // others.
    let listed = listed_event(&api, &settled["eventId"]).await;
    assert_eq!(listed["resumed"], json!([job]), "{listed}");
    assert_eq!(listed["cancelled"], json!([]), "{listed}");
    let listed = listed_event(&api, &wrong["eventId"]).await;
    assert_eq!(listed["resumed"], json!([]), "{listed}");
    let done = api.wait_done(&job).await;
    assert_eq!(done["state"], "completed", "{done}");
    assert_eq!(
        done["returnvalue"],
        json!({
            "status": "settled",
            "refundId": "r-1",
            "approvedBy": "ana",
            "refundRef": "rf_r-1",
            "settlement": settled["eventId"],
        }),
        "{done}"
    );
    assert_eq!(done["attemptsMade"], 1, "waits use up no attempt: {done}");

    // The timeline: three runs (parked for the token, parked for the
    // event, completed), both steps with their times, both waits with
    // what came.
    let timeline = wait_recorded_runs(&api, &job, 3).await;
    let ends: Vec<&str> = timeline["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["end"].as_str().unwrap())
        .collect();
    assert_eq!(ends, ["waited", "waited", "completed"], "{timeline}");
    // Wake-ups are runs of the job's one attempt.
    let attempts: Vec<&Value> = timeline["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["attempt"])
        .collect();
    assert_eq!(attempts, [&json!(1), &json!(1), &json!(1)], "{timeline}");
    let parked_on: Vec<&Value> = timeline["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["parkedOn"])
        .collect();
    assert_eq!(
        parked_on,
        [&json!("approval"), &json!("settlement"), &Value::Null],
        "each parked run names its wait: {timeline}"
    );
    let steps: Vec<&str> = timeline["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        steps,
        ["open-refund", "ask-approval", "issue-refund"],
        "{timeline}"
    );
    assert!(timeline["steps"][2]["at"].as_u64().is_some(), "{timeline}");
    let waits = timeline["waits"].as_array().unwrap();
    assert_eq!(waits.len(), 2, "{timeline}");
    assert!(waits.iter().all(|w| w["outcome"] == "came"), "{timeline}");
    // A binding without an approval service: the refund fails at once,
    // naming the config key, before any step.
    api.setup(
        "unconfigured",
        guest,
        json!({"defaultJobOptions": {"attempts": 3}}),
    )
    .await;
    let failed = api
        .wait_done(
            &api.enqueue(
                "unconfigured",
                json!({"data": {"refundId": "r-0", "orderId": "o-0", "amount": 1.0}}),
            )
            .await,
        )
        .await;
    assert_eq!(
        (
            &failed["state"],
            &failed["failureKind"],
            &failed["attemptsMade"]
        ),
        (&json!("failed"), &json!("guest_fatal"), &json!(1)),
        "{failed}"
    );
    assert!(
        failed["failedReason"]
            .as_str()
            .unwrap()
            .contains("the queue binding's config has no `APPROVAL_URL`"),
        "{failed}"
    );
    assert_eq!(failed["steps"], json!([]), "{failed}");

    // The hosts add their tallies once a second.
    let tallied = airlock_tests::eventually_some(
        "the runs tallied: 1 completed, 2 waited",
        std::time::Duration::from_secs(10),
        || async {
            let (status, stats) = api.get("/v1/stats?minutes=5", tokens::READER).await;
            assert_eq!(status, StatusCode::OK, "{stats}");
            let total = |end: &str| -> u64 {
                stats["minutes"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|m| m["runs"][end].as_u64().unwrap_or(0))
                    .sum()
            };
            let totals = (total("completed"), total("waited"));
            (totals.0 >= 1 && totals.1 >= 2).then_some(totals)
        },
    )
    .await;
    assert_eq!(tallied, (1, 2), "no run tallied twice");
}

/// The job's timeline once the hosts recorded `runs` runs of it.
async fn wait_recorded_runs(api: &Api, job: &str, runs: usize) -> Value {
    airlock_tests::eventually_some(
        &format!("{runs} recorded runs of {job}"),
        std::time::Duration::from_secs(10),
        || async {
            let (status, timeline) = api
                .get(&format!("/v1/jobs/{job}/timeline"), tokens::ADMIN)
                .await;
            assert_eq!(status, StatusCode::OK, "{timeline}");
            (timeline["runs"].as_array().unwrap().len() >= runs).then_some(timeline)
        },
    )
    .await
}

#[tokio::test]
async fn a_rust_refund_is_approved_and_settled() {
    refund_is_approved_and_settled("refund-request").await;
}

#[tokio::test]
async fn a_typescript_refund_is_approved_and_settled() {
    refund_is_approved_and_settled("js_refund_request").await;
}

#[tokio::test]
async fn a_python_refund_is_approved_and_settled() {
    refund_is_approved_and_settled("py_refund_request").await;
}

/// Events and completions that come before the wait is reached are kept
/// for it: the job never parks for them.
#[tokio::test]
async fn an_event_sent_while_the_job_still_runs_is_not_lost() {
    let (api, approvals) = start_refunds("refund-request", json!({})).await;
    // The job runs again after its approval, issues the refund and spins
    // before its wait: the settlement comes now, before the wait is reached.
    let (job, _) = approved_and_spinning(
        &api,
        &approvals,
        json!({"refundId": "r-7", "orderId": "o-7", "amount": 5.0, "pauseBeforeSettleMs": 1500}),
        "bo",
    )
    .await;
    let settled = send_event(
        &api,
        tokens::PRODUCER,
        "refund.settled",
        json!({"refundId": "r-7"}),
    )
    .await;
    assert_eq!(
        settled["resumed"],
        json!([]),
        "nothing waits yet: {settled}"
    );
    let done = api.wait_done(&job).await;
    assert_eq!(done["returnvalue"]["status"], "settled", "{done}");
    assert_eq!(
        done["returnvalue"]["settlement"], settled["eventId"],
        "{done}"
    );
    let logs = api.job(&job).await["logs"].to_string();
    assert_eq!(
        logs.matches("waiting (`settlement`)").count(),
        0,
        "it never parked for the settlement: {logs}"
    );
}

#[tokio::test]
async fn a_timeout_ends_a_wait_with_nothing() {
    let (api, approvals) = start_refunds("refund-request", json!({})).await;
    // No decision within 300 ms: expired, and a late decision is refused.
    let expired = api
        .enqueue(
            "refunds",
            json!({"data": {"refundId": "r-3", "orderId": "o-3", "amount": 5.0, "approvalTimeoutMs": 300}}),
        )
        .await;
    // Approved, but no settlement within 300 ms: unsettled.
    let unsettled = api
        .enqueue(
            "refunds",
            json!({"data": {"refundId": "r-4", "orderId": "o-4", "amount": 5.0, "settleTimeoutMs": 300}}),
        )
        .await;
    parked(&api, &unsettled, "token").await;
    let token = approval_token(&api, &approvals, &unsettled).await;
    assert_eq!(
        complete(&api, &token, json!({"approved": true})).await.0,
        StatusCode::ACCEPTED
    );

    let done = api.wait_done(&expired).await;
    assert_eq!(
        done["returnvalue"],
        json!({"status": "expired", "refundId": "r-3"}),
        "{done}"
    );
    let late = approval_token(&api, &approvals, &expired).await;
    let (status, body) = complete(&api, &late, json!({"approved": true})).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");

    let done = api.wait_done(&unsettled).await;
    assert_eq!(done["returnvalue"]["status"], "unsettled", "{done}");
    // The settlement after the timeout changes nothing.
    let late = send_event(
        &api,
        tokens::PRODUCER,
        "refund.settled",
        json!({"refundId": "r-4"}),
    )
    .await;
    assert_eq!(late["resumed"], json!([]), "{late}");
}

/// A host killed while the job runs loses nothing: the job is recovered on
/// the other host, replays its approval, and gets the settlement sent
/// while no host ran it.
#[tokio::test]
async fn a_wait_outlives_the_host_running_the_job() {
    let (mut api, approvals) = start_refunds("refund-request", json!({"concurrency": 1})).await;
    let mut b = HostProcess::start(
        &api.redis.url(),
        HostOptions {
            id: "host-b".into(),
            extra: egress_args(&approvals),
            ..HostOptions::default()
        },
    );
    let (job, running) = approved_and_spinning(
        &api,
        &approvals,
        json!({"refundId": "r-9", "orderId": "o-9", "amount": 5.0, "pauseBeforeSettleMs": 3000}),
        "cy",
    )
    .await;
    let _survivor = if running["processedByHost"] == "api-host" {
        api.host.kill9();
        let survivor = HostProcess::start(
            &api.redis.url(),
            HostOptions {
                id: "api-2".into(),
                api: true,
                extra: egress_args(&approvals),
                ..HostOptions::default()
            },
        );
        api.url = survivor.api_url();
        Some(survivor)
    } else {
        b.kill9();
        None
    };
    let settled = send_event(
        &api,
        tokens::PRODUCER,
        "refund.settled",
        json!({"refundId": "r-9"}),
    )
    .await;
    let done = api.wait_done(&job).await;
    assert_eq!(done["state"], "completed", "{done}");
    assert_eq!(done["returnvalue"]["approvedBy"], "cy", "{done}");
    assert_eq!(
        done["returnvalue"]["settlement"], settled["eventId"],
        "{done}"
    );
}

/// An event sent while the job waited for something else is kept for its
/// next wait, even after a thousand other events of the fleet: a wait
/// looks back at the newest events first.
#[tokio::test]
async fn an_early_event_is_found_after_a_thousand_others() {
    let (api, approvals) = start_refunds("refund-request", json!({})).await;
    let job = api
        .enqueue(
            "refunds",
            json!({"data": {"refundId": "r-5", "orderId": "o-5", "amount": 5.0}}),
        )
        .await;
    parked(&api, &job, "token").await;
    let token = approval_token(&api, &approvals, &job).await;
    // While it waits for its approval: 1,200 other events, then its
    // settlement.
    for n in 0..1_200 {
        send_event(&api, tokens::PRODUCER, "noise", json!({ "n": n })).await;
    }
    let settled = send_event(
        &api,
        tokens::PRODUCER,
        "refund.settled",
        json!({"refundId": "r-5"}),
    )
    .await;
    assert_eq!(
        complete(&api, &token, json!({"approved": true})).await.0,
        StatusCode::ACCEPTED
    );
    let done = api.wait_done(&job).await;
    assert_eq!(
        done["returnvalue"]["settlement"], settled["eventId"],
        "{done}"
    );
    // Sent before the wait began, the event resumed nothing then; the wait
    // that found it later is in its record all the same.
    assert_eq!(settled["resumed"], json!([]), "{settled}");
    let listed = listed_event(&api, &settled["eventId"]).await;
    assert_eq!(listed["resumed"], json!([job]), "{listed}");
}
