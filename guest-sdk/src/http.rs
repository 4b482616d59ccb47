//! Outbound HTTP from a handler: a small blocking client over `wasi:http`
//! (the `wasip2` crate's bindings).
//!
//! Requests go only where the queue binding's `egress` list (within the
//! operator's) allows; anything else fails with [`HttpError::Denied`]
//! carrying the host's reason (`context.http-refusals`), which is also in
//! the job's log. A request the host cut off — its body over
//! `maxHttpRequestBytes`, its response over `maxHttpResponseBytes`, no
//! response or next chunk within `httpTimeoutMs` — fails with
//! [`HttpError::Limit`] and the host's reason. Both are fatal as a
//! [`JobError`]: a retry would be refused again. Put a secret's placeholder
//! ([`Context::secret`](crate::Context::secret)) in a header and the host
//! sends the value instead, to the secret's own destinations only.
//!
//! ```ignore
//! let key = ctx.secret("MAIL_API_KEY")?;
//! let sent: Sent = ctx
//!     .http()
//!     .post(&format!("{gateway}/v1/send"))
//!     .bearer(&key)
//!     .json(&message)?
//!     .send()?
//!     .error_for_status()?
//!     .json()?;
//! ```

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use wasip2::http::outgoing_handler;
use wasip2::http::types::{
    ErrorCode, Fields, IncomingBody, Method, OutgoingBody, OutgoingRequest, RequestOptions, Scheme,
};
use wasip2::io::streams::StreamError;

use crate::bindings::airlock::job::context as host;
use crate::bindings::airlock::job::types::HttpRefusalKind;
use crate::error::JobError;

/// Largest chunk written to a request body stream at once (the stream
/// accepts at most 4096 bytes per blocking write).
const WRITE_CHUNK: usize = 4096;

/// Why a request failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HttpError {
    /// The URL or a header is not valid; names it.
    Invalid(String),
    /// The host refused the request before sending it: not in the queue's
    /// egress list or the operator's, a private address, not http(s), or
    /// the run's request cap. Carries the host's reason.
    Denied(String),
    /// A cap on the request or response was hit: a body too large, or no
    /// answer within `httpTimeoutMs`. Carries the host's reason.
    Limit(String),
    /// Sending or receiving failed (DNS, connect, TLS, timeout, reset).
    Transport(String),
    /// The server answered with a status the caller treats as failure
    /// ([`Response::error_for_status`]).
    Status(u16, String),
    /// The response body is not the JSON the caller expected.
    Decode(String),
}

impl std::fmt::Display for HttpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HttpError::Invalid(m) => write!(f, "invalid request: {m}"),
            HttpError::Denied(m) => write!(f, "request refused by the host: {m}"),
            HttpError::Limit(m) => write!(f, "HTTP limit: {m}"),
            HttpError::Transport(m) => write!(f, "HTTP transport: {m}"),
            HttpError::Status(code, body) => write!(f, "HTTP status {code}: {body}"),
            HttpError::Decode(m) => write!(f, "response body: {m}"),
        }
    }
}

// Not `std::error::Error`: `JobError` converts every such error into a
// retryable one, and an HTTP failure deserves a finer answer.
impl From<HttpError> for JobError {
    /// Transport failures and 5xx/408/429 statuses are worth a retry; a refusal,
    /// a limit, a bad request or another status is not.
    fn from(e: HttpError) -> Self {
        let retry = match &e {
            HttpError::Transport(_) => true,
            HttpError::Status(code, _) => *code >= 500 || *code == 429 || *code == 408,
            _ => false,
        };
        if retry {
            JobError::retry(e.to_string())
        } else {
            JobError::fatal(e.to_string())
        }
    }
}

fn describe(code: &ErrorCode) -> HttpError {
    match code {
        ErrorCode::HttpRequestDenied => HttpError::Denied(
            "not allowed by this queue's egress rules or past the job's request cap (the job's log says which)".into(),
        ),
        ErrorCode::DestinationIpProhibited => HttpError::Denied(
            "the destination resolves to an address this host refuses (private, loopback, link-local)"
                .into(),
        ),
        ErrorCode::HttpRequestBodySize(limit) => HttpError::Limit(format!(
            "request body larger than the job's limit{}",
            limit.map(|l| format!(" of {l} bytes")).unwrap_or_default()
        )),
        ErrorCode::HttpResponseBodySize(limit) => HttpError::Limit(format!(
            "response body larger than the job's limit{}",
            limit.map(|l| format!(" of {l} bytes")).unwrap_or_default()
        )),
        other => HttpError::Transport(format!("{other:?}")),
    }
}

/// The highest `seq` of `context.http-refusals` this job has matched to a
/// request already: a refusal is the reason of one request only. Reset
/// for every job, as the host's numbering is (a warm instance runs many).
static REFUSALS_SEEN: AtomicU32 = AtomicU32::new(0);

/// A new job starts: no refusal of its own seen yet.
pub(crate) fn begin_job() {
    REFUSALS_SEEN.store(0, Ordering::Relaxed);
}

