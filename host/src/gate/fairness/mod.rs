//! Fair shares between tenants (a binding's `fairness`): the queue's fleet
//! capacity, its `globalConcurrency`, is shared between the tenants that
//! have jobs running or waiting — a tenant is the API token that
//! enqueued a job, as Airlock's seal on the job proves ([`job_tenant`]), or
//! the value at the rule's path in a job's data — in proportion to their
//! weights.
//!
//! **Shares are slots.** A tenant's share is max-min fair by weight: the
//! tenant asking wants as many slots as it can get, and so does every
//! tenant with jobs in line or at either end of the wait list or of the
//! jobs held back behind it (as the host's last scan read them); any other tenant wants one more than it
//! holds (its next jobs may be in the middle of the wait list, which no
//! scan reads). Those that want less than an even split (by weight) get
//! what they want, and the rest of the capacity is split by weight between
//! the others — at least 1 slot. A job takes one of its tenant's slots
//! before its guest starts, before its key slots — the same leased slots,
//! line and parking as a `keyConcurrency` key (`state::key_limits`, under
//! the tenant's own hash, `t…`), with the tenant's share as the key's
//! limit. A tenant running its share parks its next jobs in its line; its
//! slots come back as its jobs end, and its line is refilled up to its
//! share, the jobs a slot is reserved for going to the front of the wait
//! list (`state::key_limits::Released::to_front`). A tenant alone has the
//! whole capacity; when another tenant arrives, the first one's share
//! shrinks and its runs above the new share are not stopped: it starts no
//! new job until it is back under it. Sharing running slots charges each
//! tenant by the wall time its jobs hold them, not by their number: a
//! tenant of 10-second jobs and one of 10 ms jobs, both with jobs waiting,
//! each hold half the slots, so each gets half of the fleet's time.
//!
//! **What each host knows.** Every 100 ms ([`REFRESH`]) each host serving
//! the queue reads every known tenant's slots and line (`kc:tenants`, plus
//! the tenants in `kc:lines`; one pipeline of three counts per tenant),
//! keeps them, with the tenants its last scan saw in the wait list, as the
//! view its admissions compute shares from, and refills from that view the
//! line of every tenant under its share (a share grows when another
//! tenant leaves, and a job of a tenant that waits in line must not wait
//! for one of its own jobs to end: this is what keeps the capacity in
//! use). A tenant whose slots and line stayed empty for [`FORGET_AFTER`]
//! leaves the work list; a host adds a tenant to it at most once per
//! [`REGISTER_EVERY`] when its jobs take slots. So a view is at most one
//! refresh old (and counts this host's own takes and releases of tenants'
//! slots since, [`TenantShare::taken`], [`TenantShare::released`]), and a
//! tenant that was dropped from the list while a host
//! still had it registered is missing from the views (so the others'
//! shares are larger) for at most
//! [`REGISTER_EVERY`] — unless it has jobs in line, which brings it back
//! at the next refresh.
//!
//! **A tenant's first job jumps the backlog.** BullMQ's wait list is first
//! in, first out, and a producer — the API or Node's `queue.addBulk` —
//! can put 100,000 jobs of one tenant ahead of another tenant's first job.
//! Every 10 ms ([`SCAN`]) each host reads the newest [`NEWEST`] and the
//! next [`NEXT`] ids of the wait list and of the jobs held back behind it
//! (`gate::enqueue` holds back a job whose key is full at its add: BullMQ's
//! prioritized set, which workers take from once the wait list is empty;
//! `queue::wait_order`), reads the
//! tenant of the ones it has not seen (by producer, the name as Redis holds
//! it, seal unchecked: a scan only orders the wait list, which any Redis
//! writer can, and admission checks the seal before a job takes a turn),
//! and moves to the front of the wait list the jobs of
//! tenants that have none among the next ones workers take and are not in
//! line — at most their share's room and [`AHEAD`] more, and at most
//! [`MAX_JUMPS`] per tenant per scan. Such a job is then taken next, and
//! admitted as its tenant's share allows. A slot of a
//! tenant whose jobs are buried that comes back on this host wakes the
//! scan at once ([`TenantShare::released`]). A job that ends up more than
//! [`NEWEST`] entries deep before a scan sees it (a burst of more than 256
//! jobs added within one scan after it) waits for the workers to reach it.
//!
//! Cost: the scan is two `LRANGE`s and two `ZRANGEBYSCORE`s per 10 ms per
//! host, and once more when a buried tenant's slot comes back, one `HGET` of the
//! data (by producer, two of its producer: the job's hash and its pending
//! claim) of each job it has not seen (every job once per host, as it is
//! added or reaches the front), and one script call moving the jobs of
//! the wait list that jump (a read and the port's `changePriority` per
//! held-back job that jumps); the refresh is two round trips per 100 ms per host (the lists,
//! then the counts); a governed job adds one batched operation to its take
//! and one to its release (its tenant's slot), and a job over its tenant's
//! share is parked and promoted like a job over its key's limit.
//!
//! Crash windows: a tenant's slots are a key's: see `state::key_limits`.
//! Redis is untrusted input: a forged work list or line can
//! move turns between tenants, no more than deleting their jobs could.

