//! Prometheus metrics of this host: jobs by outcome and failure kind, run
//! durations, fuel, memory and outbound HTTP per queue, plus gauges filled at scrape time
//! (queue depths, live hosts).

use std::sync::Mutex;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::sandbox::{Completion, RunOutcome};

/// Labels of per-queue series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct QueueLabel {
    /// Queue name.
    pub queue: String,
}

/// Labels of the job outcome counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OutcomeLabels {
    /// Queue name.
    pub queue: String,
    /// `completed`, `failed` or `suspended`.
    pub outcome: String,
}

/// Labels of the failure counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct FailureLabels {
    /// Queue name.
    pub queue: String,
    /// Failure kind (`fuel_exhausted`, `guest_retry`, ...).
    pub kind: String,
}

/// Labels of the outbound HTTP byte counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct HttpBytesLabels {
    /// Queue name.
    pub queue: String,
    /// `out` (request bodies) or `in` (response bodies).
    pub direction: String,
}

/// Labels of the queue depth gauge.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DepthLabels {
    /// Queue name.
    pub queue: String,
    /// Job state.
    pub state: String,
}

fn duration_histogram() -> Histogram {
    // 100 µs .. ~100 s
    Histogram::new(exponential_buckets(0.0001, 4.0, 11))
}

fn fuel_histogram() -> Histogram {
    // 10k .. ~10^13 fuel
    Histogram::new(exponential_buckets(10_000.0, 10.0, 10))
}

fn memory_histogram() -> Histogram {
    // 64 KiB .. 4 GiB
    Histogram::new(exponential_buckets(65_536.0, 4.0, 9))
}

