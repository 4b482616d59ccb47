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

mod body;
mod connect;
mod placeholders;
mod replay;
mod report;
mod send;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use http_body_util::BodyExt;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

pub use self::placeholders::Grant;
use self::placeholders::named_placeholders;
use self::replay::answer_from;
use self::report::{Report, shown_url};
use self::send::send;
use crate::bindings::{HttpRefusal, HttpRefusalKind};
use crate::egress::{Denial, Destination, EgressPolicy};
pub use crate::http_pool::HttpPool;
use crate::logs::LogSink;
use crate::trace::{RunSpan, RunSpanKind, RunSpans, SpanValue};
use crate::transcript::{Call, HttpAnswers, RecordedBody, TranscriptRecorder, recorded_headers};

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
    pub spans: Option<Arc<RunSpans>>,
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

/// What wasmtime waits on until a request's body has gone out.
type IoFuture = Box<dyn Future<Output = Result<(), Error>> + Send>;

/// A request sent (or answered from a recording): its response, and the
/// future of its outgoing body.
type Sent = Result<(http::Response<WasiBody>, IoFuture), Error>;

type SendFuture = Box<dyn Future<Output = Sent> + Send>;

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
        fut: IoFuture,
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
                if let Some(spans) = &self.spans {
                    let mut span = http_span(&method, dest.as_ref(), started);
                    span.error = Some(denial.to_string());
                    span.attributes
                        .push(("airlock.http.refused", SpanValue::Int(1)));
                    spans.push(span);
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
        let spans = self.spans.clone();
        let traceparent = self.traceparent.clone();
        Box::new(async move {
            let noted = spans.map(|spans| (spans, http_span(&method, Some(&dest), started)));
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
            if let Some((spans, mut span)) = noted {
                span.end = SystemTime::now();
                span.attributes.push((
                    "airlock.http.request_body_bytes",
                    SpanValue::Int(sent.load(Ordering::Relaxed) as i64),
                ));
                match &result {
                    Ok((response, _)) => {
                        let status = response.status().as_u16();
                        span.attributes.push((
                            "http.response.status_code",
                            SpanValue::Int(i64::from(status)),
                        ));
                        if status >= 500 {
                            span.error = Some(format!("status {status}"));
                        }
                    }
                    // The host's reason when it refused the request or cut
                    // it off (a timeout, a body over its cap); else the
                    // transport's error code.
                    Err(error) => {
                        let noted = report.reason.lock().ok().and_then(|r| r.clone());
                        span.error = Some(noted.unwrap_or_else(|| format!("{error:?}")));
                    }
                }
                spans.push(span);
            }
            result
        })
    }
}

/// A request's span, begun at `start` (ended there too, until its
/// answer sets the end): method, destination and path, as the job's log
/// shows a request (no query, no header, no body).
fn http_span(method: &str, dest: Option<&Destination>, start: SystemTime) -> RunSpan {
    let mut attributes = vec![("http.request.method", SpanValue::Text(method.to_string()))];
    if let Some(dest) = dest {
        attributes.push(("server.address", SpanValue::Text(dest.host.clone())));
        attributes.push(("server.port", SpanValue::Int(i64::from(dest.port))));
        attributes.push(("url.path", SpanValue::Text(dest.path.clone())));
    }
    RunSpan {
        name: method.to_string(),
        kind: RunSpanKind::Http,
        start,
        end: start,
        attributes,
        error: None,
    }
}
