//! Fair shares between tenants (a binding's `fairness`): the queue's fleet
//! capacity, its `globalConcurrency`, is shared between the tenants that
//! have jobs running or waiting — a tenant is the API token that
//! enqueued a job, as Airlock's seal on the job proves ([`job_tenant`]), or
//! the value at the rule's path in a job's data — in proportion to their
//! weights.
//!
//! **Shares are slots.** A tenant's share is max-min fair by weight: the
//! tenant asking wants as many slots as it can get, and so does every
//! tenant with jobs in line or at either end of the wait list (as the
//! host's last scan read it); any other tenant wants one more than it
//! holds (its next jobs may be in the middle of the wait list, which no
//! scan reads). Those that want less than an even split (by weight) get
//! what they want, and the rest of the capacity is split by weight between
//! the others — at least 1 slot. A job takes one of its tenant's slots
//! before its guest starts, after its key slots — the same leased slots,
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
//! refresh old, and a tenant that was dropped from the list while a host
//! still had it registered is missing from the views (so the others'
//! shares are larger) for at most
//! [`REGISTER_EVERY`] — unless it has jobs in line, which brings it back
//! at the next refresh.
//!
//! **A tenant's first job jumps the backlog.** BullMQ's wait list is first
//! in, first out, and a producer — the API or Node's `queue.addBulk` —
//! can put 100,000 jobs of one tenant ahead of another tenant's first job.
//! Every 10 ms ([`SCAN`]) each host reads the newest [`NEWEST`] and the
//! next [`NEXT`] ids of the wait list (`queue::wait_order`), reads the
//! tenant of the ones it has not seen (by producer, the name as Redis holds
//! it, seal unchecked: a scan only orders the wait list, which any Redis
//! writer can, and admission checks the seal before a job takes a turn),
//! and moves to the front the jobs of
//! tenants that have none among the next ones, are not in line and are
//! under their share — at most their share's room, and at most
//! [`MAX_JUMPS`] per tenant per scan. Such a job is then taken next, and
//! admitted as its tenant's share allows. A job that ends up more than
//! [`NEWEST`] entries deep before a scan sees it (a burst of more than 256
//! jobs added within one scan after it) waits for the workers to reach it.
//!
//! Cost: the scan is two `LRANGE`s per 10 ms per host, one `HGET` of the
//! data (by producer, two of its producer: the job's hash and its pending
//! claim) of each job it has not seen (every job once per host, as it is
//! added or reaches the front), and one script call moving the jobs that
//! jump; the refresh is two round trips per 100 ms per host (the lists,
//! then the counts); a governed job adds one batched operation to its take
//! and one to its release (its tenant's slot), and a job over its tenant's
//! share is parked and promoted like a job over its key's limit.
//!
//! Crash windows: the same as a key's (`state::key_limits`): a dead
//! host's tenant slots come back through recovery (`worker::recovery`) or
//! their leases; a job parked for its tenant joins the line, or the sweep
//! puts it there. Redis is untrusted input: a forged work list or line can
//! move turns between tenants, no more than deleting their jobs could.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::keys::{KeyGate, OnFull};
use crate::error::QueueError;
use crate::queue::{QueueService, RunningJob};
use crate::registry::{Binding, Fairness, TenantOf};
use crate::state::key_limits::{KeySlot, KeyState, TENANT_MARK};
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
/// How often a host adds a tenant whose jobs take slots to the work list.
pub const REGISTER_EVERY: Duration = Duration::from_secs(1);
/// How long a tenant with no slots and no line stays in the work list.
pub const FORGET_AFTER: Duration = Duration::from_secs(2);
/// How many jobs' tenants a host remembers for its scans.
const SEEN_JOBS: usize = 16_384;

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

/// A tenant as the last refresh saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TenantView {
    /// Slots it holds (running or reserved jobs).
    pub held: u64,
    /// Jobs in its line or on their way into it.
    pub queued: u64,
    /// Its weight.
    pub weight: u32,
}

/// What a host knows of a queue's tenants.
#[derive(Debug, Default)]
struct View {
    /// The tenants holding slots or with jobs in line, by slot hash.
    active: HashMap<String, TenantView>,
    /// The weights of the binding's named tenants, by slot hash.
    named: HashMap<String, u32>,
    /// The tenants with jobs at the ends of the wait list, as this host's
    /// last scan read them: they want more than they hold.
    waiting: HashSet<String>,
}

