//! Outgoing HTTP for a run (`wasi:http/outgoing-handler`), sent by the host
//! under the run's egress policy, limits and secrets.
//!
//! What happens to one request, in order:
//! 1. **Policy.** The destination must be on the binding's `egress` list
//!    and the operator's (`egress::EgressPolicy::check`), and the run must
//!    have requests left (`maxHttpRequests`). A refusal is the guest's
//!    `HTTP-request-denied`, a line in the job's log, a counted refusal and
//!    an entry of the run's [`Refusals`] (`context.http-refusals`, so the
//!    SDKs fail the job with the reason).
//! 2. **Resolution.** The host name is resolved and every address checked
//!    (`EgressPolicy::address_allowed`); the connection goes to the first
//!    address that passed — that very address, never a new lookup.
//!    Nothing allowed: `destination-IP-prohibited`.
//! 3. **Secrets.** Placeholders of the run's secrets are replaced by their
//!    values in header values (and in the body, for secrets sealed with
//!    `inBody`) — only when the secret's own policy allows this
//!    destination. The body is read first, up to `maxHttpRequestBytes`.
//! 4. **Send** over a kept connection of the binding's pool to one of the
//!    addresses that passed step 2, for the same scheme, name and port
//!    (`crate::http_pool`; a connection goes back there once its response
//!    was read to its end), or over a new one: HTTP/1.1 (TLS with the webpki roots for `https`; the
//!    `Host` header and the TLS server name are the host as matched:
//!    lowercase, no trailing dot, no user info), each
//!    phase (connect, first byte, each body chunk) under
//!    `min(httpTimeoutMs, the guest's own request options, the run's
//!    remaining time)`.
//! 5. **Response.** The body is counted as the guest receives it, and
//!    fails past `maxHttpResponseBytes`.
//!
//! A request cut off by a cap — its body over `maxHttpRequestBytes`, its
//! response over `maxHttpResponseBytes`, no response or no next chunk
//! within `httpTimeoutMs` (or the run's remaining time; a shorter timeout
//! the guest asked for itself is the guest's own business) — gets a line
//! in the job's log and an entry in [`Refusals`] too, though it counts as
//! made, not refused.
//!
//! A scheme other than http or https is refused before step 1, by
//! `is_supported_scheme`, with the same log line, count and entry.
//!
//! Redirects are the guest's to follow: each is a new request, checked from
//! step 1. When the run ends — finished, failed or past its deadline — the
//! store is dropped, and with it every request still in flight.

use std::collections::VecDeque;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, Incoming};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

use crate::bindings::{HttpRefusal, HttpRefusalKind};
use crate::egress::{Denial, Destination, EgressPolicy, Scheme};
pub use crate::http_pool::HttpPool;
use crate::http_pool::{PoolKey, Sender};
use crate::logs::{LogLevel, LogSink};
use crate::secrets::Secret;
use crate::trace::{EventKind, EventValue, RunEvent, RunEvents};
use crate::transcript::{
    Call, HttpAnswers, HttpSlot, RecordedBody, TranscriptRecorder, recorded_headers,
};

/// What a run did over HTTP (job fields and metrics).
#[derive(Debug, Default)]
pub struct HttpStats {
    /// Requests that passed the policy and the address check (sent, or
    /// failed on the way: connect, TLS, timeout).
    pub requests: AtomicU64,
    /// Requests refused before anything was sent.
    pub refused: AtomicU64,
    /// Request body bytes sent.
    pub bytes_out: AtomicU64,
    /// Response body bytes the guest read.
    pub bytes_in: AtomicU64,
}

pub use airlock_core::run::HttpSummary;

impl HttpStats {
    /// The counts so far.
    pub fn summary(&self) -> HttpSummary {
        HttpSummary {
            requests: self.requests.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
            bytes_out: self.bytes_out.load(Ordering::Relaxed),
            bytes_in: self.bytes_in.load(Ordering::Relaxed),
        }
    }
}

/// Most entries a run's [`Refusals`] keeps (the newest): enough for an SDK
/// to find the one of the request that just failed, bounded for a guest
/// that makes refused requests in a loop.
pub const MAX_REFUSALS_KEPT: usize = 32;

/// The requests of one run the host refused or cut off, newest last, for
/// `context.http-refusals`.
#[derive(Debug, Default)]
pub struct Refusals {
    /// How many so far: the last one's `seq`.
    count: u32,
    /// The newest [`MAX_REFUSALS_KEPT`].
    kept: VecDeque<HttpRefusal>,
}

