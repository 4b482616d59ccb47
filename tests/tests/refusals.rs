//! Refusals that say why, in every SDK: a request the host refuses (the
//! binding's egress list, the operator's, the address check, the request
//! count) or cuts off (a size or time cap) fails the job at once — fatal,
//! never retried — with the host's own reason, which the SDKs read from
//! `context.http-refusals` (`airlock:job@0.4.0`). A plain network failure
//! stays retryable. Real guests (Rust's `http-probe`, the TypeScript and
//! Python `http-refusal-probe`s) against a real loopback server, in the
//! sandbox with the environment a binding gives; and binding a rule the
//! operator's list can never allow is a 400 naming it.

use std::sync::Arc;
use std::time::Duration;

use airlock::sandbox::egress::{EgressPolicy, EgressRule, OperatorEgress};
use airlock::sandbox::{
    Completion, FailureKind, JobInput, Limits, LocalServices, RunEnv, RunOutcome, Sandbox,
    SandboxConfig,
};
use airlock_tests::api::Api;
use airlock_tests::guest_bytes;
use airlock_tests::host::tokens;
use airlock_tests::http_server::TestServer;
use reqwest::StatusCode;
use serde_json::{Value, json};

/// A sandbox on the run's shared artifact cache (each probe compiles once
/// per run).
fn sandbox() -> Arc<Sandbox> {
    Arc::new(
        Sandbox::new(SandboxConfig {
            max_instances: 8,
            ..airlock_tests::shared_cache_config()
        })
        .expect("sandbox"),
    )
}

/// Egress where the operator allows `operator` (and loopback) and the
/// binding `binding`.
fn egress(operator: &[&str], binding: &[&str]) -> Option<EgressPolicy> {
    Some(EgressPolicy {
        operator: Arc::new(OperatorEgress {
            allow: operator.iter().map(|p| p.parse().unwrap()).collect(),
            networks: vec!["127.0.0.1/32".parse().unwrap()],
        }),
        rules: binding
            .iter()
            .map(|r| serde_json::from_value::<EgressRule>(json!(r)).unwrap())
            .collect(),
    })
}

fn run(
    sandbox: &Arc<Sandbox>,
    guest: &str,
    data: Value,
    limits: &Limits,
    egress: Option<EgressPolicy>,
) -> RunOutcome {
    let component = sandbox.load(&guest_bytes(guest)).expect("the probe loads");
    let job = JobInput {
        id: "refusal-1".into(),
        queue: "refusals".into(),
        name: "probe".into(),
        data: data.to_string(),
        attempt: 1,
        max_attempts: 3,
        enqueued_at_ms: 0,
        parent: None,
    };
    sandbox.guest_runtime().block_on(sandbox.run_async(
        &component,
        job,
        limits,
        Box::new(LocalServices::new()),
        None,
        RunEnv {
            egress,
            ..RunEnv::default()
        },
    ))
}

/// How each probe asks for `url` (reading the body): the Rust probe
/// returns the SDK's error as text (its `JobError` is fatal for refusals
/// and limits, as the payment handlers' end-to-end test shows); the
/// TypeScript and Python probes let the SDK's error fail the job.
const PROBES: [(&str, &str); 4] = [
    ("rust", "http-probe"),
    ("ts ctx.fetch", "js-http-refusal-probe"),
    ("ts fetch", "js-http-refusal-probe"),
    ("python", "py-http-refusal-probe"),
];

fn data(label: &str, url: &str) -> Value {
    match label {
        "rust" => json!({"requests": [{"url": url}]}),
        "ts ctx.fetch" => json!({"url": url, "via": "ctx", "read": true}),
        "ts fetch" => json!({"url": url, "via": "global", "read": true}),
        _ => json!({"url": url, "read": true}),
    }
}

/// What the SDK made of the failure: fatal or not, and its message.
fn failure(label: &str, outcome: &RunOutcome) -> (bool, String) {
    match (&outcome.completion, label) {
        (Completion::Completed(out), "rust") => {
            let answers = out;
            let error = answers[0]["error"].as_str().unwrap_or_default().to_string();
            // `From<HttpError> for JobError`: fatal unless a transport
            // failure (or a retryable status).
            (!error.starts_with("HTTP transport"), error)
        }
        (Completion::Failed(f), _) => (f.kind == FailureKind::GuestFatal, f.message.clone()),
        (other, _) => panic!("{label}: {other:?} {:?}", outcome.logs),
    }
}

