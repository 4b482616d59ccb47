//! Redis over TLS with an ACL user, as managed Redis is: a `redis-server`
//! with a certificate this test makes with `openssl` (its own CA), the
//! default user off and a user `airlock` with a password. A host connects
//! over `rediss://` with the CA file and the password from a file, runs a
//! job added through its API and one a Node BullMQ producer added over the
//! same TLS; a host without the CA, and one with a wrong password, each
//! stop within seconds saying what is wrong and which flag fixes it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use airlock_tests::host::{HostOptions, HostProcess, tokens};
use airlock_tests::{guest_bytes, interop_script};
use reqwest::StatusCode;
use serde_json::{Value, json};

const PASSWORD: &str = "tls-test-password-1";

/// A TLS-only `redis-server` on 127.0.0.1 and the files it was made with.
struct TlsRedis {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl TlsRedis {
    fn start() -> TlsRedis {
        TlsRedis::start_with(false)
    }

    /// With `mutual`, clients must show a certificate the CA signed.
    fn start_with(mutual: bool) -> TlsRedis {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        make_certificates(d);
        let port = airlock_tests::free_port();
        let path = |name: &str| d.join(name).display().to_string();
        let child = Command::new("redis-server")
            .args(["--port", "0", "--tls-port", &port.to_string()])
            .args(["--tls-cert-file", &path("server.crt")])
            .args(["--tls-key-file", &path("server.key")])
            .args(["--tls-ca-cert-file", &path("ca.crt")])
            .args(["--tls-auth-clients", if mutual { "yes" } else { "no" }])
            .args(["--save", "", "--appendonly", "no"])
            .args(["--dir", &d.display().to_string()])
            .args(["--user", "default", "off"])
            .args([
                "--user",
                "airlock",
                "on",
                &format!(">{PASSWORD}"),
                "~*",
                "&*",
                "+@all",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start redis-server");
        let redis = TlsRedis { child, port, dir };
        let deadline = Instant::now() + Duration::from_secs(10);
        while !redis.cli_ping() {
            assert!(
                Instant::now() < deadline,
                "the TLS redis-server never answered"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        redis
    }

    fn file(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn url(&self) -> String {
        format!("rediss://127.0.0.1:{}", self.port)
    }

    fn cli_ping(&self) -> bool {
        Command::new("redis-cli")
            .args(["--tls", "--cacert"])
            .arg(self.file("ca.crt"))
            .arg("--cert")
            .arg(self.file("client.crt"))
            .arg("--key")
            .arg(self.file("client.key"))
            .args([
                "-p",
                &self.port.to_string(),
                "--user",
                "airlock",
                "--pass",
                PASSWORD,
            ])
            .args(["--no-auth-warning", "PING"])
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("PONG"))
    }
}

impl Drop for TlsRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// In `dir`: a CA (`ca.crt`), a server certificate it signed for
/// 127.0.0.1 (`server.crt`, `server.key`) and a client certificate for
/// mutual TLS (`client.crt`, `client.key`), both v3, as rustls requires.
fn make_certificates(dir: &Path) {
    let openssl = |args: &str| {
        let out = Command::new("openssl")
            .args(args.split_whitespace())
            .current_dir(dir)
            .output()
            .expect("run openssl");
        assert!(
            out.status.success(),
            "openssl {args}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    openssl(
        "req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 -subj /CN=airlock-test-ca",
    );
    for (name, subject, extensions) in [
        (
            "server",
            "/CN=localhost",
            "subjectAltName=IP:127.0.0.1,DNS:localhost",
        ),
        ("client", "/CN=airlock", "extendedKeyUsage=clientAuth"),
    ] {
        std::fs::write(dir.join(format!("{name}.cnf")), format!("{extensions}\n")).unwrap();
        openssl(&format!(
            "req -newkey rsa:2048 -nodes -keyout {name}.key -out {name}.csr -subj {subject}"
        ));
        openssl(&format!(
            "x509 -req -in {name}.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out {name}.crt -days 2 -extfile {name}.cnf"
        ));
    }
}

/// A host over `redis`'s TLS with these extra arguments (the API on).
fn host(redis: &TlsRedis, extra: &[String]) -> HostProcess {
    HostProcess::start(
        &redis.url(),
        HostOptions {
            id: "tls-host".into(),
            api: true,
            extra: extra.to_vec(),
            ..HostOptions::default()
        },
    )
}

/// The flags of a host that should get in: the CA file, the user, the
/// password from a file.
fn good_flags(redis: &TlsRedis) -> Vec<String> {
    std::fs::write(redis.file("password"), format!("{PASSWORD}\n")).unwrap();
    vec![
        "--redis-ca-file".into(),
        redis.file("ca.crt").display().to_string(),
        "--redis-user".into(),
        "airlock".into(),
        "--redis-password-file".into(),
        redis.file("password").display().to_string(),
    ]
}

#[tokio::test]
async fn a_host_over_tls_with_an_acl_user_runs_jobs_a_node_producer_adds() {
    let redis = TlsRedis::start();
    let host = host(&redis, &good_flags(&redis));
    let api = Client::of(&host);
    api.setup("tls").await;
    let ready = api
        .http
        .get(format!("{}/readyz", api.base))
        .send()
        .await
        .unwrap();
    assert_eq!(ready.status(), StatusCode::OK);

    // One job through the API…
    let api_job = api.enqueue("tls").await;
    // …and three from Node's BullMQ over the same TLS (Node trusts the CA
    // through NODE_EXTRA_CA_CERTS; the URL carries the user).
    let out = Command::new("node")
        .arg(interop_script("enqueue.js"))
        .args([
            "--redis",
            &format!("rediss://airlock:{PASSWORD}@127.0.0.1:{}", redis.port),
            "--queue",
            "tls",
            "--count",
            "3",
        ])
        .env("NODE_EXTRA_CA_CERTS", redis.file("ca.crt"))
        .output()
        .expect("run node");
    assert!(
        out.status.success(),
        "node: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    // The API's job took BullMQ's first id, Node's the next three.
    assert_eq!(api_job, "tls:1");
    for job in ["tls:1", "tls:2", "tls:3", "tls:4"] {
        let done = api.wait_done(job).await;
        assert_eq!(done["state"], "completed", "{job}: {done}");
    }
    assert!(
        !host.log().contains(PASSWORD),
        "the password shows in the host's log"
    );
}

/// A host's API, as the test tokens use it.
struct Client {
    base: String,
    http: reqwest::Client,
}

impl Client {
    fn of(host: &HostProcess) -> Client {
        Client {
            base: host.api_url(),
            http: airlock_tests::http_client(),
        }
    }

    /// The noop handler uploaded and bound to `queue`.
    async fn setup(&self, queue: &str) {
        let resp = (self.http.post(format!("{}/v1/handlers/noop", self.base)))
            .bearer_auth(tokens::ADMIN)
            .header("content-type", "application/wasm")
            .body(guest_bytes("noop"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::CREATED);
        let resp = (self.http.put(format!("{}/v1/queues/{queue}", self.base)))
            .bearer_auth(tokens::ADMIN)
            .json(&json!({"handler": "noop"}))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
    }

    /// A job added to `queue` as producer `web`: its ref.
    async fn enqueue(&self, queue: &str) -> String {
        let accepted: Value = (self
            .http
            .post(format!("{}/v1/queues/{queue}/jobs", self.base)))
        .bearer_auth(tokens::PRODUCER)
        .json(&json!({"data": {}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
        accepted["ref"].as_str().expect("a ref").to_string()
    }

    /// The job once it finished.
    async fn wait_done(&self, job: &str) -> Value {
        let done: Value = (self
            .http
            .get(format!("{}/v1/jobs/{job}/wait?timeout=60s", self.base)))
        .bearer_auth(tokens::ADMIN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
        done["job"].clone()
    }
}

/// A host that cannot get in stops within seconds, exit status non-zero,
/// its last words the cause and the flag.
fn fails_fast(redis: &TlsRedis, extra: &[String], says: &[&str]) {
    let mut host = host(redis, extra);
    let started = Instant::now();
    let code = host.wait_exit(Duration::from_secs(10));
    let log = host.log();
    assert_ne!(code, Some(0), "{log}");
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "took {:?} to fail:\n{log}",
        started.elapsed()
    );
    for words in says {
        assert!(log.contains(words), "no `{words}` in:\n{log}");
    }
    assert!(!log.contains(PASSWORD), "the password shows in:\n{log}");
}

#[tokio::test]
async fn a_host_without_the_ca_or_with_a_wrong_password_stops_saying_why() {
    let redis = TlsRedis::start();
    // No CA: the self-signed chain is not trusted.
    let no_ca: Vec<String> = good_flags(&redis)[2..].to_vec();
    fails_fast(
        &redis,
        &no_ca,
        &["its TLS certificate is not trusted", "--redis-ca-file"],
    );
    // The CA, a wrong password.
    std::fs::write(redis.file("wrong"), "not-the-password").unwrap();
    let mut wrong = good_flags(&redis);
    let last = wrong.len() - 1;
    wrong[last] = redis.file("wrong").display().to_string();
    fails_fast(
        &redis,
        &wrong,
        &["refused the credentials", "--redis-password-file"],
    );
    // A plain URL to the TLS port.
    let mut plain = HostProcess::start(
        &format!("redis://127.0.0.1:{}", redis.port),
        HostOptions {
            id: "plain-host".into(),
            ..HostOptions::default()
        },
    );
    assert_ne!(plain.wait_exit(Duration::from_secs(10)), Some(0));
    assert!(
        plain.log().contains("if it speaks TLS, use rediss://"),
        "{}",
        plain.log()
    );
}

/// A Redis that asks clients for a certificate (mutual TLS): a host with
/// one runs a job; a host without stops saying which flags it lacks.
#[tokio::test]
async fn mutual_tls_takes_a_client_certificate() {
    let redis = TlsRedis::start_with(true);
    fails_fast(
        &redis,
        &good_flags(&redis),
        &["wants a client certificate", "--redis-client-cert"],
    );
    let mut flags = good_flags(&redis);
    flags.extend([
        "--redis-client-cert".into(),
        redis.file("client.crt").display().to_string(),
        "--redis-client-key".into(),
        redis.file("client.key").display().to_string(),
    ]);
    let host = host(&redis, &flags);
    let api = Client::of(&host);
    api.setup("mtls").await;
    let job = api.enqueue("mtls").await;
    let done = api.wait_done(&job).await;
    assert_eq!(done["state"], "completed", "{done}");
}
