//! Why a job is not running yet, in words and in fields: what only Airlock
//! knows about a waiting job (its key's line, a durable sleep or wait) next to what
//! BullMQ knows (a delay, children, a paused queue).
//!
//! Read on demand for one job (`GET /v1/jobs/{ref}`): a few reads, one of
//! them (the position in a key's line) linear in the line's length.

use airlock_core::json_path::JsonPath;
use redis::AsyncCommands;
use serde::Serialize;
use serde_json::Value;

use super::fairness::{job_tenant, share_now};
use crate::queue::{HELD_BACK_PRIORITY, JobSnapshot, JobState, QueueError, QueueService};
use crate::registry::Binding;
use crate::state::key_limits::KeySlot;
use crate::state::waits::{Parked, WaitRecord, parked_in};

/// What holds a job back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum WaitKind {
    /// Its key is at its `keyConcurrency` limit; it waits in the key's line.
    KeyLimit,
    /// Its tenant runs its share of the queue under `fairness`; it waits in
    /// the tenant's line for its turn.
    TenantTurn,
    /// Its key is over its `keyThrottle` rate; it starts at `until`.
    Throttled,
    /// In a durable sleep until `until`.
    Sleeping,
    /// In a durable wait for an event (`wait-for-event`), until `until` at
    /// the latest.
    Event,
    /// In a durable wait for its token's completion (`wait-for-token`),
    /// until `until` at the latest.
    Token,
    /// Delayed (a delay, or a retry's backoff) until `until`.
    Delayed,
    /// A flow parent waiting for its children.
    Children,
    /// The queue is paused.
    Paused,
    /// No live host serves the queue.
    NoHost,
    /// Every live host serving the queue has all its instance slots busy.
    CapacityFull,
    /// Ready, waiting for a worker slot.
    Ready,
}

/// The live hosts serving a job's queue, as their last heartbeats say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Serving {
    /// How many serve it.
    pub hosts: usize,
    /// Their instance slots, together.
    pub slots: usize,
    /// How many of those run a job.
    pub busy: usize,
}

/// Why a job waits.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WaitReason {
    /// What holds it back.
    pub kind: WaitKind,
    /// The same, in words.
    pub message: String,
    /// Until when, ms since the epoch (`sleeping`, `delayed`; the deadline
    /// of `event` and `token`).
    pub until: Option<u64>,
    /// Its key's value (`key_limit`, `throttled`; its tenant for
    /// `tenant_turn`).
    #[schema(value_type = Option<Value>)]
    pub key: Option<serde_json::Value>,
    /// Slots its key (its tenant) holds now (`key_limit`, `tenant_turn`).
    pub running: Option<u64>,
    /// Its key's limit (`key_limit`; starts per period for `throttled`;
    /// its tenant's share for `tenant_turn`).
    pub limit: Option<u64>,
    /// Jobs ahead of it in its key's (tenant's) line (`key_limit`,
    /// `tenant_turn`, once it is in line).
    pub ahead: Option<u64>,
    /// The other rules that hold it back as well, now: a job in its key's
    /// line whose tenant also runs its share (or in its tenant's line with
    /// its key also at its limit) needs both to let it through. Empty when
    /// only `kind` does (and for every kind but `key_limit` and
    /// `tenant_turn`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also: Vec<AlsoWaits>,
}

/// Another rule that holds a waiting job back (see [`WaitReason::also`]).
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AlsoWaits {
    /// Which rule: `key_limit` or `tenant_turn`.
    pub kind: WaitKind,
    /// The same, in words.
    pub message: String,
    /// Its key's value (its tenant for `tenant_turn`).
    #[schema(value_type = Value)]
    pub key: serde_json::Value,
    /// Slots its key (its tenant) holds now.
    pub running: u64,
    /// Its key's limit (its tenant's share for `tenant_turn`).
    pub limit: u64,
}

impl WaitReason {
    fn plain(kind: WaitKind, message: String, until: Option<u64>) -> WaitReason {
        WaitReason {
            kind,
            message,
            until,
            key: None,
            running: None,
            limit: None,
            ahead: None,
            also: Vec::new(),
        }
    }
}

fn at(ms: u64) -> String {
    humantime::format_rfc3339_millis(std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms))
        .to_string()
}

/// Answers why jobs of one Redis wait, reading the queue's state through
/// `queues`.
pub struct Why<'q> {
    queues: &'q QueueService,
}

impl<'q> Why<'q> {
    /// Explains jobs of `queues`.
    pub fn new(queues: &'q QueueService) -> Self {
        Why { queues }
    }

