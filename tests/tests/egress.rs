//! Outbound HTTP from real guests against a real loopback server: what the
//! egress rules allow and refuse (and that a refused request never reaches
//! the server), the per-job caps, the deadline cancelling a request in
//! flight, and secrets substituted only for their own destinations.
//!
//! These run the sandbox in process with the environment a binding would
//! give (`RunEnv`); `tests/secrets.rs` goes through the API and a real host.

use std::sync::Arc;
use std::time::{Duration, Instant};

use airlock::sandbox::egress::{EgressPolicy, EgressRule, OperatorEgress};
use airlock::sandbox::http::HttpPool;
use airlock::sandbox::secrets::{self, SecretPolicy, SecretsKey};
use airlock::sandbox::{
    Completion, FailureKind, JobInput, Limits, LoadedComponent, LocalServices, RunEnv, RunOutcome,
    Sandbox, SandboxConfig,
};
use airlock_tests::guest_bytes;
use airlock_tests::http_server::TestServer;
use serde_json::{Value, json};

fn sandbox() -> Arc<Sandbox> {
    Arc::new(
        Sandbox::new(SandboxConfig {
            max_instances: 16,
            ..SandboxConfig::default()
        })
        .expect("sandbox"),
    )
}

fn probe(sandbox: &Sandbox) -> Arc<LoadedComponent> {
    sandbox
        .load(&guest_bytes("http-probe"))
        .expect("http-probe loads")
}

/// Egress where the operator allows `operator` (and `networks`) and the
/// binding `binding`.
fn egress(operator: &[&str], networks: &[&str], binding: &[Value]) -> Option<EgressPolicy> {
    Some(EgressPolicy {
        operator: Arc::new(OperatorEgress {
            allow: operator.iter().map(|p| p.parse().unwrap()).collect(),
            networks: networks.iter().map(|n| n.parse().unwrap()).collect(),
        }),
        rules: binding
            .iter()
            .map(|r| serde_json::from_value::<EgressRule>(r.clone()).unwrap())
            .collect(),
    })
}

fn env(egress: Option<EgressPolicy>) -> RunEnv {
    RunEnv {
        egress,
        ..RunEnv::default()
    }
}

fn run(
    sandbox: &Arc<Sandbox>,
    data: Value,
    limits: &Limits,
    services: LocalServices,
    env: RunEnv,
) -> RunOutcome {
    let mut outcomes = runs_on_one_runtime(sandbox, vec![(data, limits.clone(), services, env)]);
    outcomes.pop().expect("one run")
}

/// Runs every `(data, limits, services, env)` on one runtime, one after the
/// other, as a host runs a queue's jobs: connections kept by a pool outlive
/// a run.
fn runs_on_one_runtime(
    sandbox: &Arc<Sandbox>,
    jobs: Vec<(Value, Limits, LocalServices, RunEnv)>,
) -> Vec<RunOutcome> {
    let component = probe(sandbox);
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let mut outcomes = Vec::new();
            for (i, (data, limits, services, env)) in jobs.into_iter().enumerate() {
                let job = JobInput {
                    id: format!("http-{}", i + 1),
                    queue: "mail".into(),
                    name: "probe".into(),
                    data: data.to_string(),
                    attempt: 1,
                    max_attempts: 1,
                    enqueued_at_ms: 0,
                    parent: None,
                };
                let services = Box::new(services);
                outcomes.push(
                    sandbox
                        .run_isolated(component.clone(), job, limits, services, None, env)
                        .await,
                );
            }
            outcomes
        })
}

/// The probe's answers, one per request.
fn answers(outcome: &RunOutcome) -> Vec<Value> {
    match &outcome.completion {
        Completion::Completed(out) => serde_json::from_value(out.clone()).unwrap(),
        other => panic!("the probe should complete: {other:?} {:?}", outcome.logs),
    }
}

