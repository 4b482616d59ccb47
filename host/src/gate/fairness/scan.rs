//! The scan: every [`SCAN`](super::SCAN) a host reads both ends of the wait
//! list, learns the tenants of the jobs it has not seen, and moves a
//! tenant's buried first jobs to the front (see the module doc of
//! [`super`]).

use std::collections::{HashMap, HashSet, VecDeque};

use serde_json::Value;

use super::{AHEAD, Inner, MAX_JUMPS, NEWEST, NEXT, Rule, SCAN, producer_tenant, tenant_slot};
use crate::error::QueueError;
use crate::registry::{Fairness, TenantOf};

/// How many jobs' tenants a host remembers for its scans.
const SEEN_JOBS: usize = 16_384;

impl Inner {
    pub(super) async fn scan_loop(&self, rule: &Rule) {
        let mut tick = tokio::time::interval(SCAN);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut seen = SeenJobs::default();
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = self.rescan.notified() => {}
            }
            let Some((rule, capacity)) = rule() else {
                continue;
            };
            if let Err(e) = self.scan(&rule, capacity, &mut seen).await {
                tracing::warn!(queue = self.queue, error = %e, "could not scan the wait list for tenants' first jobs");
            }
        }
    }

    /// One scan: moves buried jobs of tenants that have none up next to
    /// the front (see the module doc of `gate::fairness`).
    async fn scan(
        &self,
        rule: &Fairness,
        capacity: u64,
        seen: &mut SeenJobs,
    ) -> Result<(), QueueError> {
        let ends = self.queues.wait_ends(&self.queue, NEWEST, NEXT).await?;
        let read = || {
            (ends.newest.iter())
                .chain(&ends.next)
                .chain(&ends.held_newest)
                .chain(&ends.held_next)
        };
        let unknown: Vec<String> = read()
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
        // What workers take next: the wait list's next jobs, then, on a
        // wait list shorter than that, the next held-back ones.
        let short = NEXT.saturating_sub(ends.next.len());
        let next: HashSet<&String> = (ends.next.iter())
            .chain(ends.held_next.iter().take(short))
            .collect();
        let waiting: HashSet<String> = read().filter_map(|id| seen.tenant(id).cloned()).collect();
        let served: HashSet<&String> = next.iter().filter_map(|id| seen.tenant(id)).collect();
        {
            let mut view = self.view.write().unwrap();
            view.buried = waiting
                .iter()
                .filter(|t| !served.contains(t))
                .cloned()
                .collect();
            view.waiting = waiting;
        }
        let (jumps, held_jumps) = {
            let view = self.view.read().unwrap();
            let mut room: HashMap<&String, u64> = HashMap::new();
            let mut jump = |id: &String| -> bool {
                if next.contains(id) {
                    return false;
                }
                let Some(tenant) = seen.tenant(id) else {
                    return false;
                };
                if served.contains(tenant) {
                    return false;
                }
                let left = room.entry(tenant).or_insert_with(|| {
                    let now = view.active.get(tenant);
                    if now.is_some_and(|t| t.queued > 0) {
                        return 0;
                    }
                    let share = view.share(tenant, view.weight(tenant), capacity);
                    let held = now.map_or(0, |t| t.held);
                    (share.saturating_sub(held) + AHEAD).min(MAX_JUMPS)
                });
                if *left == 0 {
                    return false;
                }
                *left -= 1;
                true
            };
            // Oldest first: of a tenant's buried jobs, the oldest jump —
            // those in the wait list before those held back behind it.
            let jumps: Vec<String> = ends
                .newest
                .iter()
                .rev()
                .filter(|id| jump(id))
                .cloned()
                .collect();
            let mut once = HashSet::new();
            let held: Vec<String> = (ends.held_next.iter())
                .chain(ends.held_newest.iter().rev())
                .filter(|id| once.insert(*id) && jump(id))
                .cloned()
                .collect();
            (jumps, held)
        };
        if !held_jumps.is_empty() {
            self.queues.held_to_front(&self.queue, &held_jumps).await?;
        }
        if !jumps.is_empty() {
            self.queues.to_front(&self.queue, &jumps).await?;
        }
        Ok(())
    }
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
