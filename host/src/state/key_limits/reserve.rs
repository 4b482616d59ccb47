//! Reservations made at enqueue: free slots reserved for the jobs of one
//! request before they are added, then handed over to the added jobs.

use std::sync::LazyLock;

use super::batch::SWEEP;
use super::{KeyLimits, KeySlot, own_keys};
use crate::error::QueueError;

/// Reservations for one enqueue request: `KEYS` lines, BullMQ delayed, then
/// each key's slots, line and parking; `ARGV` now, lease, then per key its
/// hash, limit, a count `n` and `n` tokens. A key with no job in its line
/// or on its way there reserves its free slots for the first tokens, one
/// each. Answers how many tokens of each key got a slot.
pub(super) static RESERVE: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(&[SWEEP, include_str!("../lua/key_reserve.lua")].join("\n"))
});

/// `KEYS` each reservation's slots; `ARGV` a token and a job id per
/// reservation: the reservation made under the token passes to the job,
/// with its lease — unless a starting job took it already (see [`OPS`](super::batch::OPS)'
/// acquire).
pub(super) static HAND_OVER: LazyLock<redis::Script> =
    LazyLock::new(|| redis::Script::new(include_str!("../lua/key_hand_over.lua")));

impl KeyLimits {
    /// For jobs about to be added through Airlock (`keys[i]` the key slot
    /// and limit of job `i`, `None` when it has none): reserves a free slot
    /// for each job its key has room for, and answers the reservation
    /// tokens (`None`: held back — the job is added at BullMQ's lowest
    /// priority, `queue::HELD_BACK_PRIORITY`). Hand the
    /// reservations to the added jobs with [`KeyLimits::hand_over`].
    pub async fn reserve(
        &self,
        keys: &[Option<(KeySlot, u64)>],
        lease_ms: u64,
    ) -> Result<Vec<Option<String>>, QueueError> {
        let mut tokens = vec![None; keys.len()];
        // The jobs of each key, in request order; one script call for all
        // of them (they are of one queue, so on one cluster slot).
        let mut by_key: Vec<(&KeySlot, u64, Vec<usize>)> = Vec::new();
        for (i, key) in keys.iter().enumerate() {
            let Some((slot, limit)) = key else { continue };
            match by_key.iter_mut().find(|(s, ..)| *s == slot) {
                Some((_, _, jobs)) => jobs.push(i),
                None => by_key.push((slot, *limit, vec![i])),
            }
        }
        let Some((first, ..)) = by_key.first() else {
            return Ok(tokens);
        };
        let store_keys = self.store.keys();
        let mut invocation = RESERVE.prepare_invoke();
        invocation
            .key(store_keys.key_lines(&first.queue))
            .key(store_keys.bullmq(&first.queue, "delayed"))
            .arg(self.clock.now_ms())
            .arg(lease_ms);
        let mut offered: Vec<Vec<String>> = Vec::with_capacity(by_key.len());
        for (slot, limit, jobs) in &by_key {
            let [slots, line, parking] = own_keys(&self.store, slot);
            invocation.key(slots).key(line).key(parking);
            // A key never has more than `limit` slots to give.
            let n = jobs
                .len()
                .min(usize::try_from(*limit).unwrap_or(usize::MAX));
            let key_tokens: Vec<String> = (0..n)
                .map(|_| format!("enqueue:{}", uuid::Uuid::new_v4().simple()))
                .collect();
            invocation.arg(&slot.hash).arg(*limit).arg(n);
            for token in &key_tokens {
                invocation.arg(token);
            }
            offered.push(key_tokens);
        }
        let mut conn = self.store.conn();
        let granted: Vec<usize> = invocation.invoke_async(&mut conn).await?;
        for ((_, _, jobs), (key_tokens, got)) in by_key.iter().zip(offered.into_iter().zip(granted))
        {
            for (job, token) in jobs.iter().zip(key_tokens.into_iter().take(got)) {
                tokens[*job] = Some(token);
            }
        }
        Ok(tokens)
    }

    /// Passes each reservation (`token`) to the job it was made for.
    pub async fn hand_over(
        &self,
        handovers: &[(KeySlot, String, String)],
    ) -> Result<(), QueueError> {
        if handovers.is_empty() {
            return Ok(());
        }
        let mut invocation = HAND_OVER.prepare_invoke();
        for (slot, token, id) in handovers {
            let [slots, ..] = self.key_keys(slot);
            invocation.key(slots).arg(token).arg(id);
        }
        let mut conn = self.store.conn();
        let _: i64 = invocation.invoke_async(&mut conn).await?;
        Ok(())
    }
}