/// The host's own word on a request to `url` that just failed with
/// `error`: the newest refusal not yet matched to a request, preferring
/// one of `url` (without its query; a refused redirect has another URL).
/// `error` as it is when the host refused or cut off nothing new.
fn with_host_reason(url: &str, error: HttpError) -> HttpError {
    if matches!(error, HttpError::Invalid(_)) {
        return error;
    }
    let seen = REFUSALS_SEEN.load(Ordering::Relaxed);
    let fresh: Vec<_> = host::http_refusals()
        .into_iter()
        .filter(|r| r.seq > seen)
        .collect();
    let bare = url.split(['?', '#']).next().unwrap_or(url);
    let Some(refusal) = fresh
        .iter()
        .rev()
        .find(|r| same_url(&r.url, bare))
        .or(fresh.last())
    else {
        return error;
    };
    if let Some(newest) = fresh.last() {
        REFUSALS_SEEN.store(newest.seq, Ordering::Relaxed);
    }
    match refusal.kind {
        HttpRefusalKind::RequestTooLarge
        | HttpRefusalKind::ResponseTooLarge
        | HttpRefusalKind::Timeout => HttpError::Limit(refusal.reason.clone()),
        _ => HttpError::Denied(refusal.reason.clone()),
    }
}

/// Whether the host's `shown` URL is `url`: the host writes the path even
/// when it is `/`.
fn same_url(shown: &str, url: &str) -> bool {
    shown == url || shown.strip_suffix('/') == Some(url)
}

/// The client: [`Context::http`](crate::Context::http).
#[derive(Debug, Clone, Copy, Default)]
pub struct Http;

impl Http {
    /// A request with `method` (e.g. `"PATCH"`) to `url`.
    pub fn request(&self, method: &str, url: &str) -> RequestBuilder {
        RequestBuilder {
            method: method.to_ascii_uppercase(),
            url: url.to_string(),
            headers: Vec::new(),
            body: Vec::new(),
            timeout: None,
            error: None,
        }
    }

    /// A GET to `url`.
    pub fn get(&self, url: &str) -> RequestBuilder {
        self.request("GET", url)
    }

    /// A POST to `url`.
    pub fn post(&self, url: &str) -> RequestBuilder {
        self.request("POST", url)
    }

    /// A PUT to `url`.
    pub fn put(&self, url: &str) -> RequestBuilder {
        self.request("PUT", url)
    }

    /// A DELETE to `url`.
    pub fn delete(&self, url: &str) -> RequestBuilder {
        self.request("DELETE", url)
    }
}

/// A request being built.
#[derive(Debug, Clone)]
pub struct RequestBuilder {
    method: String,
    url: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    timeout: Option<Duration>,
    error: Option<HttpError>,
}

/// An answer.
#[derive(Debug, Clone)]
pub struct Response {
    status: u16,
    headers: Vec<(String, Vec<u8>)>,
    body: Vec<u8>,
}

impl RequestBuilder {
    /// Adds a header (a secret's placeholder in it is replaced by the host).
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    /// `Authorization: Bearer <token>` (pass a secret's placeholder).
    pub fn bearer(self, token: &str) -> Self {
        self.header("authorization", &format!("Bearer {token}"))
    }

    /// A JSON body (and its content type).
    pub fn json<T: Serialize>(mut self, value: &T) -> Self {
        match serde_json::to_vec(value) {
            Ok(bytes) => self.body = bytes,
            Err(e) => self.error = Some(HttpError::Invalid(format!("body: {e}"))),
        }
        self.header("content-type", "application/json")
    }

    /// A raw body.
    pub fn body(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.body = bytes.into();
        self
    }

    /// Gives up on connecting, on the first response byte and between
    /// response bytes after `timeout` each (the job's `httpTimeoutMs` and
    /// deadline cap it in any case).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Sends the request and reads the whole response.
    pub fn send(self) -> Result<Response, HttpError> {
        let url = self.url.clone();
        self.send_inner().map_err(|e| with_host_reason(&url, e))
    }

    fn send_inner(self) -> Result<Response, HttpError> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let uri: http::Uri = self
            .url
            .parse()
            .map_err(|e| HttpError::Invalid(format!("url `{}`: {e}", self.url)))?;
        let scheme = match uri.scheme_str() {
            Some("https") => Scheme::Https,
            Some("http") => Scheme::Http,
            // The host refuses every other scheme, and says so in the
            // job's log and its refusals (the error names the reason).
            Some(other) => Scheme::Other(other.to_string()),
            None => {
                return Err(HttpError::Invalid(format!(
                    "url `{}`: an absolute http:// or https:// URL is needed",
                    self.url
                )));
            }
        };
        let authority = uri
            .authority()
            .ok_or_else(|| HttpError::Invalid(format!("url `{}`: no host", self.url)))?;
        let path = uri.path_and_query().map_or("/", |p| p.as_str());