impl Refusals {
    fn push(&mut self, url: String, kind: HttpRefusalKind, reason: String) {
        self.count = self.count.saturating_add(1);
        if self.kept.len() == MAX_REFUSALS_KEPT {
            self.kept.pop_front();
        }
        self.kept.push_back(HttpRefusal {
            seq: self.count,
            url,
            kind,
            reason,
        });
    }
}

/// Where a run reports what happened to its requests: counts, the job's
/// log and its [`Refusals`].
#[derive(Clone)]
struct Report {
    stats: Arc<HttpStats>,
    logs: Arc<Mutex<LogSink>>,
    refusals: Arc<Mutex<Refusals>>,
    /// Why the host refused or cut off this request, if it did (its
    /// trace event's error).
    reason: Arc<Mutex<Option<String>>>,
}

impl Report {
    /// A request refused before anything was sent: counted, logged, listed
    /// (but a name that did not resolve is a network error, not listed),
    /// and the guest's error code.
    fn refused(&self, url: &str, denial: &Denial) -> Error {
        self.stats.refused.fetch_add(1, Ordering::Relaxed);
        log_line(
            &self.logs,
            &format!("[airlock] HTTP request refused: {denial}"),
        );
        let kind = match denial {
            Denial::BadUrl | Denial::NotHttp(_) => Some(HttpRefusalKind::Scheme),
            Denial::NotInBinding(_) | Denial::AmbiguousPath { .. } => {
                Some(HttpRefusalKind::EgressRule)
            }
            Denial::NotByOperator(_) => Some(HttpRefusalKind::Operator),
            Denial::PrivateAddress { .. } => Some(HttpRefusalKind::Address),
            Denial::TooManyRequests(_) => Some(HttpRefusalKind::TooManyRequests),
            Denial::Unresolved(_) => None,
        };
        self.note(denial.to_string());
        if let Some(kind) = kind {
            self.list(url, kind, denial.to_string());
        }
        match denial {
            Denial::PrivateAddress { .. } => Error::DestinationIpProhibited,
            Denial::Unresolved(_) => Error::DnsError {
                rcode: None,
                info_code: None,
            },
            _ => Error::HttpRequestDenied,
        }
    }

    /// A request cut off by a cap after it passed the policy: logged and
    /// listed.
    fn cut_off(&self, url: &str, kind: HttpRefusalKind, reason: String) {
        log_line(
            &self.logs,
            &format!("[airlock] HTTP request cut off: {reason}"),
        );
        self.note(reason.clone());
        self.list(url, kind, reason);
    }

    fn note(&self, reason: String) {
        if let Ok(mut slot) = self.reason.lock() {
            *slot = Some(reason);
        }
    }

    fn list(&self, url: &str, kind: HttpRefusalKind, reason: String) {
        if let Ok(mut refusals) = self.refusals.lock() {
            refusals.push(url.to_string(), kind, reason);
        }
    }
}

/// `uri` as a refusal shows it: scheme, authority and path, no query (a
/// handler's own data may be in it; the SDK matches on the rest).
fn shown_url(uri: &http::Uri) -> String {
    let mut url = String::new();
    if let Some(scheme) = uri.scheme_str() {
        url.push_str(scheme);
        url.push_str("://");
    }
    if let Some(authority) = uri.authority() {
        url.push_str(authority.as_str());
    }
    url.push_str(uri.path());
    url
}

/// A secret handed to the guest in this run, as its placeholder.
#[derive(Debug, Clone)]
pub struct Grant {
    /// The secret's name.
    pub name: String,
    /// What the guest holds.
    pub placeholder: String,
    /// The secret.
    pub secret: Secret,
}

/// The limits of a run's HTTP use.
#[derive(Debug, Clone, Copy)]
pub struct HttpLimits {
    /// Requests per run.
    pub max_requests: u32,
    /// Request body bytes.
    pub max_request_bytes: u64,
    /// Response body bytes, per response.
    pub max_response_bytes: u64,
    /// Per-phase deadline of one request.
    pub timeout: Duration,
    /// When the run itself must end.
    pub run_deadline: Instant,
}

