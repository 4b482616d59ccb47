//! The gate: flow control, the binding rules that decide when a job may
//! run, apart from running it. ("Flow" alone means a BullMQ flow of a
//! parent and its children, `queue::flows`.)
//!
//! - [`admission`]: before a guest starts, one decision (run holding its
//!   key slots, park, or fail): per-key rates and throttles, `singleton`,
//!   `keyConcurrency`, the end of a debounce burst, `cancelOn` indexing.
//! - [`enqueue`]: what the rules do to jobs as Airlock adds them
//!   (debounce, key reservations, held-back priority, hand-over), for the
//!   API and event deliveries alike.
//! - [`finish`]: the job's time to finish (`finishTimeoutMs`).
//! - [`pump`]: refills key lines whose slots came back by lease.
//! - [`recorded`]: key slots of ended runs, given back once BullMQ has
//!   recorded the end.
//! - [`keys`]: the values at a binding's key paths in a job's data.
//! - [`fairness`]: fair shares of the queue's capacity between tenants
//!   (`fairness`): each host's view of the tenants, their lines' refill,
//!   and the scan that moves a tenant's first job ahead of a backlog.
//! - [`why`]: why a job is not running yet (its key's line, a throttle, a
//!   durable sleep or wait, a delay, children, a paused queue).
//!
//! The Redis state these rules keep lives in `state::key_limits`,
//! `state::key_rates`, `state::debounces` and `state::cancels`, each owning
//! its keys; this module holds the decisions made with it.

pub mod admission;
pub mod enqueue;
pub mod fairness;
pub mod finish;
pub mod keys;
pub mod pump;
pub mod recorded;
pub mod why;

pub use self::admission::{Admission, Admit, Admitted};
pub use self::enqueue::{add_governed, add_to_queue};
pub use self::fairness::Tenants;
pub use self::finish::FinishDeadline;
pub use self::keys::keyed_data;
pub use self::pump::{KeyLines, pump};
pub use self::recorded::RecordedEnds;
pub use self::why::{Serving, WaitKind, WaitReason, Why};
