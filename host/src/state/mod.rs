//! Airlock's own Redis state, apart from BullMQ's: the keys and job-hash
//! fields Airlock adds beside the queues the port (`crate::queue`) runs.
//!
//! Each concern is one small type that owns its keys (built by
//! [`crate::store::Keys`], listed in docs/ARCHITECTURE.md) and its Lua
//! scripts, and reads what it stores as untrusted input: any BullMQ
//! producer can write to Redis.
//!
//! | type | what it keeps |
//! |---|---|
//! | [`meta::Meta`] | a job's producer, seal, limits, pinned digest, step, sleep and wait records (`airlock.*` fields, [`fields`]), and the pending hash that carries them across an add |
//! | [`runs::Runs`] | each run's measurements and history, the queues' per-minute tallies |
//! | [`waits::Waits`], [`waits::Resolver`] | durable waits: their records, the index events and tokens find them by |
//! | [`events::EventLog`] | the fleet's recent *sent events* |
//! | [`key_limits::KeyLimits`] | `keyConcurrency` and `singleton`: slots (leases), lines, parking; a host's operations on them written in batches (`key_batches`) |
//! | [`key_rates::KeyRates`] | `keyThrottle` and `keyRateLimit`: GCRA arrival times and grants |
//! | [`debounces::Debounces`] | `debounce`: when each key's burst began |
//! | [`cancels::Cancels`] | the cancel stream and the `cancelOn` index |
//!
//! Nothing here calls BullMQ (two scripts write BullMQ's `processedOn` on
//! a job hash: a key slot's acquire and a throttle's admission). Where a
//! decision needs a job moved — a
//! freed slot reserved for a parked job ([`key_limits::Released`]), a wait
//! resolved ([`waits::Wake`]) — the state answers it and the queue module
//! moves the job. Types whose behaviour is a matter of time (leases,
//! rates, bursts, tallies) read it through a
//! [`Clock`](airlock_core::clock::Clock), so a test can hold
//! time still.

pub mod cancels;
pub mod debounces;
pub mod events;
pub mod fields;
pub mod invoke_deadlines;
mod key_batches;
pub mod key_limits;
pub mod key_rates;
pub mod meta;
pub mod runs;
pub mod waits;

use airlock_core::clock::SharedClock;

use crate::store::Store;

/// A key name's part for text that may be long or come from Redis: the
/// SHA-256 of `parts` (each ended by a NUL, so no two lists of parts
/// collide), in hex. The waits' index and token keys and an event's record
/// of what it did are named by it.
pub(crate) fn digest(parts: &[&str]) -> String {
    airlock_core::hashing::terminated(parts)
}

/// Every state type on one Redis, sharing its connection and one clock.
#[derive(Clone)]
pub struct State {
    /// Per-job fields and the pending hash.
    pub meta: meta::Meta,
    /// Run records and tallies.
    pub runs: runs::Runs,
    /// Resolving waits from outside their job.
    pub waits: waits::Resolver,
    /// The recent-events stream.
    pub events: events::EventLog,
    /// Per-key concurrency and singletons.
    pub key_limits: key_limits::KeyLimits,
    /// Per-key throttles and rate limits.
    pub key_rates: key_rates::KeyRates,
    /// Debounce bursts.
    pub debounces: debounces::Debounces,
    /// The cancel stream and index.
    pub cancels: cancels::Cancels,
    /// The deadlines of invokes waiting for their children.
    pub invoke_deadlines: invoke_deadlines::InvokeDeadlines,
    /// The clock all of these read, for the decisions made beside them
    /// (`gate::admission` parks a job until a time it reads here).
    pub clock: SharedClock,
}

impl State {
    /// The state on `store`'s Redis, timed by `clock`.
    pub fn new(store: Store, clock: SharedClock) -> Self {
        State {
            meta: meta::Meta::new(store.clone()),
            runs: runs::Runs::new(store.clone(), clock.clone()),
            waits: waits::Resolver::new(store.clone()),
            events: events::EventLog::new(store.clone()),
            key_limits: key_limits::KeyLimits::new(store.clone(), clock.clone()),
            key_rates: key_rates::KeyRates::new(store.clone(), clock.clone()),
            debounces: debounces::Debounces::new(store.clone(), clock.clone()),
            invoke_deadlines: invoke_deadlines::InvokeDeadlines::new(store.clone()),
            cancels: cancels::Cancels::new(store),
            clock,
        }
    }

    /// Every script of Airlock's state by name, with its SHA1: what
    /// `EVALSHA` calls a benchmark sees on Redis are attributed with this.
    /// (The cancel mark, `queue::cancel`, is the adapter's and not listed.)
    pub fn script_hashes() -> Vec<(&'static str, String)> {
        [
            meta::script_hashes(),
            runs::script_hashes(),
            key_limits::script_hashes(),
            key_rates::script_hashes(),
            debounces::script_hashes(),
            waits::script_hashes(),
        ]
        .concat()
    }
}
