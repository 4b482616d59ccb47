//! Precompiled artifacts are native code run outside the sandbox: a host
//! loads one only when it is authenticated with the fleet's artifact key
//! (or when it compiled it itself). Anyone who can write to Redis can write
//! the shared artifact keys, so these tests forge them — another handler's
//! artifact under a payment handler's digest, flipped bytes, a tampered disk
//! cache — and check that hosts refuse them, count them, compile instead,
//! run the right code and never crash. The registry entries that decide
//! what runs (a queue's binding, a handler's current digest) are sealed
//! with a key derived from the same fleet key: forged and replayed ones are
//! refused the same way.

use std::path::Path;
use std::time::Duration;

use airlock_tests::guest_bytes;
use airlock_tests::host::{HostOptions, HostProcess, tokens};
use airlock_tests::redis_server::RedisServer;
use redis::AsyncCommands;
use serde_json::{Value, json};

const FLEET_KEY: &str = "fleet-artifact-key-for-the-tests-0000000001";

/// A host with the API, its own cache directory and (maybe) the fleet key.
fn host(redis: &RedisServer, id: &str, cache: &Path, key: Option<&str>) -> HostProcess {
    HostProcess::start(
        &redis.url(),
        HostOptions {
            id: id.into(),
            api: true,
            extra: vec!["--cache-dir".into(), cache.display().to_string()],
            // Replaces the test fleet key the defaults carry.
            env: key
                .map(|k| vec![("AIRLOCK_ARTIFACT_KEY".to_string(), k.to_string())])
                .unwrap_or_default(),
            ..HostOptions::default()
        },
    )
}

struct Client {
    url: String,
    http: reqwest::Client,
}

impl Client {
    fn of(host: &HostProcess) -> Client {
        Client {
            url: host.api_url(),
            http: airlock_tests::http_client(),
        }
    }

    async fn upload(&self, name: &str, guest: &str) -> String {
        let body: Value = self
            .http
            .post(format!("{}/v1/handlers/{name}", self.url))
            .bearer_auth(tokens::ADMIN)
            .header("content-type", "application/wasm")
            .body(guest_bytes(guest))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        body["digest"].as_str().expect("digest").to_string()
    }

    async fn bind(&self, queue: &str, handler: &str) {
        let status = self
            .http
            .put(format!("{}/v1/queues/{queue}", self.url))
            .bearer_auth(tokens::ADMIN)
            .json(&json!({"handler": handler}))
            .send()
            .await
            .unwrap()
            .status();
        assert!(status.is_success(), "bind {queue}: {status}");
    }

