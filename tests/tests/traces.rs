//! OpenTelemetry traces through real hosts, Redis and an OTLP receiver:
//! a job's enqueue, its runs on two hosts, the steps they ran and the
//! requests they sent arrive as one trace that continues the producer's
//! `traceparent`; a retry is a second run span with the first one's
//! failure; a binding with `propagateTrace` hands the trace on to the
//! services its handler calls; a job added by Node's BullMQ with
//! `bullmq-otel` continues the Node producer's trace through two hosts, a
//! retry, a step, a request and a sleep; flows, events and flow control's
//! holds are in their jobs' traces.

use std::collections::HashSet;
use std::time::Duration;

use airlock_tests::api::Api;
use airlock_tests::host::{HostOptions, HostProcess, tokens};
use airlock_tests::http_server::TestServer;
use airlock_tests::otlp::{OtlpReceiver, ReceivedSpan};
use reqwest::StatusCode;
use serde_json::{Value, json};

/// Options of a host that exports to `receiver` every 100 ms and may reach
/// `approvals`.
fn exporting(id: &str, receiver: &OtlpReceiver, approvals: &TestServer) -> HostOptions {
    let mut options = HostOptions {
        id: id.into(),
        extra: [
            "--egress-allow",
            &approvals.url,
            "--egress-allow-network",
            "127.0.0.1/32",
        ]
        .map(String::from)
        .to_vec(),
        ..HostOptions::default()
    };
    options.env.extend([
        ("OTEL_EXPORTER_OTLP_ENDPOINT".into(), receiver.url.clone()),
        ("OTEL_BSP_SCHEDULE_DELAY".into(), "100".into()),
    ]);
    options
}

/// Enqueues `body` on `queue` with `traceparent` (if any); the job's ref.
async fn enqueue_traced(api: &Api, queue: &str, traceparent: Option<&str>, body: Value) -> String {
    let mut request = api
        .http
        .post(format!("{}/v1/queues/{queue}/jobs", api.url))
        .bearer_auth(tokens::PRODUCER)
        .json(&body);
    if let Some(parent) = traceparent {
        request = request.header("traceparent", parent);
    }
    let response = request.send().await.unwrap();
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    let accepted: Value = response.json().await.unwrap();
    accepted["ref"].as_str().unwrap().to_string()
}

/// The spans of `trace_id` once `done` holds for them (at most 20 s).
async fn trace_when(
    receiver: &OtlpReceiver,
    trace_id: &str,
    what: &str,
    done: impl Fn(&[ReceivedSpan]) -> bool,
) -> Vec<ReceivedSpan> {
    airlock_tests::eventually_some(what, Duration::from_secs(20), || async {
        let spans = receiver.trace(trace_id);
        done(&spans).then_some(spans)
    })
    .await
}

fn named<'a>(spans: &'a [ReceivedSpan], name: &str) -> Vec<&'a ReceivedSpan> {
    spans.iter().filter(|s| s.name == name).collect()
}

/// The names of the spans directly under `run`, sorted.
fn under(spans: &[ReceivedSpan], run: &ReceivedSpan) -> Vec<String> {
    let mut names: Vec<String> = spans
        .iter()
        .filter(|s| s.parent_id == run.span_id)
        .map(|s| s.name.clone())
        .collect();
    names.sort();
    names
}

fn runs(spans: &[ReceivedSpan], queue: &str) -> Vec<ReceivedSpan> {
    let mut runs: Vec<ReceivedSpan> = named(spans, &format!("process {queue}"))
        .into_iter()
        .cloned()
        .collect();
    runs.sort_by_key(|s| s.attr("airlock.run").as_i64());
    runs
}

