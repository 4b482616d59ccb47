//! Secrets and egress through the API and a real host: a secret is set,
//! listed and deleted (its value never comes back), substituted into the
//! requests of a real guest to its own destination only, and a hostile
//! guest that tries every channel it has leaks none of it — the test reads
//! every Redis key, the job's logs and the host's own output for the value.

use airlock_tests::api::{Api, error_code, error_field};
use airlock_tests::host::tokens;
use airlock_tests::http_server::TestServer;
use airlock_tests::mock_gateway::MockGateway;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// The fleet's secrets key in these tests (64 hex digits).
const SECRETS_KEY: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
/// A value that must never leak.
const VALUE: &str = "sk_live_SECRETVALUE_7f3a9c";

fn host_with_egress(allow: &[&str]) -> Api {
    let allow = allow.join(",");
    Api::start_with(&[
        "--egress-allow",
        &allow,
        "--egress-allow-network",
        "127.0.0.1/32",
        "--secrets-key",
        SECRETS_KEY,
    ])
}

/// Everything Redis holds, as text: every key with its whole value.
async fn connect(url: &str) -> redis::aio::MultiplexedConnection {
    let client = redis::Client::open(url).unwrap();
    client.get_multiplexed_async_connection().await.unwrap()
}

async fn redis_dump(url: &str) -> String {
    let mut conn = connect(url).await;
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("*")
        .query_async(&mut conn)
        .await
        .unwrap();
    let mut out = String::new();
    for key in keys {
        let kind: String = redis::cmd("TYPE")
            .arg(&key)
            .query_async(&mut conn)
            .await
            .unwrap();
        let value: redis::Value = match kind.as_str() {
            "string" => redis::cmd("GET")
                .arg(&key)
                .query_async(&mut conn)
                .await
                .unwrap(),
            "hash" => redis::cmd("HGETALL")
                .arg(&key)
                .query_async(&mut conn)
                .await
                .unwrap(),
            "list" => redis::cmd("LRANGE")
                .arg(&key)
                .arg(0)
                .arg(-1)
                .query_async(&mut conn)
                .await
                .unwrap(),
            "set" => redis::cmd("SMEMBERS")
                .arg(&key)
                .query_async(&mut conn)
                .await
                .unwrap(),
            "zset" => redis::cmd("ZRANGE")
                .arg(&key)
                .arg(0)
                .arg(-1)
                .arg("WITHSCORES")
                .query_async(&mut conn)
                .await
                .unwrap(),
            "stream" => redis::cmd("XRANGE")
                .arg(&key)
                .arg("-")
                .arg("+")
                .query_async(&mut conn)
                .await
                .unwrap(),
            other => panic!("key {key} of unexpected type {other}"),
        };
        out.push_str(&format!("{key} => {value:?}\n"));
    }
    out
}

async fn set_secret(api: &Api, queue: &str, name: &str, body: Value) -> (StatusCode, Value) {
    api.put(
        &format!("/v1/queues/{queue}/secrets/{name}"),
        tokens::ADMIN,
        body,
    )
    .await
}

