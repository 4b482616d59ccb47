//! What every layer of the Airlock host shares, and nothing that runs
//! anything: no wasmtime, no Redis, no HTTP. The sandbox, the queue code,
//! the registry, the API and the CLI all depend on this crate; it depends
//! on none of them, so shared pieces live here instead of in whichever
//! layer happened to need them first.
//!
//! - [`clock`]: wall-clock milliseconds as Airlock stores them, behind a
//!   [`clock::Clock`] a test can pause.
//! - [`int`]: integers the way JSON Schema counts them (`5` and `5.0`).
//! - [`json_path`]: `$.customer.id` paths into job and event data.
//! - [`strict`]: JSON objects stay objects (no arrays filled in by
//!   position).
//! - [`FieldError`]: input refused, naming the field.
//! - [`names`]: the queue, handler and id names Airlock accepts.
//! - [`job_ref`]: a job's address, `<queue>:<id>`, and its BullMQ key.
//! - [`limits`]: what bounds a run, in three layers (host maxima, a
//!   binding's limits, a job's override).
//! - [`failure`]: why a run failed ([`failure::FailureKind`]).
//! - [`hashing`]: every hash and HMAC over several parts, one framing each.
//! - [`run`]: the job a run is for and its outbound HTTP counts.
//! - [`wait`]: what a durable wait waits for and how it ended.
//! - [`seal`]: the producer seal, behind a trait.
//! - [`job_options`]: the options a job may be added with, and the subsets
//!   a binding, a flow node and a schedule take.

pub mod clock;
pub mod failure;
mod field;
pub mod hashing;
pub mod int;
pub mod job_options;
pub mod job_ref;
pub mod json_path;
pub mod limits;
pub mod names;
pub mod run;
pub mod seal;
pub mod strict;
pub mod wait;

pub use field::FieldError;