mod refresh;
mod scan;
mod view;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use serde_json::Value;

pub use self::refresh::share_now;
pub use self::view::TenantView;
use self::view::View;
use super::keys::{KeyGate, OnFull};
use crate::error::QueueError;
use crate::queue::{QueueService, RunningJob};
use crate::registry::{Binding, Fairness, TenantOf};
use crate::state::key_limits::KeySlot;
use crate::tasks::AbortOnDrop;

/// How often each host reads the tenants' slots and lines.
pub const REFRESH: Duration = Duration::from_millis(100);
/// How often each host scans the wait list for buried first jobs.
pub const SCAN: Duration = Duration::from_millis(10);
/// How many of the newest wait-list entries a scan reads.
pub const NEWEST: usize = 256;
/// How many of the next-to-run wait-list entries a scan reads.
pub const NEXT: usize = 32;
/// Most jobs of one tenant a scan moves to the front.
pub const MAX_JUMPS: u64 = 16;
/// How many jobs beyond its room a scan moves up for a tenant without a
/// line: one is at the front when a slot of its comes back, so the worker
/// that freed it takes the tenant's job rather than another tenant's that
/// it can only park; one the tenant has no room for waits in its line, and
/// the tenant's own releases refill it from there.
pub const AHEAD: u64 = 2;
/// How often a host adds a tenant whose jobs take slots to the work list.
pub const REGISTER_EVERY: Duration = Duration::from_secs(1);
/// How long a tenant with no slots and no line stays in the work list.
pub const FORGET_AFTER: Duration = Duration::from_secs(2);

/// The tenant slot of a job whose tenant is `value`.
pub fn tenant_slot(queue: &str, value: &Value) -> KeySlot {
    KeySlot::of(queue, value).tenant()
}

/// The tenant of a job with this `producer` (its checked name, `None`
/// without a sealed one) under fairness by producer: the name, or `null`.
pub fn producer_tenant(producer: Option<String>) -> Value {
    producer.map_or(Value::Null, Value::String)
}

/// The tenant under `rule` of job `id` of `queue` with this `data`: the
/// value at the rule's path in it, or, by producer, the API token that
/// enqueued the job when Airlock's seal on the job says so (`sealed`
/// gives the job's name and its data as BullMQ holds it, which the seal
/// covers; asked only then). The producer fields are read from Redis,
/// where anyone can write them, so a job whose seal is missing or does not
/// verify (or a host without the secrets key, which cannot tell) is taken
/// as having no producer: the tenant `null`. `None`, by path, without a
/// value there.
pub async fn job_tenant(
    queues: &QueueService,
    rule: &Fairness,
    (queue, id): (&str, &str),
    data: Option<&Value>,
    sealed: impl FnOnce() -> (String, String),
) -> Result<Option<Value>, QueueError> {
    match &rule.tenant {
        TenantOf::Path(path) => Ok(data.and_then(|d| path.get(d)).cloned()),
        TenantOf::Producer => {
            let meta = &queues.state().meta;
            let producer = meta.producer_of(queue, id).await?;
            let (name, data_text) = sealed();
            let checked = meta.verified(&producer, queue, id, &name, &data_text);
            Ok(Some(producer_tenant(checked)))
        }
    }
}

/// A tenant's share as this host's view has it when asked: a run's tenant
/// slot refills the tenant's line up to it when it goes back, so a tenant
/// whose share shrank while its job ran does not get its old share back.
#[derive(Clone)]
pub struct TenantShare {
    inner: Arc<Inner>,
    weight: u32,
    capacity: u64,
}

impl TenantShare {
    /// The share of the tenant of slot hash `hash` now.
    pub fn now(&self, hash: &str) -> u64 {
        let view = self.inner.view.read().unwrap();
        view.share(hash, self.weight, self.capacity)
    }

    /// This host's run took a slot of tenant `hash` (see [`View::taken`]).
    pub fn taken(&self, hash: &str) {
        self.inner.view.write().unwrap().taken(hash);
    }

    /// This host's run gave a slot of tenant `hash` back (see
    /// [`View::released`]); a tenant whose next jobs are buried in the
    /// wait list gets a scan now, so its next job starts without waiting
    /// for the scan's tick.
    pub fn released(&self, hash: &str) {
        if self.inner.view.write().unwrap().released(hash) {
            self.inner.rescan.notify_one();
        }
    }
}

/// One queue's tenants on this host: the view its admissions read, kept
/// fresh (and the lines refilled, the wait list scanned) by two tasks that
/// run while the queue's binding has `fairness` ([`Tenants::follow_rule`])
/// and end with it.
pub struct Tenants {
    inner: Arc<Inner>,
    lease: Duration,
    /// The binding's `fairness` and `globalConcurrency` as they are now.
    rule: Arc<Rule>,
    /// The refresh and the scan, while the binding has `fairness`.
    tasks: Mutex<Option<[AbortOnDrop; 2]>>,
}

