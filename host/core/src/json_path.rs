//! Paths into a job's or an event's JSON data, `$.customer.id`: what
//! binding rules key on (`cancelOn[].match`) and durable waits match events
//! on.
//!
//! Only object members, by name: `$` then one to 16 `.name` segments of
//! letters, digits, `_` and `-`. No indexes, wildcards or filters — a rule
//! must pick exactly one value, and a value it cannot find means the rule
//! does not apply.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Most segments of a path.
pub const MAX_SEGMENTS: usize = 16;

/// Longest path text.
pub const MAX_PATH_CHARS: usize = 256;

/// The JSON-schema pattern of a path.
pub const PATH_PATTERN: &str = r"^\$(\.[A-Za-z0-9_-]{1,64}){1,16}$";

/// A parsed path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonPath {
    text: String,
    segments: Vec<String>,
}

impl JsonPath {
    /// Parses `$.a.b`; the error says what is wrong.
    pub fn parse(text: &str) -> Result<JsonPath, String> {
        let bad = || {
            format!(
                "`{text}` is not a path like `$.customerId`: `$` then 1 to {MAX_SEGMENTS} `.name` segments of letters, digits, `_` or `-`"
            )
        };
        if text.chars().count() > MAX_PATH_CHARS {
            return Err(bad());
        }
        let rest = text.strip_prefix("$.").ok_or_else(bad)?;
        let segments: Vec<String> = rest.split('.').map(str::to_string).collect();
        let valid = segments.len() <= MAX_SEGMENTS
            && segments.iter().all(|s| {
                (1..=64).contains(&s.len())
                    && s.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
            });
        if !valid {
            return Err(bad());
        }
        Ok(JsonPath {
            text: text.to_string(),
            segments,
        })
    }

    /// The value at this path in `data`, if there is one (and it is not
    /// `null`).
    pub fn get<'a>(&self, data: &'a serde_json::Value) -> Option<&'a serde_json::Value> {
        let mut at = data;
        for segment in &self.segments {
            at = at.as_object()?.get(segment)?;
        }
        (!at.is_null()).then_some(at)
    }

    /// The path as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl Serialize for JsonPath {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for JsonPath {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<JsonPath, D::Error> {
        let text = String::deserialize(d)?;
        JsonPath::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_pick_one_member_value() {
        let p = JsonPath::parse("$.order.id").unwrap();
        assert_eq!(p.get(&json!({"order": {"id": "o1"}})), Some(&json!("o1")));
        assert_eq!(p.get(&json!({"order": {"id": null}})), None);
        assert_eq!(p.get(&json!({"order": "o1"})), None);
        assert_eq!(p.get(&json!([1])), None);
    }

    #[test]
    fn bad_paths_are_refused() {
        for bad in ["", "$", "$.", "orderId", "$.a..b", "$.a[0]", "$.a b", "$.*"] {
            assert!(JsonPath::parse(bad).is_err(), "{bad}");
        }
        let long = format!("$.{}", vec!["a"; MAX_SEGMENTS + 1].join("."));
        assert!(JsonPath::parse(&long).is_err());
    }
}