#[test]
fn a_refused_or_cut_off_request_fails_the_job_with_the_hosts_reason_in_every_sdk() {
    let server = TestServer::start();
    let url = server.url.clone();
    let sandbox = sandbox();
    let tight = Limits {
        max_http_request_bytes: 1024,
        max_http_response_bytes: 1024,
        http_timeout: Duration::from_millis(400),
        ..Limits::default()
    };
    let cut_off_logged = |out: &RunOutcome, cap: &str| {
        out.logs.iter().any(|l| {
            l.message.starts_with("[airlock] HTTP request cut off:") && l.message.contains(cap)
        })
    };
    for (label, guest) in PROBES {
        // Not in the binding's list.
        let out = run(
            &sandbox,
            guest,
            data(label, &format!("{url}/echo?x=1")),
            &tight,
            egress(&[&url], &["https://api.example.com"]),
        );
        let (fatal, reason) = failure(label, &out);
        assert!(fatal, "{label}: {reason}");
        assert!(
            reason.contains(&format!(
                "GET {url}/echo is not in this queue's egress list"
            )),
            "{label}: {reason}"
        );
        assert_eq!(out.http.refused, 1, "{label}");

        // In the binding's list, not the operator's.
        let out = run(
            &sandbox,
            guest,
            data(label, &format!("{url}/echo")),
            &tight,
            egress(&["https://api.example.com"], &[&url]),
        );
        let (fatal, reason) = failure(label, &out);
        assert!(fatal, "{label}: {reason}");
        assert!(
            reason.contains("is not allowed by this host's operator"),
            "{label}: {reason}"
        );

        // Schemes other than http(s), directly and as a redirect's hop:
        // refused whatever the lists say, with a line in the job's log.
        // (Only the Rust probe follows redirects: Python's client returns
        // them, and StarlingMonkey's fetch answered the 302 itself.)
        let redirect = format!("{url}/redirect?to=gopher://example.com:70/x");
        let mut targets = vec!["gopher://example.com:70/x", "ftp://example.com/f"];
        if label == "rust" {
            targets.push(&redirect);
        }
        for target in targets {
            let mut data = data(label, target);
            if label == "rust" {
                data["requests"][0]["follow"] = json!(1);
            }
            let out = run(&sandbox, guest, data, &tight, egress(&[&url], &[&url]));
            let (fatal, reason) = failure(label, &out);
            assert!(fatal, "{label} {target}: {reason}");
            let scheme = if target == redirect {
                "gopher"
            } else {
                target.split(':').next().unwrap()
            };
            assert!(
                reason.contains(&format!("the scheme `{scheme}:` is not http or https")),
                "{label} {target}: {reason}"
            );
            assert_eq!(out.http.refused, 1, "{label} {target}");
            assert!(
                out.logs.iter().any(|l| l
                    .message
                    .starts_with("[airlock] HTTP request refused: the scheme")),
                "{label} {target}: {:?}",
                out.logs
            );
        }

        // A body over maxHttpRequestBytes: cut off, nothing sent.
        let mut with_body = data(label, &format!("{url}/echo"));
        let body = json!("x".repeat(4096));
        if label == "rust" {
            with_body["requests"][0]["method"] = json!("POST");
            with_body["requests"][0]["body"] = body;
        } else {
            with_body["body"] = body;
        }
        let before = server.seen().len();
        let out = run(&sandbox, guest, with_body, &tight, egress(&[&url], &[&url]));
        let (fatal, reason) = failure(label, &out);
        assert!(fatal, "{label}: {reason}");
        assert!(
            reason.contains("is over maxHttpRequestBytes (1024 bytes); nothing was sent"),
            "{label}: {reason}"
        );
        assert!(
            cut_off_logged(&out, "maxHttpRequestBytes"),
            "{label}: {:?}",
            out.logs
        );
        assert_eq!(server.seen().len(), before, "{label}: the body went out");

        // A response over maxHttpResponseBytes, cut off while read.
        let out = run(
            &sandbox,
            guest,
            data(label, &format!("{url}/big?n=100000")),
            &tight,
            egress(&[&url], &[&url]),
        );
        let (fatal, reason) = failure(label, &out);
        assert!(fatal, "{label}: {reason}");
        assert!(
            reason.contains("went over maxHttpResponseBytes (1024 bytes)"),
            "{label}: {reason}"
        );
        assert!(
            cut_off_logged(&out, "maxHttpResponseBytes"),
            "{label}: {:?}",
            out.logs
        );
        assert!(
            out.http.bytes_in <= 1024,
            "{label}: counted {} bytes the guest never received",
            out.http.bytes_in
        );

        // No response within httpTimeoutMs.
        let out = run(
            &sandbox,
            guest,
            data(label, &format!("{url}/slow?ms=3000")),
            &tight,
            egress(&[&url], &[&url]),
        );
        let (fatal, reason) = failure(label, &out);
        assert!(fatal, "{label}: {reason}");
        assert!(
            reason.contains("within 400 ms (httpTimeoutMs"),
            "{label}: {reason}"
        );
        assert!(
            cut_off_logged(&out, "httpTimeoutMs"),
            "{label}: {:?}",
            out.logs
        );

        // An allowed destination where nothing listens: a network error,
        // worth a retry, with no refusal of the host's to report.
        let closed = "http://127.0.0.1:9";
        let out = run(
            &sandbox,
            guest,
            data(label, &format!("{closed}/x")),
            &tight,
            egress(&[closed], &[closed]),
        );
        let (fatal, reason) = failure(label, &out);
        assert!(
            !fatal,
            "{label}: a connection refused became fatal: {reason}"
        );
        if label != "rust" {
            assert!(
                matches!(&out.completion, Completion::Failed(f) if f.kind == FailureKind::GuestRetry),
                "{label}: {:?}",
                out.completion
            );
        }
    }
}

/// A binding rule no destination of the host operator's `--egress-allow`
/// matches would see every request refused: the bind is a 400 naming the
/// rule, and the binding is unchanged.
#[tokio::test]
async fn binding_a_rule_the_operator_never_allows_is_refused_naming_it() {
    let server = TestServer::start();
    let api = Api::start_with(&[
        "--egress-allow",
        &server.url,
        "--egress-allow-network",
        "127.0.0.1/32",
    ]);
    api.setup("mail", "http-probe", json!({"egress": [server.url]}))
        .await;
    let (status, body) = api
        .put(
            "/v1/queues/mail",
            tokens::ADMIN,
            json!({"handler": "http-probe", "egress": [server.url, {"url": "https://api.sendgrid.com", "methods": ["POST"]}]}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error"]["field"], "egress[1]", "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("https://api.sendgrid.com is not allowed by this host's operator")
            && message.contains("--egress-allow"),
        "{message}"
    );
    let (status, queue) = api.get("/v1/queues/mail", tokens::ADMIN).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(queue["egress"], json!([server.url]), "{queue}");
}
