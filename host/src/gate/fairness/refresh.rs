//! The refresh: every [`REFRESH`](super::REFRESH) a host reads every known
//! tenant's slots and line from Redis, replaces its view, forgets idle
//! tenants and refills the lines of tenants under their share. Also the
//! same read for `why`, on a host that may not serve the queue.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::view::View;
use super::{FORGET_AFTER, Inner, REFRESH, Rule};
use crate::error::QueueError;
use crate::queue::QueueService;
use crate::registry::Fairness;
use crate::state::key_limits::{KeyCounts, KeySlot, TENANT_MARK};

impl Inner {
    pub(super) async fn refresh_loop(&self, lease: Duration, rule: &Rule) {
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
}

/// Every tenant of `queue` in the work list or with a line, with its slots
/// and line: one round trip for the lists, one for the counts.
async fn read_tenants(
    queues: &QueueService,
    queue: &str,
) -> Result<Vec<(KeySlot, KeyCounts)>, QueueError> {
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
    let states = queues.state().key_limits.counts_of(&slots).await?;
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
) -> Result<(KeyCounts, u64, usize), QueueError> {
    let tenants = read_tenants(queues, &slot.queue).await?;
    let view = View::of(named_weights(rule, &slot.queue), &tenants);
    let state = match tenants.iter().find(|(other, _)| other.hash == slot.hash) {
        Some((_, state)) => *state,
        None => queues.state().key_limits.counts(slot).await?,
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

#[cfg(test)]
mod tests {
    use super::*;

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
