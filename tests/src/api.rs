//! A test client for a host serving the HTTP API.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::guest_bytes;
use crate::host::{HostOptions, HostProcess, tokens};
use crate::redis_server::{RedisOptions, RedisServer};

/// Every route the API serves, as `(method, path)` in the OpenAPI
/// document's spelling: `api.rs` checks the document lists exactly these,
/// `scopes.rs` walks them with a scoped token.
pub const ROUTES: &[(&str, &str)] = &[
    ("post", "/v1/handlers/{name}"),
    ("get", "/v1/handlers"),
    ("get", "/v1/handlers/{name}"),
    ("delete", "/v1/handlers/{name}"),
    ("get", "/v1/queues"),
    ("get", "/v1/queues/{queue}"),
    ("put", "/v1/queues/{queue}"),
    ("delete", "/v1/queues/{queue}"),
    ("post", "/v1/queues/{queue}/pause"),
    ("post", "/v1/queues/{queue}/resume"),
    ("post", "/v1/queues/{queue}/drain"),
    ("post", "/v1/queues/{queue}/clean"),
    ("post", "/v1/queues/{queue}/retry"),
    ("post", "/v1/queues/{queue}/obliterate"),
    ("get", "/v1/queues/{queue}/keys"),
    ("post", "/v1/queues/{queue}/jobs"),
    ("get", "/v1/queues/{queue}/jobs"),
    ("post", "/v1/queues/{queue}/jobs/bulk"),
    ("get", "/v1/jobs"),
    ("get", "/v1/jobs/{ref}"),
    ("delete", "/v1/jobs/{ref}"),
    ("get", "/v1/jobs/{ref}/timeline"),
    ("get", "/v1/jobs/{ref}/transcript"),
    ("post", "/v1/jobs/{ref}/replay"),
    ("post", "/v1/queues/{queue}/migrate"),
    ("post", "/v1/queues/{queue}/rollback"),
    ("put", "/v1/queues/{queue}/canary"),
    ("post", "/v1/queues/{queue}/promote"),
    ("post", "/v1/jobs/{ref}/retry"),
    ("post", "/v1/jobs/{ref}/promote"),
    ("post", "/v1/jobs/{ref}/cancel"),
    ("post", "/v1/jobs/{ref}/repin"),
    ("get", "/v1/jobs/{ref}/wait"),
    ("get", "/v1/queues/{queue}/events"),
    ("get", "/v1/jobs/{ref}/events"),
    ("post", "/v1/jobs/{ref}/read-token"),
    ("post", "/v1/flows"),
    ("get", "/v1/queues/{queue}/schedules"),
    ("get", "/v1/queues/{queue}/schedules/{id}"),
    ("put", "/v1/queues/{queue}/schedules/{id}"),
    ("delete", "/v1/queues/{queue}/schedules/{id}"),
    ("post", "/v1/queues/{queue}/schedules/{id}/trigger"),
    ("get", "/v1/queues/{queue}/secrets"),
    ("put", "/v1/queues/{queue}/secrets/{name}"),
    ("delete", "/v1/queues/{queue}/secrets/{name}"),
    ("post", "/v1/events"),
    ("get", "/v1/events"),
    ("post", "/v1/tokens/{token}/complete"),
    ("post", "/v1/api-tokens"),
    ("get", "/v1/api-tokens"),
    ("delete", "/v1/api-tokens/{name}"),
    ("post", "/v1/api-tokens/{name}/rotate"),
    ("get", "/v1/audit"),
    ("get", "/v1/hosts"),
    ("get", "/v1/me"),
    ("get", "/v1/stats"),
    ("post", "/v1/hosts/{id}/drain"),
    ("post", "/v1/hosts/{id}/resume"),
    ("get", "/healthz"),
    ("get", "/readyz"),
    ("get", "/metrics"),
];

/// A host with the API, on its own Redis.
pub struct Api {
    /// The Redis it uses.
    pub redis: RedisServer,
    /// The host process.
    pub host: HostProcess,
    /// Base URL of the API.
    pub url: String,
    /// HTTP client.
    pub http: reqwest::Client,
}

impl Api {
    /// Starts Redis and a host with the API.
    pub fn start() -> Api {
        Api::start_with(&[])
    }

    /// Starts Redis and a host with the API and extra `serve` arguments.
    pub fn start_with(extra: &[&str]) -> Api {
        Api::start_on(RedisServer::start(), extra)
    }

    /// Starts Redis with `options` (AOF, say) and a host with the API.
    pub fn start_with_redis(options: RedisOptions) -> Api {
        Api::start_on(RedisServer::start_with(options), &[])
    }

    /// Starts Redis and a host with the API (`api-host`), with `options`
    /// (extra arguments, environment).
    pub fn start_with_options(options: HostOptions) -> Api {
        Api::start_host(
            RedisServer::start(),
            HostOptions {
                id: "api-host".into(),
                api: true,
                ..options
            },
        )
    }

    fn start_on(redis: RedisServer, extra: &[&str]) -> Api {
        Api::start_host(
            redis,
            HostOptions {
                id: "api-host".into(),
                api: true,
                extra: extra.iter().map(|s| s.to_string()).collect(),
                ..HostOptions::default()
            },
        )
    }