/// All series of this host.
pub struct Metrics {
    registry: Mutex<Registry>,
    jobs: Family<OutcomeLabels, Counter>,
    failures: Family<FailureLabels, Counter>,
    duration: Family<QueueLabel, Histogram, fn() -> Histogram>,
    fuel: Family<QueueLabel, Histogram, fn() -> Histogram>,
    memory: Family<QueueLabel, Histogram, fn() -> Histogram>,
    http_requests: Family<QueueLabel, Counter>,
    http_refused: Family<QueueLabel, Counter>,
    http_bytes: Family<HttpBytesLabels, Counter>,
    /// Jobs per queue and state, refreshed when scraped.
    pub queue_depth: Family<DepthLabels, Gauge>,
    /// Live hosts in the fleet, refreshed when scraped.
    pub hosts: Gauge,
    /// Components this host compiled from source (not loaded precompiled),
    /// refreshed when scraped.
    pub compilations: Gauge,
    /// Precompiled artifacts this host refused (bad authentication tag),
    /// refreshed when scraped.
    pub artifacts_refused: Gauge,
    /// Registry entries this host refused (seal missing, forged or
    /// replayed; see `registry::seal`), refreshed when scraped.
    pub registry_refused: Gauge,
    /// Managed API token records this host refused (seal missing, forged
    /// or replayed; see `access`), refreshed when scraped.
    pub api_tokens_refused: Gauge,
    /// Audit entries this host failed to write (see `audit`), refreshed
    /// when scraped.
    pub audit_write_failures: Gauge,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Registers every series.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("airlock");
        let jobs = Family::<OutcomeLabels, Counter>::default();
        let failures = Family::<FailureLabels, Counter>::default();
        let duration = Family::<QueueLabel, Histogram, fn() -> Histogram>::new_with_constructor(
            duration_histogram,
        );
        let fuel = Family::<QueueLabel, Histogram, fn() -> Histogram>::new_with_constructor(
            fuel_histogram,
        );
        let memory = Family::<QueueLabel, Histogram, fn() -> Histogram>::new_with_constructor(
            memory_histogram,
        );
        let http_requests = Family::<QueueLabel, Counter>::default();
        let http_refused = Family::<QueueLabel, Counter>::default();
        let http_bytes = Family::<HttpBytesLabels, Counter>::default();
        let queue_depth = Family::<DepthLabels, Gauge>::default();
        let hosts = Gauge::default();
        let compilations = Gauge::default();
        let artifacts_refused = Gauge::default();
        let registry_refused = Gauge::default();
        let api_tokens_refused = Gauge::default();
        let audit_write_failures = Gauge::default();
        registry.register("jobs", "Job runs by queue and outcome", jobs.clone());
        registry.register(
            "job_failures",
            "Failed job runs by queue and failure kind",
            failures.clone(),
        );
        registry.register(
            "job_duration_seconds",
            "Wall time of job runs (sandbox)",
            duration.clone(),
        );
        registry.register("job_fuel", "Fuel used by metered job runs", fuel.clone());
        registry.register(
            "job_peak_memory_bytes",
            "Peak linear memory of job runs",
            memory.clone(),
        );
        registry.register(
            "http_requests",
            "Outbound HTTP requests guests sent, by queue",
            http_requests.clone(),
        );
        registry.register(
            "http_refused",
            "Outbound HTTP requests refused before sending (egress rules, address check, request cap), by queue",
            http_refused.clone(),
        );
        registry.register(
            "http_bytes",
            "Outbound HTTP body bytes by queue and direction (out: request bodies, in: response bodies)",
            http_bytes.clone(),
        );
        registry.register(
            "queue_jobs",
            "Jobs per queue and state",
            queue_depth.clone(),
        );
        registry.register("hosts", "Live hosts in the fleet", hosts.clone());
        registry.register(
            "components_compiled",
            "Components this host compiled from source since it started",
            compilations.clone(),
        );
        registry.register(
            "artifacts_refused",
            "Precompiled artifacts this host refused since it started (authentication tag did not verify)",
            artifacts_refused.clone(),
        );
        registry.register(
            "registry_refused",
            "Registry entries (bindings, handler versions) this host refused since it started: no seal, a forged one, or an older version than one it verified",
            registry_refused.clone(),
        );
        registry.register(
            "api_tokens_refused",
            "Managed API token records this host refused since it started: no seal, a forged one, or an older version than one it verified",
            api_tokens_refused.clone(),
        );
        registry.register(
            "audit_write_failures",
            "Audit entries this host failed to write since it started (the changes they record were made)",
            audit_write_failures.clone(),
        );
        Metrics {
            registry: Mutex::new(registry),
            jobs,
            failures,
            duration,
            fuel,
            memory,
            http_requests,
            http_refused,
            http_bytes,
            queue_depth,
            hosts,
            compilations,
            artifacts_refused,
            registry_refused,
            api_tokens_refused,
            audit_write_failures,
        }
    }

    /// The series of `queue`, resolved once so that recording a run takes
    /// no label allocation or family lookup.
    pub fn queue(&self, queue: &str) -> QueueMetrics {
        let label = QueueLabel {
            queue: queue.to_string(),
        };
        let outcome = |outcome: &str| {
            self.jobs
                .get_or_create(&OutcomeLabels {
                    queue: queue.to_string(),
                    outcome: outcome.to_string(),
                })
                .clone()
        };
        QueueMetrics {
            completed: outcome("completed"),
            failed: outcome("failed"),
            suspended: outcome("suspended"),
            failures: self.failures.clone(),
            queue: queue.to_string(),
            duration: self.duration.get_or_create(&label).clone(),
            fuel: self.fuel.get_or_create(&label).clone(),
            memory: self.memory.get_or_create(&label).clone(),
            http_requests: self.http_requests.get_or_create(&label).clone(),
            http_refused: self.http_refused.get_or_create(&label).clone(),
            http_bytes_out: self.http_bytes(queue, "out"),
            http_bytes_in: self.http_bytes(queue, "in"),
        }
    }

    fn http_bytes(&self, queue: &str, direction: &str) -> Counter {
        self.http_bytes
            .get_or_create(&HttpBytesLabels {
                queue: queue.to_string(),
                direction: direction.to_string(),
            })
            .clone()
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let registry = self.registry.lock().unwrap();
        let _ = prometheus_client::encoding::text::encode(&mut out, &registry);
        out
    }
}

/// One queue's series (handles into [`Metrics`]' families).
#[derive(Clone)]
pub struct QueueMetrics {
    completed: Counter,
    failed: Counter,
    suspended: Counter,
    /// Failures are rare: their series is looked up per failure.
    failures: Family<FailureLabels, Counter>,
    queue: String,
    duration: Histogram,
    fuel: Histogram,
    memory: Histogram,
    http_requests: Counter,
    http_refused: Counter,
    http_bytes_out: Counter,
    http_bytes_in: Counter,
}

impl QueueMetrics {
    /// Records one run.
    pub fn record(&self, outcome: &RunOutcome) {
        match &outcome.completion {
            Completion::Completed(_) => self.completed.inc(),
            Completion::Failed(f) => {
                self.failures
                    .get_or_create(&FailureLabels {
                        queue: self.queue.clone(),
                        kind: f.kind.as_str().to_string(),
                    })
                    .inc();
                self.failed.inc()
            }
            Completion::Suspended { .. } | Completion::Later(_) => self.suspended.inc(),
        };
        self.duration.observe(outcome.wall_time.as_secs_f64());
        if let Some(fuel) = outcome.fuel_used {
            self.fuel.observe(fuel as f64);
        }
        self.memory.observe(outcome.peak_memory_bytes as f64);
        let http = &outcome.http;
        if http.requests + http.refused > 0 {
            self.http_requests.inc_by(http.requests);
            self.http_refused.inc_by(http.refused);
            self.http_bytes_out.inc_by(http.bytes_out);
            self.http_bytes_in.inc_by(http.bytes_in);
        }
    }
}