        let headers = Fields::new();
        for (name, value) in &self.headers {
            headers
                .append(name, value.as_bytes())
                .map_err(|e| HttpError::Invalid(format!("header `{name}`: {e:?}")))?;
        }
        let request = OutgoingRequest::new(headers);
        let method = match self.method.as_str() {
            "GET" => Method::Get,
            "HEAD" => Method::Head,
            "POST" => Method::Post,
            "PUT" => Method::Put,
            "DELETE" => Method::Delete,
            "OPTIONS" => Method::Options,
            "PATCH" => Method::Patch,
            other => Method::Other(other.to_string()),
        };
        let bad = |what: &str| HttpError::Invalid(format!("{what} refused by wasi:http"));
        request.set_method(&method).map_err(|_| bad("method"))?;
        request
            .set_scheme(Some(&scheme))
            .map_err(|_| bad("scheme"))?;
        request
            .set_authority(Some(authority.as_str()))
            .map_err(|_| bad("authority"))?;
        request
            .set_path_with_query(Some(path))
            .map_err(|_| bad("path"))?;
        let options = self.timeout.map(|t| {
            let options = RequestOptions::new();
            let ns = Some(t.as_nanos().min(u64::MAX as u128) as u64);
            let _ = options.set_connect_timeout(ns);
            let _ = options.set_first_byte_timeout(ns);
            let _ = options.set_between_bytes_timeout(ns);
            options
        });
        let outgoing = request.body().map_err(|_| bad("body"))?;
        let future = outgoing_handler::handle(request, options).map_err(|e| describe(&e))?;
        let written = (|| {
            {
                let stream = outgoing.write().map_err(|_| bad("body stream"))?;
                for chunk in self.body.chunks(WRITE_CHUNK) {
                    stream
                        .blocking_write_and_flush(chunk)
                        .map_err(|e| stream_error("request body", e))?;
                }
            }
            OutgoingBody::finish(outgoing, None).map_err(|e| describe(&e))
        })();
        if let Err(write_error) = written {
            // A request the host refused (egress rules, a limit) closes its
            // body stream too; the reason is the response's error code.
            future.subscribe().block();
            if let Some(Ok(Err(code))) = future.get() {
                return Err(describe(&code));
            }
            return Err(write_error);
        }

        future.subscribe().block();
        let response = match future.get() {
            Some(Ok(Ok(response))) => response,
            Some(Ok(Err(code))) => return Err(describe(&code)),
            Some(Err(())) | None => {
                return Err(HttpError::Transport(
                    "the response was already taken".into(),
                ));
            }
        };
        let status = response.status();
        let headers = response.headers().entries();
        let incoming = response
            .consume()
            .map_err(|_| HttpError::Transport("response body unavailable".into()))?;
        let mut body = Vec::new();
        {
            let stream = incoming
                .stream()
                .map_err(|_| HttpError::Transport("response body unavailable".into()))?;
            loop {
                match stream.blocking_read(64 << 10) {
                    Ok(bytes) => body.extend_from_slice(&bytes),
                    Err(StreamError::Closed) => break,
                    Err(e) => return Err(stream_error("response body", e)),
                }
            }
        }
        drop(IncomingBody::finish(incoming));
        Ok(Response {
            status,
            headers,
            body,
        })
    }
}

fn stream_error(what: &str, e: StreamError) -> HttpError {
    match e {
        StreamError::Closed => HttpError::Transport(format!("{what}: stream closed")),
        StreamError::LastOperationFailed(err) => {
            // The host reports HTTP errors on the stream as an error code.
            if let Some(code) = wasip2::http::types::http_error_code(&err) {
                return describe(&code);
            }
            // wasmtime-wasi-http 48 reports body errors as plain I/O errors
            // whose text is the error code's message (and a backtrace):
            // keep the first line.
            let text = err.to_debug_string();
            let first = text.lines().next().unwrap_or("").to_string();
            if first.contains("body size exceeds limit") {
                HttpError::Limit(format!("{what}: {first}"))
            } else {
                HttpError::Transport(format!("{what}: {first}"))
            }
        }
    }
}

impl Response {
    /// The status code.
    pub fn status(&self) -> u16 {
        self.status
    }

    /// The first value of header `name` (case-insensitive), as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .and_then(|(_, v)| std::str::from_utf8(v).ok())
    }

    /// The body.
    pub fn bytes(&self) -> &[u8] {
        &self.body
    }

    /// The body as text (lossy).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body as JSON of type `T`.
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, HttpError> {
        serde_json::from_slice(&self.body).map_err(|e| HttpError::Decode(e.to_string()))
    }

    /// `self` when the status is 2xx, else [`HttpError::Status`] with the
    /// start of the body.
    pub fn error_for_status(self) -> Result<Response, HttpError> {
        if (200..300).contains(&self.status) {
            Ok(self)
        } else {
            let mut text = self.text();
            text.truncate(512);
            Err(HttpError::Status(self.status, text))
        }
    }
}
