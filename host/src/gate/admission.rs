//! The admission side of flow control: before a job's guest starts, one
//! call decides whether it runs now (holding its key slots), waits
//! (parked: a throttle's turn, a key at its limit) or fails without running
//! (over a rate limit, a skipped singleton). The executor calls
//! [`Admission::admit`] and, once the run ended, [`Admitted::finish`].
//!
//! In order, for a job of a binding with flow control:
//! 1. per-key start rates (`state::key_rates`): `keyRateLimit` drops a job
//!    over it on its first start, `keyThrottle` parks it until its turn;
//! 2. key slots (`state::key_limits`): its tenant's under `fairness` (with
//!    the tenant's share as the limit, `super::fairness`), so a job over
//!    its share waits in its tenant's line without taking a turn in its
//!    key's; then a `singleton` key's one slot, then a `keyConcurrency`
//!    key's; each taken, or the job skips, cancels the running one, or
//!    waits in the tenant's (the key's) line, giving back what it took and
//!    a slot a later rule's line had reserved for it. Leases are renewed
//!    every third of a lease while the job runs;
//! 3. a debounced job that starts ends its key's burst (`state::debounces`);
//! 4. `cancelOn` (`state::cancels`): the job is indexed by the values its
//!    rules match, before the guest starts, until it ends.
//!
//! Crash windows: each is stated by the module that owns the state it
//! touches: `state::key_rates`, `state::key_limits` (key slots and
//! parking, given back through [`release_slots_of`] when a host dies),
//! `state::debounces` and `state::cancels` (`cancelOn` sets).

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::fairness::{TenantShare, Tenants, job_tenant, tenant_slot};
use super::keys::{KeyGate, OnFull, cancel_matches, key_gates, key_value, slot_of};
use crate::queue::{JobResult, QueueService, RunningJob};
use crate::registry::Binding;
use crate::sandbox::{Failure, FailureKind};
use crate::state::fields;
use crate::state::key_limits::{KeySlot, PARK_MS};
use crate::state::key_rates::{RateDecision, RateMode};
use crate::tasks::{AbortOnDrop, retrying};

/// How long a singleton in cancel mode reads its job's own producer again
/// while it is not written yet, before it replaces the running job.
const OWN_PRODUCER_WAIT: Duration = Duration::from_millis(200);

/// Flow control's decisions for one queue on one host.
pub struct Admission {
    queues: Arc<QueueService>,
    /// A key slot's lease: the worker lock duration, so a slot a dead
    /// host's recovery misses comes back when its job's lock does.
    lease: Duration,
    /// The queue's tenants under `fairness`, for their shares.
    tenants: Tenants,
}

/// What a job does now.
pub enum Admit {
    /// Run it; hand the value back to [`Admitted::finish`] after the run.
    Run(Admitted),
    /// It was parked (delayed) for its turn under the binding's rule of
    /// this name (`keyThrottle`, `keyConcurrency`, `singleton`,
    /// `fairness`); it runs later.
    Parked(&'static str),
    /// It fails without running.
    Fail(Failure),
}

/// A job allowed to run: the key slots it holds (their leases renewed
/// while this lives) and the `cancelOn` sets it is in.
pub struct Admitted {
    queues: Arc<QueueService>,
    queue: String,
    id: String,
    lease_ms: u64,
    held: Vec<Held>,
    matches: Vec<(String, Value)>,
    _renewal: Option<AbortOnDrop>,
}

impl Admission {
    /// Admission for jobs of one queue, with key-slot leases of `lease`
    /// and the queue's `tenants`.
    pub fn new(queues: Arc<QueueService>, lease: Duration, tenants: Tenants) -> Self {
        Admission {
            queues,
            lease,
            tenants,
        }
    }

    fn lease_ms(&self) -> u64 {
        self.lease.as_millis() as u64
    }

    /// Now, on the clock the state's leases and rates read.
    fn now_ms(&self) -> u64 {
        self.queues.state().clock.now_ms()
    }

    /// The queue's tenants under `fairness`.
    pub fn tenants(&self) -> &Tenants {
        &self.tenants
    }