    fn start_host(redis: RedisServer, options: HostOptions) -> Api {
        let host = HostProcess::start(&redis.url(), options);
        let url = host.api_url();
        Api {
            redis,
            host,
            url,
            http: crate::http_client(),
        }
    }

    /// Sends a request (optionally authenticated, optionally with a JSON body); returns the status and the body as JSON (or as a JSON string when it is not JSON).
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut req = self.http.request(method, format!("{}{path}", self.url));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.expect("request");
        let status = resp.status();
        let text = resp.text().await.unwrap_or_default();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    /// GET with a token.
    pub async fn get(&self, path: &str, token: &str) -> (StatusCode, Value) {
        self.call(Method::GET, path, Some(token), None).await
    }

    /// POST a JSON body with a token.
    pub async fn post(&self, path: &str, token: &str, body: Value) -> (StatusCode, Value) {
        self.call(Method::POST, path, Some(token), Some(body)).await
    }

    /// PUT a JSON body with a token.
    pub async fn put(&self, path: &str, token: &str, body: Value) -> (StatusCode, Value) {
        self.call(Method::PUT, path, Some(token), Some(body)).await
    }

    /// Uploads a component as `application/wasm` (or another content type, to test refusals).
    pub async fn upload(
        &self,
        name: &str,
        bytes: Vec<u8>,
        content_type: &str,
        token: &str,
    ) -> (StatusCode, Value) {
        let resp = self
            .http
            .post(format!("{}/v1/handlers/{name}", self.url))
            .bearer_auth(token)
            .header("content-type", content_type)
            .body(bytes)
            .send()
            .await
            .expect("upload");
        let status = resp.status();
        (status, resp.json().await.unwrap_or(Value::Null))
    }

    /// Uploads the built guest `guest` as a version of handler `name`
    /// (it becomes the current one); its digest.
    pub async fn upload_version(&self, name: &str, guest: &str) -> String {
        let (status, body) = self
            .upload(name, guest_bytes(guest), "application/wasm", tokens::ADMIN)
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        body["digest"].as_str().unwrap().to_string()
    }

    /// Deploys the built guest `guest` as a handler of the same name and binds `queue` to it with `spec`.
    pub async fn setup(&self, queue: &str, guest: &str, spec: Value) {
        let (status, body) = self
            .upload(guest, guest_bytes(guest), "application/wasm", tokens::ADMIN)
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        let mut spec = spec;
        spec["handler"] = json!(guest);
        let (status, body) = self
            .put(&format!("/v1/queues/{queue}"), tokens::ADMIN, spec)
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }

    /// Waits (through `/wait`) until the job finishes; returns its snapshot.
    pub async fn wait_done(&self, job_ref: &str) -> Value {
        let (status, body) = self
            .get(
                &format!("/v1/jobs/{job_ref}/wait?timeout=60s"),
                tokens::ADMIN,
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["finished"], true, "{body}");
        body["job"].clone()
    }

    /// Enqueues a job on `queue` as the producer token `web`; returns its ref.
    pub async fn enqueue(&self, queue: &str, body: Value) -> String {
        let (status, accepted) = self
            .post(&format!("/v1/queues/{queue}/jobs"), tokens::PRODUCER, body)
            .await;
        assert_eq!(status, StatusCode::ACCEPTED, "{accepted}");
        accepted["ref"].as_str().unwrap().to_string()
    }

    /// The job as the admin token sees it, logs included.
    pub async fn job(&self, job_ref: &str) -> Value {
        let (status, job) = self
            .get(&format!("/v1/jobs/{job_ref}"), tokens::ADMIN)
            .await;
        assert_eq!(status, StatusCode::OK, "{job}");
        job
    }

    /// Polls the job until `pred` holds (at most 60 s); returns it.
    pub async fn wait_until(
        &self,
        job_ref: &str,
        what: &str,
        pred: impl Fn(&Value) -> bool,
    ) -> Value {
        self.wait_until_within(job_ref, what, std::time::Duration::from_secs(60), pred)
            .await
    }

    /// Polls the job until `pred` holds (at most `within`); returns it.
    pub async fn wait_until_within(
        &self,
        job_ref: &str,
        what: &str,
        within: std::time::Duration,
        pred: impl Fn(&Value) -> bool,
    ) -> Value {
        let what = format!("{job_ref} to reach {what}");
        crate::eventually_some(&what, within, || async {
            let job = self.job(job_ref).await;
            pred(&job).then_some(job)
        })
        .await
    }

    /// Waits until the job finished and its run's measurements were
    /// recorded (the host's recorder writes them around the finish);
    /// returns its snapshot.
    pub async fn wait_recorded(&self, job_ref: &str) -> Value {
        self.wait_done(job_ref).await;
        crate::eventually_some(
            &format!("the run of {job_ref} to be recorded"),
            std::time::Duration::from_secs(10),
            || async {
                let (status, job) = self
                    .get(&format!("/v1/jobs/{job_ref}"), tokens::ADMIN)
                    .await;
                assert_eq!(status, StatusCode::OK, "{job}");
                job["metrics"]["wallTimeMs"].is_number().then_some(job)
            },
        )
        .await
    }
}

/// The error code of an error body.
pub fn error_code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or("<no error code>")
}

/// The field named by an error body.
pub fn error_field(body: &Value) -> &str {
    body["error"]["field"].as_str().unwrap_or("<no field>")
}
