//! Outbound HTTP benchmark (`make bench`): requests per second from guests
//! to one destination, over a binding's pool of kept-alive connections
//! against a new connection per request, in the same run.
//!
//! The `http-probe` guest sends `REQUESTS` GETs in a job to a loopback
//! server (`airlock_tests::http_server`, answering its `/echo` route); the
//! sandbox runs `JOBS` such jobs one after the other on one runtime, as a
//! host runs a queue's jobs, first warming up (the component's first load
//! and the pool's first connection are outside every measured span), then
//! alternating pooled and unpooled rounds so that a busy machine skews both.
//! Requests/s = requests / the rounds' summed wall time, guest start-up and
//! all: the figure a handler calling one API in a loop gets. Plain HTTP on
//! loopback: a TLS handshake, which a kept connection also saves, is not
//! measured.

use std::sync::Arc;
use std::time::{Duration, Instant};

use airlock::sandbox::egress::{EgressPolicy, EgressRule, OperatorEgress};
use airlock::sandbox::http::HttpPool;
use airlock::sandbox::{
    Completion, JobInput, Limits, LoadedComponent, LocalServices, RunEnv, Sandbox, SandboxConfig,
};
use airlock_tests::guest_bytes;
use airlock_tests::http_server::TestServer;
use serde_json::{Value, json};

const REQUESTS: usize = 20;
const JOBS: usize = 50;
const ROUNDS: usize = 6;

fn env(url: &str, pool: Option<Arc<HttpPool>>) -> RunEnv {
    RunEnv {
        egress: Some(EgressPolicy {
            operator: Arc::new(OperatorEgress {
                allow: vec![url.parse().unwrap()],
                networks: vec!["127.0.0.1/32".parse().unwrap()],
            }),
            rules: vec![serde_json::from_value::<EgressRule>(json!(url)).unwrap()],
        }),
        http_pool: pool,
        ..RunEnv::default()
    }
}

/// Runs `jobs` jobs of `data` one after the other; their wall time.
async fn round(
    sandbox: &Arc<Sandbox>,
    component: &Arc<LoadedComponent>,
    data: &Value,
    env: &RunEnv,
    jobs: usize,
) -> Duration {
    let started = Instant::now();
    for i in 0..jobs {
        let job = JobInput {
            id: format!("bench-{i}"),
            queue: "bench".into(),
            name: "probe".into(),
            data: data.to_string(),
            attempt: 1,
            max_attempts: 1,
            enqueued_at_ms: 0,
            parent: None,
        };
        let outcome = sandbox
            .run_isolated(
                component.clone(),
                job,
                Limits::default(),
                Box::new(LocalServices::new()),
                None,
                env.clone(),
            )
            .await;
        let Completion::Completed(out) = &outcome.completion else {
            panic!("{:?} {:?}", outcome.completion, outcome.logs);
        };
        let answers: Vec<Value> = serde_json::from_value(out.clone()).unwrap();
        assert!(answers.iter().all(|a| a["status"] == 200), "{answers:?}");
    }
    started.elapsed()
}

fn main() {
    let server = TestServer::start();
    let url = server.url.clone();
    let sandbox = Arc::new(
        Sandbox::new(SandboxConfig {
            max_instances: 16,
            ..SandboxConfig::default()
        })
        .expect("sandbox"),
    );
    let component = sandbox
        .load(&guest_bytes("http-probe"))
        .expect("http-probe loads");
    let requests: Vec<Value> = (0..REQUESTS)
        .map(|_| json!({"url": format!("{url}/echo")}))
        .collect();
    let data = json!({ "requests": requests });
    let pooled = env(&url, Some(Arc::new(HttpPool::default())));
    let unpooled = env(&url, None);

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let (with_pool, without) = runtime.block_on(async {
        round(&sandbox, &component, &data, &pooled, 2).await;
        round(&sandbox, &component, &data, &unpooled, 2).await;
        let (mut with_pool, mut without) = (Duration::ZERO, Duration::ZERO);
        for _ in 0..ROUNDS {
            with_pool += round(&sandbox, &component, &data, &pooled, JOBS).await;
            without += round(&sandbox, &component, &data, &unpooled, JOBS).await;
        }
        (with_pool, without)
    });
    let total = (ROUNDS * JOBS * REQUESTS) as f64;
    let rate = |d: Duration| total / d.as_secs_f64();
    println!(
        "\n### Outbound HTTP to one destination ({} jobs × {REQUESTS} GETs per way, {ROUNDS} alternating rounds, loopback, plain HTTP)\n",
        ROUNDS * JOBS
    );
    println!("| | requests/s | per request |");
    println!("|---|---|---|");
    for (name, d) in [
        ("kept-alive pool (the binding's)", with_pool),
        ("a connection per request", without),
    ] {
        println!(
            "| {name} | {:.0} | {:.0} µs |",
            rate(d),
            d.as_secs_f64() * 1e6 / total
        );
    }
    println!(
        "\npool / per-request: **{:.2}×**",
        rate(with_pool) / rate(without)
    );
}