    /// Decides for `job` under `binding`; `data` is the job's data parsed
    /// by [`super::keyed_data`].
    pub async fn admit<J: RunningJob>(
        &self,
        job: &J,
        binding: &Binding,
        data: Option<&Value>,
    ) -> Admit {
        let (queue, id) = (job.queue(), job.id());
        if let Some(decision) = self.check_rates(job, binding, data).await {
            return decision;
        }

        let lease_ms = self.lease_ms();
        let mut gates = key_gates(binding, queue, data);
        let tenant = match self.tenants.tenant_of(binding, job, data).await {
            Ok(tenant) => tenant,
            Err(e) => {
                return Admit::Fail(Failure::new(
                    FailureKind::HostUnavailable,
                    format!("could not read the job's producer for its tenant: {e:#}"),
                ));
            }
        };
        match self.tenants.gate(binding, queue, tenant.as_ref()).await {
            // The tenant's turn first: a job over its tenant's share waits
            // in its tenant's line without taking a turn in its key's.
            Ok(Some(gate)) => gates.insert(0, gate),
            Ok(None) => {}
            Err(e) => {
                return Admit::Fail(Failure::new(
                    FailureKind::HostUnavailable,
                    format!("could not register the job's tenant: {e:#}"),
                ));
            }
        }
        let mut held: Vec<Held> = Vec::new();
        for (i, gate) in gates.iter().enumerate() {
            let park = gate.on_full != OnFull::Skip;
            let acquire = || {
                self.queues.state().key_limits.acquire(
                    &gate.slot,
                    (id, job.processed_on_ms()),
                    gate.limit,
                    lease_ms,
                    park,
                )
            };
            let outcome = retrying("take a key slot", acquire).await;
            if matches!(outcome, Ok(true)) {
                if let Some(share) = &gate.share {
                    share.taken(&gate.slot.hash);
                }
                held.push(Held {
                    slot: gate.slot.clone(),
                    limit: gate.limit,
                    share: gate.share.clone(),
                });
                continue;
            }
            // Not taken: what this job holds goes back first — the slots
            // it took here, and one a line of a later rule reserved for it
            // (it was promoted from that line, and now waits in this one's).
            held.extend(gates[i + 1..].iter().map(|later| Held {
                slot: later.slot.clone(),
                limit: later.limit,
                share: None,
            }));
            release_all(&self.queues, &held, id, lease_ms).await;
            return match outcome {
                Ok(_) => self.key_full(job, gate).await,
                Err(e) => Admit::Fail(Failure::new(
                    FailureKind::HostUnavailable,
                    format!("could not take a slot of the job's key: {e:#}"),
                )),
            };
        }
        let renewal = (!held.is_empty()).then(|| {
            let slots: Vec<KeySlot> = held.iter().map(|h| h.slot.clone()).collect();
            let (queues, id) = (self.queues.clone(), id.to_string());
            let every = Duration::from_millis((lease_ms / 3).max(1));
            AbortOnDrop(tokio::spawn(async move {
                loop {
                    tokio::time::sleep(every).await;
                    for slot in &slots {
                        let renewed = queues.state().key_limits.renew(slot, &id, lease_ms);
                        if let Err(e) = renewed.await {
                            tracing::warn!(error = %e, "could not renew a key slot's lease");
                        }
                    }
                }
            }))
        });
        let admitted = Admitted {
            queues: self.queues.clone(),
            queue: queue.to_string(),
            id: id.to_string(),
            lease_ms,
            held,
            matches: cancel_matches(binding, data),
            _renewal: renewal,
        };

        // A debounced job that starts ends its key's burst: the next job of
        // the key opens a window of its own.
        if let Some(rule) = &binding.debounce
            && let Some(slot) = slot_of(&rule.key, queue, data)
            && let Err(e) = self.queues.state().debounces.end(&slot).await
        {
            tracing::debug!(error = %e, "could not end a debounce burst");
        }
        // Findable by the binding's cancel-on events from now on: before the
        // guest starts, until the job ends.
        if !admitted.matches.is_empty() {
            let index = || {
                self.queues
                    .state()
                    .cancels
                    .index(queue, id, &admitted.matches, true)
            };
            if let Err(e) = retrying("index the job for cancelOn", index).await {
                admitted.release().await;
                return Admit::Fail(Failure::new(
                    FailureKind::HostUnavailable,
                    format!("could not index the job for its binding's cancelOn events: {e:#}"),
                ));
            }
        }
        Admit::Run(admitted)
    }

