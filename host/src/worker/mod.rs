//! The queue host: turns bound queues into BullMQ workers whose jobs run in
//! the sandbox.
//!
//! - [`supervisor`] watches the registry and keeps one worker per bound
//!   queue, with the binding's concurrency, picking up changes live;
//! - [`membership`] publishes this host's heartbeat and hears its drain
//!   requests, on a task of its own;
//! - [`batches`] gathers the jobs of a queue bound with `batch` into
//!   groups and runs each group in one call of its handler's `run-batch`;
//! - [`executor`] runs one job, in phases: admit (flow control), load
//!   (read the job's pin only when it may carry one, the component, a
//!   permit), run (on the sandbox's runtime once the guest first yields),
//!   finish (the run's record, what BullMQ is told);
//! - [`recorder`] writes finished runs' records (measurements, history,
//!   first runs' pins) onto their jobs, batched, and sums the queue's
//!   tallies, added once a second;
//! - [`services`] backs the guest's durable imports with Redis;
//! - [`reporter`] writes progress and logs into BullMQ: at the end of a
//!   short run, as they come for one that goes on;
//! - [`loader`] fetches and compiles components once per digest, sharing
//!   precompiled artifacts with the fleet through Redis;
//! - [`capacity`] keeps the host within its instance slots and memory budget;
//! - [`cancels`] follows the fleet's cancel stream and stops the runs it
//!   names;
//! - [`recovery`] gives a dead host's jobs and key slots back within
//!   seconds of its death.

pub mod batches;
pub mod cancels;
pub mod capacity;
pub mod executor;
pub mod loader;
pub mod membership;
pub mod on_failure;
pub mod recorder;
pub mod recovery;
pub mod reporter;
pub mod services;
pub mod starts;
pub mod supervisor;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize};

use crate::metrics::Metrics;
use crate::queue::{QueueService, WorkerSettings};
use crate::registry::Registry;
use crate::sandbox::Sandbox;

/// [`HostContext::applied_generation`] before the first reconcile.
pub const NO_GENERATION: u64 = u64::MAX;

/// What every worker of this host shares.
pub struct HostContext {
    /// This host's id (also the BullMQ worker name).
    pub host_id: String,
    /// The sandbox.
    pub sandbox: Arc<Sandbox>,
    /// Handlers and bindings.
    pub registry: Registry,
    /// The queues.
    pub queues: Arc<QueueService>,
    /// Component loading.
    pub loader: loader::ComponentLoader,
    /// Metrics.
    pub metrics: Arc<Metrics>,
    /// Lock and stalled-check settings for every worker (concurrency comes
    /// from each binding).
    pub worker_settings: WorkerSettings,
    /// Room for running guests.
    pub capacity: capacity::Capacity,
    /// Jobs running now on this host.
    pub running: AtomicUsize,
    /// The registry generation the supervisor last applied in full
    /// ([`NO_GENERATION`] until the first), published with the heartbeat.
    pub applied_generation: AtomicU64,
    /// The fleet registry (hosts, drain requests).
    pub fleet: crate::fleet::Fleet,
    /// What the operator lets any job reach (`--egress-allow`,
    /// `--egress-allow-network`).
    pub egress: Arc<crate::sandbox::egress::OperatorEgress>,
    /// Whether this process runs jobs (no `--no-workers`): its operator
    /// list is then the one its jobs' requests meet, and binding a rule
    /// outside it is refused.
    pub runs_jobs: bool,
    /// The fleet's secrets key (`--secrets-key-file`), if this host has it.
    pub secrets_key: Option<crate::sandbox::secrets::SecretsKey>,
    /// The runs a cancel can stop (followed by [`cancels::listen`]).
    pub cancels: Arc<cancels::Cancels>,
    /// Where this host exports traces (`OTEL_EXPORTER_OTLP_*ENDPOINT`);
    /// `None`: it does not, and runs note nothing for them.
    pub traces: Option<Arc<crate::traces::Traces>>,
}