    /// Why `job` (of a queue bound by `binding`) is not running; `None`
    /// when it runs or has finished. `serving`: the live hosts serving its
    /// queue.
    pub async fn why_waiting(
        &self,
        job: &JobSnapshot,
        binding: Option<&Binding>,
        serving: Serving,
    ) -> Result<Option<WaitReason>, QueueError> {
        let mut conn = self.queues.store().conn();
        let reason = match job.state {
            JobState::Active | JobState::Completed | JobState::Failed | JobState::Unknown => {
                return Ok(None);
            }
            JobState::WaitingChildren => WaitReason::plain(
                WaitKind::Children,
                "waiting for its children to finish".into(),
                None,
            ),
            JobState::Delayed => {
                if let Some(reason) = self.key_wait(job, binding).await? {
                    return Ok(Some(reason));
                }
                if let Some(reason) = self.throttle_wait(job, binding).await? {
                    return Ok(Some(reason));
                }
                let score: Option<f64> = conn
                    .zscore(
                        self.queues.store().keys().bullmq(&job.queue, "delayed"),
                        &job.id,
                    )
                    .await?;
                // BullMQ scores delayed jobs as `timestamp * 4096 + counter`.
                let until = score.map(|s| (s / 4096.0) as u64);
                let parked = self.parked_for(job).await?;
                let when = until.map(at).unwrap_or_else(|| "later".into());
                if let Some(Parked::Wait(record)) = parked {
                    let kind = match record {
                        WaitRecord::Event { .. } => WaitKind::Event,
                        WaitRecord::Token { .. } => WaitKind::Token,
                    };
                    WaitReason::plain(
                        kind,
                        format!(
                            "in a durable wait for {} until {} at the latest",
                            record.describe(),
                            at(record.deadline())
                        ),
                        Some(record.deadline()),
                    )
                } else if parked.is_some() {
                    WaitReason::plain(
                        WaitKind::Sleeping,
                        format!("in a durable sleep until {when}"),
                        until,
                    )
                } else {
                    WaitReason::plain(WaitKind::Delayed, format!("delayed until {when}"), until)
                }
            }
            JobState::Waiting | JobState::Prioritized => {
                if let Some(reason) = self.key_wait(job, binding).await? {
                    return Ok(Some(reason));
                }
                if self.queues.is_paused(&job.queue).await? {
                    WaitReason::plain(WaitKind::Paused, "the queue is paused".into(), None)
                } else if serving.hosts == 0 {
                    WaitReason::plain(
                        WaitKind::NoHost,
                        "no live host serves this queue".into(),
                        None,
                    )
                } else if serving.busy >= serving.slots {
                    WaitReason::plain(
                        WaitKind::CapacityFull,
                        format!(
                            "host capacity full: {} of {} instance slots busy on the {} host{} serving this queue",
                            serving.busy,
                            serving.slots,
                            serving.hosts,
                            if serving.hosts == 1 { "" } else { "s" }
                        ),
                        None,
                    )
                } else {
                    WaitReason::plain(
                        WaitKind::Ready,
                        "ready: waiting for a free worker slot".into(),
                        None,
                    )
                }
            }
        };
        Ok(Some(reason))
    }

    /// The durable wait or sleep the job is parked for, if any.
    async fn parked_for(&self, job: &JobSnapshot) -> Result<Option<Parked>, QueueError> {
        let fields = self
            .queues
            .store()
            .hgetall(&self.queues.job_key(&job.queue, &job.id))
            .await?;
        Ok(parked_in(&fields, airlock_core::clock::now_ms()))
    }

    /// The job's turn under its key's throttle, if it waits for one.
    async fn throttle_wait(
        &self,
        job: &JobSnapshot,
        binding: Option<&Binding>,
    ) -> Result<Option<WaitReason>, QueueError> {
        let Some(rule) = binding.and_then(|b| b.key_throttle.as_ref()) else {
            return Ok(None);
        };
        let Some(value) = rule.key.get(&job.data) else {
            return Ok(None);
        };
        let Some(at_ms) = self
            .queues
            .state()
            .key_rates
            .grant(&KeySlot::of(&job.queue, value), &job.id)
            .await?
        else {
            return Ok(None);
        };
        let mut reason = WaitReason::plain(
            WaitKind::Throttled,
            format!(
                "key {value} ({}) is throttled to {} per {}; its turn comes at {}",
                rule.key.as_str(),
                rule.limit,
                humantime::format_duration(std::time::Duration::from_millis(rule.period_ms)),
                at(at_ms)
            ),
            Some(at_ms),
        );
        reason.key = Some(value.clone());
        reason.limit = Some(rule.limit);
        Ok(Some(reason))
    }

