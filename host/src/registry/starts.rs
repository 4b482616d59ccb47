//! What a queue's handler may start (`starts`), and where its jobs that
//! failed for good go (`onFailure`): capabilities a binding grants, never
//! ambient authority. A handler starts a job on a queue, or sends an
//! event, only when a pattern here names it; anything else ends its run as
//! `guest_fatal`, saying why (`worker::starts`).

use serde::{Deserialize, Serialize};

use super::{RegistryError, invalid};

/// Most patterns of each kind.
const MAX_PATTERNS: usize = 100;
/// Longest pattern.
const MAX_PATTERN_LEN: usize = 256;

/// The queues a handler may enqueue to or invoke, and the events it may
/// send: names, or patterns where `*` stands for any run of characters
/// and `?` for any one character (`payments-*`, `order.*`). Empty lists:
/// nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Starts {
    /// Queue names or patterns (`enqueue`, `invoke`).
    #[serde(default)]
    #[schema(inline, value_type = Vec<StartPattern>, max_items = 100)]
    pub queues: Vec<String>,
    /// Event names or patterns (`send-event`).
    #[serde(default)]
    #[schema(inline, value_type = Vec<StartPattern>, max_items = 100)]
    pub events: Vec<String>,
}

/// A name or `*` pattern of `starts` (schema only: 1 to 256 characters).
#[derive(utoipa::ToSchema)]
#[schema(min_length = 1, max_length = 256)]
pub struct StartPattern(#[allow(dead_code)] String);

/// Where every job of a queue that failed for good is announced, once:
/// a job on `queue` (a dead-letter queue, bound to any handler) and/or an
/// event named `event`, whose data names the job and why it failed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OnFailure {
    /// The queue that receives a job per failure.
    #[serde(default)]
    #[schema(pattern = r"^[A-Za-z0-9._{}-]{1,128}$")]
    pub queue: Option<String>,
    /// The event sent per failure.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 256)]
    pub event: Option<String>,
}

impl Starts {
    /// Checks the patterns' number and length, naming the field.
    pub fn validate(&self, field: &str) -> Result<(), RegistryError> {
        for (kind, patterns) in [("queues", &self.queues), ("events", &self.events)] {
            if patterns.len() > MAX_PATTERNS {
                return Err(invalid(
                    &format!("{field}.{kind}"),
                    format!("at most {MAX_PATTERNS} patterns"),
                ));
            }
            for (i, p) in patterns.iter().enumerate() {
                if p.is_empty() || p.len() > MAX_PATTERN_LEN {
                    return Err(invalid(
                        &format!("{field}.{kind}[{i}]"),
                        format!("must be 1 to {MAX_PATTERN_LEN} characters"),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Whether the handler may start jobs on `queue`.
    pub fn allows_queue(&self, queue: &str) -> bool {
        matches_any(&self.queues, queue)
    }

    /// Whether the handler may send event `name`.
    pub fn allows_event(&self, name: &str) -> bool {
        matches_any(&self.events, name)
    }
}

impl OnFailure {
    /// Checks that it names a queue or an event, and each is well formed.
    pub fn validate(&self, field: &str) -> Result<(), RegistryError> {
        if self.queue.is_none() && self.event.is_none() {
            return Err(invalid(field, "must name a `queue`, an `event` or both"));
        }
        if let Some(queue) = &self.queue {
            crate::names::queue(&format!("{field}.queue"), queue)?;
        }
        if let Some(event) = &self.event
            && (event.is_empty() || event.len() > 256)
        {
            return Err(invalid(
                &format!("{field}.event"),
                "must be 1 to 256 characters",
            ));
        }
        Ok(())
    }
}

fn matches_any(patterns: &[String], name: &str) -> bool {
    patterns
        .iter()
        .any(|p| wildmatch::WildMatch::new(p).matches(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pattern_names_queues_and_events_and_nothing_else() {
        let starts = Starts {
            queues: vec!["payments".into(), "mail-*".into()],
            events: vec!["order.*".into()],
        };
        assert!(starts.allows_queue("payments"));
        assert!(starts.allows_queue("mail-eu"));
        assert!(!starts.allows_queue("payments-eu"));
        assert!(!starts.allows_queue("refunds"));
        assert!(starts.allows_event("order.shipped"));
        assert!(!starts.allows_event("user.created"));
        assert!(!Starts::default().allows_queue("payments"));
    }

    #[test]
    fn on_failure_names_something() {
        assert!(OnFailure::default().validate("onFailure").is_err());
        let bad = OnFailure {
            queue: Some("a:b".into()),
            event: None,
        };
        assert!(bad.validate("onFailure").is_err());
        let good = OnFailure {
            queue: Some("dead-letters".into()),
            event: Some("job.failed".into()),
        };
        assert!(good.validate("onFailure").is_ok());
    }
}
