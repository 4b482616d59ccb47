//! Host-side bindings generated from `wit/airlock.wit` (`airlock:job@0.6.0`)
//! and from the pinned `airlock:job@0.5.0`, `@0.4.0`, `@0.3.0`, `@0.2.0` and
//! `@0.1.0` in `wit/deps/`, so handlers built against any of them link.
//! The bindings are of the `handler` world; a `batch-handler`'s extra
//! export, `run-batch`, is looked up by name (`crate::run::batch`), so one
//! linker and one pre-instantiation serve both worlds. Every import is async: a guest
//! waiting on Redis or the network is suspended, holding no thread.

wasmtime::component::bindgen!({
    world: "airlock:job/handler@0.6.0",
    path: "../../wit",
    imports: {
        // The only imports allowed to trap: a durable sleep, wait or
        // invoke stops the guest, and so do the calls that end the run
        // (`retry-after`, `rate-limit`) or refuse what the binding does
        // not allow (`enqueue`, `send-event`).
        "airlock:job/context.sleep-until": async | trappable,
        "airlock:job/context.wait-for-event": async | trappable,
        "airlock:job/context.wait-for-token": async | trappable,
        "airlock:job/context.enqueue": async | trappable,
        "airlock:job/context.invoke": async | trappable,
        "airlock:job/context.send-event": async | trappable,
        "airlock:job/context.retry-after": async | trappable,
        "airlock:job/context.rate-limit": async | trappable,
        default: async,
    },
    exports: { default: async },
});

/// The 0.5.0 contract: the same types and imports as 0.6.0's (which adds
/// only the `batch-handler` world), under their old names.
pub mod v0_5 {
    wasmtime::component::bindgen!({
        world: "airlock:job/handler@0.5.0",
        path: "../../wit",
        imports: {
            "airlock:job/context.sleep-until": async | trappable,
            "airlock:job/context.wait-for-event": async | trappable,
            "airlock:job/context.wait-for-token": async | trappable,
            "airlock:job/context.enqueue": async | trappable,
            "airlock:job/context.invoke": async | trappable,
            "airlock:job/context.send-event": async | trappable,
            "airlock:job/context.retry-after": async | trappable,
            "airlock:job/context.rate-limit": async | trappable,
            default: async,
        },
        exports: { default: async },
        with: {
            "airlock:job/types@0.5.0": super::airlock::job0_6_0::types,
        },
    });
}

/// The 0.4.0 contract: the same types (mapped onto 0.6.0's, which add
/// three), and `context` (without the calls that start work or end the
/// run) and `config` under their old names.
pub mod v0_4 {
    wasmtime::component::bindgen!({
        world: "airlock:job/handler@0.4.0",
        path: "../../wit",
        imports: {
            "airlock:job/context.sleep-until": async | trappable,
            "airlock:job/context.wait-for-event": async | trappable,
            "airlock:job/context.wait-for-token": async | trappable,
            default: async,
        },
        exports: { default: async },
        with: {
            "airlock:job/types@0.4.0": super::airlock::job0_6_0::types,
        },
    });
}

/// The 0.3.0 contract: the same types (mapped onto 0.6.0's, a superset),
/// and `context` (without `http-refusals`) and `config` under their old
/// names.
pub mod v0_3 {
    wasmtime::component::bindgen!({
        world: "airlock:job/handler@0.3.0",
        path: "../../wit",
        imports: {
            "airlock:job/context.sleep-until": async | trappable,
            "airlock:job/context.wait-for-event": async | trappable,
            "airlock:job/context.wait-for-token": async | trappable,
            default: async,
        },
        exports: { default: async },
        with: {
            "airlock:job/types@0.3.0": super::airlock::job0_6_0::types,
        },
    });
}

/// The 0.2.0 contract: the same types (mapped onto 0.6.0's, a superset),
/// and `context` (without waits) and `config` under their old names.
pub mod v0_2 {
    wasmtime::component::bindgen!({
        world: "airlock:job/handler@0.2.0",
        path: "../../wit",
        imports: {
            "airlock:job/context.sleep-until": async | trappable,
            default: async,
        },
        exports: { default: async },
        with: {
            "airlock:job/types@0.2.0": super::airlock::job0_6_0::types,
        },
    });
}

/// The 0.1.0 contract: the same types, and the `context` interface under
/// its old name.
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
            "airlock:job/types@0.1.0": super::airlock::job0_6_0::types,
        },
    });
}

pub use airlock::job0_6_0::types::{
    ChildEnd, ChildFailure, ChildOutcome, ChildResult, EventMatch, HostError, HttpRefusal,
    HttpRefusalKind, JobRef, LogLevel, NewJob, Progress,
};
