//! A small client for Airlock's HTTP API, used by the CLI's remote commands.

use anyhow::Context as _;
use futures::StreamExt;
use reqwest::{Method, StatusCode};
use serde::de::DeserializeOwned;

/// Where the API is and how to authenticate.
#[derive(Debug, Clone, clap::Args)]
pub struct Connection {
    /// The API's base URL.
    #[arg(
        long,
        env = "AIRLOCK_URL",
        default_value = "http://127.0.0.1:8080",
        global = true
    )]
    pub url: String,
    /// A bearer token (better passed in AIRLOCK_TOKEN than on the command line).
    #[arg(long, env = "AIRLOCK_TOKEN", hide_env_values = true, global = true)]
    pub token: Option<String>,
}

/// Tries of an idempotent request before giving up.
const RETRIES: u32 = 6;

/// Whether an error is worth a retry: the API was unreachable, or answered
/// 503 (Redis down or failing; the outcome of the request unknown).
fn retryable(e: &anyhow::Error) -> bool {
    match e.downcast_ref::<ApiFailure>() {
        Some(f) => f.status == StatusCode::SERVICE_UNAVAILABLE,
        None => e.downcast_ref::<reqwest::Error>().is_some(),
    }
}

/// An HTTP API client.
pub struct ApiClient {
    http: reqwest::Client,
    base: String,
    token: Option<String>,
}

/// An error the API answered with (its JSON error body).
#[derive(Debug, thiserror::Error)]
#[error("{status}: {message}{}", field.as_ref().map(|f| format!(" (field `{f}`)")).unwrap_or_default())]
pub struct ApiFailure {
    /// HTTP status.
    pub status: StatusCode,
    /// Error code.
    pub code: String,
    /// Message.
    pub message: String,
    /// Offending field.
    pub field: Option<String>,
}

impl ApiClient {
    /// A client for `conn`.
    pub fn new(conn: &Connection) -> anyhow::Result<Self> {
        let http = reqwest::Client::builder()
            .user_agent(concat!("airlock-cli/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(ApiClient {
            http,
            base: conn.url.trim_end_matches('/').to_string(),
            token: conn.token.clone(),
        })
    }

    fn request(&self, method: Method, path: &str) -> reqwest::RequestBuilder {
        let mut req = self.http.request(method, format!("{}{path}", self.base));
        if let Some(token) = &self.token {
            req = req.bearer_auth(token);
        }
        req
    }

    async fn send<T: DeserializeOwned>(&self, req: reqwest::RequestBuilder) -> anyhow::Result<T> {
        let resp = req
            .send()
            .await
            .with_context(|| format!("cannot reach the Airlock API at {}", self.base))?;
        let status = resp.status();
        let bytes = resp.bytes().await?;
        if !status.is_success() {
            let body: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
            let err = &body["error"];
            return Err(ApiFailure {
                status,
                code: err["code"].as_str().unwrap_or("error").to_string(),
                message: err["message"]
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| String::from_utf8_lossy(&bytes).into_owned()),
                field: err["field"].as_str().map(str::to_string),
            }
            .into());
        }
        if bytes.is_empty() {
            return Ok(serde_json::from_value(serde_json::Value::Null)?);
        }
        Ok(serde_json::from_slice(&bytes)?)
    }

    /// GET `path` as JSON.
    pub async fn get<T: DeserializeOwned>(&self, path: &str) -> anyhow::Result<T> {
        self.send(self.request(Method::GET, path)).await
    }

    /// Sends `body` as JSON with `method`.
    pub async fn json<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: &serde_json::Value,
    ) -> anyhow::Result<T> {
        self.send(self.request(method, path).json(body)).await
    }

    /// POSTs `body` with an `Idempotency-Key`, retrying while the API is
    /// unreachable or answers 503: with the key, a retry of a request that
    /// did take effect answers with what it created instead of doing it
    /// again. Other errors are final.
    pub async fn post_idempotent<T: DeserializeOwned>(
        &self,
        path: &str,
        body: &serde_json::Value,
        key: &str,
    ) -> anyhow::Result<T> {
        let mut backoff = crate::tasks::Backoff::new(
            std::time::Duration::from_millis(200),
            std::time::Duration::from_secs(5),
        );
        let mut attempt = 1;
        loop {
            let request = self
                .request(Method::POST, path)
                .header("Idempotency-Key", key)
                .json(body);
            match self.send(request).await {
                Ok(v) => return Ok(v),
                Err(e) if attempt < RETRIES && retryable(&e) => {
                    eprintln!("{e:#}; retrying ({attempt}/{})", RETRIES - 1);
                    backoff.wait().await;
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// POSTs raw bytes (a component upload).
    pub async fn upload<T: DeserializeOwned>(
        &self,
        path: &str,
        bytes: Vec<u8>,
    ) -> anyhow::Result<T> {
        self.send(
            self.request(Method::POST, path)
                .header(reqwest::header::CONTENT_TYPE, "application/wasm")
                .body(bytes),
        )
        .await
    }

    /// Opens a Server-Sent Events stream; yields `(event name, data)`.
    pub async fn events(
        &self,
        path: &str,
    ) -> anyhow::Result<impl futures::Stream<Item = anyhow::Result<(String, serde_json::Value)>>>
    {
        use eventsource_stream::Eventsource;
        let resp = self
            .request(Method::GET, path)
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .send()
            .await
            .with_context(|| format!("cannot reach the Airlock API at {}", self.base))?;
        if !resp.status().is_success() {
            let status = resp.status();
            let body: serde_json::Value = resp.json().await.unwrap_or_default();
            anyhow::bail!(
                "{status}: {}",
                body["error"]["message"]
                    .as_str()
                    .unwrap_or("event stream refused")
            );
        }
        Ok(resp.bytes_stream().eventsource().map(|event| {
            let event = event.map_err(|e| anyhow::anyhow!("event stream broke: {e}"))?;
            let data =
                serde_json::from_str(&event.data).unwrap_or(serde_json::Value::String(event.data));
            Ok((event.event, data))
        }))
    }
}
