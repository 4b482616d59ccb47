//! Where a run reports what happened to its requests ([`Report`]): the
//! counts, a line in the job's log, and an entry of the run's
//! [`Refusals`]. Apart so the hooks, the sending and the body caps all
//! report a refusal or a cut-off the same way.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use wasmtime_wasi_http::Error;

use super::{HttpStats, Refusals};
use crate::bindings::HttpRefusalKind;
use crate::egress::Denial;
use crate::logs::{LogLevel, LogSink};

/// Where a run reports what happened to its requests: counts, the job's
/// log and its [`Refusals`].
#[derive(Clone)]
pub(super) struct Report {
    pub(super) stats: Arc<HttpStats>,
    pub(super) logs: Arc<Mutex<LogSink>>,
    pub(super) refusals: Arc<Mutex<Refusals>>,
    /// Why the host refused or cut off this request, if it did (its
    /// trace event's error).
    pub(super) reason: Arc<Mutex<Option<String>>>,
}

impl Report {
    /// A request refused before anything was sent: counted, logged, listed
    /// (but a name that did not resolve is a network error, not listed),
    /// and the guest's error code.
    pub(super) fn refused(&self, url: &str, denial: &Denial) -> Error {
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
    pub(super) fn cut_off(&self, url: &str, kind: HttpRefusalKind, reason: String) {
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
pub(super) fn shown_url(uri: &http::Uri) -> String {
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

fn log_line(logs: &Mutex<LogSink>, line: &str) {
    if let Ok(mut sink) = logs.lock() {
        sink.push(LogLevel::Warn, line);
    }
}
