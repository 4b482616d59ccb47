//! Sending one request that passed the policy: steps 2 to 5 of the module
//! docs — resolve and check addresses, read the body and fill in secrets,
//! send over a kept or new connection under the phase timeouts, and hand
//! back the capped response body.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::BodyExt;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody};

use super::body::{CappedBody, GiveBack};
use super::connect::connect;
use super::placeholders::{named_placeholders, substitute};
use super::report::Report;
use super::{Grant, HttpLimits, HttpPool};
use crate::bindings::HttpRefusalKind;
use crate::egress::{Denial, Destination, EgressPolicy};
use crate::http_pool::PoolKey;
use crate::transcript::{HttpSlot, RecordedBody, recorded_headers};

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

#[allow(clippy::too_many_arguments)]
pub(super) async fn send(
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
) -> super::Sent {
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
