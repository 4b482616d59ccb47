//! Real `airlock serve` processes for tests, and an admin handle (the
//! library's registry and queues) to deploy handlers, bind queues, enqueue
//! and inspect jobs against the same Redis.

use std::path::PathBuf;
use std::process::{Child, Command};
use std::sync::Arc;
use std::time::{Duration, Instant};

use airlock::queue::{JobOptions, JobSnapshot, JobState, NewJob, QueueService};
use airlock::registry::{BindingSpec, Registry};
use airlock::sandbox::{Sandbox, SandboxConfig};
use airlock::store::Store;

use crate::{airlock_bin, guest_bytes};

/// The fleet artifact key test hosts (and [`Admin`]) share, so a guest
/// compiled by one is loaded by the others instead of compiled again.
pub const TEST_FLEET_KEY: &str = "airlock-test-fleet-artifact-key-0000000000";

/// A running `airlock serve` child process.
pub struct HostProcess {
    child: Option<Child>,
    /// Where its stderr (logs) goes.
    pub log_path: PathBuf,
    /// Where its stdout goes (the API prints its address there).
    pub out_path: PathBuf,
    _dir: tempfile::TempDir,
}

/// Options for [`HostProcess::start`].
#[derive(Debug, Clone)]
pub struct HostOptions {
    /// Host id.
    pub id: String,
    /// Lock duration (short in tests so recovery is quick).
    pub lock_duration: Duration,
    /// Stalled-check interval.
    pub stalled_interval: Duration,
    /// Shutdown grace period.
    pub grace: Duration,
    /// Extra arguments.
    pub extra: Vec<String>,
    /// Serve the HTTP API on an ephemeral port with the test tokens.
    pub api: bool,
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
}

impl Default for HostOptions {
    fn default() -> Self {
        HostOptions {
            id: "test-host".into(),
            lock_duration: Duration::from_secs(4),
            stalled_interval: Duration::from_secs(2),
            grace: Duration::from_secs(10),
            extra: Vec::new(),
            api: false,
            // Test hosts are one fleet: they share precompiled artifacts.
            env: vec![("AIRLOCK_ARTIFACT_KEY".into(), TEST_FLEET_KEY.into())],
        }
    }
}

fn ms(d: Duration) -> String {
    format!("{}ms", d.as_millis())
}

