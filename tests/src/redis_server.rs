//! A private `redis-server` per test.
//!
//! Queue tests need a Redis they own: a fresh keyspace, a port nobody else
//! uses, and the freedom to `SIGKILL` it and bring it back to prove that
//! Airlock survives a crash. [`RedisServer`] starts one in a temporary
//! directory, and kills it (and removes the directory) when dropped.
//!
//! Everything here is plain synchronous std code (child processes and
//! `redis-cli`) so it works the same from `#[test]` and `#[tokio::test]`.

use std::fs::File;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use tempfile::TempDir;

/// The message for a machine without Redis installed.
const NOT_INSTALLED: &str =
    "redis-server not found: install it (apt-get install redis-server) — make test does this";

/// How often readiness is polled, and for how long before giving up.
const POLL_EVERY: Duration = Duration::from_millis(20);
const READY_TIMEOUT: Duration = Duration::from_secs(10);

/// Fresh ports tried by `start_with` before giving up: another process can
/// grab a port between our probe and Redis' bind.
const PORT_ATTEMPTS: usize = 5;

/// How a [`RedisServer`] is configured.
#[derive(Clone, Debug, Default)]
pub struct RedisOptions {
    /// Turn on the append-only file, so data survives [`RedisServer::kill9`]
    /// followed by [`RedisServer::restart`].
    pub appendonly: bool,
    /// With `appendonly`: fsync every write (`--appendfsync always`), so not
    /// even the last acknowledged write is lost to a `SIGKILL`.
    pub appendfsync_always: bool,
    /// Start the node in cluster mode (`--cluster-enabled yes`, its
    /// `nodes.conf` in the server's directory), for tests of hash-tagged keys.
    /// The node owns no slots until the test assigns them.
    pub cluster_enabled: bool,
}

/// A `redis-server` child process private to one test, on 127.0.0.1.
///
/// Dropping it kills the server and deletes its directory.
pub struct RedisServer {
    /// `None` between [`RedisServer::kill9`] and [`RedisServer::restart`].
    child: Option<Child>,
    port: u16,
    /// Holds the AOF, `nodes.conf` and the logs; owned so it lives exactly as
    /// long as the server (and across restarts).
    dir: TempDir,
    opts: RedisOptions,
}

/// Why one attempt to start the server did not give a ready server.
enum StartError {
    /// The process exited (typically the port was taken after we probed it).
    Exited(String),
    /// Still not answering after [`READY_TIMEOUT`].
    NotReady(String),
}

impl RedisServer {
    /// Starts a server with default options (no persistence).
    pub fn start() -> RedisServer {
        RedisServer::start_with(RedisOptions::default())
    }

    /// Starts a server with `opts` on a free port and waits until it answers
    /// `PING`. Panics (with the tail of its log) when it cannot.
    pub fn start_with(opts: RedisOptions) -> RedisServer {
        let dir = tempfile::Builder::new()
            .prefix("airlock-redis-")
            .tempdir()
            .expect("create a temporary directory for redis-server");
        let mut last_error = String::new();
        for _ in 0..PORT_ATTEMPTS {
            let port = crate::free_port();
            let mut child = spawn(port, dir.path(), &opts);
            match wait_ready(&mut child, port, dir.path()) {
                Ok(()) => {
                    return RedisServer {
                        child: Some(child),
                        port,
                        dir,
                        opts,
                    };
                }
                // Lost the port race: try again with another port.
                Err(StartError::Exited(log)) => last_error = log,
                Err(StartError::NotReady(log)) => {
                    stop(&mut child);
                    panic!(
                        "redis-server on port {port} did not answer PING within {READY_TIMEOUT:?}; log tail:\n{log}"
                    );
                }
            }
        }
        panic!(
            "redis-server failed to start after {PORT_ATTEMPTS} ports; last log tail:\n{last_error}"
        );
    }

