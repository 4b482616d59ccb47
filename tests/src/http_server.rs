//! A loopback HTTP server for the egress tests: it records every request
//! it receives (so a test can prove what did, or did not, reach it) and
//! answers on a few routes:
//!
//! | route | answer |
//! |---|---|
//! | `/echo` | 200, the request as JSON (method, URI, headers, body) |
//! | `/slow?ms=N` | 200 after N ms |
//! | `/big?n=N` | 200 with N bytes |
//! | `/redirect?to=URL` | 302 to URL |
//! | anything else | 200, `ok` |

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{ConnectInfo, Query, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// One request the server received.
#[derive(Debug, Clone, Serialize)]
pub struct Seen {
    /// Method.
    pub method: String,
    /// Path and query.
    pub uri: String,
    /// Headers (lowercase names; repeated ones joined with `, `).
    pub headers: BTreeMap<String, String>,
    /// Body, lossy UTF-8.
    pub body: String,
    /// The client's address: requests over one kept-alive connection share
    /// it.
    pub peer: String,
}

/// A running server, on a thread of its own (so tests on any runtime can
/// start and drop it); stops when dropped.
pub struct TestServer {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// Its port.
    pub port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

async fn record(
    State(seen): State<Arc<Mutex<Vec<Seen>>>>,
    ConnectInfo(peer): ConnectInfo<std::net::SocketAddr>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    Query(query): Query<BTreeMap<String, String>>,
    body: Bytes,
) -> Response {
    let mut names: BTreeMap<String, String> = BTreeMap::new();
    for (name, value) in &headers {
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        names
            .entry(name.as_str().to_string())
            .and_modify(|v| {
                v.push_str(", ");
                v.push_str(&value)
            })
            .or_insert(value);
    }
    let entry = Seen {
        method: method.to_string(),
        uri: uri.to_string(),
        headers: names,
        body: String::from_utf8_lossy(&body).into_owned(),
        peer: peer.to_string(),
    };
    seen.lock().unwrap().push(entry.clone());
    match uri.path() {
        "/echo" => axum::Json(entry).into_response(),
        "/slow" => {
            let ms = query.get("ms").and_then(|m| m.parse().ok()).unwrap_or(1000);
            tokio::time::sleep(Duration::from_millis(ms)).await;
            "slow ok".into_response()
        }
        "/big" => {
            let n = query
                .get("n")
                .and_then(|n| n.parse().ok())
                .unwrap_or(1 << 20);
            vec![b'x'; n].into_response()
        }
        "/redirect" => (
            StatusCode::FOUND,
            [(
                header::LOCATION,
                query.get("to").cloned().unwrap_or_default(),
            )],
        )
            .into_response(),
        _ => "ok".into_response(),
    }
}

impl TestServer {
    /// Starts a server on an ephemeral loopback port.
    pub fn start() -> TestServer {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (port_tx, port_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let state = seen.clone();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("server runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                    .await
                    .expect("bind");
                port_tx.send(listener.local_addr().unwrap().port()).unwrap();
                let app = Router::new().fallback(record).with_state(state);
                let app = app.into_make_service_with_connect_info::<std::net::SocketAddr>();
                let _ = axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = stopped.await;
                    })
                    .await;
            });
        });
        let port = port_rx.recv().expect("server port");
        TestServer {
            url: format!("http://127.0.0.1:{port}"),
            port,
            seen,
            stop: Some(stop),
        }
    }

    /// The requests received so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// Whether `needle` appears anywhere in what the server received.
    pub fn received(&self, needle: &str) -> bool {
        self.seen().iter().any(|s| {
            s.uri.contains(needle)
                || s.body.contains(needle)
                || s.headers.values().any(|v| v.contains(needle))
        })
    }
}