impl HostProcess {
    /// Starts `airlock serve` against `redis_url`.
    pub fn start(redis_url: &str, opts: HostOptions) -> HostProcess {
        let dir = tempfile::tempdir().expect("temp dir");
        let log_path = dir.path().join("host.log");
        let log = std::fs::File::create(&log_path).expect("log file");
        let out_path = dir.path().join("host.out");
        let out = std::fs::File::create(&out_path).expect("out file");
        let mut api_args: Vec<String> = Vec::new();
        if opts.api {
            api_args.extend(["--listen".into(), "127.0.0.1:0".into()]);
            api_args.extend(["--tokens".into(), tokens::list()]);
        }
        let child = Command::new(airlock_bin())
            .arg("serve")
            .arg("--redis")
            .arg(redis_url)
            .arg("--host-id")
            .arg(&opts.id)
            .arg("--lock-duration")
            .arg(ms(opts.lock_duration))
            .arg("--stalled-interval")
            .arg(ms(opts.stalled_interval))
            .arg("--grace")
            .arg(ms(opts.grace))
            .arg("--poll")
            .arg("200ms")
            // A small pool unless the test sizes it.
            .args(if opts.extra.iter().any(|a| a == "--max-instances") {
                vec![]
            } else {
                vec!["--max-instances", "64"]
            })
            .args(&api_args)
            .args(&opts.extra)
            .env("AIRLOCK_CACHE_DIR", crate::shared_cache_dir())
            .env("RUST_LOG", "airlock=debug,bullmq=info,warn")
            .envs(opts.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdout(out)
            .stderr(log)
            .spawn()
            .expect("start airlock serve");
        HostProcess {
            child: Some(child),
            log_path,
            out_path,
            _dir: dir,
        }
    }

    /// The API's base URL (waits until the host prints it).
    pub fn api_url(&self) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let out = std::fs::read_to_string(&self.out_path).unwrap_or_default();
            if let Some(url) = out.lines().find_map(|l| l.strip_prefix("listening on ")) {
                return url.trim().to_string();
            }
            assert!(
                Instant::now() < deadline,
                "API never came up:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The host's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    /// SIGKILL: the host dies without cleaning anything up.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Freezes the process (SIGSTOP) or thaws it (SIGCONT): `"STOP"`,
    /// `"CONT"`.
    pub fn signal(&self, signal: &str) {
        let Some(child) = &self.child else { return };
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(child.id().to_string())
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{signal} failed");
    }

    /// SIGTERM, then waits for the process to exit (up to `timeout`);
    /// returns its exit code.
    pub fn terminate(&mut self, timeout: Duration) -> Option<i32> {
        let mut child = self.child.take()?;
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(child.id().to_string())
            .status();
        let deadline = Instant::now() + timeout;
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                return status.code();
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("host did not exit within {timeout:?} of SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits up to `timeout` for the process to exit by itself (no signal
    /// sent); returns its exit code. Panics if it is still running then.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<i32> {
        let deadline = Instant::now() + timeout;
        let child = self.child.as_mut().expect("the host process was started");
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                self.child = None;
                return status.code();
            }
            assert!(
                Instant::now() < deadline,
                "the host did not exit within {timeout:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Resident memory of the running process, in bytes (from /proc).
    /// Panics when it cannot be read: a check on memory must not pass on
    /// a zero it did not measure.
    pub fn rss_bytes(&self) -> u64 {
        let child = self.child.as_ref().expect("the host process is running");
        let status = format!("/proc/{}/status", child.id());
        std::fs::read_to_string(&status)
            .unwrap_or_else(|e| panic!("cannot read {status}: {e}"))
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse::<u64>().ok())
            .map(|kb| kb * 1024)
            .unwrap_or_else(|| panic!("no VmRSS in {status}"))
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        match &mut self.child {
            Some(c) => matches!(c.try_wait(), Ok(None)),
            None => false,
        }
    }
}

impl Drop for HostProcess {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// The API tokens test hosts are started with.
pub mod tokens {
    /// Admin token.
    pub const ADMIN: &str = "admin-secret-0000000001";
    /// Producer token named `web`.
    pub const PRODUCER: &str = "producer-secret-000001";
    /// Another producer, named `other`.
    pub const OTHER_PRODUCER: &str = "producer-secret-000002";
    /// Reader token.
    pub const READER: &str = "reader-secret-00000001";
    /// Cron token.
    pub const CRON: &str = "cron-secret-000000001";

    /// The `--tokens` list.
    pub fn list() -> String {
        format!(
            "admin:ops:{ADMIN},producer:web:{PRODUCER},producer:other:{OTHER_PRODUCER},reader:dash:{READER},cron:scheduler:{CRON}"
        )
    }
}

/// Admin access to a Redis: deploy, bind, enqueue, inspect.
pub struct Admin {
    /// The registry.
    pub registry: Registry,
    /// The queues.
    pub queues: Arc<QueueService>,
    /// Airlock's own connection.
    pub store: Store,
}

impl Admin {
    /// Connects to `redis_url` with the default `bull` prefix.
    pub async fn connect(redis_url: &str) -> Admin {
        let store = Store::connect(redis_url, "bull").await.expect("store");
        let queues = Arc::new(QueueService::new(store.clone()));
        let sandbox = Arc::new(
            Sandbox::new(SandboxConfig {
                max_instances: 4,
                cache_dir: Some(crate::shared_cache_dir()),
                fleet_key: Some(
                    airlock::sandbox::ArtifactKey::fleet(TEST_FLEET_KEY.as_bytes())
                        .expect("test fleet key"),
                ),
                ..SandboxConfig::default()
            })
            .expect("sandbox"),
        );
        let registry = Registry::new(store.clone(), sandbox);
        Admin {
            registry,
            queues,
            store,
        }
    }

    /// Deploys the built guest `guest` as handler `name`.
    pub async fn deploy(&self, name: &str, guest: &str) -> String {
        self.registry
            .deploy(name, guest_bytes(guest), None)
            .await
            .expect("deploy")
            .digest
    }

    /// Binds `queue` to `handler` with a spec given as JSON (the `handler`
    /// field is filled in).
    pub async fn bind(&self, queue: &str, handler: &str, spec: serde_json::Value) {
        let mut spec = spec;
        spec["handler"] = serde_json::Value::from(handler);
        let spec: BindingSpec = serde_json::from_value(spec).expect("binding spec");
        self.registry.bind(queue, &spec, None).await.expect("bind");
    }

    /// Enqueues a job; options as BullMQ JSON.
    pub async fn enqueue(
        &self,
        queue: &str,
        name: &str,
        data: serde_json::Value,
        opts: serde_json::Value,
    ) -> String {
        let opts: JobOptions = serde_json::from_value(opts).expect("job options");
        self.queues
            .add(
                queue,
                NewJob {
                    name: name.into(),
                    data,
                    opts,
                    producer: None,
                    trace: None,
                    parent: None,
                },
            )
            .await
            .expect("enqueue")
            .id
    }

    /// The job's snapshot.
    pub async fn job(&self, queue: &str, id: &str) -> Option<JobSnapshot> {
        self.queues.get_job(queue, id).await.expect("get job")
    }

    /// Waits until the job is completed or failed (or `timeout` passes).
    pub async fn wait_finished(&self, queue: &str, id: &str, timeout: Duration) -> JobSnapshot {
        self.wait_for(queue, id, timeout, |j| {
            matches!(j.state, JobState::Completed | JobState::Failed)
        })
        .await
    }

    /// Waits until the job is completed or failed and its run's
    /// measurements (and a first run's pin) were recorded, which the
    /// host's recorder writes around the finish.
    pub async fn wait_recorded(&self, queue: &str, id: &str, timeout: Duration) -> JobSnapshot {
        self.wait_for(queue, id, timeout, |j| {
            matches!(j.state, JobState::Completed | JobState::Failed)
                && j.metrics.wall_time_ms.is_some()
        })
        .await
    }

    /// Waits until `pred` holds for the job.
    pub async fn wait_for(
        &self,
        queue: &str,
        id: &str,
        timeout: Duration,
        pred: impl Fn(&JobSnapshot) -> bool,
    ) -> JobSnapshot {
        let deadline = Instant::now() + timeout;
        loop {
            // Errors are retried: a test may restart Redis under our feet.
            if let Ok(Some(job)) = self.queues.get_job(queue, id).await
                && pred(&job)
            {
                return job;
            }
            if Instant::now() > deadline {
                panic!(
                    "job {queue}/{id} did not reach the expected state within {timeout:?}: {:#?}",
                    self.job(queue, id).await
                );
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// The job's BullMQ log lines.
    pub async fn logs(&self, queue: &str, id: &str) -> Vec<String> {
        self.queues
            .job_logs(queue, id, 0, 10_000)
            .await
            .expect("logs")
            .0
    }
}
