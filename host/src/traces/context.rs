//! A trace context as it travels: from an API request's `traceparent`
//! headers, to and from BullMQ's telemetry metadata (a JSON object of W3C
//! headers), and in a job's options (`tm`). All of it is untrusted input:
//! anything malformed is no context.

use std::collections::HashMap;

use axum::http::HeaderMap;
use opentelemetry::Context;
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::TraceContextExt;
use opentelemetry_sdk::propagation::TraceContextPropagator;

use super::MAX_CONTEXT_BYTES;

/// The trace context of an API request: its `traceparent` and
/// `tracestate` headers; `None` without a valid `traceparent`.
pub fn context_of_headers(headers: &HeaderMap) -> Option<Context> {
    let mut carrier = HashMap::new();
    for name in ["traceparent", "tracestate"] {
        if let Some(value) = headers.get(name).and_then(|v| v.to_str().ok()) {
            carrier.insert(name.to_string(), value.to_string());
        }
    }
    valid(TraceContextPropagator::new().extract(&carrier))
}

/// The trace context in BullMQ's telemetry metadata (a JSON object of
/// W3C headers); `None` when it is malformed or holds no valid context.
pub fn context_of_metadata(text: &str) -> Option<Context> {
    if text.len() > MAX_CONTEXT_BYTES {
        return None;
    }
    let carrier: HashMap<String, String> = serde_json::from_str(text).ok()?;
    valid(TraceContextPropagator::new().extract(&carrier))
}

/// The trace context of a job's options as BullMQ stores them (`tm`, the
/// metadata its telemetry wrote at the add).
pub fn context_in_opts(opts: &str) -> Option<String> {
    if opts.len() > MAX_CONTEXT_BYTES {
        return None;
    }
    let opts: serde_json::Value = serde_json::from_str(opts).ok()?;
    let metadata = opts.get("tm")?.as_str()?;
    context_of_metadata(metadata).and_then(|cx| metadata_of(&cx))
}

/// `cx` as BullMQ's telemetry metadata; `None` without a valid span.
pub fn metadata_of(cx: &Context) -> Option<String> {
    let cx = valid(cx.clone())?;
    let mut carrier: HashMap<String, String> = HashMap::new();
    TraceContextPropagator::new().inject_context(&cx, &mut carrier);
    // An empty `tracestate` says nothing.
    carrier.retain(|_, value| !value.is_empty());
    serde_json::to_string(&carrier).ok()
}

fn valid(cx: Context) -> Option<Context> {
    cx.span().span_context().is_valid().then_some(cx)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

    #[test]
    fn a_context_goes_through_headers_metadata_and_bullmq_options() {
        let mut headers = HeaderMap::new();
        headers.insert("traceparent", PARENT.parse().unwrap());
        let cx = context_of_headers(&headers).expect("a valid traceparent");
        let metadata = metadata_of(&cx).unwrap();
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&metadata).unwrap(),
            serde_json::json!({"traceparent": PARENT})
        );
        let opts = serde_json::json!({"attempts": 3, "tm": metadata}).to_string();
        assert_eq!(context_in_opts(&opts).as_deref(), Some(metadata.as_str()));
    }

    #[test]
    fn anything_malformed_is_no_context() {
        let mut headers = HeaderMap::new();
        headers.insert("traceparent", "00-zz-b7ad6b7169203331-01".parse().unwrap());
        assert!(context_of_headers(&headers).is_none());
        assert!(context_of_headers(&HeaderMap::new()).is_none());
        for text in [
            "",
            "[]",
            "{\"traceparent\": 7}",
            "{\"traceparent\": \"00-00000000000000000000000000000000-b7ad6b7169203331-01\"}",
        ] {
            assert!(context_of_metadata(text).is_none(), "{text}");
        }
        assert!(context_in_opts("{\"tm\": {\"traceparent\": \"x\"}}").is_none());
        assert!(context_in_opts("not json").is_none());
        let huge = format!("{{\"tm\": \"{}\"}}", "x".repeat(MAX_CONTEXT_BYTES));
        assert!(context_in_opts(&huge).is_none());
    }
}