    /// The per-key start rates: `None` when the job may go on.
    async fn check_rates<J: RunningJob>(
        &self,
        job: &J,
        binding: &Binding,
        data: Option<&Value>,
    ) -> Option<Admit> {
        let rates = [
            (&binding.key_rate_limit, RateMode::Drop),
            (&binding.key_throttle, RateMode::Throttle),
        ];
        for (rule, mode) in rates {
            let Some(rule) = rule else { continue };
            if mode == RateMode::Drop && job.attempts_started() > 1 {
                continue;
            }
            let Some(slot) = slot_of(&rule.key, job.queue(), data) else {
                continue;
            };
            let check = || {
                self.queues
                    .state()
                    .key_rates
                    .check(&slot, job.id(), rule.rate(), mode)
            };
            match retrying("check the job's key rate", check).await {
                Ok(RateDecision::Start) => {}
                // The previous start of the key came late and moved this
                // turn a moment on (`key_rates::HOLD_MS`): wait it out here.
                Ok(RateDecision::StartAt(at)) => {
                    let wait = at.saturating_sub(self.now_ms());
                    tokio::time::sleep(Duration::from_millis(wait)).await;
                }
                Ok(RateDecision::WaitUntil(at)) => {
                    let park = || job.park_until(at.max(self.now_ms()));
                    return Some(
                        match retrying("park the job for its key's throttle", park).await {
                            Ok(()) => Admit::Parked("keyThrottle"),
                            Err(e) => Admit::Fail(Failure::new(
                                FailureKind::HostUnavailable,
                                format!("could not park the job for its key's throttle: {e:#}"),
                            )),
                        },
                    );
                }
                Ok(RateDecision::Dropped(room_in)) => {
                    return Some(Admit::Fail(Failure::new(
                        FailureKind::RateLimited,
                        format!(
                            "key {} ({}) is over its rate limit of {} per {}; dropped without running (room again in {})",
                            key_value(&rule.key, data).unwrap_or_default(),
                            rule.key.as_str(),
                            rule.limit,
                            humantime::format_duration(Duration::from_millis(rule.period_ms)),
                            humantime::format_duration(Duration::from_millis(room_in)),
                        ),
                    )));
                }
                Err(e) => {
                    return Some(Admit::Fail(Failure::new(
                        FailureKind::HostUnavailable,
                        format!("could not check the job's key rate: {e:#}"),
                    )));
                }
            }
        }
        None
    }

    /// What a job does when a key of its has no slot for it.
    async fn key_full<J: RunningJob>(&self, job: &J, gate: &KeyGate) -> Admit {
        match gate.on_full {
            OnFull::Wait => self.wait_in_line(job, gate).await,
            OnFull::Skip => Admit::Fail(Failure::new(
                FailureKind::Skipped,
                format!(
                    "singleton: key {} ({}) already has a running job; skipped without running",
                    gate.value, gate.path
                ),
            )),
            OnFull::CancelRunning => {
                let queues = &self.queues;
                let reason = format!(
                    "replaced by job {} (singleton key {})",
                    job.id(),
                    gate.value
                );
                // Only a job of the same producer is replaced: another
                // tenant's job with the same key is waited for instead.
                let owner = |id: &str| {
                    let key = queues.job_key(job.queue(), id);
                    async move { queues.state().meta.get(&key, fields::PRODUCER).await }
                };
                // The API writes a job's producer just after BullMQ's add
                // (`Meta::set_producer`), so a job taken at once may not
                // show its own yet: it is read again for a moment
                // (`OWN_PRODUCER_WAIT`) before the job counts as having
                // none — which, for a job BullMQ's own clients added, it
                // does.
                let mine = async {
                    let deadline = tokio::time::Instant::now() + OWN_PRODUCER_WAIT;
                    loop {
                        let mine = owner(job.id()).await;
                        if !matches!(mine, Ok(None)) || tokio::time::Instant::now() >= deadline {
                            return mine;
                        }
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                };
                match (
                    queues.state().key_limits.holders(&gate.slot).await,
                    mine.await,
                ) {
                    (Ok(holders), Ok(mine)) => {
                        for holder in holders.iter().filter(|h| h.as_str() != job.id()) {
                            match owner(holder).await {
                                Ok(theirs) if theirs == mine => {}
                                _ => continue,
                            }
                            if let Err(e) = queues.cancel(job.queue(), holder, &reason).await {
                                tracing::debug!(holder, error = %e, "singleton: cancel the running job");
                            }
                        }
                    }
                    (Err(e), _) | (_, Err(e)) => {
                        tracing::warn!(error = %e, "singleton: could not read the running job");
                    }
                }
                // Its slot comes back as the cancelled run stops; the
                // release promotes this job from the line.
                self.wait_in_line(job, gate).await
            }
        }
    }

    /// Parks a job whose key is at its limit and puts it in the key's line.
    async fn wait_in_line<J: RunningJob>(&self, job: &J, gate: &KeyGate) -> Admit {
        let (slot, limit) = (&gate.slot, gate.limit);
        let rule = match (&gate.share, &gate.on_full) {
            (Some(_), _) => "fairness",
            (None, OnFull::Wait) => "keyConcurrency",
            (None, _) => "singleton",
        };
        let park = || job.park_until(self.now_ms() + PARK_MS);
        if let Err(e) = retrying("park the job for its key", park).await {
            return Admit::Fail(Failure::new(
                FailureKind::HostUnavailable,
                format!("could not park the job while its key is at its limit: {e:#}"),
            ));
        }
        let join = || async {
            let key_limits = &self.queues.state().key_limits;
            let released = key_limits
                .join_line(slot, job.id(), limit, self.lease_ms())
                .await?;
            self.queues.promote_released(released).await
        };
        if let Err(e) = retrying("join the key's line", join).await {
            // Parked but in no line: it wakes after PARK_MS and is gated
            // again (see `state::key_limits`).
            tracing::warn!(error = %e, "could not put a parked job in its key's line");
        }
        Admit::Parked(rule)
    }
}

impl Admitted {
    /// What a job of a binding without flow-control rules is admitted
    /// with: nothing to give back.
    pub fn nothing(queues: Arc<QueueService>) -> Admitted {
        Admitted {
            queues,
            queue: String::new(),
            id: String::new(),
            lease_ms: 0,
            held: Vec::new(),
            matches: Vec::new(),
            _renewal: None,
        }
    }

