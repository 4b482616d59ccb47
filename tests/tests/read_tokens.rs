//! Live job updates in a browser, with a read token: `make run`'s gateway
//! as the example shop's backend (`/app/`) pays through a real host, and
//! Debian's headless Chromium (`tests/ui/read-token.mjs`) follows the
//! payment in the shop's page — progress as it happens, log lines, the end —
//! through the TypeScript SDK's `subscribe`. The token opens its job's
//! stream and nothing else (another job's stream, any other route, as a
//! bearer token or in the query), not from a page of an origin the
//! operator did not allow, and not after it expires, when the stream it
//! opened stops. A flow's token opens the jobs below its job in the flow,
//! and no other job.

use airlock_tests::api::{Api, ROUTES, error_code, error_field};
use airlock_tests::free_port;
use airlock_tests::host::tokens;
use airlock_tests::mock_gateway::MockGateway;
use reqwest::{Method, StatusCode};
use serde_json::json;

/// Where Debian's `chromium` package puts the browser.
const CHROMIUM: &str = "/usr/bin/chromium";

#[tokio::test(flavor = "multi_thread")]
async fn a_browser_follows_a_payment_with_a_read_token_and_nothing_else() {
    let script = airlock_tests::ui_script("read-token.mjs");
    let chromium = std::env::var("AIRLOCK_CHROMIUM").unwrap_or_else(|_| CHROMIUM.into());
    assert!(
        std::path::Path::new(&chromium).exists(),
        "no Chromium at {chromium}: install Debian's `chromium` package (CI does), or set AIRLOCK_CHROMIUM"
    );
    // The shop's address must be known to the API (its CORS origin) before
    // the shop knows the API's.
    let port = free_port();
    let shop = format!("http://127.0.0.1:{port}");
    let api = Api::start_with(&[
        "--egress-allow",
        &shop,
        "--egress-allow-network",
        "127.0.0.1/32",
        "--cors-origin",
        &shop,
    ]);
    // The shop pays as producer `web`; its ledger answers a second late.
    let _gateway = MockGateway::start_shop(port, 1000, &api.url, tokens::PRODUCER);
    api.setup(
        "payments",
        "payment-webhook",
        json!({"egress": [shop], "config": {"LEDGER_URL": shop}}),
    )
    .await;
    // Another producer's payment, waiting a minute.
    let (status, other) = api
        .post(
            "/v1/queues/payments/jobs",
            tokens::OTHER_PRODUCER,
            json!({"data": {"transactionId": "tx_other", "amount": 1, "currency": "EUR"}, "opts": {"delay": 60_000}}),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{other}");
    let other = other["ref"].as_str().unwrap().to_string();

    // Only a token that may read the job gets a read token for it.
    let path = format!("/v1/jobs/{other}/read-token");
    let (status, refused) = api.post(&path, tokens::PRODUCER, json!({})).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{refused}");
    let (status, refused) = api
        .post(
            &path,
            tokens::OTHER_PRODUCER,
            json!({"expiresInSeconds": 3601}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}");
    assert_eq!(error_field(&refused), "expiresInSeconds");
    let (status, issued) = api.post(&path, tokens::OTHER_PRODUCER, json!({})).await;
    assert_eq!(status, StatusCode::CREATED, "{issued}");
    let token = issued["token"].as_str().unwrap().to_string();
    assert_eq!(issued["ref"], json!(other));
    assert_eq!(
        issued["eventsPath"],
        json!(format!(
            "/v1/jobs/payments%3A{}/events?token={token}",
            other.split(':').nth(1).unwrap()
        ))
    );

    // On the server: the read token is no bearer token on any route, and
    // in the query it opens no other route.
    for &(method, path) in ROUTES {
        if matches!(path, "/healthz" | "/readyz" | "/v1/tokens/{token}/complete") {
            continue;
        }
        let concrete = path
            .replace("{ref}", &other)
            .replace("{queue}", "payments")
            .replace("{name}", "payment-webhook")
            .replace("{id}", "s");
        let m = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
        let body = (method == "post" || method == "put").then(|| json!({}));
        let (status, answer) = api
            .call(m.clone(), &concrete, Some(&token), body.clone())
            .await;
        assert_eq!(
            status,
            StatusCode::UNAUTHORIZED,
            "{method} {concrete} as a bearer token: {answer}"
        );
        assert_eq!(error_code(&answer), "unauthorized");
        if path == "/v1/jobs/{ref}/events" {
            continue;
        }
        let sep = if concrete.contains('?') { '&' } else { '?' };
        let (status, answer) = api
            .call(m, &format!("{concrete}{sep}token={token}"), None, body)
            .await;
        assert_eq!(
            status,
            StatusCode::UNAUTHORIZED,
            "{method} {concrete}?token=: {answer}"
        );
    }

    let status = tokio::process::Command::new("node")
        .arg(&script)
        .envs([
            ("SHOP_URL", shop.clone()),
            ("API_URL", api.url.clone()),
            ("ADMIN_TOKEN", tokens::ADMIN.to_string()),
            ("OTHER_REF", other.clone()),
            ("CHROMIUM", chromium),
        ])
        .status()
        .await
        .expect("node runs the read-token script");
    assert!(status.success(), "{} failed: {status}", script.display());
}

/// The status `GET /v1/jobs/{job}/events?token=` answers (the stream is
/// dropped at once).
async fn stream_status(api: &Api, job: &str, token: &str) -> StatusCode {
    let (queue, id) = job.split_once(':').unwrap();
    api.http
        .get(format!(
            "{}/v1/jobs/{queue}%3A{id}/events?token={token}",
            api.url
        ))
        .send()
        .await
        .unwrap()
        .status()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_flow_token_opens_the_jobs_below_its_job_and_no_other() {
    let api = Api::start();
    api.setup("orders", "noop", json!({})).await;
    // Producer `web`'s flow, three levels, held a minute at its bottom.
    let (status, flow) = api
        .post(
            "/v1/flows",
            tokens::PRODUCER,
            json!({"name": "order", "queue": "orders", "data": {},
                   "children": [{"name": "charge", "queue": "orders", "data": {},
                                 "children": [{"name": "receipt", "queue": "orders", "data": {},
                                               "opts": {"delay": 60_000}}]}]}),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{flow}");
    let order = flow["ref"].as_str().unwrap().to_string();
    let charge = flow["children"][0]["ref"].as_str().unwrap().to_string();
    let receipt = flow["children"][0]["children"][0]["ref"]
        .as_str()
        .unwrap()
        .to_string();
    // Another flow of the same producer, and a job of another producer.
    let (_, elsewhere) = api
        .post(
            "/v1/flows",
            tokens::PRODUCER,
            json!({"name": "order", "queue": "orders", "data": {},
                   "children": [{"name": "charge", "queue": "orders", "data": {}, "opts": {"delay": 60_000}}]}),
        )
        .await;
    let elsewhere = elsewhere["children"][0]["ref"]
        .as_str()
        .unwrap()
        .to_string();
    let (_, theirs) = api
        .post(
            "/v1/queues/orders/jobs",
            tokens::OTHER_PRODUCER,
            json!({"data": {}, "opts": {"delay": 60_000}}),
        )
        .await;
    let theirs = theirs["ref"].as_str().unwrap().to_string();

    let issue = |job: String, body: serde_json::Value| {
        let api = &api;
        async move {
            let (status, issued) = api
                .post(
                    &format!("/v1/jobs/{job}/read-token"),
                    tokens::PRODUCER,
                    body,
                )
                .await;
            assert_eq!(status, StatusCode::CREATED, "{issued}");
            issued["token"].as_str().unwrap().to_string()
        }
    };
    // The charge's flow token: the charge and the receipt below it.
    let token = issue(charge.clone(), json!({"flow": true})).await;
    assert!(token.starts_with("jrf_"), "{token}");
    for (job, want) in [
        (&charge, StatusCode::OK),
        (&receipt, StatusCode::OK),
        (&order, StatusCode::UNAUTHORIZED),
        (&elsewhere, StatusCode::UNAUTHORIZED),
        (&theirs, StatusCode::UNAUTHORIZED),
    ] {
        assert_eq!(stream_status(&api, job, &token).await, want, "{job}");
    }
    // The order's: the whole flow. A job token of the order: the order alone.
    let token = issue(order.clone(), json!({"flow": true})).await;
    for job in [&order, &charge, &receipt] {
        assert_eq!(
            stream_status(&api, job, &token).await,
            StatusCode::OK,
            "{job}"
        );
    }
    let token = issue(order.clone(), json!({})).await;
    assert_eq!(stream_status(&api, &order, &token).await, StatusCode::OK);
    assert_eq!(
        stream_status(&api, &receipt, &token).await,
        StatusCode::UNAUTHORIZED
    );
}