#[tokio::test]
async fn secrets_are_managed_by_admins_and_never_returned() {
    let gateway = TestServer::start();
    let api = host_with_egress(&[&gateway.url]);
    api.setup("mail", "http-probe", json!({"egress": [gateway.url]}))
        .await;

    // Bad input names the field; only admins may touch secrets.
    let (status, body) =
        set_secret(&api, "mail", "KEY", json!({"value": VALUE, "allow": []})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(error_field(&body), "allow", "{body}");
    let (status, body) = set_secret(
        &api,
        "mail",
        "KEY",
        json!({"value": VALUE, "allow": ["ftp://x"]}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(error_field(&body).starts_with("allow"), "{body}");
    let (status, body) = set_secret(
        &api,
        "mail",
        "bad name",
        json!({"value": VALUE, "allow": [gateway.url]}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, _) = api
        .put(
            "/v1/queues/mail/secrets/KEY",
            tokens::PRODUCER,
            json!({"value": VALUE, "allow": [gateway.url]}),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = api.get("/v1/queues/mail/secrets", tokens::READER).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, body) = set_secret(
        &api,
        "nope",
        "KEY",
        json!({"value": VALUE, "allow": [gateway.url]}),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");

    let (status, body) = set_secret(
        &api,
        "mail",
        "MAIL_API_KEY",
        json!({"value": VALUE, "allow": [gateway.url], "inBody": true}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(!body.to_string().contains(VALUE), "{body}");
    let (status, list) = api.get("/v1/queues/mail/secrets", tokens::ADMIN).await;
    assert_eq!(status, StatusCode::OK);
    let entry = &list["secrets"][0];
    assert_eq!(entry["name"], "MAIL_API_KEY", "{list}");
    assert_eq!(entry["allow"], json!([gateway.url]));
    assert_eq!(entry["inBody"], true);
    assert_eq!(entry["readable"], true);
    assert!(entry["updatedAtMs"].as_u64().unwrap() > 0);
    assert!(!list.to_string().contains(VALUE), "{list}");
    // Sealed in Redis: the value is not there in any form we can grep.
    assert!(!redis_dump(&api.redis.url()).await.contains(VALUE));

    // A job gets it substituted in its request to the gateway.
    let (status, accepted) = api
        .post(
            "/v1/queues/mail/jobs",
            tokens::PRODUCER,
            json!({"data": {"secret": "MAIL_API_KEY", "requests": [
                {"method": "POST", "url": format!("{}/send", gateway.url), "body": "{{secret}}"}
            ]}}),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{accepted}");
    let job = api.wait_recorded(accepted["ref"].as_str().unwrap()).await;
    assert_eq!(job["state"], "completed", "{job}");
    assert_eq!(job["returnvalue"][0]["status"], 200, "{job}");
    let seen = gateway.seen();
    assert_eq!(seen[0].headers["authorization"], format!("Bearer {VALUE}"));
    assert_eq!(seen[0].body, VALUE);
    assert_eq!(job["metrics"]["httpRequests"], 1, "{job}");
    assert_eq!(job["metrics"]["httpRefused"], 0, "{job}");
    assert_eq!(job["metrics"]["httpBytesOut"], VALUE.len(), "{job}");

    let (status, metrics) = api.get("/metrics", tokens::READER).await;
    assert_eq!(status, StatusCode::OK);
    let metrics = metrics.as_str().unwrap();
    assert!(
        metrics.contains("airlock_http_requests_total{queue=\"mail\"} 1"),
        "{metrics}"
    );

    let (status, _) = api
        .call(
            Method::DELETE,
            "/v1/queues/mail/secrets/MAIL_API_KEY",
            Some(tokens::ADMIN),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (_, list) = api.get("/v1/queues/mail/secrets", tokens::ADMIN).await;
    assert_eq!(list["secrets"], json!([]));
}

/// A secret may name a path prefix: only requests within it get the value
/// (traversal spellings get the placeholder). Setting it again rotates it
/// for the next run, with a new version in the listing; the old envelope
/// written back is refused by a host that used the new one.
#[tokio::test]
async fn a_secret_goes_only_within_its_path_and_rotates_for_the_next_run() {
    let gateway = TestServer::start();
    let api = host_with_egress(&[&gateway.url]);
    api.setup("mail", "http-probe", json!({"egress": [gateway.url]}))
        .await;
    let send = format!("{}/v3/mail/send", gateway.url);
    for bad in ["/v3/../admin", "/v3/%2e%2e/admin", "/v3;x", "/v3/./x"] {
        let (status, body) = set_secret(
            &api,
            "mail",
            "KEY",
            json!({"value": VALUE, "allow": [format!("{}{bad}", gateway.url)]}),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
        assert!(error_field(&body).starts_with("allow"), "{body}");
    }

    let paths = [
        ("/v3/mail/send", true),
        ("/v3/mail/send/batch", true),
        ("/v3/mail/sender", false),
        ("/v3/user", false),
        ("/v3/mail/send/../../user", false),
        ("/v3/mail/send/%2e%2e/%2E%2e/user", false),
        ("/v3/mail/send%2F..%2F..%2Fuser", false),
        ("/v3/mail/send;x/../../user", false),
    ];
    const SECRETS: &str = "bull:{airlock}:secrets:mail";
    let mut conn = connect(&api.redis.url()).await;
    let mut changed = 0;
    let mut first_envelope = String::new();
    for (version, value) in [(1, VALUE), (2, "SG.rotated-value-0123456789")] {
        let (status, body) = set_secret(
            &api,
            "mail",
            "MAIL_API_KEY",
            json!({"value": value, "allow": [send]}),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["version"], version, "{body}");
        let (_, list) = api.get("/v1/queues/mail/secrets", tokens::ADMIN).await;
        let entry = &list["secrets"][0];
        assert_eq!(entry["allow"], json!([send]), "{list}");
        assert_eq!(entry["version"], version, "{list}");
        let at = entry["updatedAtMs"].as_u64().unwrap();
        assert!(at >= changed, "{list}");
        changed = at;

        let before = gateway.seen().len();
        let requests: Vec<Value> = paths
            .iter()
            .map(|(path, _)| json!({"url": format!("{}{path}", gateway.url)}))
            .collect();
        let (status, accepted) = api
            .post(
                "/v1/queues/mail/jobs",
                tokens::PRODUCER,
                json!({"data": {"secret": "MAIL_API_KEY", "requests": requests}}),
            )
            .await;
        assert_eq!(status, StatusCode::ACCEPTED, "{accepted}");
        let job = api.wait_done(accepted["ref"].as_str().unwrap()).await;
        assert_eq!(job["state"], "completed", "{job}");
        let seen = &gateway.seen()[before..];
        assert_eq!(seen.len(), paths.len(), "{seen:?}");
        for ((path, within), request) in paths.iter().zip(seen) {
            let auth = &request.headers["authorization"];
            if *within {
                assert_eq!(auth, &format!("Bearer {value}"), "{path}");
            } else {
                assert!(auth.starts_with("Bearer airlock-secret-"), "{path}: {auth}");
            }
        }
        // The first value went with its version: never sent after it.
        if version == 2 {
            assert!(
                seen.iter()
                    .all(|r| !r.headers["authorization"].contains(VALUE))
            );
        }
        if version == 1 {
            first_envelope = redis::AsyncCommands::hget(&mut conn, SECRETS, "MAIL_API_KEY")
                .await
                .unwrap();
        }
    }

    // The first envelope written back (it opens: it was sealed with the
    // key) is refused by the host that used the second.
    let _: () = redis::AsyncCommands::hset(&mut conn, SECRETS, "MAIL_API_KEY", &first_envelope)
        .await
        .unwrap();
    let before = gateway.seen().len();
    let (_, accepted) = api
        .post(
            "/v1/queues/mail/jobs",
            tokens::PRODUCER,
            json!({"data": {"secret": "MAIL_API_KEY", "requests": [{"url": send}]}}),
        )
        .await;
    let job = api.wait_done(accepted["ref"].as_str().unwrap()).await;
    assert_eq!(job["state"], "failed", "{job}");
    assert!(
        job["failedReason"]
            .as_str()
            .unwrap_or_default()
            .contains("set before one this host already used"),
        "{job}"
    );
    assert_eq!(gateway.seen().len(), before, "a request went out");
}

#[tokio::test]
async fn a_host_without_a_secrets_key_refuses_to_store_one() {
    let api = Api::start();
    api.setup("mail", "http-probe", json!({})).await;
    let (status, body) = set_secret(
        &api,
        "mail",
        "KEY",
        json!({"value": VALUE, "allow": ["https://api.example.com"]}),
    )
    .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(error_code(&body), "secrets_unavailable", "{body}");
}

#[tokio::test]
async fn a_hostile_guest_leaks_no_byte_of_a_secret() {
    let gateway = TestServer::start();
    let sink = TestServer::start();
    let api = host_with_egress(&[&gateway.url, &sink.url]);
    api.setup(
        "exfil",
        "hostile-secret-exfil",
        json!({"egress": [gateway.url, sink.url]}),
    )
    .await;
    let (status, body) = set_secret(
        &api,
        "exfil",
        "MAIL_API_KEY",
        json!({"value": VALUE, "allow": [gateway.url], "inBody": true}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");

    let (status, accepted) = api
        .post(
            "/v1/queues/exfil/jobs",
            tokens::PRODUCER,
            json!({"data": {
                "secret": "MAIL_API_KEY",
                "sink": format!("{}/collect", sink.url),
                "allowed": format!("{}/echo", gateway.url),
            }}),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{accepted}");
    let job_ref = accepted["ref"].as_str().unwrap();
    let job = api.wait_recorded(job_ref).await;
    assert_eq!(job["state"], "completed", "{job}");
    let loot = &job["returnvalue"];
    let placeholder = loot["placeholder"].as_str().unwrap();
    assert!(placeholder.starts_with("airlock-secret-"), "{loot}");
    assert_eq!(
        loot["revealed"],
        Value::Null,
        "reveal must be refused: {loot}"
    );
    assert_eq!(loot["sink_status"], 200, "the sink was reachable: {loot}");
    assert_eq!(loot["allowed_status"], 200, "{loot}");
    // The sink got the placeholder (header and body), never the value.
    assert!(sink.received(placeholder), "{:?}", sink.seen());
    assert!(!sink.received(VALUE), "{:?}", sink.seen());
    // Only headers and bodies are substituted: the URL went out as it was.
    assert!(!gateway.received(VALUE), "{:?}", gateway.seen());
    assert!(job["metrics"]["httpRequests"] == 2, "{job}");

    let (_, details) = api.get(&format!("/v1/jobs/{job_ref}"), tokens::ADMIN).await;
    let details = details.to_string();
    assert!(
        details.contains(placeholder),
        "the attempts are in the job: {details}"
    );
    assert!(!details.contains(VALUE), "{details}");
    let dump = redis_dump(&api.redis.url()).await;
    assert!(
        dump.contains(placeholder),
        "the step and KV writes happened"
    );
    assert!(!dump.contains(VALUE), "the value reached Redis");
    let host_output = format!(
        "{}{}",
        api.host.log(),
        std::fs::read_to_string(&api.host.out_path).unwrap()
    );
    assert!(
        !host_output.contains(VALUE),
        "the value reached the host's output"
    );
}

#[tokio::test]
async fn a_revealed_secret_is_redacted_from_what_the_job_leaves() {
    let gateway = TestServer::start();
    let api = host_with_egress(&[&gateway.url]);
    api.setup(
        "signing",
        "hostile-secret-exfil",
        json!({"egress": [gateway.url]}),
    )
    .await;
    let (status, body) = set_secret(
        &api,
        "signing",
        "SIGNING_KEY",
        json!({"value": VALUE, "allow": [gateway.url], "reveal": true}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["reveal"], true);
    let (_, accepted) = api
        .post(
            "/v1/queues/signing/jobs",
            tokens::PRODUCER,
            json!({"data": {
                "secret": "SIGNING_KEY",
                "sink": format!("{}/collect", gateway.url),
                "allowed": format!("{}/echo", gateway.url),
            }}),
        )
        .await;
    let job_ref = accepted["ref"].as_str().unwrap();
    let job = api.wait_recorded(job_ref).await;
    assert_eq!(job["state"], "completed", "{job}");
    assert_eq!(
        job["returnvalue"]["revealed"], "[redacted:SIGNING_KEY]",
        "{job}"
    );
    let (_, details) = api.get(&format!("/v1/jobs/{job_ref}"), tokens::ADMIN).await;
    assert!(
        details["logs"].as_array().unwrap().iter().any(|l| l
            .as_str()
            .unwrap()
            .contains("revealed: [redacted:SIGNING_KEY]")),
        "{details}"
    );
    assert!(!details.to_string().contains(VALUE), "{details}");
    assert!(!redis_dump(&api.redis.url()).await.contains(VALUE));
}

/// The examples as `make run` wires them: the e-mail handler sends through
/// the gateway named by its config with the key from its secret (a wrong
/// key fails the job as the gateway's 401, not retried), and the payment
/// handler records its ledger entry with a POST.
#[tokio::test]
async fn the_examples_call_their_gateway_with_config_and_secret() {
    let gateway = MockGateway::start(VALUE);
    let api = host_with_egress(&[&gateway.url]);
    api.setup(
        "emails",
        "email-delivery",
        json!({"egress": [gateway.url], "config": {"GATEWAY_URL": gateway.url}}),
    )
    .await;
    api.setup(
        "payments",
        "payment-webhook",
        json!({"egress": [gateway.url], "config": {"LEDGER_URL": gateway.url}}),
    )
    .await;
    let (status, body) = set_secret(
        &api,
        "emails",
        "MAIL_API_KEY",
        json!({"value": "not-the-key", "allow": [gateway.url]}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let mail = json!({"data": {"to": "ada@example.com", "subject": "Welcome"}});
    let (_, accepted) = api
        .post("/v1/queues/emails/jobs", tokens::PRODUCER, mail.clone())
        .await;
    let job = api.wait_done(accepted["ref"].as_str().unwrap()).await;
    assert_eq!(job["state"], "failed", "{job}");
    assert!(
        job["failedReason"]
            .as_str()
            .unwrap()
            .contains("HTTP status 401"),
        "{job}"
    );

    set_secret(
        &api,
        "emails",
        "MAIL_API_KEY",
        json!({"value": VALUE, "allow": [gateway.url]}),
    )
    .await;
    let (_, accepted) = api
        .post("/v1/queues/emails/jobs", tokens::PRODUCER, mail)
        .await;
    let job = api.wait_done(accepted["ref"].as_str().unwrap()).await;
    assert_eq!(job["state"], "completed", "{job}");
    assert_eq!(job["returnvalue"]["status"], "sent");
    let id = job["returnvalue"]["messageId"].as_str().unwrap();
    assert!(
        id.starts_with("msg_") && id.len() == 12,
        "the gateway's id: {job}"
    );

    let (_, accepted) = api
        .post(
            "/v1/queues/payments/jobs",
            tokens::PRODUCER,
            json!({"data": {"transactionId": "tx_77", "amount": 5}}),
        )
        .await;
    let job = api.wait_recorded(accepted["ref"].as_str().unwrap()).await;
    assert_eq!(job["returnvalue"]["ledgerRecordId"], "led_tx_77", "{job}");
    assert_eq!(job["metrics"]["httpRequests"], 1, "{job}");
}