impl View {
    /// The view of `tenants` (as read from Redis), with the binding's
    /// `named` weights.
    fn of(named: HashMap<String, u32>, tenants: &[(KeySlot, KeyState)]) -> View {
        let mut view = View {
            named,
            ..View::default()
        };
        for (slot, state) in tenants {
            if state.held == 0 && state.queued == 0 {
                continue;
            }
            let weight = view.weight(&slot.hash);
            view.active.insert(
                slot.hash.clone(),
                TenantView {
                    held: state.held,
                    queued: state.queued,
                    weight,
                },
            );
        }
        view
    }

    /// This view with `tenants` as a refresh read them (and the binding's
    /// `named` weights), keeping the wait-list tenants of the last scan:
    /// the refills this refresh makes and the admissions after it compute
    /// shares from the same view.
    fn refreshed(&mut self, named: HashMap<String, u32>, tenants: &[(KeySlot, KeyState)]) {
        let waiting = std::mem::take(&mut self.waiting);
        *self = View {
            waiting,
            ..View::of(named, tenants)
        };
    }

    /// The tenants with jobs in line that hold less than their share, with
    /// that share: the lines a refresh refills.
    fn under_share(&self, capacity: u64) -> Vec<(String, u64)> {
        let mut under = Vec::new();
        for (hash, tenant) in &self.active {
            let share = self.share(hash, tenant.weight, capacity);
            if tenant.queued > 0 && tenant.held < share {
                under.push((hash.clone(), share));
            }
        }
        under
    }

    fn weight(&self, hash: &str) -> u32 {
        self.named.get(hash).copied().unwrap_or(1)
    }