/// The `wasi:http` hooks of one run.
pub struct RunHttp {
    /// `None`: the binding has no egress list, every request is refused.
    pub policy: Option<EgressPolicy>,
    /// The binding's keep-alive connections (`crate::http_pool`); `None`:
    /// a connection per request.
    pub pool: Option<Arc<HttpPool>>,
    /// The run's limits.
    pub limits: HttpLimits,
    /// Counts, read when the run ends.
    pub stats: Arc<HttpStats>,
    /// The secrets the guest asked for so far.
    pub grants: Arc<Mutex<Vec<Grant>>>,
    /// The job's log, for refusals.
    pub logs: Arc<Mutex<LogSink>>,
    /// The requests refused or cut off so far.
    pub refusals: Arc<Mutex<Refusals>>,
    /// Where each request is noted for the run's trace (`crate::trace`);
    /// `None`: not noted.
    pub events: Option<Arc<RunEvents>>,
    /// The `traceparent` every request carries (`RunEnv::traceparent`).
    pub traceparent: Option<http::HeaderValue>,
    /// Where each request and its response go into the run's transcript
    /// (`crate::transcript`); `None`: not recorded.
    pub transcript: Option<Arc<TranscriptRecorder>>,
    /// Answers requests instead of the network (`RunEnv::http_answers`).
    pub answers: Option<Arc<dyn HttpAnswers>>,
}

impl RunHttp {
    /// The newest refused or cut-off requests of the run, oldest first
    /// (`context.http-refusals`).
    pub fn refusals(&self) -> Vec<HttpRefusal> {
        self.refusals
            .lock()
            .map(|r| r.kept.iter().cloned().collect())
            .unwrap_or_default()
    }

    fn report(&self) -> Report {
        Report {
            stats: self.stats.clone(),
            logs: self.logs.clone(),
            refusals: self.refusals.clone(),
            reason: Arc::default(),
        }
    }
}

/// The TLS client configuration every run shares (webpki roots).
static TLS: LazyLock<Arc<rustls::ClientConfig>> = LazyLock::new(|| {
    let roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.into(),
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Arc::new(
        rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("ring supports the default TLS versions")
            .with_root_certificates(roots)
            .with_no_client_auth(),
    )
});

type SendFuture = Box<
    dyn Future<
            Output = Result<
                (
                    http::Response<WasiBody>,
                    Box<dyn Future<Output = Result<(), Error>> + Send>,
                ),
                Error,
            >,
        > + Send,
>;

fn log_line(logs: &Mutex<LogSink>, line: &str) {
    if let Ok(mut sink) = logs.lock() {
        sink.push(LogLevel::Warn, line);
    }
}

/// Replaces the placeholders of `grants` that may go to `dest` in `text`.
fn substitute(text: &str, grants: &[Grant], dest: &Destination, body: bool) -> Option<String> {
    let mut out: Option<String> = None;
    for grant in grants {
        if body && !grant.secret.policy.in_body {
            continue;
        }
        if !grant.secret.policy.allow.iter().any(|p| p.matches(dest)) {
            continue;
        }
        let current = out.as_deref().unwrap_or(text);
        if current.contains(&grant.placeholder) {
            out = Some(current.replace(&grant.placeholder, &grant.secret.value));
        }
    }
    out
}