    /// Enqueues a payment and waits for its job.
    async fn pay(&self, tx: &str) -> Value {
        let accepted: Value = self
            .http
            .post(format!("{}/v1/queues/payments/jobs", self.url))
            .bearer_auth(tokens::PRODUCER)
            .json(&json!({"data": {"transactionId": tx, "amount": 12.5}}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let job_ref = accepted["ref"].as_str().expect("ref").to_string();
        let done: Value = self
            .http
            .get(format!("{}/v1/jobs/{job_ref}/wait?timeout=60s", self.url))
            .bearer_auth(tokens::PRODUCER)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(done["finished"], true, "{done}");
        done["job"].clone()
    }

    /// A gauge of this host's `/metrics`.
    async fn gauge(&self, name: &str) -> u64 {
        let text = self
            .http
            .get(format!("{}/metrics", self.url))
            .bearer_auth(tokens::READER)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no {name} in {text}"))
            .trim()
            .parse()
            .unwrap()
    }
}

/// A connection of the test's own to `redis`, to forge what a writer could.
async fn connect(redis: &RedisServer) -> redis::aio::MultiplexedConnection {
    redis::Client::open(redis.url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

/// The shared artifact key of `digest` (there is one engine configuration).
async fn artifact_key(conn: &mut redis::aio::MultiplexedConnection, digest: &str) -> String {
    let keys: Vec<String> = conn
        .keys(format!("bull:{{airlock}}:artifact:{digest}:*"))
        .await
        .unwrap();
    assert_eq!(
        keys.len(),
        1,
        "one published artifact for {digest}: {keys:?}"
    );
    keys[0].clone()
}

fn assert_paid(job: &Value, tx: &str) {
    assert_eq!(job["state"], "completed", "{job}");
    assert_eq!(
        job["returnvalue"],
        json!({"processed": true, "ledgerRecordId": format!("led_{tx}")}),
        "the payment handler's own code ran: {job}"
    );
}

#[tokio::test]
async fn forged_artifacts_are_refused_counted_and_recompiled() {
    let redis = RedisServer::start();
    let mut conn = connect(&redis).await;

    // Host A compiles both handlers on upload and shares their artifacts.
    let dir_a = tempfile::tempdir().unwrap();
    let mut a = host(&redis, "a", dir_a.path(), Some(FLEET_KEY));
    let api_a = Client::of(&a);
    let payments = api_a.upload("payment-webhook", "payment-webhook").await;
    let probe = api_a.upload("probe", "data-probe").await;
    api_a.bind("payments", "payment-webhook").await;
    let payments_key = artifact_key(&mut conn, &payments).await;
    let probe_key = artifact_key(&mut conn, &probe).await;

    // Someone with write access to Redis swaps in the probe's artifact.
    let probe_artifact: Vec<u8> = conn.get(&probe_key).await.unwrap();
    let _: () = conn.set(&payments_key, &probe_artifact).await.unwrap();
    a.kill9();

    // A new host refuses it, compiles the payment handler, runs its code.
    let dir_b = tempfile::tempdir().unwrap();
    let mut b = host(&redis, "b", dir_b.path(), Some(FLEET_KEY));
    let api_b = Client::of(&b);
    assert_paid(&api_b.pay("swap").await, "swap");
    assert_eq!(api_b.gauge("airlock_artifacts_refused").await, 1);
    assert_eq!(api_b.gauge("airlock_components_compiled").await, 1);
    // ... and shared its own in place of the forgery.
    let republished: Vec<u8> = conn.get(&payments_key).await.unwrap();
    assert_ne!(republished, probe_artifact);

    // Flipped bytes in the shared artifact's code: refused, never run.
    b.terminate(Duration::from_secs(30));
    let mut flipped = republished.clone();
    let middle = flipped.len() / 2;
    for byte in &mut flipped[middle..middle + 64] {
        *byte ^= 0xa5;
    }
    let _: () = conn.set(&payments_key, &flipped).await.unwrap();
    let dir_c = tempfile::tempdir().unwrap();
    let c = host(&redis, "c", dir_c.path(), Some(FLEET_KEY));
    let api_c = Client::of(&c);
    assert_paid(&api_c.pay("flipped").await, "flipped");
    assert_eq!(api_c.gauge("airlock_artifacts_refused").await, 1);
    drop(c);

    // A tampered disk cache is refused too, on a restart's first load.
    let cached: Vec<_> = std::fs::read_dir(dir_b.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sealed"))
        .collect();
    assert_eq!(cached.len(), 1, "{cached:?}");
    let mut bytes = std::fs::read(&cached[0]).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&cached[0], &bytes).unwrap();
    let b = host(&redis, "b2", dir_b.path(), Some(FLEET_KEY));
    let api_b = Client::of(&b);
    assert_paid(&api_b.pay("disk").await, "disk");
    assert_eq!(
        api_b.gauge("airlock_artifacts_refused").await,
        1,
        "{}",
        b.log()
    );
}

#[tokio::test]
async fn without_the_fleet_key_a_host_runs_only_what_it_compiled() {
    let redis = RedisServer::start();
    let dir_a = tempfile::tempdir().unwrap();
    let mut a = host(&redis, "a", dir_a.path(), Some(FLEET_KEY));
    let api_a = Client::of(&a);
    api_a.upload("payment-webhook", "payment-webhook").await;
    api_a.bind("payments", "payment-webhook").await;
    a.kill9();

    // A host without the key ignores the shared artifact and compiles.
    let dir_d = tempfile::tempdir().unwrap();
    let mut d = host(&redis, "d", dir_d.path(), None);
    let api_d = Client::of(&d);
    assert_paid(&api_d.pay("own").await, "own");
    assert_eq!(api_d.gauge("airlock_components_compiled").await, 1);
    assert_eq!(api_d.gauge("airlock_artifacts_refused").await, 0);

    // Its own disk cache (sealed with its own key) survives a restart.
    d.terminate(Duration::from_secs(30));
    let d = host(&redis, "d2", dir_d.path(), None);
    let api_d = Client::of(&d);
    assert_paid(&api_d.pay("again").await, "again");
    assert_eq!(api_d.gauge("airlock_components_compiled").await, 0);
    assert_eq!(api_d.gauge("airlock_artifacts_refused").await, 0);
}

#[tokio::test]
async fn hosts_with_the_fleet_key_load_each_others_artifacts() {
    let redis = RedisServer::start();
    let dir_a = tempfile::tempdir().unwrap();
    let mut a = host(&redis, "a", dir_a.path(), Some(FLEET_KEY));
    let api_a = Client::of(&a);
    api_a.upload("payment-webhook", "payment-webhook").await;
    api_a.bind("payments", "payment-webhook").await;
    a.kill9();

    let dir_e = tempfile::tempdir().unwrap();
    let e = host(&redis, "e", dir_e.path(), Some(FLEET_KEY));
    let api_e = Client::of(&e);
    assert_paid(&api_e.pay("shared").await, "shared");
    assert_eq!(api_e.gauge("airlock_components_compiled").await, 0);
    assert_eq!(api_e.gauge("airlock_artifacts_refused").await, 0);
}

/// A binding rewritten to run another handler, a handler pointed at another
/// uploaded component, and an older sealed binding written back: a host
/// with the fleet key refuses each, counts it, and goes on with what it
/// verified last.
#[tokio::test]
async fn forged_and_replayed_registry_entries_are_refused() {
    let redis = RedisServer::start();
    let mut conn = connect(&redis).await;
    let dir = tempfile::tempdir().unwrap();
    let a = host(&redis, "a", dir.path(), Some(FLEET_KEY));
    let api = Client::of(&a);
    let payments = api.upload("payment-webhook", "payment-webhook").await;
    let probe = api.upload("probe", "data-probe").await;
    api.bind("payments", "payment-webhook").await;
    assert_paid(&api.pay("before").await, "before");
    assert_eq!(api.gauge("airlock_registry_refused").await, 0);

    let (bindings, seals) = ("bull:{airlock}:bindings", "bull:{airlock}:binding-seals");
    let first: String = conn.hget(bindings, "payments").await.unwrap();
    let first_seal: String = conn.hget(seals, "payments").await.unwrap();

    // Someone with write access to Redis points the payment handler at the
    // probe's component, and binds the queue to the probe, keeping the seal.
    let _: () = conn
        .hset("bull:{airlock}:handler:payment-webhook", "digest", &probe)
        .await
        .unwrap();
    let forged = first.replace(r#""handler":"payment-webhook""#, r#""handler":"probe""#);
    assert_ne!(forged, first);
    let _: () = conn.hset(bindings, "payments", &forged).await.unwrap();
    let _: i64 = conn.incr("bull:{airlock}:generation", 1).await.unwrap();
    airlock_tests::eventually("both forgeries refused", || async {
        api.gauge("airlock_registry_refused").await == 2
    })
    .await;
    let job = api.pay("forged").await;
    assert_paid(&job, "forged");
    assert_eq!(job["handlerDigest"], payments.as_str(), "{job}");
    let log = a.log();
    assert!(log.contains("registry entry refused"), "{log}");

    // The admin binds again (a second sealed version); the first, written
    // back with its own valid seal, is an older version: refused.
    let status = reqwest::Client::new()
        .put(format!("{}/v1/queues/payments", api.url))
        .bearer_auth(tokens::ADMIN)
        .json(&json!({"handler": "payment-webhook", "concurrency": 3}))
        .send()
        .await
        .unwrap()
        .status();
    assert!(status.is_success(), "{status}");
    let concurrency = || async {
        let body: Value = reqwest::Client::new()
            .get(format!("{}/v1/queues/payments", api.url))
            .bearer_auth(tokens::ADMIN)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        body["concurrency"].clone()
    };
    assert_eq!(concurrency().await, 3);
    let _: () = conn.hset(bindings, "payments", &first).await.unwrap();
    let _: () = conn.hset(seals, "payments", &first_seal).await.unwrap();
    let _: i64 = conn.incr("bull:{airlock}:generation", 1).await.unwrap();
    assert_eq!(concurrency().await, 3, "the replayed version was taken");
    assert_eq!(api.gauge("airlock_registry_refused").await, 3);
    assert_paid(&api.pay("after").await, "after");

    // Deleting the entry first does not open the way to the replay.
    let _: i64 = conn.hdel(bindings, "payments").await.unwrap();
    let _: i64 = conn.hdel(seals, "payments").await.unwrap();
    assert_eq!(concurrency().await, Value::Null, "deleted");
    let _: () = conn.hset(bindings, "payments", &first).await.unwrap();
    let _: () = conn.hset(seals, "payments", &first_seal).await.unwrap();
    assert_eq!(
        concurrency().await,
        3,
        "the replay after a delete was taken"
    );
}
