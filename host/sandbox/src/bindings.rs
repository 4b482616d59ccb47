//! Host-side bindings generated from `wit/airlock.wit` (`airlock:job@0.2.0`)
//! and from the pinned `airlock:job@0.1.0` in `wit/deps/`, so handlers built
//! against either link. Every import is async: a guest waiting on Redis or
//! the network is suspended, holding no thread.

wasmtime::component::bindgen!({
    world: "airlock:job/handler@0.2.0",
    path: "../../wit",
    imports: {
        // The only import allowed to trap: a durable sleep stops the guest.
        "airlock:job/context.sleep-until": async | trappable,
        default: async,
    },
    exports: { default: async },
});

/// The 0.1.0 contract: the same types (mapped onto 0.2.0's, which are
/// identical), and the `context` interface under its old name.
pub mod v0_1 {
    wasmtime::component::bindgen!({
        world: "airlock:job/handler@0.1.0",
        path: "../../wit",
        imports: {
            "airlock:job/context.sleep-until": async | trappable,
            default: async,
        },
        exports: { default: async },
        with: {
            "airlock:job/types@0.1.0": super::airlock::job0_2_0::types,
        },
    });
}

pub use airlock::job0_2_0::types::{
    ChildOutcome, ChildResult, HostError, JobRef, LogLevel, Progress,
};
