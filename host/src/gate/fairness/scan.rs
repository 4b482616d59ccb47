//! The scan: every [`SCAN`](super::SCAN) a host reads both ends of the wait
//! list, learns the tenants of the jobs it has not seen, and moves a
//! tenant's buried first jobs to the front (see the module doc of
//! [`super`]).

use std::collections::{HashMap, HashSet, VecDeque};

use serde_json::Value;

use super::{Inner, MAX_JUMPS, NEWEST, NEXT, Rule, SCAN, producer_tenant, tenant_slot};
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
    /// the front (see the module doc of `gate::fairness`).
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