type Rule = dyn Fn() -> Option<(Fairness, u64)> + Send + Sync;

struct Inner {
    queues: Arc<QueueService>,
    queue: String,
    view: RwLock<View>,
    /// When this host last added each tenant to the work list.
    registered: Mutex<HashMap<String, Instant>>,
    /// Wakes the scan before its tick: a buried tenant's slot came back.
    rescan: tokio::sync::Notify,
}

impl Tenants {
    /// The tenants of `queue`; `rule` gives its binding's `fairness` and
    /// `globalConcurrency` as they are now. Nothing runs until
    /// [`Tenants::follow_rule`] finds a rule.
    pub fn new(
        queues: Arc<QueueService>,
        queue: &str,
        lease: Duration,
        rule: impl Fn() -> Option<(Fairness, u64)> + Send + Sync + 'static,
    ) -> Tenants {
        Tenants {
            inner: Arc::new(Inner {
                queues,
                queue: queue.to_string(),
                view: RwLock::default(),
                registered: Mutex::default(),
                rescan: tokio::sync::Notify::new(),
            }),
            lease,
            rule: Arc::new(rule),
            tasks: Mutex::new(None),
        }
    }

    /// Starts the refresh and the scan when the binding has `fairness` and
    /// they are not running, and stops them when it has not: a queue
    /// without the rule pays nothing for it.
    pub fn follow_rule(&self) {
        let wanted = (self.rule)().is_some();
        let mut tasks = self.tasks.lock().unwrap_or_else(|p| p.into_inner());
        match (wanted, tasks.is_some()) {
            (true, false) => {
                let refresh = {
                    let (inner, rule, lease) = (self.inner.clone(), self.rule.clone(), self.lease);
                    tokio::spawn(async move { inner.refresh_loop(lease, &*rule).await })
                };
                let scan = {
                    let (inner, rule) = (self.inner.clone(), self.rule.clone());
                    tokio::spawn(async move { inner.scan_loop(&*rule).await })
                };
                *tasks = Some([AbortOnDrop(refresh), AbortOnDrop(scan)]);
            }
            (false, true) => *tasks = None,
            _ => {}
        }
    }

    /// The tenant of `job` under `binding`'s `fairness` ([`job_tenant`]);
    /// `data` is its data as parsed for flow control.
    pub async fn tenant_of<J: RunningJob>(
        &self,
        binding: &Binding,
        job: &J,
        data: Option<&Value>,
    ) -> Result<Option<Value>, QueueError> {
        let Some(rule) = &binding.fairness else {
            return Ok(None);
        };
        let sealed = || {
            let input = job.input();
            (input.name, input.data)
        };
        job_tenant(
            &self.inner.queues,
            rule,
            (job.queue(), job.id()),
            data,
            sealed,
        )
        .await
    }

    /// The tenant slot a job of `binding` whose tenant is `tenant` (as
    /// [`Tenants::tenant_of`] found it) must hold, with its tenant's share
    /// as the limit; `None` without `fairness` or a tenant. Adds the
    /// tenant to the work list when this host has not lately.
    pub async fn gate(
        &self,
        binding: &Binding,
        queue: &str,
        tenant: Option<&Value>,
    ) -> Result<Option<KeyGate>, QueueError> {
        let (Some(rule), Some(capacity)) = (&binding.fairness, binding.global_concurrency) else {
            return Ok(None);
        };
        let Some(value) = tenant else {
            return Ok(None);
        };
        let slot = tenant_slot(queue, value);
        let limit =
            (self.inner.view.read().unwrap()).share(&slot.hash, rule.weight_of(value), capacity);
        self.inner.register(&slot.hash).await?;
        Ok(Some(KeyGate {
            slot,
            limit,
            path: rule.tenant.as_str().to_string(),
            value: value.to_string(),
            on_full: OnFull::Wait,
            share: Some(TenantShare {
                inner: self.inner.clone(),
                weight: rule.weight_of(value),
                capacity,
            }),
        }))
    }

    /// The tenant of slot hash `hash` as the last refresh saw it (`None`:
    /// it held nothing and had nobody in line).
    pub fn view_of(&self, hash: &str) -> Option<TenantView> {
        self.inner.view.read().unwrap().active.get(hash).copied()
    }
}

impl Inner {
    async fn register(&self, hash: &str) -> Result<(), QueueError> {
        {
            let registered = self.registered.lock().unwrap();
            if registered
                .get(hash)
                .is_some_and(|at| at.elapsed() < REGISTER_EVERY)
            {
                return Ok(());
            }
        }
        let mut conn = self.queues.store().conn();
        let key = self.queues.store().keys().tenants(&self.queue);
        let _: i64 = redis::cmd("SADD")
            .arg(key)
            .arg(hash)
            .query_async(&mut conn)
            .await?;
        let mut registered = self.registered.lock().unwrap();
        registered.retain(|_, at| at.elapsed() < REGISTER_EVERY);
        registered.insert(hash.to_string(), Instant::now());
        Ok(())
    }
}