impl WasiHttpHooks for RunHttp {
    /// Every scheme but http and https is refused here, like any other
    /// refusal (a log line, a count, an entry of the run's [`Refusals`]):
    /// wasmtime asks this before it builds the request's URL, so also a
    /// URL without an authority (`file:///etc/passwd`) is seen. The
    /// guest's error is wasi:http's `HTTP-protocol-error`.
    fn is_supported_scheme(&mut self, scheme: &http::uri::Scheme) -> bool {
        let scheme = scheme.as_str();
        if scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https") {
            return true;
        }
        // What the request's URL would be is not known here: the refusal
        // names its scheme only (the SDKs take the newest refusal when
        // none is for the URL they sent).
        let shown: String = scheme.chars().take(32).collect();
        let _ = self
            .report()
            .refused(&format!("{shown}:"), &Denial::NotHttp(shown.clone()));
        false
    }

    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        fut: Box<dyn Future<Output = Result<(), Error>> + Send>,
    ) -> SendFuture {
        drop(fut);
        let report = self.report();
        let stats = self.stats.clone();
        let limits = self.limits;
        let url = shown_url(request.uri());
        let dest = Destination::of(request.method().as_str(), request.uri());
        let checked = match (&self.policy, &dest) {
            (_, None) => Err(Denial::BadUrl),
            (None, Some(d)) => Err(Denial::NotInBinding(d.to_string())),
            (Some(policy), Some(d)) => policy.check(d).and_then(|()| {
                // Taken and checked in one step: a guest may have several
                // requests in flight.
                let made = stats.requests.fetch_add(1, Ordering::Relaxed);
                if made >= u64::from(limits.max_requests) {
                    stats.requests.fetch_sub(1, Ordering::Relaxed);
                    Err(Denial::TooManyRequests(limits.max_requests))
                } else {
                    Ok(policy.clone())
                }
            }),
        };
        let started = SystemTime::now();
        let method = request.method().as_str().to_string();
        // The request as the guest wrote it, for the run's transcript: its
        // secrets' placeholders named, never filled in.
        let grants: Vec<Grant> = self.grants.lock().map(|g| g.clone()).unwrap_or_default();
        let slot = self.transcript.as_ref().and_then(|t| {
            t.push_http(Call::Http {
                method: method.clone(),
                url: named_placeholders(&request.uri().to_string(), &grants),
                headers: recorded_headers(request.headers())
                    .into_iter()
                    .map(|(name, value)| (name, named_placeholders(&value, &grants)))
                    .collect(),
                body: RecordedBody::of(b""),
                response: None,
                error: None,
            })
        });
        // A replay: the answer comes from the transcript; nothing leaves
        // the host, so no policy applies.
        if let Some(answers) = self.answers.clone() {
            self.stats.requests.fetch_add(1, Ordering::Relaxed);
            return Box::new(answer_from(answers, request, method, grants, slot));
        }
        let policy = match checked {
            Ok(p) => p,
            Err(denial) => {
                if let Some(slot) = &slot {
                    slot.failed(denial.to_string());
                }
                if let Some(events) = &self.events {
                    let mut event = http_event(&method, dest.as_ref(), started);
                    event.error = Some(denial.to_string());
                    event
                        .attributes
                        .push(("airlock.http.refused", EventValue::Int(1)));
                    events.push(event);
                }
                let error = report.refused(&url, &denial);
                // The refusal is the response's error, at once. The guest
                // may still be writing the body: it is read and discarded
                // (never sent anywhere) until the guest finishes or its run
                // ends, so the guest's writes do not fail first —
                // StarlingMonkey's fetch aborts the whole run on a failed
                // body write instead of rejecting with the refusal.
                let mut body = request.into_body();
                tokio::spawn(async move { while let Some(Ok(_)) = body.frame().await {} });
                return Box::new(async move { Err(error) });
            }
        };
        let dest = dest.expect("checked above");
        let pool = self.pool.clone();
        let events = self.events.clone();
        let traceparent = self.traceparent.clone();
        Box::new(async move {
            let noted = events.map(|events| (events, http_event(&method, Some(&dest), started)));
            let sent = Arc::new(AtomicU64::new(0));
            let result = send(
                request,
                options,
                dest,
                policy,
                grants,
                limits,
                report.clone(),
                url,
                pool,
                sent.clone(),
                traceparent,
                slot.clone(),
            )
            .await;
            if let (Some(slot), Err(error)) = (&slot, &result) {
                let noted = report.reason.lock().ok().and_then(|r| r.clone());
                slot.failed(noted.unwrap_or_else(|| format!("{error:?}")));
            }
            if let Some((events, mut event)) = noted {
                event.end = SystemTime::now();
                event.attributes.push((
                    "airlock.http.request_body_bytes",
                    EventValue::Int(sent.load(Ordering::Relaxed) as i64),
                ));
                match &result {
                    Ok((response, _)) => {
                        let status = response.status().as_u16();
                        event.attributes.push((
                            "http.response.status_code",
                            EventValue::Int(i64::from(status)),
                        ));
                        if status >= 500 {
                            event.error = Some(format!("status {status}"));
                        }
                    }
                    // The host's reason when it refused the request or cut
                    // it off (a timeout, a body over its cap); else the
                    // transport's error code.
                    Err(error) => {
                        let noted = report.reason.lock().ok().and_then(|r| r.clone());
                        event.error = Some(noted.unwrap_or_else(|| format!("{error:?}")));
                    }
                }
                events.push(event);
            }
            result
        })
    }
}

/// A replayed request's response, from `answers` (see
/// [`RunHttp::answers`]); the request is read to its end and recorded.
async fn answer_from(
    answers: Arc<dyn HttpAnswers>,
    request: http::Request<WasiBody>,
    method: String,
    grants: Vec<Grant>,
    slot: Option<HttpSlot>,
) -> Result<
    (
        http::Response<WasiBody>,
        Box<dyn Future<Output = Result<(), Error>> + Send>,
    ),
    Error,
