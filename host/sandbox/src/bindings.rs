//! Host-side bindings generated from `wit/airlock.wit`.

wasmtime::component::bindgen!({
    world: "handler",
    path: "../../wit",
    imports: {
        // The only import allowed to trap: a durable sleep stops the guest.
        "airlock:job/context.sleep-until": trappable,
    },
});

pub use airlock::job::types::{ChildOutcome, ChildResult, HostError, JobRef, LogLevel, Progress};
