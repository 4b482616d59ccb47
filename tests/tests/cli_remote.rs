//! The CLI's remote commands end to end against a running host.

use std::process::Command;

use airlock_tests::host::{HostOptions, HostProcess, tokens};
use airlock_tests::redis_server::RedisServer;
use airlock_tests::{airlock_bin, guest_path};
use serde_json::Value;

struct Cli {
    url: String,
}

impl Cli {
    fn run(&self, token: &str, args: &[&str]) -> (i32, String, String) {
        let out = Command::new(airlock_bin())
            .args(args)
            .env("AIRLOCK_URL", &self.url)
            .env("AIRLOCK_TOKEN", token)
            .output()
            .expect("run airlock");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

/// A Redis and a host serving the API, and the CLI pointed at it.
fn cli_host() -> (RedisServer, HostProcess, Cli) {
    cli_host_with(&[])
}

/// [`cli_host`] with `extra` arguments for `airlock serve`.
fn cli_host_with(extra: &[&str]) -> (RedisServer, HostProcess, Cli) {
    let redis = RedisServer::start();
    let host = HostProcess::start(
        &redis.url(),
        HostOptions {
            id: "cli-host".into(),
            api: true,
            extra: extra.iter().map(|s| s.to_string()).collect(),
            ..HostOptions::default()
        },
    );
    let cli = Cli {
        url: host.api_url(),
    };
    (redis, host, cli)
}

#[test]
fn deploy_bind_enqueue_wait_inspect_and_retry() {
    let (_redis, _host, cli) = cli_host();
    let payment = guest_path("payment-webhook");

    let (code, out, err) = cli.run(
        tokens::ADMIN,
        &[
            "deploy",
            payment.to_str().unwrap(),
            "--name",
            "payment-webhook",
            "--version",
            "v1",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.starts_with("deployed payment-webhook "), "{out}");

    let (code, out, err) = cli.run(
        tokens::ADMIN,
        &[
            "queue",
            "bind",
            "payments",
            "--handler",
            "payment-webhook",
            "--concurrency",
            "3",
            "--memory",
            "32MiB",
            "--attempts",
            "2",
            "--backoff",
            "fixed:50",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("concurrency 3"), "{out}");

    // Bad flags name the flag.
    let (code, _, err) = cli.run(
        tokens::ADMIN,
        &[
            "queue",
            "bind",
            "payments",
            "--handler",
            "payment-webhook",
            "--memory",
            "lots",
        ],
    );
    assert_eq!(code, 1);
    assert!(err.contains("--memory"), "{err}");
    // API refusals come back with the field.
    let (code, _, err) = cli.run(
        tokens::ADMIN,
        &["queue", "bind", "payments", "--handler", "ghost"],
    );
    assert_eq!(code, 1);
    assert!(err.contains("field `handler`"), "{err}");

    // enqueue --wait: the result, exit 0.
    let (code, out, err) = cli.run(
        tokens::PRODUCER,
        &[
            "enqueue",
            "payments",
            r#"{"transactionId":"tx_cli","amount":3}"#,
            "--wait",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains(r#""ledgerRecordId": "led_tx_cli""#), "{out}");

    // A failure: its reason, and the failure kind's exit code.
    let (code, out, err) = cli.run(
        tokens::PRODUCER,
        &[
            "enqueue",
            "payments",
            r#"{"transactionId":"tx_bad","amount":0}"#,
            "--wait",
        ],
    );
    assert_eq!(code, 3, "{out}{err}");
    assert!(
        err.contains("guest_fatal: Invalid transaction amount"),
        "{err}"
    );

    let (code, out, _) = cli.run(
        tokens::PRODUCER,
        &["--json", "jobs", "payments", "--state", "failed"],
    );
    assert_eq!(code, 0);
    let page: Value = serde_json::from_str(&out).unwrap();
    let failed = page["jobs"].as_array().unwrap();
    assert_eq!(failed.len(), 1);
    let failed_ref = format!("payments:{}", failed[0]["id"].as_str().unwrap());

    let (code, out, _) = cli.run(tokens::PRODUCER, &["job", &failed_ref]);
    assert_eq!(code, 0);
    assert!(out.contains("state       failed"), "{out}");
    assert!(
        out.contains("failed      guest_fatal: Invalid transaction amount"),
        "{out}"
    );
    assert!(out.contains("logs ("), "{out}");

    let (code, out, err) = cli.run(tokens::PRODUCER, &["retry", &failed_ref]);
    assert_eq!(code, 0, "{out}{err}");

    // No token, wrong role: clear refusals.
    let (code, _, err) = cli.run("", &["queue", "list"]);
    assert_eq!(code, 1);
    assert!(err.contains("401"), "{err}");
    let (code, _, err) = cli.run(
        tokens::READER,
        &["deploy", payment.to_str().unwrap(), "--name", "x"],
    );
    assert_eq!(code, 1);
    assert!(err.contains("403"), "{err}");

    let (code, out, _) = cli.run(tokens::READER, &["queue", "list"]);
    assert_eq!(code, 0);
    assert!(out.contains("payments"), "{out}");
}

/// Deploys the payment example and binds it to `payments`.
fn bind_payments(cli: &Cli) {
    let payment = guest_path("payment-webhook");
    let (code, out, err) = cli.run(
        tokens::ADMIN,
        &[
            "deploy",
            payment.to_str().unwrap(),
            "--name",
            "payment-webhook",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = cli.run(
        tokens::ADMIN,
        &["queue", "bind", "payments", "--handler", "payment-webhook"],
    );
    assert_eq!(code, 0, "{out}{err}");
}

#[test]
fn an_idempotency_key_adds_one_job_and_an_empty_list_says_so() {
    let (_redis, _host, cli) = cli_host();
    bind_payments(&cli);
    let (code, out, _) = cli.run(tokens::ADMIN, &["jobs", "payments", "--state", "delayed"]);
    assert_eq!(code, 0);
    assert_eq!(out.trim(), "no delayed jobs in queue payments");

    // The same idempotency key twice: one job.
    let enqueue = |key: &str| {
        cli.run(
            tokens::PRODUCER,
            &[
                "enqueue",
                "payments",
                r#"{"transactionId":"idem","amount":3}"#,
                "--idempotency-key",
                key,
            ],
        )
    };
    let (code, first, err) = enqueue("order-77");
    assert_eq!(code, 0, "{first}{err}");
    let (code, second, err) = enqueue("order-77");
    assert_eq!(code, 0, "{second}{err}");
    let job_ref = first.trim().strip_prefix("enqueued ").unwrap().to_string();
    assert_eq!(
        second.trim(),
        format!("enqueued {job_ref} (duplicate: nothing added)")
    );
}

#[test]
fn enqueue_retries_through_a_redis_outage_without_doubling() {
    let mut redis = RedisServer::start_with(airlock_tests::redis_server::RedisOptions {
        appendonly: true,
        appendfsync_always: true,
        ..Default::default()
    });
    let host = HostProcess::start(
        &redis.url(),
        HostOptions {
            id: "cli-host".into(),
            api: true,
            ..HostOptions::default()
        },
    );
    let cli = Cli {
        url: host.api_url(),
    };
    bind_payments(&cli);

    // While Redis is down the CLI retries, and lands exactly one job.
    redis.kill9();
    let child = Command::new(airlock_bin())
        .args([
            "enqueue",
            "payments",
            r#"{"transactionId":"outage","amount":3}"#,
            "--idempotency-key",
            "outage-1",
        ])
        .env("AIRLOCK_URL", &cli.url)
        .env("AIRLOCK_TOKEN", tokens::PRODUCER)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Redis comes back once the CLI has said it retries (its stderr is the
    // signal, not a fixed sleep): the outage is met for certain.
    let mut child = child;
    let (lines, said) = std::sync::mpsc::channel();
    let stderr_pipe = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        use std::io::BufRead;
        let mut all = String::new();
        for line in std::io::BufReader::new(stderr_pipe)
            .lines()
            .map_while(Result::ok)
        {
            let _ = lines.send(line.clone());
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    let retried = std::iter::from_fn(|| said.recv_timeout(std::time::Duration::from_secs(60)).ok())
        .any(|line| line.contains("retrying"));
    redis.restart();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = reader.join().unwrap();
    assert!(retried, "the CLI never said it retries: {stderr}");
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.starts_with("enqueued payments:"), "{stdout}");
    let (landed, page) = airlock_tests::eventually_blocking(
        "the retried enqueue's job to complete",
        std::time::Duration::from_secs(60),
        || {
            let (_, out, _) = cli.run(
                tokens::ADMIN,
                &[
                    "--json",
                    "jobs",
                    "payments",
                    "--state",
                    "completed",
                    "--limit",
                    "500",
                ],
            );
            let page: Value = serde_json::from_str(&out).unwrap_or_default();
            let landed = page["jobs"]
                .as_array()
                .map(|jobs| {
                    jobs.iter()
                        .filter(|j| j["data"]["transactionId"] == "outage")
                        .count()
                })
                .unwrap_or(0);
            (landed > 0).then_some((landed, page))
        },
    );
    assert_eq!(landed, 1, "the retried enqueue added one job: {page}");
}

#[test]
fn cancel_stops_a_running_job_and_refuses_a_finished_one() {
    let (_redis, _host, cli) = cli_host();
    let spin = guest_path("hostile-infinite-loop");
    let (code, out, err) = cli.run(
        tokens::ADMIN,
        &["deploy", spin.to_str().unwrap(), "--name", "spin"],
    );
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = cli.run(
        tokens::ADMIN,
        &[
            "queue",
            "bind",
            "spin",
            "--handler",
            "spin",
            "--fuel",
            "off",
            "--timeout",
            "60s",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = cli.run(tokens::PRODUCER, &["enqueue", "spin", "{}"]);
    assert_eq!(code, 0, "{out}{err}");
    let job_ref = out.trim().strip_prefix("enqueued ").unwrap().to_string();
    airlock_tests::eventually_blocking(
        "the spinning job to be active",
        std::time::Duration::from_secs(60),
        || {
            let (_, out, _) = cli.run(tokens::ADMIN, &["--json", "job", &job_ref]);
            let job: Value = serde_json::from_str(&out).unwrap();
            (job["state"] == "active").then_some(())
        },
    );
    let (code, out, err) = cli.run(
        tokens::PRODUCER,
        &["cancel", &job_ref, "--reason", "ops asked", "--wait"],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        out.trim(),
        format!("{job_ref} cancelled: ops asked (by `web` through the API)")
    );
    let (code, out, err) = cli.run(tokens::PRODUCER, &["cancel", &job_ref]);
    assert_ne!(code, 0, "{out}");
    assert!(
        err.contains("is failed; only a job that has not finished can be cancelled"),
        "{err}"
    );
}

/// `airlock queue bind` sets every binding field the API takes — flow
/// control, the HTTP limits, egress rules with conditions — and names the
/// flag of a value the server refuses.
#[test]
fn queue_bind_sets_every_field_and_names_the_flag_of_a_refusal() {
    let (_redis, _host, cli) = cli_host_with(&["--egress-allow", "https://api.example.com"]);
    let payment = guest_path("payment-webhook");
    let (code, out, err) = cli.run(
        tokens::ADMIN,
        &[
            "deploy",
            payment.to_str().unwrap(),
            "--name",
            "payment-webhook",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");

    let (code, out, _) = cli.run(tokens::ADMIN, &["queue", "bind", "--help"]);
    assert_eq!(code, 0);
    for flag in [
        "--key-concurrency",
        "--key-throttle",
        "--key-rate-limit",
        "--debounce",
        "--singleton",
        "--cancel-on",
        "--finish-timeout",
        "--warm-instances",
        "--propagate-trace",
        "--record-transcripts",
        "--canary",
        "--max-http-requests",
        "--max-http-request-size",
        "--max-http-response-size",
        "--http-timeout",
    ] {
        assert!(out.contains(flag), "bind --help lacks {flag}:\n{out}");
    }

    let (code, out, err) = cli.run(
        tokens::ADMIN,
        &[
            "--json",
            "queue",
            "bind",
            "payments",
            "--handler",
            "payment-webhook",
            "--key-concurrency",
            r#"{"key":"$.customer","limit":2}"#,
            "--key-throttle",
            r#"{"key":"$.customer","limit":10,"periodMs":60000}"#,
            "--cancel-on",
            r#"{"event":"order.cancelled","match":"$.orderId"}"#,
            "--finish-timeout",
            "1h",
            "--warm-instances",
            r#"{"maxJobs":10,"idleMs":60000}"#,
            "--propagate-trace",
            "--record-transcripts",
            "--max-http-requests",
            "3",
            "--http-timeout",
            "2s",
            "--egress",
            r#"{"url":"https://api.example.com","methods":["POST"]}"#,
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    let binding: serde_json::Value = serde_json::from_str(&out).expect("--json output");
    assert_eq!(binding["keyConcurrency"]["limit"], 2, "{binding}");
    assert_eq!(binding["keyThrottle"]["periodMs"], 60000, "{binding}");
    assert_eq!(binding["cancelOn"][0]["match"], "$.orderId", "{binding}");
    assert_eq!(binding["finishTimeoutMs"], 3_600_000, "{binding}");
    assert_eq!(binding["warmInstances"]["maxJobs"], 10, "{binding}");
    assert_eq!(binding["propagateTrace"], true, "{binding}");
    assert_eq!(binding["recordTranscripts"], true, "{binding}");
    assert_eq!(binding["limits"]["maxHttpRequests"], 3, "{binding}");
    assert_eq!(binding["limits"]["httpTimeoutMs"], 2000, "{binding}");
    assert_eq!(binding["egress"][0]["methods"][0], "POST", "{binding}");

    // A value the CLI parses but the server refuses: the flag is named.
    let (code, _, err) = cli.run(
        tokens::ADMIN,
        &[
            "queue",
            "bind",
            "payments",
            "--handler",
            "payment-webhook",
            "--key-concurrency",
            r#"{"key":"$.customer","limit":0}"#,
        ],
    );
    assert_eq!(code, 1);
    assert!(err.contains("--key-concurrency: "), "{err}");
    assert!(err.contains("field `keyConcurrency"), "{err}");
}