    /// The job's place in its key's line, if it waits in one: its
    /// `singleton` key's (waiting for the replaced job to stop), its
    /// `keyConcurrency` key's, or its tenant's under `fairness`.
    async fn key_wait<'a>(
        &self,
        job: &JobSnapshot,
        binding: Option<&'a Binding>,
    ) -> Result<Option<WaitReason>, QueueError> {
        let Some(binding) = binding else {
            return Ok(None);
        };
        // Each line's key: its value and where the rule takes it from.
        let mut rules: Vec<(Value, &str, u64, Line)> = Vec::new();
        let mut by_path = |path: &'a JsonPath, limit, line| {
            if let Some(value) = path.get(&job.data) {
                rules.push((value.clone(), path.as_str(), limit, line));
            }
        };
        if let Some(rule) = &binding.singleton {
            by_path(&rule.key, 1, Line::Singleton);
        }
        if let Some(rule) = &binding.key_concurrency {
            by_path(&rule.key, rule.limit, Line::Key);
        }
        if let Some(rule) = &binding.fairness {
            let of = (job.queue.as_str(), job.id.as_str());
            let sealed = || {
                let data = serde_json::to_string(&job.data).unwrap_or_default();
                (job.name.clone(), data)
            };
            if let Some(value) = job_tenant(self.queues, rule, of, Some(&job.data), sealed).await? {
                rules.push((value, rule.tenant.as_str(), 0, Line::Tenant));
            }
        }
        // The line the job is in (the first rule's it is found in), then
        // every other rule that would hold it back as well.
        let mut found: Option<(usize, u64)> = None;
        for (i, (value, _, _, line_of)) in rules.iter().enumerate() {
            let slot = line_of.slot(&job.queue, value);
            let line = self.queues.store().keys().key_line(&job.queue, &slot.hash);
            let mut conn = self.queues.store().conn();
            let position: Option<u64> = redis::cmd("LPOS")
                .arg(&line)
                .arg(&job.id)
                .query_async(&mut conn)
                .await?;
            let held_back = *line_of == Line::Key
                && job.state == JobState::Prioritized
                && job.priority == HELD_BACK_PRIORITY;
            match (position, held_back) {
                (Some(ahead), _) => found = Some((i, ahead)),
                (None, true) => found = Some((i, u64::MAX)),
                (None, false) => continue,
            }
            break;
        }
        let Some((first, ahead)) = found else {
            return Ok(None);
        };
        let place = match ahead {
            u64::MAX => "held back behind every ready job until a worker has room".to_string(),
            ahead => format!("{ahead} of its jobs are ahead of this one in line"),
        };
        let (value, path, limit, line_of) = &rules[first];
        let Some(held) = self
            .rule_held(binding, &job.queue, (value, path, *limit, *line_of))
            .await?
        else {
            return Ok(None);
        };
        let mut also = Vec::new();
        for (i, (value, path, limit, line_of)) in rules.iter().enumerate() {
            if i == first {
                continue;
            }
            if let Some(other) = self
                .rule_held(binding, &job.queue, (value, path, *limit, *line_of))
                .await?
                && other.running >= other.limit
            {
                also.push(other);
            }
        }
        let mut message = format!("{}; {place}", held.message);
        for other in &also {
            message.push_str(&format!("; and {}", other.message));
        }
        Ok(Some(WaitReason {
            kind: held.kind,
            message,
            until: None,
            key: Some(value.clone()),
            running: Some(held.running),
            limit: Some(held.limit),
            ahead: (ahead != u64::MAX).then_some(ahead),
            also,
        }))
    }

    /// Where a job stands under one of its rules that has a line: its
    /// key's or tenant's slots held now, the limit (a tenant's share),
    /// in words. `None` for a tenant without `fairness`.
    async fn rule_held(
        &self,
        binding: &Binding,
        queue: &str,
        (value, path, limit, line_of): (&Value, &str, u64, Line),
    ) -> Result<Option<AlsoWaits>, QueueError> {
        let slot = line_of.slot(queue, value);
        let held = match line_of {
            Line::Singleton => {
                let state = self.queues.state().key_limits.counts(&slot).await?;
                AlsoWaits {
                    kind: WaitKind::KeyLimit,
                    message: format!(
                        "singleton key {value} ({path}): waiting for its running job to stop"
                    ),
                    key: value.clone(),
                    running: state.held,
                    limit,
                }
            }
            Line::Key => {
                let state = self.queues.state().key_limits.counts(&slot).await?;
                AlsoWaits {
                    kind: WaitKind::KeyLimit,
                    message: format!(
                        "key {value} ({path}) is at its limit: {}/{limit} running",
                        state.held
                    ),
                    key: value.clone(),
                    running: state.held,
                    limit,
                }
            }
            Line::Tenant => {
                let Some(rule) = &binding.fairness else {
                    return Ok(None);
                };
                let capacity = binding.global_concurrency.unwrap_or(1);
                let weight = rule.weight_of(value);
                let (state, share, active) =
                    share_now(self.queues, rule, capacity, &slot, weight).await?;
                AlsoWaits {
                    kind: WaitKind::TenantTurn,
                    message: format!(
                        "tenant {value} ({path}) runs its share: {}/{share} running (weight {weight}; \
                         {active} tenant{} share the queue's {capacity}); it waits for its turn",
                        state.held,
                        if active == 1 { "" } else { "s" }
                    ),
                    key: value.clone(),
                    running: state.held,
                    limit: share,
                }
            }
        };
        Ok(Some(held))
    }
}

/// Which line a job may wait in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Line {
    Singleton,
    Key,
    Tenant,
}

impl Line {
    /// The slot of this line's rule for a job whose key (tenant) is `value`.
    fn slot(self, queue: &str, value: &Value) -> KeySlot {
        match self {
            Line::Singleton => KeySlot::of(queue, value).singleton(),
            Line::Key => KeySlot::of(queue, value),
            Line::Tenant => KeySlot::of(queue, value).tenant(),
        }
    }
}