/// The refund example on two hosts: approval token, then settlement
/// event. Three runs, each a `process` span under the API's `add` span,
/// which continues the caller's `traceparent`; the steps each run executed
/// and the approval request sit under their run.
#[tokio::test]
async fn a_job_is_one_trace_from_its_enqueue_through_every_run_step_and_request() {
    let receiver = OtlpReceiver::start();
    let approvals = TestServer::start();
    let api = Api::start_with_options(exporting("api-host", &receiver, &approvals));
    let _b = HostProcess::start(&api.redis.url(), exporting("host-b", &receiver, &approvals));
    api.setup(
        "refunds",
        "refund-request",
        json!({
            "egress": [approvals.url],
            "config": {"APPROVAL_URL": approvals.url},
            "propagateTrace": true,
        }),
    )
    .await;

    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let caller_span = "00f067aa0ba902b7";
    let job = enqueue_traced(
        &api,
        "refunds",
        Some(&format!("00-{trace_id}-{caller_span}-01")),
        json!({"data": {"refundId": "r-t", "orderId": "o-t", "amount": 5}}),
    )
    .await;
    let id = job.split_once(':').unwrap().1.to_string();
    api.wait_until(&job, "parked on its token", |j| {
        j["waiting"]["kind"] == "token"
    })
    .await;
    let asked: Value = serde_json::from_str(&approvals.seen()[0].body).unwrap();
    let token = asked["token"].as_str().unwrap().to_string();
    let (status, body) = api
        .call(
            reqwest::Method::POST,
            &format!("/v1/tokens/{token}/complete"),
            None,
            Some(json!({"approved": true})),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    api.wait_until(&job, "parked on its event", |j| {
        j["waiting"]["kind"] == "event"
    })
    .await;
    let (status, body) = api
        .post(
            "/v1/events",
            tokens::PRODUCER,
            json!({"name": "refund.settled", "data": {"refundId": "r-t"}}),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert_eq!(api.wait_done(&job).await["state"], "completed");

    let spans = trace_when(
        &receiver,
        trace_id,
        "the add, three runs and their children",
        |s| {
            runs(s, "refunds").len() == 3
                && named(s, "add refunds").len() == 1
                && named(s, "wait settlement").len() == 1
                && s.len() >= 8
        },
    )
    .await;

    // The enqueue: a producer span under the caller's.
    let add = named(&spans, "add refunds")[0];
    assert_eq!(
        (add.kind, add.parent_id.as_str(), add.service.as_str()),
        ("producer", caller_span, "airlock")
    );
    assert_eq!(add.attr("messaging.message.id"), &json!(id));

    // Each run: a consumer span under the add, saying how it ended.
    let runs = runs(&spans, "refunds");
    let ends: Vec<&Value> = runs.iter().map(|r| r.attr("airlock.run.end")).collect();
    assert_eq!(
        ends,
        [&json!("waited"), &json!("waited"), &json!("completed")]
    );
    let hosts: HashSet<&str> = ["api-host", "host-b"].into();
    for (n, run) in runs.iter().enumerate() {
        assert_eq!(
            (run.kind, &run.parent_id),
            ("consumer", &add.span_id),
            "{run:?}"
        );
        assert_eq!(run.attr("airlock.run"), &json!(n + 1), "{run:?}");
        // Wake-ups after the waits are runs of the same attempt.
        assert_eq!(run.attr("messaging.bullmq.attempt"), &json!(1), "{run:?}");
        assert_eq!(run.attr("messaging.message.id"), &json!(id), "{run:?}");
        assert_eq!(run.attr("messaging.destination.name"), &json!("refunds"));
        assert_eq!(
            run.attr("airlock.handler.digest").as_str().unwrap().len(),
            64
        );
        assert!(
            hosts.contains(run.attr("airlock.host.id").as_str().unwrap()),
            "{run:?}"
        );
        assert!(
            run.attr("airlock.fuel_used").as_i64().unwrap() > 0,
            "{run:?}"
        );
        assert!(run.attr("airlock.peak_memory_bytes").as_i64().unwrap() > 0);
        assert_eq!(run.status, "unset", "{run:?}");
        assert!(run.start_ns < run.end_ns, "{run:?}");
    }

    // The job's log names each run's trace and span.
    let logs = api.job(&job).await["logs"].to_string();
    for run in &runs {
        let line = format!("[airlock] trace {trace_id} span {}", run.span_id);
        assert!(logs.contains(&line), "{line} in {logs}");
    }

    // Under each run: the steps it executed (not the ones it replayed)
    // and the request it sent.
    assert_eq!(
        under(&spans, &runs[0]),
        [
            "POST",
            "instantiate",
            "step ask-approval",
            "step open-refund"
        ]
    );
    assert_eq!(
        under(&spans, &runs[1]),
        ["instantiate", "step issue-refund"]
    );
    assert_eq!(under(&spans, &runs[2]), ["instantiate"]);
    let request = named(&spans, "POST")[0];
    assert_eq!(request.kind, "client");
    assert_eq!(request.attr("http.request.method"), &json!("POST"));
    assert_eq!(request.attr("server.address"), &json!("127.0.0.1"));
    assert_eq!(request.attr("server.port"), &json!(approvals.port));
    assert_eq!(request.attr("url.path"), &json!("/v1/approvals"));
    assert_eq!(request.attr("http.response.status_code"), &json!(200));
    assert!(
        request
            .attr("airlock.http.request_body_bytes")
            .as_i64()
            .unwrap()
            > 0
    );
    // The binding propagates the trace: the approval service got the run's
    // span as its parent.
    assert_eq!(
        approvals.seen()[0].headers.get("traceparent"),
        Some(&format!("00-{trace_id}-{}-01", runs[0].span_id)),
    );
    let step = named(&spans, "step ask-approval")[0];
    assert_eq!(
        (step.kind, step.attr("airlock.step.id")),
        ("internal", &json!("ask-approval"))
    );
    // Each durable wait, from the park to the run it resumed, under the
    // add: the approval (token), then the settlement (event).
    for (name, parked, resumed) in [
        ("wait approval", &runs[0], &runs[1]),
        ("wait settlement", &runs[1], &runs[2]),
    ] {
        let found = named(&spans, name);
        assert_eq!(found.len(), 1, "one `{name}`: {spans:#?}");
        let wait = found[0];
        assert_eq!(
            (wait.parent_id.as_str(), wait.attr("airlock.wait.rule")),
            (add.span_id.as_str(), &json!("wait")),
            "{wait:?}"
        );
        assert!(
            wait.start_ns + 100_000_000 >= parked.end_ns && wait.end_ns <= resumed.start_ns,
            "{wait:?} lies between {parked:?} and {resumed:?}"
        );
    }
    // What spans hold is never a body: the token stays out of the trace.
    for span in &spans {
        let text = format!("{span:?}");
        assert!(!text.contains(&token), "{span:?}");
    }
}

/// A job that fails once and succeeds on its retry: two runs in the trace
/// of its enqueue (a root: no `traceparent` came), the first with the
/// failure's kind and reason as an error. A request the binding does not
/// allow is a client span with the refusal.
#[tokio::test]
async fn a_retry_is_a_second_run_span_and_a_refused_request_says_why() {
    let receiver = OtlpReceiver::start();
    let approvals = TestServer::start();
    let api = Api::start_with_options(exporting("api-host", &receiver, &approvals));
    api.setup(
        "flaky",
        "flaky",
        json!({"defaultJobOptions": {"attempts": 2}}),
    )
    .await;
    let job = enqueue_traced(
        &api,
        "flaky",
        None,
        json!({"data": {"succeedOnAttempt": 2}}),
    )
    .await;
    assert_eq!(api.wait_done(&job).await["state"], "completed");
    let id = job.split_once(':').unwrap().1.to_string();
    let add = airlock_tests::eventually_some("the add span", Duration::from_secs(20), || async {
        receiver
            .spans()
            .into_iter()
            .find(|s| s.name == "add flaky" && s.attr("messaging.message.id") == &json!(id))
    })
    .await;
    assert_eq!(add.parent_id, "", "a root: the request had no traceparent");
    let spans = trace_when(&receiver, &add.trace_id, "two runs", |s| {
        runs(s, "flaky").len() == 2
    })
    .await;
    let flaky = runs(&spans, "flaky");
    assert_eq!(
        (flaky[0].status, flaky[0].status_message.as_str()),
        ("error", "attempt 1 failed on purpose")
    );
    assert_eq!(flaky[0].attr("airlock.failure.kind"), &json!("guest_retry"));
    assert_eq!(flaky[0].attr("airlock.run.end"), &json!("guest_retry"));
    assert_eq!(
        (flaky[1].status, flaky[1].attr("airlock.run.end")),
        ("unset", &json!("completed"))
    );
    assert!(flaky.iter().all(|r| r.parent_id == add.span_id));
    // The retry is the job's second attempt.
    let attempts: Vec<&Value> = flaky
        .iter()
        .map(|r| r.attr("messaging.bullmq.attempt"))
        .collect();
    assert_eq!(attempts, [&json!(1), &json!(2)]);

    // Without `propagateTrace` a request goes as the handler wrote it.
    api.setup(
        "refunds",
        "refund-request",
        json!({"egress": [approvals.url], "config": {"APPROVAL_URL": approvals.url}}),
    )
    .await;
    let refund = enqueue_traced(
        &api,
        "refunds",
        None,
        json!({"data": {"refundId": "r-u", "orderId": "o-u", "amount": 5}}),
    )
    .await;
    api.wait_until(&refund, "parked on its token", |j| {
        j["waiting"]["kind"] == "token"
    })
    .await;
    let asked = approvals.seen();
    assert_eq!(asked.len(), 1);
    assert!(
        !asked[0].headers.contains_key("traceparent"),
        "{:?}",
        asked[0].headers
    );

    // The payment handler posting to a ledger its binding does not allow.
    api.setup(
        "payments",
        "payment-webhook",
        json!({"egress": [approvals.url], "config": {"LEDGER_URL": "http://127.0.0.1:9"}}),
    )
    .await;
    let trace_id = "5bf92f3577b34da6a3ce929d0e0e4736";
    let job = enqueue_traced(
        &api,
        "payments",
        Some(&format!("00-{trace_id}-00f067aa0ba902b7-01")),
        json!({"data": {"transactionId": "tx-t", "amount": 5}}),
    )
    .await;
    assert_eq!(api.wait_done(&job).await["state"], "failed");
    let spans = trace_when(&receiver, trace_id, "the refused request", |s| {
        !named(s, "POST").is_empty() && !runs(s, "payments").is_empty()
    })
    .await;
    let refused = named(&spans, "POST")[0];
    assert_eq!(refused.status, "error");
    assert!(
        refused
            .status_message
            .contains("is not in this queue's egress list"),
        "{refused:?}"
    );
    assert_eq!(refused.attr("airlock.http.refused"), &json!(1));
    assert_eq!(refused.attr("url.path"), &json!("/v1/ledger"));
    assert_eq!(refused.parent_id, runs(&spans, "payments")[0].span_id);
}

/// A job added by Node's BullMQ with `bullmq-otel` telemetry, run by two
/// hosts, with a step that sends a request, a retry and a durable sleep:
/// its runs continue the Node producer's trace — each `process` span a
/// child of the producer's `add` span, both reaching the receiver as one
/// trace — with the step, the request and the instantiation under the run
/// that did them, the failed attempt as an error, and the service called
/// handed the trace (`propagateTrace`).
#[tokio::test]
async fn a_node_bullmq_otel_job_is_one_trace_through_a_retry_a_step_a_request_and_a_sleep() {
    let receiver = OtlpReceiver::start();
    let service = TestServer::start();
    let api = Api::start_with_options(exporting("api-host", &receiver, &service));
    let _b = HostProcess::start(&api.redis.url(), exporting("host-b", &receiver, &service));
    api.setup(
        "traced",
        "trace-probe",
        json!({"egress": [service.url], "propagateTrace": true}),
    )
    .await;
    let data = json!({"url": format!("{}/called", service.url), "sleepMs": 200});
    let out = std::process::Command::new("node")
        .arg(airlock_tests::interop_script("traced-producer.js"))
        .args(["--redis", &api.redis.url(), "--prefix", "bull"])
        .args(["--queue", "traced", "--otlp", &receiver.url])
        .args(["--attempts", "2", "--data", &data.to_string()])
        .args(["--delay", "300", "--backoff", "400"])
        .output()
        .expect("run node");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let added: Value = serde_json::from_slice(&out.stdout).unwrap();
    let (trace_id, producer_span) = (
        added["traceId"].as_str().unwrap(),
        added["spanId"].as_str().unwrap(),
    );
    assert!(
        added["metadata"].as_str().unwrap().contains(trace_id),
        "BullMQ stored the context with the job: {added}"
    );
    let job_id = added["jobId"].as_str().unwrap();
    let done = api.wait_done(&format!("traced:{job_id}")).await;
    assert_eq!(done["state"], "completed", "{done}");

    let spans = trace_when(
        &receiver,
        trace_id,
        "the Node add and Airlock's three runs",
        |s| s.iter().any(|s| s.service == "node-producer") && runs(s, "traced").len() == 3,
    )
    .await;
    let add = spans.iter().find(|s| s.service == "node-producer").unwrap();
    assert_eq!(
        (add.span_id.as_str(), add.kind),
        (producer_span, "producer")
    );
    let runs = runs(&spans, "traced");
    let ends: Vec<&Value> = runs.iter().map(|r| r.attr("airlock.run.end")).collect();
    assert_eq!(
        ends,
        [&json!("guest_retry"), &json!("slept"), &json!("completed")]
    );
    let hosts: HashSet<&str> = ["api-host", "host-b"].into();
    for run in &runs {
        assert_eq!(
            (run.parent_id.as_str(), run.service.as_str()),
            (producer_span, "airlock"),
            "{run:?}"
        );
        assert_eq!(run.attr("messaging.message.id"), &json!(job_id));
        assert!(hosts.contains(run.attr("airlock.host.id").as_str().unwrap()));
    }
    assert_eq!(
        (runs[0].status, runs[0].status_message.as_str()),
        ("error", "step `flaky` fails on the first attempt")
    );
    assert_eq!(
        under(&spans, &runs[0]),
        ["POST", "instantiate", "step call"]
    );
    assert_eq!(under(&spans, &runs[1]), ["instantiate", "step flaky"]);
    assert_eq!(under(&spans, &runs[2]), ["instantiate"]);
    let called = &service.seen()[0];
    assert_eq!(
        called.headers.get("traceparent"),
        Some(&format!("00-{trace_id}-{}-01", runs[0].span_id)),
        "the service called joins the trace"
    );

    // What the job waited for before each run: its delay, then the wait
    // list, before run 1; the retry's backoff before run 2; the durable
    // sleep before run 3 — each under the producer's span, ending as its
    // run starts.
    let waits: Vec<(&str, &Value, u64, u64)> = [
        "delayed traced",
        "queued traced",
        "backoff traced",
        "sleep nap",
    ]
    .into_iter()
    .map(|name| {
        let found = named(&spans, name);
        assert_eq!(found.len(), 1, "one `{name}` span: {spans:#?}");
        let span = found[0];
        assert_eq!(span.parent_id, producer_span, "{span:?}");
        assert_eq!(span.attr("messaging.message.id"), &json!(job_id));
        (
            name,
            span.attr("airlock.wait.rule"),
            span.start_ns,
            span.end_ns,
        )
    })
    .collect();
    let rules: Vec<&Value> = waits.iter().map(|w| w.1).collect();
    assert_eq!(
        rules,
        [
            &json!("delay"),
            &json!("capacity"),
            &json!("backoff"),
            &json!("sleep")
        ]
    );
    let ms = |ns: u64| ns / 1_000_000;
    let (delayed, queued, backoff, sleep) = (waits[0], waits[1], waits[2], waits[3]);
    assert!(
        ms(delayed.3 - delayed.2) >= 295,
        "the 300 ms delay: {delayed:?}"
    );
    assert_eq!(queued.2, delayed.3, "queued from when the delay ended");
    assert!(
        queued.3 <= runs[0].start_ns,
        "{queued:?} ends as run 1 starts"
    );
    assert!(
        ms(backoff.3 - backoff.2) >= 395,
        "the 400 ms backoff: {backoff:?}"
    );
    let near = |a: u64, b: u64| a.abs_diff(b) < 100_000_000;
    assert!(
        near(backoff.2, runs[0].end_ns),
        "from run 1's end: {backoff:?}"
    );
    assert!(
        backoff.3 <= runs[1].start_ns,
        "{backoff:?} ends as run 2 starts"
    );
    assert!(ms(sleep.3 - sleep.2) >= 195, "the 200 ms sleep: {sleep:?}");
    assert!(
        near(sleep.2, runs[1].end_ns),
        "from run 2's park: {sleep:?}"
    );
    assert!(
        sleep.3 <= runs[2].start_ns,
        "{sleep:?} ends as run 3 starts"
    );
    let nap = named(&spans, "sleep nap")[0];
    assert_eq!(nap.attr("airlock.step.id"), &json!("nap"));
    let backoff_span = named(&spans, "backoff traced")[0];
    assert_eq!(
        backoff_span.attr("airlock.failure.kind"),
        &json!("guest_retry")
    );
}

/// POSTs `body` to `path` as the producer, with `traceparent`; the answer.
async fn post_traced(api: &Api, path: &str, traceparent: &str, body: Value) -> Value {
    let response = api
        .http
        .post(format!("{}{path}", api.url))
        .bearer_auth(tokens::PRODUCER)
        .header("traceparent", traceparent)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    response.json().await.unwrap()
}

/// A flow's jobs and an event's jobs join the trace of the request that
/// added them: every run is a child of the request's producer span.
#[tokio::test]
async fn a_flow_and_an_event_carry_their_callers_trace_to_every_job() {
    let receiver = OtlpReceiver::start();
    let approvals = TestServer::start();
    let api = Api::start_with_options(exporting("api-host", &receiver, &approvals));
    api.setup("parent", "noop", json!({})).await;
    api.setup("child", "noop", json!({})).await;
    api.setup("signups", "noop", json!({"events": ["user.signed_up"]}))
        .await;

    let flow_trace = "6bf92f3577b34da6a3ce929d0e0e4736";
    let flow = post_traced(
        &api,
        "/v1/flows",
        &format!("00-{flow_trace}-00f067aa0ba902b7-01"),
        json!({
            "name": "report", "queue": "parent", "data": {},
            "children": [
                {"name": "part", "queue": "child", "data": {"n": 1}},
                {"name": "part", "queue": "child", "data": {"n": 2}},
            ],
        }),
    )
    .await;
    assert_eq!(
        api.wait_done(flow["ref"].as_str().unwrap()).await["state"],
        "completed"
    );
    let spans = trace_when(&receiver, flow_trace, "the flow's three runs", |s| {
        runs(s, "parent").len() == 1 && runs(s, "child").len() == 2
    })
    .await;
    let add = named(&spans, "add parent")[0];
    assert_eq!(
        (add.kind, add.parent_id.as_str()),
        ("producer", "00f067aa0ba902b7")
    );
    for run in runs(&spans, "parent").iter().chain(&runs(&spans, "child")) {
        assert_eq!(run.parent_id, add.span_id, "{run:?}");
    }
    // Each child's run names its parent job; the parent's names none.
    let parent_ref = flow["ref"].as_str().unwrap();
    for run in runs(&spans, "child") {
        assert_eq!(
            run.attr("airlock.flow.parent"),
            &json!(parent_ref),
            "{run:?}"
        );
    }
    assert_eq!(
        runs(&spans, "parent")[0].attr("airlock.flow.parent"),
        &Value::Null
    );

    let event_trace = "7bf92f3577b34da6a3ce929d0e0e4736";
    let delivery = post_traced(
        &api,
        "/v1/events",
        &format!("00-{event_trace}-00f067aa0ba902b7-01"),
        json!({"name": "user.signed_up", "data": {"to": "ada@example.com"}}),
    )
    .await;
    let job = delivery["jobs"][0].as_str().unwrap().to_string();
    assert_eq!(api.wait_done(&job).await["state"], "completed");
    let spans = trace_when(&receiver, event_trace, "the event's run", |s| {
        runs(s, "signups").len() == 1
    })
    .await;
    let send = named(&spans, "send user.signed_up")[0];
    assert_eq!(
        (send.kind, send.parent_id.as_str()),
        ("producer", "00f067aa0ba902b7")
    );
    let run = &runs(&spans, "signups")[0];
    assert_eq!(run.parent_id, send.span_id);
    assert_eq!(
        run.attr("messaging.message.id"),
        &json!(job.split_once(':').unwrap().1)
    );
}

/// A job that flow control parks for its turn has a `held` span in its
/// trace naming the rule that held it, before the run that follows.
#[tokio::test]
async fn a_job_held_for_its_keys_turn_says_which_rule_held_it() {
    let receiver = OtlpReceiver::start();
    let approvals = TestServer::start();
    let api = Api::start_with_options(exporting("api-host", &receiver, &approvals));
    api.setup(
        "keyed",
        "hostile-infinite-loop",
        json!({
            "concurrency": 2,
            "limits": {"fuel": 300_000_000u64},
            "keyConcurrency": {"key": "$.k", "limit": 1},
        }),
    )
    .await;
    let traces = [
        "8bf92f3577b34da6a3ce929d0e0e4736",
        "9bf92f3577b34da6a3ce929d0e0e4736",
    ];
    let mut jobs = Vec::new();
    for trace_id in traces {
        jobs.push(
            enqueue_traced(
                &api,
                "keyed",
                Some(&format!("00-{trace_id}-00f067aa0ba902b7-01")),
                json!({"data": {"k": "one key"}}),
            )
            .await,
        );
    }
    for job in &jobs {
        assert_eq!(api.wait_done(job).await["failureKind"], "fuel_exhausted");
    }
    // Both ran, one after the other: the second was held for its turn.
    let held = airlock_tests::eventually_some("a held span", Duration::from_secs(20), || async {
        let spans: Vec<ReceivedSpan> = traces.iter().flat_map(|t| receiver.trace(t)).collect();
        let runs = runs(&spans, "keyed").len();
        let held: Vec<ReceivedSpan> = named(&spans, "held keyed").into_iter().cloned().collect();
        (runs == 2 && !held.is_empty()).then_some((held, spans))
    })
    .await;
    let (held, spans) = held;
    let span = &held[0];
    assert_eq!(span.attr("airlock.held.rule"), &json!("keyConcurrency"));
    let add = spans
        .iter()
        .find(|s| s.name == "add keyed" && s.trace_id == span.trace_id)
        .unwrap();
    assert_eq!(span.parent_id, add.span_id);
    let run = runs(&spans, "keyed")
        .into_iter()
        .find(|r| r.trace_id == span.trace_id)
        .unwrap();
    assert!(
        span.end_ns <= run.start_ns,
        "held before it ran: {span:?} {run:?}"
    );
}

/// A child an invoke started runs in its parent's trace: its run span sits
/// under the parent's run that started it, and the parent's resumption is
/// a second run of the same trace.
#[tokio::test]
async fn an_invoked_child_runs_in_its_parents_trace() {
    let receiver = OtlpReceiver::start();
    let approvals = TestServer::start();
    let api = Api::start_with_options(exporting("invoking-host", &receiver, &approvals));
    api.setup(
        "parents",
        "work-probe",
        json!({"starts": {"queues": ["kids"]}}),
    )
    .await;
    api.setup("kids", "work-probe", json!({})).await;

    let trace = "8bf92f3577b34da6a3ce929d0e0e4736";
    let parent = enqueue_traced(
        &api,
        "parents",
        Some(&format!("00-{trace}-00f067aa0ba902b7-01")),
        json!({"name": "order", "data": {"invoke": [
            {"queue": "kids", "name": "charge", "data": {"echo": 7}},
        ]}}),
    )
    .await;
    let job = api.wait_done(&parent).await;
    assert_eq!(job["state"], "completed", "{job}");
    let spans = trace_when(
        &receiver,
        trace,
        "the parent's two runs and the child's",
        |s| runs(s, "parents").len() == 2 && runs(s, "kids").len() == 1,
    )
    .await;
    let parent_runs = runs(&spans, "parents");
    let child = &runs(&spans, "kids")[0];
    assert_eq!(
        child.parent_id, parent_runs[0].span_id,
        "the child's run sits under the run that invoked it: {child:?}"
    );
    assert_eq!(
        child.attr("airlock.flow.parent"),
        &json!(parent),
        "{child:?}"
    );
}

/// A batch run is one span of its own trace, linked to the run span of
/// each of its jobs, each of which links back to it and names the batch.
#[tokio::test(flavor = "multi_thread")]
async fn a_batch_run_is_one_span_linked_from_each_jobs_trace() {
    let receiver = OtlpReceiver::start();
    let approvals = TestServer::start();
    let mut options = exporting("batching-host", &receiver, &approvals);
    options.extra.extend([
        "--secrets-key".to_string(),
        "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff".to_string(),
    ]);
    let api = Api::start_with_options(options);
    api.setup(
        "rows",
        "batch-probe",
        json!({"batch": {"size": 3, "timeoutMs": 5000}}),
    )
    .await;
    let traces = [
        "4bf92f3577b34da6a3ce929d0e0e4731",
        "4bf92f3577b34da6a3ce929d0e0e4732",
        "4bf92f3577b34da6a3ce929d0e0e4733",
    ];
    let mut refs = Vec::new();
    for trace in traces {
        let parent = format!("00-{trace}-00f067aa0ba902b7-01");
        refs.push(enqueue_traced(&api, "rows", Some(&parent), json!({"data": {}})).await);
    }
    for job_ref in &refs {
        assert_eq!(api.wait_done(job_ref).await["state"], "completed");
    }
    let mut job_runs = Vec::new();
    for trace in traces {
        let spans = trace_when(&receiver, trace, "the job's run", |s| {
            runs(s, "rows").len() == 1
        })
        .await;
        job_runs.push(runs(&spans, "rows").remove(0));
    }
    let batch =
        airlock_tests::eventually_some("the batch's span", Duration::from_secs(20), || async {
            receiver
                .spans()
                .into_iter()
                .find(|s| s.name == "process rows batch")
        })
        .await;
    assert_eq!(batch.parent_id, "", "the root of its own trace: {batch:?}");
    assert_eq!(batch.attr("airlock.batch.size"), &json!(3), "{batch:?}");
    assert_eq!(
        batch.attr("airlock.run.end"),
        &json!("completed"),
        "{batch:?}"
    );
    let batch_id = batch.attr("airlock.batch.id").clone();
    for run in &job_runs {
        assert!(
            batch
                .links
                .contains(&(run.trace_id.clone(), run.span_id.clone())),
            "the batch links to the job's run {run:?}: {batch:?}"
        );
        assert_eq!(
            run.links,
            vec![(batch.trace_id.clone(), batch.span_id.clone())],
            "the job's run links to its batch: {run:?}"
        );
        assert_eq!(run.attr("airlock.batch.id"), &batch_id, "{run:?}");
    }
    // The instance's start is under the batch's span, once.
    let all = receiver.trace(&batch.trace_id);
    assert_eq!(
        under(&all, &batch),
        vec!["instantiate".to_string()],
        "{all:?}"
    );
}
