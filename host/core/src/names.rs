//! The names and ids Airlock accepts, in one place: queue names, handler
//! names, the ids of schedules and events, and Redis Cluster hash tags.
//!
//! Each check names the field it was asked about, so the API's error says
//! which part of a request is wrong.

use crate::FieldError;

/// Longest queue or handler name.
pub const MAX_NAME: usize = 128;

/// Longest job id (and deduplication id), in bytes.
pub const MAX_ID_LEN: usize = 256;

/// A queue name BullMQ (and Redis Cluster hash tags) can live with: 1 to 128
/// letters, digits, `-`, `_`, `.`, and `{`/`}` for a hash tag. No `:` — a
/// job is addressed as `<queue>:<id>`.
pub fn queue(field: &str, name: &str) -> Result<(), FieldError> {
    if name.is_empty() || name.len() > MAX_NAME {
        return Err(FieldError::new(field, "must be 1 to 128 characters"));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '{' | '}'))
    {
        return Err(FieldError::new(
            field,
            "may contain only letters, digits, `-`, `_`, `.` and a `{hash tag}`",
        ));
    }
    Ok(())
}

/// The JSON-schema pattern of [`queue`], for the OpenAPI document.
pub const QUEUE_PATTERN: &str = r"^[A-Za-z0-9._{}-]{1,128}$";

/// A handler name: 1 to 128 letters, digits, `-`, `_` and `.`.
pub fn handler(field: &str, name: &str) -> Result<(), FieldError> {
    id(field, name, MAX_NAME)
}

/// The JSON-schema pattern of [`handler`].
pub const HANDLER_PATTERN: &str = r"^[A-Za-z0-9._-]{1,128}$";

/// A handler version's digest: 64 lowercase hex digits (SHA-256).
pub fn digest(field: &str, digest: &str) -> Result<(), FieldError> {
    if digest.len() == 64
        && digest
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    {
        Ok(())
    } else {
        Err(FieldError::new(
            field,
            "must be a handler version's digest: 64 lowercase hex digits",
        ))
    }
}
/// A secret name (`registry::secrets::check_name`; the sandbox accepts the
/// same names from guests).
pub const SECRET_PATTERN: &str = r"^[A-Za-z0-9._-]{1,128}$";

/// An id made of letters, digits, `-`, `_` and `.`, 1 to `max` long
/// (schedule ids, event ids).
pub fn id(field: &str, id: &str, max: usize) -> Result<(), FieldError> {
    if id.is_empty()
        || id.len() > max
        || !id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Err(FieldError::new(
            field,
            format!("must be 1 to {max} letters, digits, `-`, `_` or `.`"),
        ));
    }
    Ok(())
}

/// The JSON-schema pattern of a schedule id ([`id`] up to 128).
pub const SCHEDULE_ID_PATTERN: &str = r"^[A-Za-z0-9._-]{1,128}$";

/// The JSON-schema pattern of an idempotency key ([`id`] up to 200).
pub const IDEMPOTENCY_KEY_PATTERN: &str = r"^[A-Za-z0-9._-]{1,200}$";

/// The JSON-schema pattern of a job ref, `<queue>:<id>` (the id may hold
/// `:` itself — schedulers' tick ids do — but no `/`).
pub const REF_PATTERN: &str = r"^[A-Za-z0-9._{}-]{1,128}:[^/]{1,256}$";

/// The JSON-schema pattern of a host id in a path.
pub const HOST_ID_PATTERN: &str = r"^[^/]{1,256}$";

/// Whether `name` carries a non-empty `{hash tag}`: on a Redis Cluster the
/// keys of a queue must share a slot, which a tag in the queue name (or in
/// the key prefix) guarantees.
pub fn hash_tagged(name: &str) -> bool {
    name.find('{')
        .is_some_and(|i| name[i..].find('}').is_some_and(|j| j > 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_names() {
        assert!(queue("queue", "payments").is_ok());
        assert!(queue("queue", "{payments}").is_ok());
        assert_eq!(queue("queue", "a:b").unwrap_err().field, "queue");
        assert!(queue("q", "").is_err());
        assert!(queue("q", &"x".repeat(129)).is_err());
    }

    #[test]
    fn hash_tags() {
        assert!(hash_tagged("{payments}"));
        assert!(hash_tagged("bull{x}"));
        assert!(!hash_tagged("{}"));
        assert!(!hash_tagged("payments"));
    }
}
