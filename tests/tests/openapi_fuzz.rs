//! The OpenAPI document tells the truth: an independent property-based
//! fuzzer (schemathesis) generates requests from the served
//! `/openapi.json` — valid ones, invalid ones, sequences — against a real
//! host, with every check on: no server errors, only documented statuses,
//! content types and bodies matching the schemas, schema-valid requests
//! accepted, schema-invalid ones refused, authentication enforced. Any
//! finding fails the test.
//!
//! The number of examples is bounded (`AIRLOCK_FUZZ_EXAMPLES`, default 40
//! per operation) and the seed fixed (`AIRLOCK_FUZZ_SEED`) so a run is
//! repeatable; set either to explore further.

use std::process::Command;

use airlock_tests::api::Api;
use airlock_tests::host::tokens;
use airlock_tests::python_tool;

fn schemathesis(api: &Api, args: &[&str]) {
    let examples = std::env::var("AIRLOCK_FUZZ_EXAMPLES").unwrap_or_else(|_| "40".into());
    let seed = std::env::var("AIRLOCK_FUZZ_SEED").unwrap_or_else(|_| "20261201".into());
    let out = Command::new(python_tool("schemathesis"))
        .arg("--no-color")
        .arg("run")
        .arg(format!("{}/openapi.json", api.url))
        .args([
            "--header",
            &format!("Authorization: Bearer {}", tokens::ADMIN),
        ])
        .args(["--checks", "all"])
        .args(["--max-examples", &examples])
        .args(["--seed", &seed])
        // No example database: a run depends on its seed alone, and
        // leaves nothing behind in the tree.
        .args(["--generation-database", "none"])
        // One worker: Python 3.11's AST parser trips over hypothesis
        // describing strategies from two threads at once.
        .args(["--workers", "1"])
        .args(args)
        .output()
        .expect("run schemathesis");
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "schemathesis found the document and the server disagreeing (seed {seed}):\n{report}"
    );
    assert!(
        report.contains(" passed"),
        "schemathesis ran no test cases:\n{report}"
    );
}

#[test]
fn the_served_document_and_the_server_agree() {
    let api = Api::start();
    // Every operation, every phase, every check...
    schemathesis(&api, &["--exclude-operation-id", "handlers_upload"]);
    // ... and the upload, whose body is bytes: whether they are a handler
    // component cannot be said in JSON Schema, so a schema-valid upload may
    // still be refused (422, naming why); every other check holds.
    schemathesis(
        &api,
        &[
            "--include-operation-id",
            "handlers_upload",
            "--exclude-checks",
            "positive_data_acceptance",
        ],
    );
}