    /// The share of the tenant `hash` of weight `weight` that asks for a
    /// slot: max-min fair by weight. The tenant itself wants as many slots
    /// as it can get, and so does every tenant with jobs in line or seen in
    /// the wait list by this host's last scan; any other tenant wants one
    /// more than it holds (its next jobs may be in the middle of the wait
    /// list, which no scan reads). Tenants
    /// that want less than an even split get what they want, and the rest
    /// of the capacity is split by weight between the others. So a tenant
    /// that runs one job leaves all but two slots to the rest.
    fn share(&self, hash: &str, weight: u32, capacity: u64) -> u64 {
        let mut left = capacity as f64;
        let mut weights = weight as f64;
        let mut content: Vec<(f64, f64)> = Vec::new();
        for (other, tenant) in &self.active {
            if other == hash {
                continue;
            }
            weights += tenant.weight as f64;
            if tenant.queued == 0 && !self.waiting.contains(other) {
                content.push(((tenant.held + 1) as f64, tenant.weight as f64));
            }
        }
        for other in &self.waiting {
            if other != hash && !self.active.contains_key(other) {
                weights += self.weight(other) as f64;
            }
        }
        content.sort_by(|a, b| (a.0 / a.1).total_cmp(&(b.0 / b.1)));
        for (wants, w) in content {
            if wants > left * w / weights {
                break;
            }
            left -= wants;
            weights -= w;
        }
        ((left * weight as f64 / weights).floor() as u64).max(1)
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

    async fn refresh_loop(&self, lease: Duration, rule: &Rule) {
        let mut tick = tokio::time::interval(REFRESH);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut empty_since: HashMap<String, Instant> = HashMap::new();
        let mut named: Option<(Fairness, HashMap<String, u32>)> = None;
        loop {
            tick.tick().await;
            let Some((rule, capacity)) = rule() else {
                continue;
            };
            if named.as_ref().is_none_or(|(was, _)| *was != rule) {
                let weights = named_weights(&rule, &self.queue);
                named = Some((rule, weights));
            }
            let weights = named.as_ref().map(|(_, w)| w.clone()).unwrap_or_default();
            let refreshed = self
                .refresh(weights, capacity, lease, &mut empty_since)
                .await;
            if let Err(e) = refreshed {
                tracing::warn!(queue = self.queue, error = %e, "could not refresh the tenants' shares");
            }
        }
    }

    /// Reads every known tenant, replaces the view, forgets the tenants
    /// idle for [`FORGET_AFTER`] and refills the lines of the tenants under
    /// their share.
    async fn refresh(
        &self,
        named: HashMap<String, u32>,
        capacity: u64,
        lease: Duration,
        empty_since: &mut HashMap<String, Instant>,
    ) -> Result<(), QueueError> {
        let tenants = read_tenants(&self.queues, &self.queue).await?;
        let under = {
            let mut view = self.view.write().unwrap();
            view.refreshed(named, &tenants);
            view.under_share(capacity)
        };
        let mut forget = Vec::new();
        for (slot, state) in &tenants {
            if state.held > 0 || state.queued > 0 {
                empty_since.remove(&slot.hash);
                continue;
            }
            let since = empty_since
                .entry(slot.hash.clone())
                .or_insert_with(Instant::now);
            if since.elapsed() >= FORGET_AFTER {
                forget.push(slot.hash.clone());
            }
        }
        empty_since.retain(|hash, _| tenants.iter().any(|(slot, _)| slot.hash == *hash));
        let fills: Vec<(KeySlot, u64)> = under
            .into_iter()
            .map(|(hash, share)| {
                let queue = self.queue.clone();
                (KeySlot { queue, hash }, share)
            })
            .collect();
        if !forget.is_empty() {
            let _: i64 = redis::cmd("SREM")
                .arg(self.queues.store().keys().tenants(&self.queue))
                .arg(&forget)
                .query_async(&mut self.queues.store().conn())
                .await?;
            for hash in &forget {
                empty_since.remove(hash);
            }
        }
        if !fills.is_empty() {
            let released = (self.queues.state().key_limits)
                .fill(&self.queue, &fills, lease.as_millis() as u64, true)
                .await?;
            self.queues.promote_released(released).await?;
        }
        Ok(())
    }

    async fn scan_loop(&self, rule: &Rule) {
        let mut tick = tokio::time::interval(SCAN);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut seen = SeenJobs::default();
        loop {
            tick.tick().await;
            let Some((rule, capacity)) = rule() else {
                continue;
            };
            if let Err(e) = self.scan(&rule, capacity, &mut seen).await {
                tracing::warn!(queue = self.queue, error = %e, "could not scan the wait list for tenants' first jobs");
            }
        }
    }

    /// One scan: moves buried jobs of tenants that have none up next to
    /// the front (see the module doc).
    async fn scan(
        &self,
        rule: &Fairness,
        capacity: u64,
        seen: &mut SeenJobs,
    ) -> Result<(), QueueError> {
        let ends = self.queues.wait_ends(&self.queue, NEWEST, NEXT).await?;
        let unknown: Vec<String> = ends
            .newest
            .iter()
            .chain(&ends.next)
            .filter(|id| !seen.knows(id))
            .cloned()
            .collect::<HashSet<_>>()
            .into_iter()
            .collect();
        if !unknown.is_empty() {
            let tenants: Vec<Option<Value>> = match &rule.tenant {
                TenantOf::Path(path) => {
                    let datas = self.queues.job_datas(&self.queue, &unknown).await?;
                    datas
                        .into_iter()
                        .map(|d| {
                            let data = serde_json::from_str::<Value>(&d?).ok()?;
                            path.get(&data).cloned()
                        })
                        .collect()
                }
                // Names as Redis holds them, seals unchecked: a scan only
                // orders the wait list (which any Redis writer can), and
                // admission checks the seal before a job takes a turn.
                TenantOf::Producer => {
                    let meta = &self.queues.state().meta;
                    let names = meta.producer_names(&self.queue, &unknown).await?;
                    names
                        .into_iter()
                        .map(|n| Some(producer_tenant(n)))
                        .collect()
                }
            };
            for (id, tenant) in unknown.into_iter().zip(tenants) {
                let tenant = tenant.map(|v| tenant_slot(&self.queue, &v).hash);
                seen.insert(id, tenant);
            }
        }
        let waiting: HashSet<String> = ends
            .newest
            .iter()
            .chain(&ends.next)
            .filter_map(|id| seen.tenant(id).cloned())
            .collect();
        self.view.write().unwrap().waiting = waiting;
        if ends.newest.len() <= NEXT {
            // Everything waiting is up next already.
            return Ok(());
        }
        let next: HashSet<&String> = ends.next.iter().collect();
        let served: HashSet<&String> = ends.next.iter().filter_map(|id| seen.tenant(id)).collect();
        let jumps = {
            let view = self.view.read().unwrap();
            let mut room: HashMap<&String, u64> = HashMap::new();
            let mut jumps = Vec::new();
            // Oldest first: of a tenant's buried jobs, the oldest jump.
            for id in ends.newest.iter().rev() {
                if next.contains(id) {
                    continue;
                }
                let Some(tenant) = seen.tenant(id) else {
                    continue;
                };
                if served.contains(tenant) {
                    continue;
                }
                let left = room.entry(tenant).or_insert_with(|| {
                    let now = view.active.get(tenant);
                    if now.is_some_and(|t| t.queued > 0) {
                        return 0;
                    }
                    let share = view.share(tenant, view.weight(tenant), capacity);
                    let held = now.map_or(0, |t| t.held);
                    share.saturating_sub(held).min(MAX_JUMPS)
                });
                if *left > 0 {
                    *left -= 1;
                    jumps.push(id.clone());
                }
            }
            jumps
        };
        if !jumps.is_empty() {
            self.queues.to_front(&self.queue, &jumps).await?;
        }
        Ok(())
    }
}

/// Every tenant of `queue` in the work list or with a line, with its slots
/// and line: one round trip for the lists, one for the counts.
async fn read_tenants(
    queues: &QueueService,
    queue: &str,
) -> Result<Vec<(KeySlot, KeyState)>, QueueError> {
    let keys = queues.store().keys();
    let (listed, lines): (Vec<String>, Vec<String>) = redis::pipe()
        .smembers(keys.tenants(queue))
        .smembers(keys.key_lines(queue))
        .query_async(&mut queues.store().conn())
        .await?;
    let slots: Vec<KeySlot> = listed
        .into_iter()
        .chain(lines)
        .filter(|h| is_tenant_hash(h))
        .collect::<HashSet<_>>()
        .into_iter()
        .map(|hash| KeySlot {
            queue: queue.to_string(),
            hash,
        })
        .collect();
    if slots.is_empty() {
        return Ok(Vec::new());
    }
    let states = queues.state().key_limits.states(&slots).await?;
    Ok(slots.into_iter().zip(states).collect())
}

/// A tenant's slots and line and its share now, read from Redis (for
/// `why`, on a host that may not serve the queue): `(state, share, active
/// tenants)`.
pub async fn share_now(
    queues: &QueueService,
    rule: &Fairness,
    capacity: u64,
    slot: &KeySlot,
    weight: u32,
) -> Result<(KeyState, u64, usize), QueueError> {
    let tenants = read_tenants(queues, &slot.queue).await?;
    let view = View::of(named_weights(rule, &slot.queue), &tenants);
    let state = match tenants.iter().find(|(other, _)| other.hash == slot.hash) {
        Some((_, state)) => *state,
        None => queues.state().key_limits.state(slot).await?,
    };
    let share = view.share(&slot.hash, weight, capacity);
    let active = view.active.len() + usize::from(!view.active.contains_key(&slot.hash));
    Ok((state, share, active))
}

/// Whether `hash` is a tenant's slot hash (`t` and 24 hex digits).
fn is_tenant_hash(hash: &str) -> bool {
    hash.strip_prefix(TENANT_MARK)
        .is_some_and(|d| d.len() == 24 && d.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The weights of `rule`'s named tenants, by their slots' hashes in `queue`:
/// a name stands for the string and, when it is other JSON, for that value.
fn named_weights(rule: &Fairness, queue: &str) -> HashMap<String, u32> {
    let mut named = HashMap::new();
    for (name, weight) in &rule.weights {
        let mut values = vec![Value::String(name.clone())];
        if let Ok(value) = serde_json::from_str::<Value>(name)
            && !value.is_string()
        {
            values.push(value);
        }
        for value in values {
            named.insert(KeySlot::of(queue, &value).tenant().hash, *weight);
        }
    }
    named
}

/// The tenants of the jobs a host's scans have read, the newest
/// [`SEEN_JOBS`] of them.
#[derive(Default)]
struct SeenJobs {
    tenants: HashMap<String, Option<String>>,
    order: VecDeque<String>,
}

impl SeenJobs {
    fn knows(&self, id: &str) -> bool {
        self.tenants.contains_key(id)
    }

    fn tenant(&self, id: &str) -> Option<&String> {
        self.tenants.get(id)?.as_ref()
    }

    fn insert(&mut self, id: String, tenant: Option<String>) {
        if self.order.len() >= SEEN_JOBS
            && let Some(old) = self.order.pop_front()
        {
            self.tenants.remove(&old);
        }
        self.order.push_back(id.clone());
        self.tenants.insert(id, tenant);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A view of tenants `(hash, weight, held, queued)`.
    fn view(active: &[(&str, u32, u64, u64)]) -> View {
        let mut view = View::default();
        for (hash, weight, held, queued) in active {
            view.active.insert(
                hash.to_string(),
                TenantView {
                    held: *held,
                    queued: *queued,
                    weight: *weight,
                },
            );
        }
        view
    }

    #[test]
    fn a_share_is_max_min_fair_by_weight() {
        // Alone, a tenant has all of it, active or not yet.
        assert_eq!(view(&[]).share("a", 1, 50), 50);
        assert_eq!(view(&[("a", 1, 50, 0)]).share("a", 1, 50), 50);
        // A newcomer gets an even split from a tenant that holds more…
        assert_eq!(view(&[("a", 1, 50, 0)]).share("b", 1, 50), 25);
        // …and one that holds less keeps it and room for one more, the rest
        // going to the newcomer.
        assert_eq!(view(&[("a", 1, 1, 0)]).share("b", 1, 50), 48);
        assert_eq!(
            view(&[("a", 1, 1, 0), ("c", 1, 3, 0)]).share("b", 1, 50),
            44
        );
        // Weights: a tenant of weight 3 holding 2 of 4 keeps room for a third.
        assert_eq!(view(&[("a", 3, 2, 0)]).share("b", 1, 4), 1);
        assert_eq!(view(&[("b", 1, 2, 0)]).share("a", 3, 4), 3);
        // A tenant with jobs in line wants its whole split, whatever it holds.
        assert_eq!(view(&[("a", 1, 1, 5)]).share("b", 1, 50), 25);
        // By weight.
        let both = view(&[("a", 3, 40, 9), ("b", 1, 10, 9)]);
        assert_eq!(both.share("a", 3, 50), 37);
        assert_eq!(both.share("b", 1, 50), 12);
        // A tenant seen in the wait list wants its whole split too, active
        // or not yet.
        let mut seen = view(&[("a", 1, 1, 0)]);
        seen.waiting.insert("a".into());
        assert_eq!(seen.share("b", 1, 50), 25);
        let mut seen = view(&[]);
        seen.waiting.insert("a".into());
        assert_eq!(seen.share("b", 1, 50), 25);
        // Never below one slot.
        assert_eq!(view(&[("a", 1000, 50, 9)]).share("b", 1, 50), 1);
    }

    #[test]
    fn a_refill_counts_the_tenants_the_scan_saw_waiting() {
        // `web` (weight 1000) has its next jobs in the wait list, where the
        // last scan saw them, and holds 1 slot between two of them; `n`
        // runs 1 of 4 slots and has a job in its line.
        let mut view = View::default();
        view.waiting.insert("web".into());
        let named = HashMap::from([("web".to_string(), 1000)]);
        let read = |held, queued| KeyState { held, queued };
        let slot = |hash: &str| KeySlot {
            queue: "q".into(),
            hash: hash.into(),
        };
        view.refreshed(named, &[(slot("web"), read(1, 0)), (slot("n"), read(1, 1))]);
        // `n`'s share stays 1: its line is not refilled.
        assert!(view.waiting.contains("web"));
        assert_eq!(view.under_share(4), vec![]);
        // Once no scan sees `web` waiting, it wants one more than it holds,
        // and `n` gets the other 2.
        view.waiting.clear();
        assert_eq!(view.under_share(4), vec![("n".to_string(), 2)]);
    }

    #[test]
    fn named_weights_match_strings_and_other_json_by_its_text() {
        let rule: Fairness = serde_json::from_value(
            serde_json::json!({"tenant": "$.t", "weights": {"acme": 3, "42": 2}}),
        )
        .unwrap();
        let named = named_weights(&rule, "q");
        let hash = |v: Value| KeySlot::of("q", &v).tenant().hash;
        assert_eq!(named.get(&hash(Value::from("acme"))), Some(&3));
        assert_eq!(named.get(&hash(Value::from(42))), Some(&2));
        assert_eq!(named.get(&hash(Value::from("42"))), Some(&2));
        assert_eq!(rule.weight_of(&Value::from(42)), 2);
        assert_eq!(rule.weight_of(&Value::from("other")), 1);
        assert!(is_tenant_hash(&hash(Value::from("acme"))));
        assert!(!is_tenant_hash(
            &KeySlot::of("q", &Value::from("acme")).hash
        ));
    }
}