> {
    let url = named_placeholders(&request.uri().to_string(), &grants);
    let headers: Vec<(String, String)> = recorded_headers(request.headers())
        .into_iter()
        .map(|(name, value)| (name, named_placeholders(&value, &grants)))
        .collect();
    let body = match request.into_body().collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) => return Err(e),
    };
    let body =
        RecordedBody::of(named_placeholders(&String::from_utf8_lossy(&body), &grants).as_bytes());
    if let Some(slot) = &slot {
        slot.request_body(body.clone());
    }
    match answers.answer(&method, &url, &headers, &body) {
        Ok(recorded) => {
            if let Some(slot) = &slot {
                slot.response(recorded.status, recorded.headers.clone());
                slot.body_chunk(recorded.body.text.as_bytes());
            }
            let mut response = http::Response::builder().status(recorded.status);
            for (name, value) in &recorded.headers {
                // The body is the recorded text: its old length no longer
                // holds when it was cut.
                if name.eq_ignore_ascii_case("content-length")
                    || name.eq_ignore_ascii_case("transfer-encoding")
                {
                    continue;
                }
                response = response.header(name.as_str(), value.as_str());
            }
            let body = http_body_util::Full::new(Bytes::from(recorded.body.text))
                .map_err(|never| match never {})
                .boxed_unsync();
            let response = response
                .body(body)
                .map_err(|e| Error::InternalError(Some(e.to_string())))?;
            Ok((response, Box::new(async { Ok(()) })))
        }
        Err(why) => {
            if let Some(slot) = &slot {
                slot.failed(why.clone());
            }
            Err(Error::InternalError(Some(why)))
        }
    }
}

/// `text` with each secret placeholder of the run as `[secret:NAME]`: what
/// a transcript keeps (a placeholder is random per run; the name is what
/// the guest asked for).
fn named_placeholders(text: &str, grants: &[Grant]) -> String {
    let mut out = text.to_string();
    for grant in grants {
        if out.contains(&grant.placeholder) {
            out = out.replace(&grant.placeholder, &format!("[secret:{}]", grant.name));
        }
    }
    out
}

/// A request's event, begun at `start` (ended there too, until its
/// answer sets the end): method, destination and path, as the job's log
/// shows a request (no query, no header, no body).
fn http_event(method: &str, dest: Option<&Destination>, start: SystemTime) -> RunEvent {
    let mut attributes = vec![("http.request.method", EventValue::Text(method.to_string()))];
    if let Some(dest) = dest {
        attributes.push(("server.address", EventValue::Text(dest.host.clone())));
        attributes.push(("server.port", EventValue::Int(i64::from(dest.port))));
        attributes.push(("url.path", EventValue::Text(dest.path.clone())));
    }
    RunEvent {
        name: method.to_string(),
        kind: EventKind::Http,
        start,
        end: start,
        attributes,
        error: None,
    }
}

/// The deadline of one phase of a request, and whether it is a cap of the
/// host's (`httpTimeoutMs` or the run's remaining time) rather than a
/// shorter timeout the guest asked for.
fn phase_timeout(limits: &HttpLimits, asked: Option<Duration>) -> (Duration, bool) {
    let left = limits
        .run_deadline
        .saturating_duration_since(Instant::now());
    let cap = limits.timeout.min(left);
    match asked {
        Some(asked) if asked < cap => (asked, false),
        _ => (cap, true),
    }
}

/// The reason of a request cut off by a time cap.
fn timed_out(dest: &Destination, what: &str, after: Duration) -> String {
    format!(
        "{what} from {dest} within {} ms (httpTimeoutMs, or the run's remaining time)",
        after.as_millis()
    )
}

trait Stream: AsyncRead + AsyncWrite + Send + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> Stream for T {}

#[allow(clippy::too_many_arguments)]
async fn send(
    request: http::Request<WasiBody>,
    options: Option<RequestOptions>,
    dest: Destination,
    policy: EgressPolicy,
    grants: Vec<Grant>,
    limits: HttpLimits,
    report: Report,
    url: String,
    pool: Option<Arc<HttpPool>>,
    sent: Arc<AtomicU64>,
    traceparent: Option<http::HeaderValue>,
    slot: Option<HttpSlot>,
) -> Result<
    (
        http::Response<WasiBody>,
        Box<dyn Future<Output = Result<(), Error>> + Send>,
    ),
    Error,
