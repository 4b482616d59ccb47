//! A job's address, with one rule to write and read it: `<queue>:<id>` in
//! the API, the CLI and every record that names a job (`payments:42`), and
//! `<prefix>:<queue>:<id>` as the key of its BullMQ hash. Queue names hold
//! no `:` ([`crate::names::queue`]); ids may (a schedule's jobs are
//! `repeat:<schedule>:<ms>`), so the queue ends at the first `:`.

use std::fmt;

/// A job of a queue.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct JobRef {
    pub queue: String,
    pub id: String,
}

impl JobRef {
    pub fn new(queue: impl Into<String>, id: impl Into<String>) -> JobRef {
        JobRef {
            queue: queue.into(),
            id: id.into(),
        }
    }

    /// `<queue>:<id>`, both parts non-empty; `None` otherwise. Only the
    /// shape: whether the queue is a valid name is the caller's check.
    pub fn parse(text: &str) -> Option<JobRef> {
        split(text)
            .filter(|(queue, id)| !queue.is_empty() && !id.is_empty())
            .map(|(queue, id)| JobRef::new(queue, id))
    }

    /// The job of BullMQ key `<prefix>:<queue>:<id>`; `None` for a key of
    /// another prefix or of another shape.
    pub fn from_key(prefix: &str, key: &str) -> Option<JobRef> {
        JobRef::parse(key.strip_prefix(prefix)?.strip_prefix(':')?)
    }
}

impl fmt::Display for JobRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.queue, self.id)
    }
}

/// `<queue>:<id>` as `(queue, id)`, without copying: split at the first
/// `:`, either part possibly empty (the caller says what is wrong).
pub fn split(text: &str) -> Option<(&str, &str)> {
    text.split_once(':')
}

/// BullMQ key `<prefix>:<queue>:<id>` as `(queue, id)`, without copying.
pub fn split_key<'k>(prefix: &str, key: &'k str) -> Option<(&'k str, &'k str)> {
    split(key.strip_prefix(prefix)?.strip_prefix(':')?)
}

/// BullMQ's key of job `id` of `queue` under `prefix`.
pub fn key(prefix: &str, queue: &str, id: &str) -> String {
    format!("{prefix}:{queue}:{id}")
}

/// `<queue>:<id>`, the way every record and message names a job.
pub fn join(queue: &str, id: &str) -> String {
    format!("{queue}:{id}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_queue_ends_at_the_first_colon() {
        let job = JobRef::parse("mail:repeat:daily:1700000000000").unwrap();
        assert_eq!(job, JobRef::new("mail", "repeat:daily:1700000000000"));
        assert_eq!(job.to_string(), "mail:repeat:daily:1700000000000");
        let job_key = key("bull", &job.queue, &job.id);
        assert_eq!(job_key, "bull:mail:repeat:daily:1700000000000");
        assert_eq!(JobRef::from_key("bull", &job_key).as_ref(), Some(&job));
    }

    #[test]
    fn malformed_refs_and_keys_are_none() {
        for text in ["", "mail", "mail:", ":42", ":"] {
            assert_eq!(JobRef::parse(text), None, "{text:?}");
        }
        assert_eq!(JobRef::from_key("bull", "other:mail:42"), None);
        assert_eq!(JobRef::from_key("bull", "bullmail:42"), None);
        assert_eq!(JobRef::from_key("bull", "bull:mail"), None);
        assert_eq!(split("mail:"), Some(("mail", "")));
        assert_eq!(split_key("{a}", "{a}:q:1"), Some(("q", "1")));
    }
}