fn logs(outcome: &RunOutcome) -> String {
    outcome
        .logs
        .iter()
        .map(|l| l.message.as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn an_allowed_request_is_sent_and_counted() {
    let server = TestServer::start();
    let url = server.url.clone();
    let outcome = run(
        &sandbox(),
        json!({"requests": [{"method": "POST", "url": format!("{url}/echo"), "body": "hello"}]}),
        &Limits::default(),
        LocalServices::new(),
        env(egress(&[&url], &["127.0.0.1/32"], &[json!(url)])),
    );
    let answers = answers(&outcome);
    assert_eq!(answers[0]["status"], 200, "{answers:?}");
    let echo: Value = serde_json::from_str(answers[0]["body"].as_str().unwrap()).unwrap();
    assert_eq!(echo["method"], "POST");
    assert_eq!(echo["body"], "hello");
    assert_eq!(outcome.http.requests, 1);
    assert_eq!(outcome.http.refused, 0);
    assert_eq!(outcome.http.bytes_out, 5);
    assert!(outcome.http.bytes_in > 5, "{:?}", outcome.http);
    assert_eq!(server.seen().len(), 1);
}

/// A binding's runs send their requests to one destination over kept-alive
/// connections: one connection for ten requests of two runs. Another
/// binding's pool connects on its own, a run without a pool connects per
/// request, and a connection whose response was cut off is not kept.
#[test]
fn a_bindings_runs_share_kept_alive_connections_and_nothing_else_does() {
    let server = TestServer::start();
    let url = server.url.clone();
    let sandbox = sandbox();
    let env = |pool: Option<&Arc<HttpPool>>| RunEnv {
        http_pool: pool.cloned(),
        ..env(egress(&[&url], &["127.0.0.1/32"], &[json!(url)]))
    };
    let echo = |n: usize| {
        let requests: Vec<Value> = (0..n)
            .map(|_| json!({"url": format!("{url}/echo")}))
            .collect();
        json!({ "requests": requests })
    };
    let peers = |from: usize| -> Vec<String> {
        let mut peers: Vec<String> = server.seen()[from..]
            .iter()
            .map(|s| s.peer.clone())
            .collect();
        peers.dedup();
        peers
    };
    let (binding, other) = (Arc::new(HttpPool::default()), Arc::new(HttpPool::default()));
    let small = Limits {
        max_http_response_bytes: 1024,
        ..Limits::default()
    };
    let cut_off = json!({"requests": [
        {"url": format!("{url}/big?n=100000")},
        {"url": format!("{url}/echo")},
    ]});
    let outcomes = runs_on_one_runtime(
        &sandbox,
        vec![
            (
                echo(5),
                Limits::default(),
                LocalServices::new(),
                env(Some(&binding)),
            ),
            (
                echo(5),
                Limits::default(),
                LocalServices::new(),
                env(Some(&binding)),
            ),
            (
                echo(2),
                Limits::default(),
                LocalServices::new(),
                env(Some(&other)),
            ),
            (echo(2), Limits::default(), LocalServices::new(), env(None)),
            (
                cut_off,
                small,
                LocalServices::new(),
                env(Some(&Arc::new(HttpPool::default()))),
            ),
        ],
    );
    for outcome in &outcomes[..4] {
        for answer in answers(outcome) {
            assert_eq!(answer["status"], 200, "{answer}");
        }
    }
    assert_eq!(peers(0).len(), 1 + 1 + 2 + 2, "{:?}", peers(0));
    let binding_peers = peers(0);
    assert_eq!(
        server.seen()[..10]
            .iter()
            .filter(|s| s.peer == binding_peers[0])
            .count(),
        10,
        "the binding's ten requests over one connection"
    );
    assert_eq!(binding.idle_count(), 1);
    // The cut-off response's connection went unused: the next request of
    // the same pool connected anew.
    let cut = answers(&outcomes[4]);
    assert!(
        cut[0]["error"]
            .as_str()
            .unwrap_or_default()
            .contains("maxHttpResponseBytes"),
        "{cut:?}"
    );
    assert_eq!(cut[1]["status"], 200, "{cut:?}");
    assert_eq!(peers(14).len(), 2, "{:?}", peers(14));
}

/// A host name written with a trailing dot (or in capitals) is the name
/// the rules allow, and the server is sent that name: `Host: localhost:PORT`,
/// not the guest's spelling.
#[test]
fn a_trailing_dot_is_matched_and_sent_as_the_name_without_it() {
    let server = TestServer::start();
    let port = server.port;
    let allowed = format!("http://localhost:{port}");
    let outcome = run(
        &sandbox(),
        json!({"requests": [
            {"url": format!("http://localhost.:{port}/echo")},
            {"url": format!("http://LocalHost.:{port}/echo")},
        ]}),
        &Limits::default(),
        LocalServices::new(),
        env(egress(
            &[&allowed],
            &["127.0.0.1/32", "::1/128"],
            &[json!(allowed)],
        )),
    );
    let answers = answers(&outcome);
    for answer in &answers {
        assert_eq!(answer["status"], 200, "{answers:?}");
    }
    let seen = server.seen();
    assert_eq!(seen.len(), 2, "{seen:?}");
    for request in seen {
        assert_eq!(request.headers["host"], format!("localhost:{port}"));
    }
    assert_eq!(outcome.http.refused, 0);
}

/// A rule with a `pathPrefix` allows whole segments below it, and no path
/// a server might read as another: dot segments (also percent-encoded),
/// encoded slashes and `;` are refused, saying why.
#[test]
fn a_path_prefix_allows_its_segments_and_no_traversal() {
    let server = TestServer::start();
    let url = server.url.clone();
    let cases = [
        ("/v1/charges", None),
        ("/v1/charges/ch_1?expand=x", None),
        ("/v1", Some("is not in this queue's egress list")),
        ("/v1x/charges", Some("is not in this queue's egress list")),
        ("/v1/../admin", Some("its path holds a `.` or `..` segment")),
        (
            "/v1/%2e%2e/admin",
            Some("its path holds a `.` or `..` segment"),
        ),
        (
            "/v1/.%2E/admin",
            Some("its path holds a `.` or `..` segment"),
        ),
        ("/v1/x%2F..%2F..%2Fadmin", Some("its path holds an encoded")),
        ("/v1/x;y/../../admin", Some("its path holds a `;`")),
    ];
    let requests: Vec<Value> = cases
        .iter()
        .map(|(path, _)| json!({"url": format!("{url}{path}")}))
        .collect();
    let outcome = run(
        &sandbox(),
        json!({ "requests": requests }),
        &Limits::default(),
        LocalServices::new(),
        env(egress(
            &[&url],
            &["127.0.0.1/32"],
            &[json!({"url": url, "pathPrefix": "/v1/"})],
        )),
    );
    let answers = answers(&outcome);
    let logs = logs(&outcome);
    for ((path, refusal), answer) in cases.iter().zip(&answers) {
        match refusal {
            None => assert_eq!(answer["status"], 200, "{path}: {answer}"),
            Some(why) => {
                let error = answer["error"].as_str().unwrap_or_default();
                assert!(error.contains("refused"), "{path}: {answer}");
                assert!(error.contains(why), "{path}: {error}");
                assert!(logs.contains(why), "{path}: {logs}");
            }
        }
    }
    let seen: Vec<String> = server.seen().iter().map(|s| s.uri.clone()).collect();
    assert_eq!(seen, ["/v1/charges", "/v1/charges/ch_1?expand=x"]);
    assert_eq!(outcome.http.refused, 7);
}

#[test]
fn requests_outside_the_rules_are_refused_before_anything_is_sent() {
    let server = TestServer::start();
    let other = TestServer::start();
    let url = server.url.clone();
    let port = server.port;
    let cases = [
        // On neither list.
        (
            format!("http://127.0.0.1:{}/echo", other.port),
            "not in this queue's egress list",
        ),
        // On the binding's list but not the operator's.
        (
            format!("http://localhost:{}/echo", other.port),
            "not allowed by this host's operator",
        ),
        // A method the rule does not allow.
        (format!("{url}/echo"), "not in this queue's egress list"),
        // A name that resolves to loopback, which is not an allowed network.
        // (This case runs without the loopback network allowed.)
        (format!("http://localhost:{port}/echo"), "refuses to reach"),
        // IPv4-mapped IPv6 loopback, and the cloud metadata address.
        (format!("http://[::ffff:127.0.0.1]:{port}/echo"), "refused"),
        (
            "http://169.254.169.254/latest/meta-data/".to_string(),
            "refuses to reach",
        ),
    ];
    let sandbox = sandbox();
    for (i, (target, why)) in cases.iter().enumerate() {
        let method = if i == 2 { "DELETE" } else { "GET" };
        let outcome = run(
            &sandbox,
            json!({"requests": [{"method": method, "url": target}]}),
            &Limits::default(),
            LocalServices::new(),
            env(egress(
                &[
                    &url,
                    &format!("http://localhost:{port}"),
                    "http://169.254.169.254",
                ],
                if i == 3 { &[] } else { &["127.0.0.1/32"] },
                &[
                    json!({"url": url, "methods": ["GET", "POST"]}),
                    json!(format!("http://localhost:{}", other.port)),
                    json!(format!("http://localhost:{port}")),
                    json!("http://169.254.169.254"),
                ],
            )),
        );
        let answers = answers(&outcome);
        let error = answers[0]["error"].as_str().unwrap_or_else(|| {
            panic!("{target} should be refused: {answers:?}");
        });
        assert!(error.contains("refused"), "{target}: {error}");
        assert!(logs(&outcome).contains(why), "{target}: {}", logs(&outcome));
        assert_eq!(outcome.http.refused, 1, "{target}");
        assert_eq!(outcome.http.requests, 0, "{target}");
    }
    // A refused request with a body: its body stream closes first, and
    // the SDK still reports the refusal (not a retryable transport error).
    let outcome = run(
        &sandbox,
        json!({"requests": [{"method": "POST", "url": format!("http://127.0.0.1:{}/echo", other.port), "body": "x".repeat(100_000)}]}),
        &Limits::default(),
        LocalServices::new(),
        env(egress(&[&url], &["127.0.0.1/32"], &[json!(url)])),
    );
    let error = answers(&outcome)[0]["error"].as_str().unwrap().to_string();
    assert!(error.contains("refused"), "{error}");
    assert!(server.seen().is_empty(), "{:?}", server.seen());
    assert!(other.seen().is_empty(), "{:?}", other.seen());
}

#[test]
fn a_redirect_to_a_private_address_is_refused_when_followed() {
    let server = TestServer::start();
    let url = server.url.clone();
    let outcome = run(
        &sandbox(),
        json!({"requests": [{
            "url": format!("{url}/redirect?to=http://10.0.0.7/internal"),
            "follow": 1,
        }]}),
        &Limits::default(),
        LocalServices::new(),
        env(egress(
            &[&url, "http://10.0.0.7"],
            &["127.0.0.1/32"],
            &[json!(url), json!("http://10.0.0.7")],
        )),
    );
    let answers = answers(&outcome);
    assert!(
        answers[0]["error"]
            .as_str()
            .unwrap_or("")
            .contains("refused"),
        "{answers:?}"
    );
    assert!(logs(&outcome).contains("10.0.0.7"), "{}", logs(&outcome));
    assert_eq!((outcome.http.requests, outcome.http.refused), (1, 1));
}

#[test]
fn the_request_cap_and_the_response_cap_fail_the_request_not_the_host() {
    let server = TestServer::start();
    let url = server.url.clone();
    let limits = Limits {
        max_http_requests: 2,
        max_http_response_bytes: 1024,
        ..Limits::default()
    };
    let outcome = run(
        &sandbox(),
        json!({"requests": [
            {"url": format!("{url}/big?n=100")},
            {"url": format!("{url}/big?n=100000")},
            {"url": format!("{url}/big?n=100")},
        ]}),
        &limits,
        LocalServices::new(),
        env(egress(&[&url], &["127.0.0.1/32"], &[json!(url)])),
    );
    let answers = answers(&outcome);
    assert_eq!(answers[0]["status"], 200, "{answers:?}");
    assert!(
        answers[1]["error"]
            .as_str()
            .unwrap()
            .contains("went over maxHttpResponseBytes (1024 bytes)"),
        "{answers:?}"
    );
    assert!(
        answers[2]["error"].as_str().unwrap().contains("refused"),
        "{answers:?}"
    );
    assert!(
        logs(&outcome).contains("maxHttpRequests"),
        "{}",
        logs(&outcome)
    );
    assert_eq!((outcome.http.requests, outcome.http.refused), (2, 1));
    assert_eq!(server.seen().len(), 2);
}

#[test]
fn the_deadline_cancels_a_request_in_flight() {
    let server = TestServer::start();
    let url = server.url.clone();
    let limits = Limits {
        timeout: Duration::from_millis(700),
        ..Limits::default()
    };
    let started = Instant::now();
    let outcome = run(
        &sandbox(),
        json!({"requests": [{"url": format!("{url}/slow?ms=20000")}]}),
        &limits,
        LocalServices::new(),
        env(egress(&[&url], &["127.0.0.1/32"], &[json!(url)])),
    );
    match &outcome.completion {
        Completion::Failed(f) => assert_eq!(f.kind, FailureKind::Timeout, "{f:?}"),
        other => panic!("{other:?}"),
    }
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the job must not wait for the server: {:?}",
        started.elapsed()
    );
    assert_eq!(server.seen().len(), 1, "the request was in flight");
}

#[test]
fn a_secret_is_substituted_only_for_its_own_destination() {
    let gateway = TestServer::start();
    let elsewhere = TestServer::start();
    let key = SecretsKey::generate();
    let value = "sk_live_0123456789abcdef";
    let services = LocalServices::new();
    let policy = SecretPolicy {
        allow: vec![gateway.url.parse().unwrap()],
        reveal: false,
        in_body: true,
    };
    services.store().lock().unwrap().secrets.insert(
        "MAIL_API_KEY".into(),
        secrets::encrypt(&key, "mail", "MAIL_API_KEY", value, &policy, 1),
    );
    let outcome = run(
        &sandbox(),
        json!({
            "secret": "MAIL_API_KEY",
            "requests": [
                {"method": "POST", "url": format!("{}/send", gateway.url), "body": "key={{secret}}"},
                {"method": "POST", "url": format!("{}/send", elsewhere.url), "body": "key={{secret}}"},
            ],
        }),
        &Limits::default(),
        services,
        RunEnv {
            secrets_key: Some(key),
            ..env(egress(
                &[&gateway.url, &elsewhere.url],
                &["127.0.0.1/32"],
                &[json!(gateway.url), json!(elsewhere.url)],
            ))
        },
    );
    let answers = answers(&outcome);
    assert_eq!(answers[0]["status"], 200, "{answers:?}");
    let seen = gateway.seen();
    assert_eq!(seen[0].headers["authorization"], format!("Bearer {value}"));
    assert_eq!(seen[0].body, format!("key={value}"));
    // Elsewhere got the placeholder, never the value.
    assert!(!elsewhere.received(value), "{:?}", elsewhere.seen());
    let sent = &elsewhere.seen()[0];
    assert!(
        sent.headers["authorization"].starts_with("Bearer airlock-secret-"),
        "{sent:?}"
    );
    // The guest's own output and logs hold no value either.
    assert!(!logs(&outcome).contains(value));
    assert!(!serde_json::to_string(&answers).unwrap().contains(value));
}