> {
    let stats = report.stats.clone();
    let (connect_timeout, connect_capped) =
        phase_timeout(&limits, options.and_then(|o| o.connect_timeout));
    let connect_cut = || {
        if connect_capped {
            let reason = timed_out(&dest, "no connection", connect_timeout);
            report.cut_off(&url, HttpRefusalKind::Timeout, reason);
        }
        Error::ConnectionTimeout
    };

    // 2. Resolve and check every address; connect only to checked ones.
    let addrs: Vec<SocketAddr> = match dest.host.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, dest.port)],
        Err(_) => match tokio::time::timeout(
            connect_timeout,
            tokio::net::lookup_host((dest.host.as_str(), dest.port)),
        )
        .await
        {
            Ok(Ok(found)) => found.collect(),
            Ok(Err(_)) => Vec::new(),
            Err(_) => return Err(Error::DnsTimeout),
        },
    };
    // A request refused here never went out: it counts as refused, not made.
    if addrs.is_empty() {
        stats.requests.fetch_sub(1, Ordering::Relaxed);
        return Err(report.refused(&url, &Denial::Unresolved(dest.host.clone())));
    }
    let allowed: Vec<SocketAddr> = addrs
        .iter()
        .copied()
        .filter(|a| policy.address_allowed(a.ip()))
        .collect();
    if allowed.is_empty() {
        let shown: Vec<String> = addrs.iter().map(|a| a.ip().to_string()).collect();
        stats.requests.fetch_sub(1, Ordering::Relaxed);
        return Err(report.refused(
            &url,
            &Denial::PrivateAddress {
                dest: dest.to_string(),
                addrs: shown.join(", "),
            },
        ));
    }

    // 3. Secrets, and the body read up to its cap.
    let (mut parts, body) = request.into_parts();
    let body = http_body_util::Limited::new(body, limits.max_request_bytes as usize)
        .collect()
        .await
        .map_err(|e| {
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some()
            {
                let reason = format!(
                    "the request body to {dest} is over maxHttpRequestBytes ({} bytes); nothing was sent",
                    limits.max_request_bytes
                );
                report.cut_off(&url, HttpRefusalKind::RequestTooLarge, reason);
                Error::HttpRequestBodySize(Some(limits.max_request_bytes))
            } else {
                match e.downcast::<Error>() {
                    Ok(e) => *e,
                    Err(e) => Error::InternalError(Some(e.to_string())),
                }
            }
        })?
        .to_bytes();
    if let Some(slot) = &slot {
        let text = named_placeholders(&String::from_utf8_lossy(&body), &grants);
        slot.request_body(RecordedBody::of(text.as_bytes()));
    }
    for value in parts.headers.values_mut() {
        if let Ok(text) = value.to_str()
            && let Some(replaced) = substitute(text, &grants, &dest, false)
            && let Ok(v) = http::HeaderValue::from_str(&replaced)
        {
            *value = v;
        }
    }
    let body = match std::str::from_utf8(&body)
        .ok()
        .and_then(|text| substitute(text, &grants, &dest, true))
    {
        Some(replaced) => Bytes::from(replaced),
        None => body,
    };
    if parts.headers.contains_key(http::header::CONTENT_LENGTH) {
        parts
            .headers
            .insert(http::header::CONTENT_LENGTH, body.len().into());
    }
    stats
        .bytes_out
        .fetch_add(body.len() as u64, Ordering::Relaxed);
    sent.store(body.len() as u64, Ordering::Relaxed);
    // The run's trace, when its binding propagates it: the host's context
    // replaces whatever the guest put there.
    if let Some(traceparent) = traceparent {
        parts.headers.insert("traceparent", traceparent);
        parts.headers.remove("tracestate");
    }
    // wasmtime set `Host` to the guest's authority as written; the request
    // names the destination as the rules matched it instead.
    if let Ok(host) = http::HeaderValue::from_str(&dest.host_header()) {
        parts.headers.insert(http::header::HOST, host);
    }
    // HTTP/1.1 wants the origin form: the path and query only.
    parts.uri = http::Uri::builder()
        .path_and_query(
            parts
                .uri
                .path_and_query()
                .map(|p| p.as_str())
                .unwrap_or("/"),
        )
        .build()
        .map_err(|e| Error::InternalError(Some(e.to_string())))?;
    // The request as sent, made again if a kept connection turns out closed.
    let request = || {
        let mut request = http::Request::new(http_body_util::Full::new(body.clone()));
        *request.method_mut() = parts.method.clone();
        *request.uri_mut() = parts.uri.clone();
        *request.version_mut() = parts.version;
        *request.headers_mut() = parts.headers.clone();
        request
    };

    // 4. A kept connection to a checked address (`crate::http_pool`), else
    //    a new one: connect, then TLS and HTTP/1.1.
    let key = PoolKey::of(&dest);
    let mut kept = pool.as_ref().and_then(|pool| pool.take(&key, &allowed));
    let (first_byte, first_byte_capped) =
        phase_timeout(&limits, options.and_then(|o| o.first_byte_timeout));
    let (between, between_capped) =
        phase_timeout(&limits, options.and_then(|o| o.between_bytes_timeout));
    let between = between.max(Duration::from_millis(1));
    let (response, sender, addr, conn) = loop {
        // `conn`: the task of a new connection, which moves bytes for its
        // requests and responses until the connection closes (a kept one's
        // task runs on from an earlier request).
        let (mut sender, addr, conn) = match kept.take() {
            Some((sender, addr)) => (sender, addr, None),
            None => match connect(&dest, &allowed, connect_timeout).await {
                Ok((sender, addr, conn)) => (sender, addr, Some(conn)),
                Err(None) => return Err(connect_cut()),
                Err(Some(e)) => return Err(e),
            },
        };
        match tokio::time::timeout(first_byte, sender.send_request(request())).await {
            Ok(Ok(response)) => break (response, sender, addr, conn),
            // A kept connection the server closed meanwhile: nothing of the
            // request was answered; once more on a new connection.
            Ok(Err(e))
                if conn.is_none()
                    && (e.is_canceled() || e.is_closed() || e.is_incomplete_message()) =>
            {
                continue;
            }
            Ok(Err(e)) => {
                if let Some(conn) = conn {
                    conn.abort();
                }
                return Err(Error::from(e));
            }
            Err(_) => {
                if let Some(conn) = conn {
                    conn.abort();
                }
                if first_byte_capped {
                    let reason = timed_out(&dest, "no response", first_byte);
                    report.cut_off(&url, HttpRefusalKind::Timeout, reason);
                }
                return Err(Error::ConnectionReadTimeout);
            }
        }
    };
    let give_back = pool.map(|pool| GiveBack {
        pool,
        key,
        sender,
        addr,
    });
    if let Some(slot) = &slot {
        slot.response(
            response.status().as_u16(),
            recorded_headers(response.headers()),
        );
    }
    let response = response.map(|incoming| {
        CappedBody {
            tee: slot,
            incoming,
            read: 0,
            max: limits.max_response_bytes,
            report: report.clone(),
            url: url.clone(),
            dest: dest.to_string(),
            idle: Box::pin(tokio::time::sleep(between)),
            between,
            between_capped,
            cut: false,
            give_back,
        }
        .boxed_unsync()
    });
    let io = async move {
        let Some(conn) = conn else { return Ok(()) };
        match conn.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(Error::from(e)),
            Err(_) => Ok(()),
        }
    };
    Ok((response, Box::new(io)))
}

