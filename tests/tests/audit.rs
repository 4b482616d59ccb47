//! The audit log through a real host and Redis: a deploy, a bind, a
//! rollback and a secret's set and delete are listed with the names of the
//! tokens that made them (a managed one among them), where from, and never
//! the secret's value; filters narrow it; an entry written into the stream
//! by hand reads as not sealed, and one deleted from the middle shows as a
//! gap.

use airlock_tests::api::Api;
use airlock_tests::guest_bytes;
use airlock_tests::host::tokens;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

const SECRETS_KEY: &str = "8f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0";
const SECRET_VALUE: &str = "sk_live_never-in-the-audit-log";

async fn audit(api: &Api, query: &str) -> Value {
    let (status, listing) = api.get(&format!("/v1/audit{query}"), tokens::ADMIN).await;
    assert_eq!(status, StatusCode::OK, "{listing}");
    listing
}

fn actions(listing: &Value) -> Vec<(String, String, String)> {
    listing["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["who"].as_str().unwrap().to_string(),
                e["action"].as_str().unwrap().to_string(),
                e["target"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_audit_log_names_who_changed_what_and_never_a_secret() {
    let api = Api::start_with(&["--secrets-key", SECRETS_KEY]);
    let (status, issued) = api
        .call(
            Method::POST,
            "/v1/api-tokens",
            Some(tokens::ADMIN),
            Some(json!({"name": "deployer", "role": "admin"})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{issued}");
    let deployer = issued["token"].as_str().unwrap().to_string();

    // The deployer deploys two versions, binds, and rolls back.
    for guest in ["payment-webhook", "payment-webhook-cents"] {
        let (status, body) = api
            .upload(
                "payments",
                guest_bytes(guest),
                "application/wasm",
                &deployer,
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        if guest == "payment-webhook" {
            let (status, body) = api
                .put("/v1/queues/pay", &deployer, json!({"handler": "payments"}))
                .await;
            assert_eq!(status, StatusCode::OK, "{body}");
        }
    }
    let (status, body) = api
        .post("/v1/queues/pay/rollback", &deployer, json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // The bootstrap admin sets a secret and deletes it.
    let (status, body) = api
        .put(
            "/v1/queues/pay/secrets/LEDGER_KEY",
            tokens::ADMIN,
            json!({"value": SECRET_VALUE, "allow": ["https://ledger.example.com"]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, _) = api
        .call(
            Method::DELETE,
            "/v1/queues/pay/secrets/LEDGER_KEY",
            Some(tokens::ADMIN),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);

    let listing = audit(&api, "").await;
    assert!(
        !listing.to_string().contains(SECRET_VALUE),
        "no secret value: {listing}"
    );
    let mut seen = actions(&listing);
    seen.reverse();
    let s = |a: &str, b: &str, c: &str| (a.to_string(), b.to_string(), c.to_string());
    assert_eq!(
        seen,
        vec![
            s("ops", "token.create", "deployer"),
            s("deployer", "handler.deploy", "payments"),
            s("deployer", "queue.bind", "pay"),
            s("deployer", "handler.deploy", "payments"),
            s("deployer", "queue.rollback", "pay"),
            s("ops", "secret.set", "pay"),
            s("ops", "secret.delete", "pay"),
        ],
        "{listing}"
    );
    for entry in listing["entries"].as_array().unwrap() {
        assert_eq!(entry["sealed"], true, "{entry}");
        assert_eq!(entry["from"], "127.0.0.1", "{entry}");
    }
    let set = &listing["entries"][1];
    assert_eq!(set["details"]["name"], "LEDGER_KEY", "{set}");
    assert_eq!(listing["gaps"], json!([]));

    // Filters.
    let mine = actions(&audit(&api, "?who=deployer").await);
    assert_eq!(mine.len(), 4, "{mine:?}");
    let secrets = actions(&audit(&api, "?action=secret.").await);
    assert_eq!(secrets.len(), 2, "{secrets:?}");
    let (status, _) = api.get("/v1/audit", tokens::READER).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, body) = api.get("/v1/audit?limit=0", tokens::ADMIN).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");

    // Written by hand: an entry that reads as not sealed; one deleted from
    // the middle, a gap.
    let stream = "bull:{airlock}:audit";
    let forged = json!({
        "seq": 99, "at": 1, "who": "ops", "role": "admin", "action": "queue.bind",
        "target": "pay", "from": null, "details": {}
    });
    api.redis.cli(&[
        "XADD",
        stream,
        "*",
        "e",
        &forged.to_string(),
        "s",
        &"ab".repeat(32),
    ]);
    let rollback_id = api
        .redis
        .cli(&["XRANGE", stream, "-", "+"])
        .lines()
        .collect::<Vec<_>>()
        .chunks(5)
        .nth(4)
        .map(|c| c[0].to_string())
        .unwrap();
    api.redis.cli(&["XDEL", stream, &rollback_id]);
    let listing = audit(&api, "").await;
    let first = &listing["entries"][0];
    assert_eq!(
        (&first["seq"], &first["sealed"]),
        (&json!(99), &json!(false)),
        "{listing}"
    );
    assert!(
        listing["gaps"]
            .as_array()
            .unwrap()
            .contains(&json!({"fromSeq": 5, "toSeq": 5})),
        "{listing}"
    );

    // The CLI prints the same.
    let out = std::process::Command::new(airlock_tests::airlock_bin())
        .args(["audit", "--who", "deployer"])
        .env("AIRLOCK_URL", &api.url)
        .env("AIRLOCK_TOKEN", tokens::ADMIN)
        .output()
        .expect("run airlock");
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(
        printed.contains("handler.deploy") && printed.contains("queue.bind"),
        "{printed}"
    );
}