/// Where the document says object, an array is refused — at the top of a
/// body and inside it. Each case is an array serde's derived readers
/// would fill in by position (`["welcome", {...}]` was a 202), so the test
/// fails if the strict reader is bypassed anywhere; and every operation of
/// the served document that takes a JSON object has a case.
#[tokio::test]
async fn an_array_never_stands_in_for_an_object() {
    use reqwest::{Method, StatusCode};
    use serde_json::{Value, json};

    let api = Api::start();
    api.setup("emails", "payment-webhook", json!({})).await;
    let data = json!({"transactionId": "t", "amount": 1});
    let cases: Vec<(&str, Method, &str, Value, &str)> = vec![
        (
            "jobs_enqueue",
            Method::POST,
            "/v1/queues/emails/jobs",
            json!(["welcome", data]),
            "body",
        ),
        (
            "jobs_enqueue",
            Method::POST,
            "/v1/queues/emails/jobs",
            json!({"data": data, "opts": {"removeOnFail": [3600, 10]}}),
            "opts.removeOnFail",
        ),
        (
            "jobs_enqueue",
            Method::POST,
            "/v1/queues/emails/jobs",
            json!({"data": data, "opts": {"attempts": 2, "backoff": ["fixed", 5]}}),
            "opts.backoff",
        ),
        (
            "jobs_enqueue",
            Method::POST,
            "/v1/queues/emails/jobs",
            json!({"data": data, "opts": {"limits": [1000]}}),
            "opts.limits",
        ),
        (
            "jobs_enqueue_bulk",
            Method::POST,
            "/v1/queues/emails/jobs/bulk",
            json!({"jobs": [["welcome", data]]}),
            "jobs[0]",
        ),
        (
            "jobs_cancel",
            Method::POST,
            "/v1/jobs/emails:1/cancel",
            json!(["no longer needed"]),
            "body",
        ),
        (
            "jobs_replay",
            Method::POST,
            "/v1/jobs/emails:1/replay",
            json!(["0".repeat(64)]),
            "body",
        ),
        (
            "queues_migrate",
            Method::POST,
            "/v1/queues/emails/migrate",
            json!(["0".repeat(64), true]),
            "body",
        ),
        (
            "queues_bind",
            Method::PUT,
            "/v1/queues/emails",
            json!(["payment-webhook"]),
            "body",
        ),
        (
            "queues_bind",
            Method::PUT,
            "/v1/queues/emails",
            json!({"handler": "payment-webhook", "keyConcurrency": ["$.customer", 2]}),
            "keyConcurrency",
        ),
        (
            "queues_bind",
            Method::PUT,
            "/v1/queues/emails",
            json!({"handler": "payment-webhook", "egress": [["https://api.example.com", null, null]]}),
            "egress[0]",
        ),
        (
            "queues_drain",
            Method::POST,
            "/v1/queues/emails/drain",
            json!(["emails", true]),
            "body",
        ),
        (
            "queues_clean",
            Method::POST,
            "/v1/queues/emails/clean",
            json!(["emails", "completed"]),
            "body",
        ),
        (
            "queues_retry_failed",
            Method::POST,
            "/v1/queues/emails/retry",
            json!(["trap", 10]),
            "body",
        ),
        (
            "queues_obliterate",
            Method::POST,
            "/v1/queues/emails/obliterate",
            json!(["emails", true]),
            "body",
        ),
        (
            "schedules_put",
            Method::PUT,
            "/v1/queues/emails/schedules/nightly",
            json!([null, 60000]),
            "body",
        ),
        (
            "secrets_put",
            Method::PUT,
            "/v1/queues/emails/secrets/API_KEY",
            json!(["s3cret", ["https://api.example.com"]]),
            "body",
        ),
        (
            "flows_add",
            Method::POST,
            "/v1/flows",
            json!(["report", "emails", data]),
            "body",
        ),
        (
            "events_send",
            Method::POST,
            "/v1/events",
            json!(["order.created", {}]),
            "body",
        ),
        (
            "queues_set_canary",
            Method::PUT,
            "/v1/queues/emails/canary",
            json!(["0".repeat(64), 10]),
            "body",
        ),
        (
            "queues_promote",
            Method::POST,
            "/v1/queues/emails/promote",
            json!([true]),
            "body",
        ),
        (
            "queues_rollback",
            Method::POST,
            "/v1/queues/emails/rollback",
            json!([true]),
            "body",
        ),
        (
            "api_tokens_create",
            Method::POST,
            "/v1/api-tokens",
            json!(["team-a", "producer"]),
            "body",
        ),
        (
            "api_tokens_create",
            Method::POST,
            "/v1/api-tokens",
            json!({"name": "team-a", "role": "reader", "scope": ["team-a*"]}),
            "scope",
        ),
        (
            "jobs_read_token",
            Method::POST,
            "/v1/jobs/emails:1/read-token",
            json!([600]),
            "body",
        ),
    ];
    for (op, method, path, body, field) in &cases {
        let (status, answer) = api
            .call(
                method.clone(),
                path,
                Some(tokens::ADMIN),
                Some(body.clone()),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{op} {body}: {answer}");
        let named = answer["error"]["field"].as_str().unwrap_or_default();
        assert!(
            named.starts_with(field),
            "{op} {body}: expected the field {field}: {answer}"
        );
    }

    // Every operation taking a JSON object has a case above.
    let (_, doc) = api.get("/openapi.json", tokens::READER).await;
    let covered: std::collections::BTreeSet<&str> = cases.iter().map(|c| c.0).collect();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (verb, operation) in item.as_object().unwrap() {
            let schema = &operation["requestBody"]["content"]["application/json"]["schema"];
            if schema.is_null() {
                continue;
            }
            let schema = match schema["$ref"].as_str() {
                Some(r) => &doc["components"]["schemas"][r.rsplit('/').next().unwrap()],
                None => schema,
            };
            if schema["type"] != "object" {
                continue;
            }
            let id = operation["operationId"].as_str().unwrap_or_default();
            assert!(
                covered.contains(id),
                "{verb} {path} ({id}) takes an object and has no array case here"
            );
        }
    }
}

/// A per-job limit of 0 is refused at enqueue, as the binding route
/// refuses one, naming the field.
#[tokio::test]
async fn a_zero_limit_is_refused_by_every_route() {
    use reqwest::StatusCode;
    use serde_json::json;

    let api = Api::start();
    api.setup("emails", "payment-webhook", json!({})).await;
    let (status, body) = api
        .post(
            "/v1/queues/emails/jobs",
            tokens::PRODUCER,
            json!({"data": {}, "opts": {"limits": {"memoryBytes": 0}}}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error"]["field"], "opts.limits.memoryBytes", "{body}");
    let (status, body) = api
        .put(
            "/v1/queues/emails",
            tokens::ADMIN,
            json!({"handler": "payment-webhook", "limits": {"memoryBytes": 0}}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["error"]["field"]
            .as_str()
            .unwrap_or_default()
            .contains("memoryBytes"),
        "{body}"
    );
}