/// A new connection to the first of `allowed` that answers within
/// `timeout` (each step: TCP, TLS, the HTTP/1.1 handshake), its task
/// spawned. `Err(None)`: every attempt timed out.
async fn connect(
    dest: &Destination,
    allowed: &[SocketAddr],
    timeout: Duration,
) -> Result<
    (
        Sender,
        SocketAddr,
        tokio::task::JoinHandle<hyper::Result<()>>,
    ),
    Option<Error>,
> {
    let mut last_error = Error::ConnectionRefused;
    let mut tcp = None;
    for addr in allowed {
        match tokio::time::timeout(timeout, TcpStream::connect(addr)).await {
            Ok(Ok(s)) => {
                tcp = Some((s, *addr));
                break;
            }
            Ok(Err(e)) => last_error = Error::Connect(e),
            Err(_) => last_error = Error::ConnectionTimeout,
        }
    }
    // One entry for the request, however many addresses timed out.
    let (tcp, addr) = match tcp {
        Some(found) => found,
        None if matches!(last_error, Error::ConnectionTimeout) => return Err(None),
        None => return Err(Some(last_error)),
    };
    let _ = tcp.set_nodelay(true);
    let stream: Box<dyn Stream> = match dest.scheme {
        Scheme::Http => Box::new(tcp),
        Scheme::Https => {
            let name = match dest.host.parse::<IpAddr>() {
                Ok(ip) => rustls::pki_types::ServerName::IpAddress(ip.into()),
                Err(_) => rustls::pki_types::ServerName::try_from(dest.host.clone())
                    .map_err(|_| Some(Error::TlsCertificateError))?,
            };
            let tls = tokio::time::timeout(
                timeout,
                tokio_rustls::TlsConnector::from(TLS.clone()).connect(name, tcp),
            )
            .await
            .map_err(|_| None)?
            .map_err(|e| Some(Error::Tls(e)))?;
            Box::new(tls)
        }
    };
    let (sender, conn) = tokio::time::timeout(
        timeout,
        hyper::client::conn::http1::handshake(TokioIo::new(stream)),
    )
    .await
    .map_err(|_| None)?
    .map_err(|e| Some(Error::from(e)))?;
    Ok((sender, addr, tokio::spawn(conn)))
}