    /// The server's process id, while it runs (benchmarks read its CPU time).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    /// The TCP port the server listens on (127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The URL to give Airlock or `BullMQ`: `redis://127.0.0.1:{port}`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// The server's working directory (AOF, `nodes.conf`, logs).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Kills the server with `SIGKILL` and waits for it to exit: a crash,
    /// with no chance to flush anything. The data directory is kept for
    /// [`RedisServer::restart`]. Does nothing if it is already stopped.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            stop(&mut child);
        }
    }

    /// Starts the server again on the same port and directory (so clients
    /// reconnect to the same URL and, with `appendonly`, find their data), and
    /// waits until it answers `PING`. Kills it first if it is still running.
    pub fn restart(&mut self) {
        self.kill9();
        // The port is ours but not reserved: if something grabbed it while
        // the server was down, retry briefly; a different port would break
        // the promise of the same URL.
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            let mut child = spawn(self.port, self.dir.path(), &self.opts);
            match wait_ready(&mut child, self.port, self.dir.path()) {
                Ok(()) => {
                    self.child = Some(child);
                    return;
                }
                Err(StartError::Exited(log)) if Instant::now() < deadline => {
                    eprintln!(
                        "redis-server restart on port {} failed, retrying:\n{log}",
                        self.port
                    );
                    sleep(Duration::from_millis(200));
                }
                Err(StartError::Exited(log) | StartError::NotReady(log)) => {
                    stop(&mut child);
                    panic!(
                        "redis-server did not restart on port {}; log tail:\n{log}",
                        self.port
                    );
                }
            }
        }
    }

    /// Runs `redis-cli -p PORT args...` and returns its trimmed stdout.
    ///
    /// Panics with stderr when redis-cli fails (e.g. cannot connect). Note
    /// that an error *reply* is not a failure for redis-cli: it comes back as
    /// text such as `ERR unknown command ...`, and a nil reply as `""`.
    pub fn cli(&self, args: &[&str]) -> String {
        let output = Command::new("redis-cli")
            .arg("-p")
            .arg(self.port.to_string())
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("run redis-cli: {}", not_found_or(e)));
        assert!(
            output.status.success(),
            "redis-cli -p {} {:?} failed ({}): {}",
            self.port,
            args,
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
        String::from_utf8_lossy(&output.stdout).trim().to_string()
    }

    /// Number of keys in the server's current database (`DBSIZE`).
    pub fn dbsize(&self) -> u64 {
        let reply = self.cli(&["dbsize"]);
        reply
            .parse()
            .unwrap_or_else(|_| panic!("DBSIZE answered {reply:?}"))
    }

    /// Keys matching `pattern`, sorted, via `redis-cli --scan --pattern`
    /// (SCAN, not KEYS, like a well-behaved client would).
    pub fn keys(&self, pattern: &str) -> Vec<String> {
        let out = self.cli(&["--scan", "--pattern", pattern]);
        let mut keys: Vec<String> = out
            .lines()
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect();
        // SCAN order is arbitrary and may repeat keys; tests want a stable set.
        keys.sort();
        keys.dedup();
        keys
    }
}

impl Drop for RedisServer {
    /// Kills the server; the `TempDir` field then removes its directory.
    fn drop(&mut self) {
        self.kill9();
    }
}

/// Starts `redis-server` in the foreground as our child.
fn spawn(port: u16, dir: &Path, opts: &RedisOptions) -> Child {
    let mut cmd = Command::new("redis-server");
    cmd.arg("--port")
        .arg(port.to_string())
        .args(["--bind", "127.0.0.1"])
        .arg("--dir")
        .arg(dir)
        // No RDB snapshots: tests that want durability ask for the AOF.
        .args(["--save", ""])
        .args(["--appendonly", if opts.appendonly { "yes" } else { "no" }])
        .args(["--protected-mode", "no"])
        .args(["--daemonize", "no"])
        .args(["--loglevel", "warning"])
        .arg("--logfile")
        .arg(log_path(dir));
    if opts.appendfsync_always {
        cmd.args(["--appendfsync", "always"]);
    }
    if opts.cluster_enabled {
        cmd.args(["--cluster-enabled", "yes"])
            .arg("--cluster-config-file")
            .arg(dir.join("nodes.conf"));
    }
    // Errors before the logfile is open (bad options) go to stdout/stderr;
    // keep them next to the log for the panic message. Appending keeps the
    // output of earlier runs (restarts) too.
    let stdio = File::options()
        .create(true)
        .append(true)
        .open(stdio_path(dir))
        .expect("open redis-server stdio log");
    cmd.stdin(Stdio::null())
        .stdout(stdio.try_clone().expect("clone stdio log"))
        .stderr(stdio);
    cmd.spawn()
        .unwrap_or_else(|e| panic!("start redis-server: {}", not_found_or(e)))
}

/// Polls `PING` until the server answers `PONG`, the process exits, or
/// [`READY_TIMEOUT`] passes.
fn wait_ready(child: &mut Child, port: u16, dir: &Path) -> Result<(), StartError> {
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        // Check our own process first: if it died, a PONG on this port would
        // come from somebody else's server.
        if let Some(status) = child.try_wait().expect("poll redis-server") {
            return Err(StartError::Exited(format!(
                "(exited with {status})\n{}",
                log_tail(dir)
            )));
        }
        if ping(port) {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(StartError::NotReady(log_tail(dir)));
        }
        sleep(POLL_EVERY);
    }
}

/// True when `redis-cli -p PORT ping` answers `PONG` (not `LOADING`, not a
/// refused connection).
fn ping(port: u16) -> bool {
    let output = Command::new("redis-cli")
        .arg("-p")
        .arg(port.to_string())
        .arg("ping")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("run redis-cli: {}", not_found_or(e)));
    output.status.success() && String::from_utf8_lossy(&output.stdout).trim() == "PONG"
}