    /// Whether the run holds anything to give back at its end.
    pub fn holds_anything(&self) -> bool {
        !self.held.is_empty() || !self.matches.is_empty()
    }

    /// After the run: a job that ended (completed or failed) leaves its
    /// `cancelOn` sets, and every key slot goes back.
    pub async fn finish(self, result: &JobResult) {
        if result.ends_attempt() {
            self.finish_ended().await;
        } else {
            self.release().await;
        }
    }

    /// [`Admitted::finish`] of a run that completed or failed.
    pub async fn finish_ended(self) {
        if !self.matches.is_empty()
            && let Err(e) = self
                .queues
                .state()
                .cancels
                .index(&self.queue, &self.id, &self.matches, false)
                .await
        {
            // Left behind: the next matching event finds the job finished.
            tracing::debug!(error = %e, "could not take a finished job out of its cancelOn sets");
        }
        self.release().await;
    }

    async fn release(self) {
        release_all(&self.queues, &self.held, &self.id, self.lease_ms).await;
    }
}

/// Gives back the key slots job `id` of `queue` holds under `binding`, as
/// its data says, when it ran on a host that died (`worker::recovery`): the
/// slots go to the heads of their lines now, not when their leases run out.
/// A binding changed since the job took its slots may name other keys;
/// those slots' leases run out on their own. A tenant's slot goes back
/// without refilling its line: the hosts serving the queue do that within
/// a refresh (`super::fairness`), knowing the tenant's share. `name` (with
/// `data`) checks a producer's seal under fairness by producer.
pub async fn release_slots_of(
    queues: &QueueService,
    binding: &Binding,
    (queue, id, name): (&str, &str, &str),
    data: &Value,
    lease: Duration,
) {
    let mut held: Vec<Held> = key_gates(binding, queue, Some(data))
        .into_iter()
        .map(|gate| Held {
            slot: gate.slot,
            limit: gate.limit,
            share: None,
        })
        .collect();
    if let Some(rule) = &binding.fairness {
        let sealed = || {
            (
                name.to_string(),
                serde_json::to_string(data).unwrap_or_default(),
            )
        };
        match job_tenant(queues, rule, (queue, id), Some(data), sealed).await {
            Ok(Some(tenant)) => held.push(Held {
                slot: tenant_slot(queue, &tenant),
                limit: 0,
                share: None,
            }),
            Ok(None) => {}
            // Its lease runs out on its own.
            Err(e) => tracing::warn!(error = %e, "could not read a dead host's job's tenant"),
        }
    }
    release_all(queues, &held, id, lease.as_millis() as u64).await;
}

/// A key slot a run holds: its line is refilled up to `limit` when it goes
/// back — for a tenant's slot, up to the tenant's share at that moment.
struct Held {
    slot: KeySlot,
    limit: u64,
    share: Option<TenantShare>,
}

/// Gives back every key slot in `held`.
async fn release_all(queues: &QueueService, held: &[Held], id: &str, lease_ms: u64) {
    for Held { slot, limit, share } in held {
        let limit = share.as_ref().map_or(*limit, |s| s.now(&slot.hash));
        let release = || async move {
            let key_limits = &queues.state().key_limits;
            let released = key_limits.release(slot, id, limit, lease_ms).await?;
            queues.promote_released(released).await
        };
        if let Err(e) = retrying("give a key slot back", release).await {
            // The lease runs out on its own: the slot is back then.
            tracing::warn!(error = %e, "could not give a key slot back");
        }
        if let Some(share) = share {
            share.released(&slot.hash);
        }
    }
}
