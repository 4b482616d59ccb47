//! A token's scope: the queues and handlers it may see and touch. Outside
//! them the API answers as if nothing were there (404), so a team's token
//! learns nothing of another team's queues, handlers or jobs.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use wildmatch::WildMatch;

use crate::error::FieldError;

/// Most patterns of each kind.
pub const MAX_PATTERNS: usize = 32;

/// Queue-name and handler-name patterns: `*` stands for any run of
/// characters (`payments*`, `*-eu`), anything else for itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Scope {
    /// The queues it may see and touch: their jobs, bindings, secrets,
    /// schedules, events and figures.
    #[serde(default)]
    #[schema(max_items = 32, value_type = Vec<QueuePattern>)]
    pub queues: Vec<String>,
    /// The handlers it may see, deploy and bind.
    #[serde(default)]
    #[schema(max_items = 32, value_type = Vec<HandlerPattern>)]
    pub handlers: Vec<String>,
}

/// A queue-name pattern: a queue name in which `*` may stand anywhere.
#[derive(ToSchema)]
#[schema(pattern = r"^[A-Za-z0-9._{}*-]{1,128}$")]
#[allow(dead_code)]
pub struct QueuePattern(String);

/// A handler-name pattern: a handler name in which `*` may stand anywhere.
#[derive(ToSchema)]
#[schema(pattern = r"^[A-Za-z0-9._*-]{1,128}$")]
#[allow(dead_code)]
pub struct HandlerPattern(String);

impl Scope {
    /// Refuses patterns that could match no name (naming the field, e.g.
    /// `scope.queues[1]`) and a scope with no pattern at all.
    pub fn validate(&self) -> Result<(), FieldError> {
        if self.queues.is_empty() && self.handlers.is_empty() {
            return Err(FieldError::new(
                "scope",
                "must name at least one queue or handler pattern",
            ));
        }
        type Check = fn(&str, &str) -> Result<(), FieldError>;
        let kinds: [(&str, &Vec<String>, Check); 2] = [
            ("queues", &self.queues, crate::names::queue),
            ("handlers", &self.handlers, crate::names::handler),
        ];
        for (kind, patterns, check) in kinds {
            if patterns.len() > MAX_PATTERNS {
                return Err(FieldError::new(
                    format!("scope.{kind}"),
                    format!("at most {MAX_PATTERNS} patterns"),
                ));
            }
            for (i, pattern) in patterns.iter().enumerate() {
                // A pattern is a name in which `*` may stand anywhere.
                check(&format!("scope.{kind}[{i}]"), &pattern.replace('*', "x"))?;
            }
        }
        Ok(())
    }

    /// Whether queue `name` is in the scope.
    pub fn has_queue(&self, name: &str) -> bool {
        matches(&self.queues, name)
    }

    /// Whether handler `name` is in the scope.
    pub fn has_handler(&self, name: &str) -> bool {
        matches(&self.handlers, name)
    }
}

fn matches(patterns: &[String], name: &str) -> bool {
    // `?` is no name's character (the patterns are checked), so `*` is
    // the only wildcard.
    patterns.iter().any(|p| WildMatch::new(p).matches(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(queues: &[&str], handlers: &[&str]) -> Scope {
        Scope {
            queues: queues.iter().map(|s| s.to_string()).collect(),
            handlers: handlers.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn a_star_stands_for_any_run_of_characters() {
        let s = scope(&["payments*", "*-eu", "{team-a}*"], &["pay"]);
        assert!(s.validate().is_ok());
        for q in ["payments", "payments-refunds", "mail-eu", "{team-a}jobs"] {
            assert!(s.has_queue(q), "{q}");
        }
        for q in ["payment", "xpayments", "mail-us", "{team-b}jobs"] {
            assert!(!s.has_queue(q), "{q}");
        }
        assert!(s.has_handler("pay"));
        assert!(!s.has_handler("payment"));
        assert!(!s.has_handler("payments"));
    }

    #[test]
    fn a_bad_pattern_is_named() {
        let e = scope(&["ok*", "bad:*"], &[]).validate().unwrap_err();
        assert_eq!(e.field, "scope.queues[1]");
        let e = scope(&[], &["a?"]).validate().unwrap_err();
        assert_eq!(e.field, "scope.handlers[0]");
        assert_eq!(scope(&[], &[]).validate().unwrap_err().field, "scope");
        let many: Vec<&str> = std::iter::repeat_n("q*", 33).collect();
        let e = scope(&many, &[]).validate().unwrap_err();
        assert_eq!(e.field, "scope.queues");
    }
}
