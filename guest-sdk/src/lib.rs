//! # Airlock guest SDK
//!
//! Write Airlock job handlers in plain Rust. A handler is a function from a
//! typed input (deserialised from the job's JSON data) to a typed output
//! (serialised as the job's return value):
//!
//! ```ignore
//! use airlock_guest::{Context, JobError};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Deserialize)]
//! struct Input { name: String }
//!
//! #[derive(Serialize)]
//! struct Output { greeting: String }
//!
//! fn greet(ctx: &Context, input: Input) -> Result<Output, JobError> {
//!     ctx.progress(50);
//!     ctx.info(format!("greeting {}", input.name));
//!     Ok(Output { greeting: format!("hello, {}", input.name) })
//! }
//!
//! airlock_guest::handler!(greet);
//! ```
//!
//! Build it with `cargo build --target wasm32-wasip2 --release` (crate type
//! `cdylib`) and the `.wasm` file is an Airlock handler component.
//!
//! What the SDK does for you:
//! - job data that does not fit the input type fails the job as *fatal*
//!   (retrying cannot fix it), naming the offending field;
//! - a panic fails the attempt as *retryable*, carrying the panic message;
//! - [`Context::step`] and [`Context::sleep`] give Inngest-style durable
//!   workflows: finished steps are recorded and never re-run, sleeps park the
//!   job without holding a worker;
//! - [`Context::kv`] is a small key-value store with TTL for idempotency;
//! - [`Context::children`] reads the results of a flow parent's children.

// The generated bindings refer to this crate by name so the `handler!` macro
// works from any crate that depends on it.
extern crate self as airlock_guest;

mod batch;
mod context;
mod error;
pub mod http;
mod kv;
mod run;
mod wait;
mod work;

/// Bindings generated from `wit/airlock.wit`. Handler authors do not need
/// them; they are public for the `handler!` macro and for advanced use.
pub mod bindings {
    wit_bindgen::generate!({
        world: "handler",
        path: "../wit/airlock.wit",
        pub_export_macro: true,
        export_macro_name: "__export_handler_world",
        default_bindings_module: "airlock_guest::bindings",
        runtime_path: "airlock_guest::__private::wit_bindgen::rt",
    });
}

/// Bindings of the `batch-handler` world (`run` and `run-batch`), sharing
/// [`bindings`]' interfaces; public for the `batch_handler!` macro.
pub mod batch_bindings {
    wit_bindgen::generate!({
        world: "batch-handler",
        path: "../wit/airlock.wit",
        pub_export_macro: true,
        export_macro_name: "__export_batch_handler_world",
        default_bindings_module: "airlock_guest::batch_bindings",
        runtime_path: "airlock_guest::__private::wit_bindgen::rt",
        with: {
            "airlock:job/types@0.6.0": crate::bindings::airlock::job::types,
            "airlock:job/context@0.6.0": crate::bindings::airlock::job::context,
            "airlock:job/config@0.6.0": crate::bindings::airlock::job::config,
        },
    });
}

pub use batch::BatchJob;
pub use context::{ChildOutcome, ChildResult, Context, JobInfo, JobRef, Level};
pub use error::JobError;
pub use http::{Http, HttpError, Response};
pub use kv::Kv;
pub use run::{decode, event_payload};
pub use wait::{Event, Match};
pub use work::{ChildEnd, ChildFailure, FanOut, InvokeError, NewJob};

/// Items the [`handler!`] macro needs; not part of the stable API.
#[doc(hidden)]
pub mod __private {
    pub use crate::batch::{run_batch_handler, run_one};
    pub use crate::run::run_handler;
    pub use wit_bindgen;
}

/// Exports a handler function as the component's `run` export.
///
/// The function takes `&Context` and an input type implementing
/// `serde::de::DeserializeOwned`, and returns `Result<O, JobError>` where
/// `O: serde::Serialize`. Use it once per crate.
#[macro_export]
macro_rules! handler {
    ($handler:path) => {
        const _: () = {
            struct AirlockHandler;

            impl $crate::bindings::Guest for AirlockHandler {
                fn run(
                    job: $crate::bindings::airlock::job::types::Job,
                ) -> ::core::result::Result<
                    ::std::string::String,
                    $crate::bindings::airlock::job::types::JobError,
                > {
                    $crate::__private::run_handler(job, $handler)
                }
            }

            $crate::bindings::__export_handler_world!(AirlockHandler with_types_in $crate::bindings);
        };
    };
}

/// Exports a batch function as the component's `run-batch` (the
/// `batch-handler` world, what a queue bound with `batch` needs) and `run`
/// (a batch of one). See [`BatchJob`] and the `batch` module docs.
///
/// The function takes `&Context` and `Vec<BatchJob<I>>` (`I` implementing
/// `serde::de::DeserializeOwned`) and returns one `Result<O, JobError>`
/// per job, in order (`O: serde::Serialize`). Use it once per crate,
/// instead of [`handler!`].
#[macro_export]
macro_rules! batch_handler {
    ($handler:path) => {
        const _: () = {
            struct AirlockBatchHandler;

            impl $crate::batch_bindings::Guest for AirlockBatchHandler {
                fn run(
                    job: $crate::bindings::airlock::job::types::Job,
                ) -> ::core::result::Result<
                    ::std::string::String,
                    $crate::bindings::airlock::job::types::JobError,
                > {
                    $crate::__private::run_one(job, $handler)
                }

                fn run_batch(
                    jobs: ::std::vec::Vec<$crate::bindings::airlock::job::types::Job>,
                ) -> ::std::vec::Vec<
                    ::core::result::Result<
                        ::std::string::String,
                        $crate::bindings::airlock::job::types::JobError,
                    >,
                > {
                    $crate::__private::run_batch_handler(jobs, $handler)
                }
            }

            $crate::batch_bindings::__export_batch_handler_world!(AirlockBatchHandler with_types_in $crate::batch_bindings);
        };
    };
}