/// SIGKILL (what `Child::kill` sends on Unix) and reap, ignoring a child
/// that has already exited.
fn stop(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

fn log_path(dir: &Path) -> PathBuf {
    dir.join("redis.log")
}

fn stdio_path(dir: &Path) -> PathBuf {
    dir.join("redis.stdio.log")
}

/// The last lines of the server's log and of its stdout/stderr.
fn log_tail(dir: &Path) -> String {
    let tail = |path: PathBuf| -> String {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    };
    format!(
        "--- redis.log ---\n{}\n--- stdout/stderr ---\n{}",
        tail(log_path(dir)),
        tail(stdio_path(dir))
    )
}

/// The install hint when a Redis binary is missing, else the error itself.
fn not_found_or(e: std::io::Error) -> String {
    if e.kind() == ErrorKind::NotFound {
        NOT_INSTALLED.to_string()
    } else {
        e.to_string()
    }
}

/// A Redis Cluster of `masters` nodes on loopback (no replicas), every slot
/// assigned and the cluster state `ok`. Drop the servers to stop it.
pub fn start_cluster(masters: usize) -> Vec<RedisServer> {
    let nodes: Vec<RedisServer> = (0..masters)
        .map(|_| {
            RedisServer::start_with(RedisOptions {
                cluster_enabled: true,
                ..RedisOptions::default()
            })
        })
        .collect();
    let addrs: Vec<String> = nodes
        .iter()
        .map(|n| format!("127.0.0.1:{}", n.port()))
        .collect();
    let out = Command::new("redis-cli")
        .arg("--cluster")
        .arg("create")
        .args(&addrs)
        .args(["--cluster-replicas", "0", "--cluster-yes"])
        .output()
        .expect("redis-cli --cluster create");
    assert!(
        out.status.success(),
        "redis-cli --cluster create failed: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while !nodes
        .iter()
        .all(|n| n.cli(&["CLUSTER", "INFO"]).contains("cluster_state:ok"))
    {
        assert!(Instant::now() < deadline, "the cluster never became ok");
        sleep(Duration::from_millis(100));
    }
    nodes
}

/// `INFO commandstats` as command → (calls, µs), leaving out the
/// benchmark's own polling.
pub async fn command_stats(
    conn: &mut redis::aio::MultiplexedConnection,
) -> std::collections::BTreeMap<String, (f64, f64)> {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(conn)
        .await
        .unwrap();
    let mut stats = std::collections::BTreeMap::new();
    for line in info.lines() {
        let Some((name, rest)) = line
            .trim()
            .strip_prefix("cmdstat_")
            .and_then(|l| l.split_once(':'))
        else {
            continue;
        };
        if matches!(name, "info" | "config" | "zcard") {
            continue;
        }
        let field = |key: &str| {
            rest.split(',')
                .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        stats.insert(name.to_string(), (field("calls"), field("usec")));
    }
    stats
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aof_data_survives_kill9_and_restart() {
        let mut server = RedisServer::start_with(RedisOptions {
            appendonly: true,
            appendfsync_always: true,
            cluster_enabled: false,
        });
        let port = server.port();
        assert_eq!(server.cli(&["set", "airlock:durable", "yes"]), "OK");

        server.kill9();
        assert!(!ping(port), "server still answers after kill9");

        server.restart();
        assert_eq!(server.port(), port, "restart must keep the port");
        assert_eq!(server.url(), format!("redis://127.0.0.1:{port}"));
        assert_eq!(server.cli(&["get", "airlock:durable"]), "yes");
    }

    #[test]
    fn dbsize_and_keys_see_a_set() {
        let server = RedisServer::start();
        assert_eq!(server.dbsize(), 0);
        assert_eq!(server.cli(&["set", "bull:payments:1", "x"]), "OK");
        assert_eq!(server.cli(&["set", "other", "y"]), "OK");
        assert_eq!(server.dbsize(), 2);
        assert_eq!(server.keys("bull:*"), vec!["bull:payments:1".to_string()]);
    }

    #[test]
    fn drop_stops_the_server_and_removes_its_dir() {
        let server = RedisServer::start();
        let (port, dir) = (server.port(), server.dir().to_path_buf());
        assert!(dir.join("redis.log").exists());
        drop(server);
        assert!(!ping(port));
        assert!(!dir.exists());
    }

    #[test]
    fn cluster_mode_starts() {
        let server = RedisServer::start_with(RedisOptions {
            cluster_enabled: true,
            ..RedisOptions::default()
        });
        assert!(
            server
                .cli(&["info", "cluster"])
                .contains("cluster_enabled:1")
        );
        assert!(server.dir().join("nodes.conf").exists());
    }
}
