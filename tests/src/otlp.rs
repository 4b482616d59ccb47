//! An OTLP receiver for the trace tests: it takes what hosts export
//! (`POST /v1/traces`, HTTP/protobuf, decoded with the OpenTelemetry
//! project's own `opentelemetry-proto` types) and keeps every span, so a
//! test can check what a trace holds.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use prost::Message;
use serde_json::{Value, json};

/// One span as received.
#[derive(Debug, Clone)]
pub struct ReceivedSpan {
    /// Its trace id, hex.
    pub trace_id: String,
    /// Its id, hex.
    pub span_id: String,
    /// Its parent's id, hex (empty for a root span).
    pub parent_id: String,
    /// Its name.
    pub name: String,
    /// Its kind: `internal`, `server`, `client`, `producer`, `consumer`.
    pub kind: &'static str,
    /// Its attributes, as JSON values.
    pub attributes: BTreeMap<String, Value>,
    /// `ok`, `error` or `unset`.
    pub status: &'static str,
    /// The status message (an error's reason).
    pub status_message: String,
    /// The `service.name` of the resource that sent it.
    pub service: String,
    /// Start and end, ns since the epoch.
    pub start_ns: u64,
    /// End, ns since the epoch.
    pub end_ns: u64,
    /// The spans it links to, as `(trace id, span id)`, hex.
    pub links: Vec<(String, String)>,
}

impl ReceivedSpan {
    /// Attribute `key`, or `null`.
    pub fn attr(&self, key: &str) -> &Value {
        self.attributes.get(key).unwrap_or(&Value::Null)
    }
}

/// A running receiver (on a thread of its own); stops when dropped.
pub struct OtlpReceiver {
    /// `http://127.0.0.1:PORT`: what `OTEL_EXPORTER_OTLP_ENDPOINT` takes.
    pub url: String,
    spans: Arc<Mutex<Vec<ReceivedSpan>>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for OtlpReceiver {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

fn value_of(value: Option<AnyValue>) -> Value {
    match value {
        Some(AnyValue::StringValue(s)) => json!(s),
        Some(AnyValue::IntValue(n)) => json!(n),
        Some(AnyValue::BoolValue(b)) => json!(b),
        Some(AnyValue::DoubleValue(d)) => json!(d),
        Some(other) => json!(format!("{other:?}")),
        None => Value::Null,
    }
}

async fn export(State(spans): State<Arc<Mutex<Vec<ReceivedSpan>>>>, body: Bytes) -> StatusCode {
    let Ok(request) = ExportTraceServiceRequest::decode(body) else {
        return StatusCode::BAD_REQUEST;
    };
    let mut received = Vec::new();
    for resource in request.resource_spans {
        let service = resource
            .resource
            .iter()
            .flat_map(|r| &r.attributes)
            .find(|kv| kv.key == "service.name")
            .map(|kv| value_of(kv.value.clone().and_then(|v| v.value)))
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        for scope in resource.scope_spans {
            for span in scope.spans {
                let status = span.status.clone().unwrap_or_default();
                received.push(ReceivedSpan {
                    trace_id: hex(&span.trace_id),
                    span_id: hex(&span.span_id),
                    parent_id: hex(&span.parent_span_id),
                    kind: match span.kind {
                        1 => "internal",
                        2 => "server",
                        3 => "client",
                        4 => "producer",
                        5 => "consumer",
                        _ => "unspecified",
                    },
                    name: span.name,
                    attributes: span
                        .attributes
                        .into_iter()
                        .map(|kv| (kv.key, value_of(kv.value.and_then(|v| v.value))))
                        .collect(),
                    status: match status.code {
                        1 => "ok",
                        2 => "error",
                        _ => "unset",
                    },
                    status_message: status.message,
                    service: service.clone(),
                    start_ns: span.start_time_unix_nano,
                    end_ns: span.end_time_unix_nano,
                    links: span
                        .links
                        .iter()
                        .map(|l| (hex(&l.trace_id), hex(&l.span_id)))
                        .collect(),
                });
            }
        }
    }
    spans.lock().unwrap().extend(received);
    StatusCode::OK
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl OtlpReceiver {
    /// Starts a receiver on an ephemeral loopback port.
    pub fn start() -> OtlpReceiver {
        let spans = Arc::new(Mutex::new(Vec::new()));
        let (port_tx, port_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let state = spans.clone();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("receiver runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                    .await
                    .expect("bind");
                port_tx.send(listener.local_addr().unwrap().port()).unwrap();
                let app = Router::new()
                    .route("/v1/traces", post(export))
                    .with_state(state);
                let _ = axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = stopped.await;
                    })
                    .await;
            });
        });
        let port = port_rx.recv().expect("receiver port");
        OtlpReceiver {
            url: format!("http://127.0.0.1:{port}"),
            spans,
            stop: Some(stop),
        }
    }

    /// The spans received so far.
    pub fn spans(&self) -> Vec<ReceivedSpan> {
        self.spans.lock().unwrap().clone()
    }

    /// The spans of trace `trace_id` received so far.
    pub fn trace(&self, trace_id: &str) -> Vec<ReceivedSpan> {
        self.spans()
            .into_iter()
            .filter(|s| s.trace_id == trace_id)
            .collect()
    }
}
