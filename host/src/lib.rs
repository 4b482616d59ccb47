//! Airlock: runs untrusted background jobs as WebAssembly components on
//! BullMQ-compatible queues.
//!
//! - [`sandbox`] compiles handler components and runs each job in a fresh
//!   instance under fuel, memory and time limits.
//! - [`queue`] wraps BullMQ (the `bullmq-official` crate) behind Airlock types.
//! - [`state`] is Airlock's own Redis state beside BullMQ's: per-job
//!   fields, waits, key limits and rates, debounces, cancels, run tallies,
//!   one small type each.
//! - [`registry`] keeps handler components and queue bindings in Redis.
//! - [`worker`] runs bound queues: one BullMQ worker per queue, one sandbox
//!   instance per job.
//! - [`gate`] is flow control: the decision before a run (rates, key
//!   slots, singleton, fairness, cancelOn), the time to finish, the
//!   key-line pump.
//! - [`fleet`] registers hosts with a heartbeat and carries drain requests.
//! - [`store`] is Airlock's own Redis handle and key layout; [`error`] the
//!   typed errors below the API; [`tasks`] retries and task handles.
//! - `airlock-core` (re-exported in part as [`names`]) holds what every
//!   layer shares: time, JSON integers and paths, strict objects, field
//!   errors, names.
//! - [`delivery`] delivers events to the queues subscribed to them.
//! - [`replay`] runs a recorded job against another handler version and
//!   says how it differs.
//! - [`api`] is the HTTP API; [`metrics`] its Prometheus series.
//! - [`cli`] is the `airlock` command line.

pub mod access;
pub mod api;
pub mod audit;
pub mod cli;
pub mod delivery;
pub mod error;
pub mod fleet;
pub mod gate;
pub mod metrics;
pub mod queue;
pub mod registry;
pub mod replay;
pub mod state;
pub mod store;
pub mod tasks;
pub mod traces;
pub mod worker;

/// The names and ids Airlock accepts (in the `airlock-core` crate, which
/// every layer shares).
pub use airlock_core::names;

/// The sandbox runtime (the `airlock-sandbox` crate: wasmtime and WASI
/// only, no Redis, HTTP or queues).
pub use airlock_sandbox as sandbox;
