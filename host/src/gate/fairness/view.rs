//! A host's view of a queue's tenants (their slots, lines and weights, as
//! the last refresh and scan read them) and the max-min fair share computed
//! from it. Pure arithmetic on what was read: no Redis here.

use std::collections::{HashMap, HashSet};

use crate::state::key_limits::{KeyCounts, KeySlot};

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
pub(super) struct View {
    /// The tenants holding slots or with jobs in line, by slot hash.
    pub(super) active: HashMap<String, TenantView>,
    /// The weights of the binding's named tenants, by slot hash.
    named: HashMap<String, u32>,
    /// The tenants with jobs at the ends of the wait list or of the jobs
    /// held back behind it, as this host's last scan read them: they want
    /// more than they hold.
    pub(super) waiting: HashSet<String>,
    /// Of those, the ones with none among the next jobs to run: their jobs
    /// start only when a scan moves them to the front, so a slot of theirs
    /// coming back calls for a scan at once rather than at the next tick.
    pub(super) buried: HashSet<String>,
}

impl View {
    /// The view of `tenants` (as read from Redis), with the binding's
    /// `named` weights.
    pub(super) fn of(named: HashMap<String, u32>, tenants: &[(KeySlot, KeyCounts)]) -> View {
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
    pub(super) fn refreshed(
        &mut self,
        named: HashMap<String, u32>,
        tenants: &[(KeySlot, KeyCounts)],
    ) {
        let waiting = std::mem::take(&mut self.waiting);
        let buried = std::mem::take(&mut self.buried);
        *self = View {
            waiting,
            buried,
            ..View::of(named, tenants)
        };
    }

    /// This host's own take of a slot of tenant `hash`, counted until the
    /// next refresh reads it back from Redis: a scan between the two must
    /// not jump jobs into room this host just filled.
    pub(super) fn taken(&mut self, hash: &str) {
        let weight = self.weight(hash);
        let tenant = self.active.entry(hash.to_string()).or_insert(TenantView {
            held: 0,
            queued: 0,
            weight,
        });
        tenant.held += 1;
    }

    /// This host's own release of a slot of tenant `hash`, counted until
    /// the next refresh: the room it leaves is the tenant's at once.
    /// Whether the tenant's next jobs are buried in the wait list or behind
    /// it (a scan should move them up now).
    pub(super) fn released(&mut self, hash: &str) -> bool {
        if let Some(tenant) = self.active.get_mut(hash) {
            tenant.held = tenant.held.saturating_sub(1);
        }
        self.buried.contains(hash)
    }

    /// The tenants with jobs in line that hold less than their share, with
    /// that share: the lines a refresh refills.
    pub(super) fn under_share(&self, capacity: u64) -> Vec<(String, u64)> {
        let mut under = Vec::new();
        for (hash, tenant) in &self.active {
            let share = self.share(hash, tenant.weight, capacity);
            if tenant.queued > 0 && tenant.held < share {
                under.push((hash.clone(), share));
            }
        }
        under
    }

    pub(super) fn weight(&self, hash: &str) -> u32 {
        self.named.get(hash).copied().unwrap_or(1)
    }

    /// The share of the tenant `hash` of weight `weight` that asks for a
    /// slot: max-min fair by weight. The tenant itself wants as many slots
    /// as it can get, and so does every tenant with jobs in line or seen in
    /// the wait list or behind it by this host's last scan; any other
    /// tenant wants one
    /// more than it holds (its next jobs may be in the middle of the wait
    /// list, which no scan reads). Tenants
    /// that want less than an even split get what they want, and the rest
    /// of the capacity is split by weight between the others. So a tenant
    /// that runs one job leaves all but two slots to the rest.
    pub(super) fn share(&self, hash: &str, weight: u32, capacity: u64) -> u64 {
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
        let read = |held, queued| KeyCounts { held, queued };
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
}