/// What a response body gives back to its binding's pool once read to its
/// end: the connection's sending half.
struct GiveBack {
    pool: Arc<HttpPool>,
    key: PoolKey,
    sender: Sender,
    addr: SocketAddr,
}

/// A response body that counts what reaches the guest and stops at the cap
/// or after `between` without a chunk.
struct CappedBody {
    incoming: Incoming,
    /// Bytes received so far (delivered, or the chunk that went over).
    read: u64,
    max: u64,
    report: Report,
    url: String,
    dest: String,
    idle: Pin<Box<tokio::time::Sleep>>,
    between: Duration,
    /// Whether `between` is the host's cap (see [`phase_timeout`]).
    between_capped: bool,
    /// Cut off already: reported once.
    cut: bool,
    /// The connection, for its pool once this body is read to its end (and
    /// never after a cut: a half-read connection is not reused).
    give_back: Option<GiveBack>,
    /// The request's transcript entry, which keeps what the guest reads.
    tee: Option<HttpSlot>,
}

impl CappedBody {
    fn read_to_end(&mut self) {
        if let Some(back) = self.give_back.take()
            && !self.cut
        {
            back.pool.put(back.key, back.sender, back.addr);
        }
    }
}

impl Body for CappedBody {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let this = &mut *self;
        match Pin::new(&mut this.incoming).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    this.read += data.len() as u64;
                    if this.read > this.max {
                        // The chunk that went over never reaches the guest:
                        // it is not counted in `bytes_in`.
                        this.give_back = None;
                        if !this.cut {
                            this.cut = true;
                            let reason = format!(
                                "the response body of {} went over maxHttpResponseBytes ({} bytes)",
                                this.dest, this.max
                            );
                            this.report.cut_off(
                                &this.url,
                                HttpRefusalKind::ResponseTooLarge,
                                reason,
                            );
                        }
                        return Poll::Ready(Some(Err(Error::HttpResponseBodySize(Some(this.max)))));
                    }
                    this.report
                        .stats
                        .bytes_in
                        .fetch_add(data.len() as u64, Ordering::Relaxed);
                    if let Some(tee) = &this.tee {
                        tee.body_chunk(data);
                    }
                }
                let next = tokio::time::Instant::now() + this.between;
                this.idle.as_mut().reset(next);
                if this.incoming.is_end_stream() {
                    this.read_to_end();
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => {
                this.give_back = None;
                Poll::Ready(Some(Err(Error::from(e))))
            }
            Poll::Ready(None) => {
                this.read_to_end();
                Poll::Ready(None)
            }
            Poll::Pending => match this.idle.as_mut().poll(cx) {
                Poll::Ready(()) => {
                    this.give_back = None;
                    if this.between_capped && !this.cut {
                        this.cut = true;
                        let reason = format!(
                            "no next chunk of the response body from {} within {} ms (httpTimeoutMs, or the run's remaining time)",
                            this.dest,
                            this.between.as_millis()
                        );
                        this.report
                            .cut_off(&this.url, HttpRefusalKind::Timeout, reason);
                    }
                    Poll::Ready(Some(Err(Error::ConnectionReadTimeout)))
                }
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.incoming.is_end_stream()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secrets::SecretPolicy;

    #[test]
    fn placeholders_are_replaced_only_for_their_destinations() {
        let grant = Grant {
            name: "STRIPE_KEY".into(),
            placeholder: "airlock-secret-abc".into(),
            secret: Secret {
                value: zeroize::Zeroizing::new("sk_live".into()),
                policy: SecretPolicy {
                    allow: vec!["https://api.stripe.com".parse().unwrap()],
                    reveal: false,
                    in_body: false,
                },
                version: 1,
                set_at_ms: 0,
            },
        };
        let stripe =
            Destination::of("POST", &"https://api.stripe.com/v1".parse().unwrap()).unwrap();
        let evil = Destination::of("POST", &"https://evil.example/x".parse().unwrap()).unwrap();
        let grants = [grant];
        assert_eq!(
            substitute("Bearer airlock-secret-abc", &grants, &stripe, false).as_deref(),
            Some("Bearer sk_live")
        );
        assert_eq!(
            substitute("Bearer airlock-secret-abc", &grants, &evil, false),
            None
        );
        assert_eq!(
            substitute("{\"k\":\"airlock-secret-abc\"}", &grants, &stripe, true),
            None,
            "bodies only for secrets sealed with inBody"
        );
    }
}
