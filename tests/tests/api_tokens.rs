//! Managed API tokens through two real API hosts on one Redis: a token
//! created on one host works on the other within a second; rotated, its
//! old secret is refused there within a second; revoked or expired, it is
//! refused everywhere; its secret is shown once and never listed. A record
//! written into Redis by hand — minted, widened, or put back after its
//! revocation — is refused and logged.

use std::time::Duration;

use airlock_tests::api::{Api, error_field};
use airlock_tests::eventually::eventually_some;
use airlock_tests::host::{HostOptions, HostProcess, tokens};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// How soon another host must follow a change.
const WITHIN_A_SECOND: Duration = Duration::from_secs(1);

/// A second API host on `api`'s Redis; its base URL.
fn second_host(api: &Api) -> (HostProcess, String) {
    let host = HostProcess::start(
        &api.redis.url(),
        HostOptions {
            id: "second-host".into(),
            api: true,
            ..HostOptions::default()
        },
    );
    let url = host.api_url();
    (host, url)
}

/// `GET /v1/me` on `url` with `token`: the status, and the caller's name
/// and role.
async fn me(url: &str, token: &str) -> (StatusCode, Value) {
    let res = reqwest::Client::new()
        .get(format!("{url}/v1/me"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    let status = res.status();
    (status, res.json().await.unwrap_or(Value::Null))
}

/// Waits until `url` answers `want` for `token`, for at most a second.
async fn answers_within_a_second(url: &str, token: &str, want: StatusCode, what: &str) {
    eventually_some(what, WITHIN_A_SECOND, || async {
        (me(url, token).await.0 == want).then_some(())
    })
    .await;
}

async fn create(api: &Api, body: Value) -> (StatusCode, Value) {
    api.call(
        Method::POST,
        "/v1/api-tokens",
        Some(tokens::ADMIN),
        Some(body),
    )
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_managed_token_follows_its_changes_on_every_host() {
    let api = Api::start();
    let (_second, other) = second_host(&api);

    let (status, issued) = create(&api, json!({"name": "team-a", "role": "producer"})).await;
    assert_eq!(status, StatusCode::CREATED, "{issued}");
    let secret = issued["token"].as_str().unwrap().to_string();
    assert!(secret.starts_with("alt_") && secret.len() == 68, "{issued}");
    assert_eq!(issued["createdBy"], "ops", "{issued}");
    answers_within_a_second(
        &other,
        &secret,
        StatusCode::OK,
        "the other host to take the new token",
    )
    .await;
    let (_, who) = me(&other, &secret).await;
    assert_eq!(who, json!({"name": "team-a", "role": "producer"}));
    // The token's jobs are its own: it enqueues as `team-a`.
    api.setup("rows", "noop", json!({})).await;
    let (status, accepted) = api
        .post("/v1/queues/rows/jobs", &secret, json!({"data": {}}))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{accepted}");

    // Listed with the configured tokens, never with a secret.
    let (status, list) = api.get("/v1/api-tokens", tokens::ADMIN).await;
    assert_eq!(status, StatusCode::OK, "{list}");
    let text = list.to_string();
    assert!(!text.contains(&secret[4..]), "no secret in {text}");
    assert!(
        !text.contains(tokens::ADMIN),
        "no configured secret in {text}"
    );
    let listed = |list: &Value, name: &str| {
        list["tokens"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} not in {list}"))
    };
    assert_eq!(listed(&list, "ops")["source"], "configured");
    let team_a = listed(&list, "team-a");
    assert_eq!(
        (&team_a["source"], &team_a["role"], &team_a["revokedAt"]),
        (&json!("managed"), &json!("producer"), &Value::Null)
    );
    // Its last use is written within the host's next 10 s.
    eventually_some(
        "team-a's last use to be listed",
        Duration::from_secs(30),
        || async {
            let (_, list) = api.get("/v1/api-tokens", tokens::ADMIN).await;
            listed(&list, "team-a")["lastUsedAt"].as_u64()
        },
    )
    .await;

    // Refusals that name what is wrong.
    let (status, body) = create(&api, json!({"name": "team-a", "role": "reader"})).await;
    assert_eq!(status, StatusCode::CONFLICT, "a live name: {body}");
    let (status, body) = create(&api, json!({"name": "ops", "role": "reader"})).await;
    assert_eq!(status, StatusCode::CONFLICT, "a configured name: {body}");
    let (status, body) = create(&api, json!({"name": "a b", "role": "reader"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(error_field(&body), "name", "{body}");
    let (status, body) = create(
        &api,
        json!({"name": "t", "role": "reader", "expiresInSeconds": 0}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(error_field(&body), "expiresInSeconds", "{body}");
    let (status, _) = api
        .call(
            Method::POST,
            "/v1/api-tokens",
            Some(&secret),
            Some(json!({"name": "mine", "role": "admin"})),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "a producer mints nothing");

    // Rotated: the old secret is refused elsewhere within a second, the
    // new one taken.
    let (status, rotated) = api
        .call(
            Method::POST,
            "/v1/api-tokens/team-a/rotate",
            Some(tokens::ADMIN),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{rotated}");
    let renewed = rotated["token"].as_str().unwrap().to_string();
    assert_ne!(renewed, secret);
    answers_within_a_second(
        &other,
        &secret,
        StatusCode::UNAUTHORIZED,
        "the old secret refused",
    )
    .await;
    answers_within_a_second(&other, &renewed, StatusCode::OK, "the new secret taken").await;

    // Revoked on one host: refused by the other within a second.
    let (status, revoked) = api
        .call(
            Method::DELETE,
            "/v1/api-tokens/team-a",
            Some(tokens::ADMIN),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{revoked}");
    answers_within_a_second(
        &other,
        &renewed,
        StatusCode::UNAUTHORIZED,
        "the revoked token refused",
    )
    .await;
    assert_eq!(me(&api.url, &renewed).await.0, StatusCode::UNAUTHORIZED);
    let (_, list) = api.get("/v1/api-tokens", tokens::ADMIN).await;
    let team_a = listed(&list, "team-a");
    assert!(team_a["revokedAt"].is_u64(), "{team_a}");
    assert_eq!(team_a["revokedBy"], "ops", "{team_a}");
    let (status, _) = api
        .call(
            Method::DELETE,
            "/v1/api-tokens/team-a",
            Some(tokens::ADMIN),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "revoked already");

    // Expired: refused on both hosts once its time is up.
    let (status, issued) = create(
        &api,
        json!({"name": "brief", "role": "reader", "expiresInSeconds": 1}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{issued}");
    let brief = issued["token"].as_str().unwrap().to_string();
    let expires_at = issued["expiresAt"].as_u64().unwrap();
    assert_eq!(me(&api.url, &brief).await.0, StatusCode::OK);
    for url in [&api.url, &other] {
        eventually_some(
            "the expired token refused",
            Duration::from_secs(10),
            || async { (me(url, &brief).await.0 == StatusCode::UNAUTHORIZED).then_some(()) },
        )
        .await;
    }
    assert!(airlock_core::clock::now_ms() >= expires_at);

    // The CLI: the secret printed once, then listed without it.
    let cli = |args: &[&str]| {
        let out = std::process::Command::new(airlock_tests::airlock_bin())
            .args(args)
            .env("AIRLOCK_URL", &api.url)
            .env("AIRLOCK_TOKEN", tokens::ADMIN)
            .output()
            .expect("run airlock");
        assert!(out.status.success(), "{args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let printed = cli(&[
        "token",
        "create",
        "ci",
        "--role",
        "reader",
        "--expires-in",
        "1h",
    ]);
    let cli_secret = printed
        .lines()
        .find(|l| l.starts_with("alt_"))
        .unwrap_or_else(|| panic!("no secret in {printed}"))
        .to_string();
    assert_eq!(me(&api.url, &cli_secret).await.1["name"], "ci");
    let listing = cli(&["token", "list"]);
    assert!(
        listing.contains("ci ") && !listing.contains(&cli_secret[4..]),
        "{listing}"
    );
    cli(&["token", "revoke", "ci"]);
    assert_eq!(me(&api.url, &cli_secret).await.0, StatusCode::UNAUTHORIZED);

    // A scoped one: `--queue` and `--handler`, each repeatable.
    let printed = cli(&[
        "token",
        "create",
        "ci-team",
        "--role",
        "deployer",
        "--queue",
        "team-a*",
        "--queue",
        "shared",
        "--handler",
        "team-a*",
    ]);
    assert!(
        printed.contains("(deployer, queues team-a*,shared handlers team-a*)"),
        "{printed}"
    );
    let scoped = printed.lines().find(|l| l.starts_with("alt_")).unwrap();
    assert_eq!(
        me(&api.url, scoped).await.1["scope"],
        json!({"queues": ["team-a*", "shared"], "handlers": ["team-a*"]})
    );
    let listing = cli(&["token", "list"]);
    assert!(
        listing.contains("queues team-a*,shared handlers team-a*")
            && listing.contains("whole fleet"),
        "{listing}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn tokens_written_into_redis_by_hand_are_refused_and_logged() {
    let api = Api::start();
    let (second, other) = second_host(&api);
    let (status, issued) = create(&api, json!({"name": "team-b", "role": "reader"})).await;
    assert_eq!(status, StatusCode::CREATED, "{issued}");
    let secret = issued["token"].as_str().unwrap().to_string();
    answers_within_a_second(
        &other,
        &secret,
        StatusCode::OK,
        "the other host to take team-b",
    )
    .await;
    let key = "bull:{airlock}:api-tokens";
    let stored = api.redis.cli(&["HGET", key, "team-b"]);
    let stored: Value = serde_json::from_str(stored.trim()).unwrap();

    // Minted: a record of our own making, with a seal that is not one.
    let minted_secret = "alt_minted-by-a-redis-writer-000000000000000000000000000000000000";
    let digest: String = airlock_core::hashing::separated(&[minted_secret.as_bytes()])
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let mut entry: Value = serde_json::from_str(stored["entry"].as_str().unwrap()).unwrap();
    entry["name"] = json!("minted");
    entry["role"] = json!("admin");
    entry["digest"] = json!(digest);
    let forged = json!({"entry": entry.to_string(), "seal": format!("{}:{}", u64::MAX / 2, "ab".repeat(32))});
    api.redis.cli(&["HSET", key, "minted", &forged.to_string()]);

    // Widened: team-b's own record made admin under its old seal.
    let mut widened_entry: Value = serde_json::from_str(stored["entry"].as_str().unwrap()).unwrap();
    widened_entry["role"] = json!("admin");
    let widened = json!({"entry": widened_entry.to_string(), "seal": stored["seal"]});
    api.redis
        .cli(&["HSET", key, "team-b", &widened.to_string()]);

    // Give both hosts two reads of what was written.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    for url in [&api.url, &other] {
        assert_eq!(
            me(url, minted_secret).await.0,
            StatusCode::UNAUTHORIZED,
            "minted on {url}"
        );
        assert_eq!(
            me(url, &secret).await.1,
            json!({"name": "team-b", "role": "reader"}),
            "not widened on {url}"
        );
    }
    for log in [api.host.log(), second.log()] {
        assert!(
            log.contains("registry entry refused")
                && log.contains("api-token")
                && log.contains("minted"),
            "the refusal is logged: {log}"
        );
    }
    // And counted: the minted record and the widened one.
    let (status, metrics) = api.get("/metrics", tokens::READER).await;
    assert_eq!(status, StatusCode::OK);
    let refused: u64 = metrics
        .as_str()
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("airlock_api_tokens_refused "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no airlock_api_tokens_refused in {metrics}"));
    assert_eq!(refused, 2, "{metrics}");

    // Revoked, then its earlier record put back: still refused.
    let (status, _) = api
        .call(
            Method::DELETE,
            "/v1/api-tokens/team-b",
            Some(tokens::ADMIN),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    answers_within_a_second(&other, &secret, StatusCode::UNAUTHORIZED, "team-b revoked").await;
    api.redis.cli(&["HSET", key, "team-b", &stored.to_string()]);
    tokio::time::sleep(Duration::from_millis(1200)).await;
    for url in [&api.url, &other] {
        assert_eq!(
            me(url, &secret).await.0,
            StatusCode::UNAUTHORIZED,
            "replayed on {url}"
        );
    }
    assert!(
        second
            .log()
            .contains("older version than one this host has seen"),
        "the replay is logged"
    );
}
