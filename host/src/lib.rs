//! Airlock: runs untrusted background jobs as WebAssembly components on
//! BullMQ-compatible queues.
//!
//! - [`sandbox`] compiles handler components and runs each job in a fresh
//!   instance under fuel, memory and time limits.
//! - [`cli`] is the `airlock` command line.

pub mod cli;
pub mod sandbox;
