//! The OpenAPI document as served: utoipa's, generated from the routes,
//! completed with what every route shares and what derive macros cannot
//! express, so it describes exactly what the server answers and accepts.
//!
//! - **Shared responses.** With a token (`security`): 401 (missing or
//!   unknown token) and 403 (the role may not do this); with a JSON body:
//!   400, 413 and 415; with path parameters: 400 (malformed) and 404; every
//!   operation but the health checks: 503 (Redis unreachable or failing).
//! - **Path parameters and the `Idempotency-Key` header** get the patterns
//!   the server checks them against ([`crate::names`]).
//! - **Cross-field rules:** a schedule has a cron `pattern` or an `every`
//!   interval, exactly one; its `tz` is one of the IANA zone names the
//!   server knows; exponential backoff's longest wait,
//!   `delay × 2^(attempts − 2)`, is at most a year (an `anyOf` over the
//!   attempts, since JSON Schema has no products); a token's scope names
//!   at least one pattern, and an `admin` token has none.
//!
//! `tests/tests/openapi_fuzz.rs` runs a property-based fuzzer over the
//! served document with every check on, so the two keep agreeing.

use serde_json::{Map, Value, json};

use crate::names;
use crate::queue::{BACKOFF_TIER, MAX_FLOW_DEPTH, max_exponential_delay};
use crate::registry::MAX_CONFIG_ENTRIES;

/// The document to serve.
pub fn document(api: &utoipa::openapi::OpenApi) -> Value {
    let mut doc = serde_json::to_value(api).expect("the OpenAPI document serializes");
    shared_responses(&mut doc);
    schedule_rules(&mut doc);
    retention_range(&mut doc);
    closed_variants(&mut doc, "Backoff");
    flow_children(&mut doc);
    binding_rules(&mut doc);
    token_rules(&mut doc);
    for schema in [
        "JobOptions",
        "DefaultJobOptions",
        "FlowNodeOptions",
        "ScheduleJobOptions",
    ] {
        exponential_backoff_rule(&mut doc, schema);
    }
    doc
}

fn error_response(description: &str) -> Value {
    json!({
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}
    })
}

/// The pattern a path parameter must match on `path`.
fn path_param_pattern(path: &str, name: &str) -> Option<&'static str> {
    match name {
        "queue" => Some(names::QUEUE_PATTERN),
        "name" if path.contains("/secrets/") => Some(names::SECRET_PATTERN),
        "name" => Some(names::HANDLER_PATTERN),
        "ref" => Some(names::REF_PATTERN),
        "id" if path.starts_with("/v1/hosts/") => Some(names::HOST_ID_PATTERN),
        "id" => Some(names::SCHEDULE_ID_PATTERN),
        _ => None,
    }
}

fn shared_responses(doc: &mut Value) {
    let Some(paths) = doc["paths"].as_object_mut() else {
        return;
    };
    for (path, item) in paths.iter_mut() {
        let Some(item) = item.as_object_mut() else {
            continue;
        };
        for (method, op) in item.iter_mut() {
            if !matches!(method.as_str(), "get" | "put" | "post" | "delete" | "patch") {
                continue;
            }
            let params = op.get_mut("parameters").and_then(Value::as_array_mut);
            for param in params.into_iter().flatten() {
                let pattern = match (param["in"].as_str(), param["name"].as_str()) {
                    (Some("path"), Some(name)) => path_param_pattern(path, name),
                    (Some("header"), Some("Idempotency-Key")) => {
                        Some(names::IDEMPOTENCY_KEY_PATTERN)
                    }
                    _ => None,
                };
                if let Some(pattern) = pattern {
                    param["schema"] = json!({"type": "string", "pattern": pattern});
                }
            }
            let secured = op["security"].as_array().is_some_and(|s| !s.is_empty());
            let json_body = op["requestBody"]["content"]["application/json"].is_object();
            let has_path_params = path.contains('{');
            let Some(responses) = op["responses"].as_object_mut() else {
                continue;
            };
            let mut add = |code: &str, description: &str| {
                responses
                    .entry(code.to_string())
                    .or_insert_with(|| error_response(description));
            };
            if secured {
                add("401", "Missing or unknown token");
                add("403", "The token's role may not do this");
            }
            if json_body {
                add("400", "Invalid request (the error names the field)");
                add("413", "Body too large");
                add("415", "Not application/json");
            }
            if has_path_params {
                add("400", "Invalid request (the error names the field)");
                add("404", "Not found");
            }
            if !matches!(path.as_str(), "/healthz" | "/readyz") {
                add(
                    "503",
                    "Redis is unreachable, or failed while the request ran (the message says whether anything changed)",
                );
            }
        }
    }
}

fn schema_mut<'a>(doc: &'a mut Value, name: &str) -> Option<&'a mut Map<String, Value>> {
    doc["components"]["schemas"][name].as_object_mut()
}

/// The count form of a retention (`removeOnComplete: 100`) has the same
/// range as its `count` field (utoipa cannot put a range on a tuple
/// variant).
fn retention_range(doc: &mut Value) {
    let Some(retention) = schema_mut(doc, "Retention") else {
        return;
    };
    let branches = retention.get_mut("oneOf").and_then(Value::as_array_mut);
    for branch in branches.into_iter().flatten() {
        if branch["type"] == "integer" {
            branch["minimum"] = json!(0);
            branch["maximum"] = json!(crate::queue::MAX_RETENTION);
        }
    }
}

/// A tagged enum's variants refuse unknown fields (`deny_unknown_fields`),
/// which utoipa does not carry into their schemas.
fn closed_variants(doc: &mut Value, name: &str) {
    let Some(schema) = schema_mut(doc, name) else {
        return;
    };
    let branches = schema.get_mut("oneOf").and_then(Value::as_array_mut);
    for branch in branches.into_iter().flatten() {
        branch["additionalProperties"] = json!(false);
    }
}

/// Only a child of a flow has a failure policy, and a flow is at most
/// [`MAX_FLOW_DEPTH`] levels deep: the root `FlowSpec` takes no
/// `onFailure`, its children are `FlowChild2` nodes that do, theirs
/// `FlowChild3`, down to a last level without children. One recursive Rust
/// type serves them all; the server refuses what the levels leave out.
fn flow_children(doc: &mut Value) {
    let Some(spec) = schema_mut(doc, "FlowSpec") else {
        return;
    };
    let node = spec.clone();
    let level_ref =
        |level: usize| json!({"$ref": format!("#/components/schemas/FlowChild{level}")});
    if let Some(props) = spec.get_mut("properties").and_then(Value::as_object_mut) {
        props.remove("onFailure");
        props["children"]["items"] = level_ref(2);
    }
    for level in 2..=MAX_FLOW_DEPTH {
        let mut child = node.clone();
        if let Some(props) = child.get_mut("properties").and_then(Value::as_object_mut) {
            if level == MAX_FLOW_DEPTH {
                props["children"]["maxItems"] = json!(0);
                props["children"]["items"] = json!({});
            } else {
                props["children"]["items"] = level_ref(level + 1);
            }
        }
        child.insert(
            "description".into(),
            json!(format!(
                "A child node of a flow, on level {level}: a flow node with a failure policy."
            )),
        );
        doc["components"]["schemas"][format!("FlowChild{level}")] = Value::Object(child);
    }
}

/// A binding that turns fuel metering off (`metered: false`) sets no fuel
/// limit; one with `fairness` sets `globalConcurrency` (the capacity its
/// tenants share); one with `batch` does not set `warmInstances`; its
/// `config` has at most [`MAX_CONFIG_ENTRIES`]
/// entries (utoipa has no attribute for `maxProperties`).
fn binding_rules(doc: &mut Value) {
    let Some(spec) = schema_mut(doc, "BindingSpec") else {
        return;
    };
    if let Some(config) = spec
        .get_mut("properties")
        .and_then(|p| p.get_mut("config"))
        .and_then(Value::as_object_mut)
    {
        config.insert("maxProperties".into(), json!(MAX_CONFIG_ENTRIES));
    }
    add_any_of(
        spec,
        json!([
            {"properties": {"metered": {"enum": [true, null]}}},
            {"properties": {"limits": {"properties": {"fuel": {"type": "null"}}}}},
        ]),
    );
    add_any_of(
        spec,
        json!([
            {"properties": {"fairness": {"type": "null"}}},
            {"required": ["globalConcurrency"], "properties": {"globalConcurrency": {"type": "integer"}}},
        ]),
    );
    add_any_of(
        spec,
        json!([
            {"properties": {"batch": {"type": "null"}}},
            {"properties": {"warmInstances": {"type": "null"}}},
        ]),
    );
}

/// A scope names at least one queue or handler pattern; an `admin` token
/// has no scope (`api_tokens::create`).
fn token_rules(doc: &mut Value) {
    if let Some(scope) = schema_mut(doc, "Scope") {
        add_any_of(
            scope,
            json!([
                {"required": ["queues"], "properties": {"queues": {"minItems": 1}}},
                {"required": ["handlers"], "properties": {"handlers": {"minItems": 1}}},
            ]),
        );
    }
    if let Some(new) = schema_mut(doc, "NewToken") {
        add_any_of(
            new,
            json!([
                {"properties": {"scope": {"type": "null"}}},
                {"properties": {"role": {"enum": ["deployer", "producer", "reader", "cron"]}}},
            ]),
        );
    }
}

fn schedule_rules(doc: &mut Value) {
    let Some(spec) = schema_mut(doc, "ScheduleSpec") else {
        return;
    };
    spec.insert(
        "oneOf".into(),
        json!([
            {"required": ["pattern"], "properties": {"pattern": {"type": "string"}}},
            {"required": ["every"], "properties": {"every": {"type": "integer"}}},
        ]),
    );
    let zones: Vec<&str> = chrono_tz::TZ_VARIANTS.iter().map(|tz| tz.name()).collect();
    if let Some(tz) = spec
        .get_mut("properties")
        .and_then(|p| p.get_mut("tz"))
        .and_then(Value::as_object_mut)
    {
        tz.insert(
            "enum".into(),
            json!(
                zones
                    .into_iter()
                    .map(Some)
                    .chain([None])
                    .collect::<Vec<_>>()
            ),
        );
    }
}

/// The attempts caps and delay caps of exponential backoff's tiers
/// (`queue::max_exponential_delay`), as `(max attempts, max delay)`.
fn backoff_tiers() -> Vec<(u32, u64)> {
    let mut tiers = Vec::new();
    let mut attempts = BACKOFF_TIER;
    loop {
        let max_delay = max_exponential_delay(attempts);
        if max_delay == 0 {
            return tiers;
        }
        tiers.push((attempts, max_delay));
        attempts += BACKOFF_TIER;
    }
}

/// The rules of a job-options schema: exponential backoff's delay is
/// within its tier's cap (the backoff is fixed, or its delay is 0, or there
/// is at most one attempt, or the attempts are within a tier and the delay
/// within that tier's cap), and `lifo` is not combined with a priority.
fn exponential_backoff_rule(doc: &mut Value, name: &str) {
    let Some(schema) = schema_mut(doc, name) else {
        return;
    };
    let has = |field: &str| schema["properties"].get(field).is_some();
    if !has("backoff") || !has("attempts") {
        return;
    }
    let mut branches = vec![
        json!({"properties": {"backoff": {"properties": {"type": {"const": "fixed"}}}}}),
        json!({"properties": {"backoff": {"properties": {"delay": {"maximum": 0}}}}}),
        json!({"properties": {"attempts": {"maximum": 1}}}),
    ];
    for (attempts, max_delay) in backoff_tiers() {
        branches.push(json!({
            "required": ["attempts"],
            "properties": {
                "attempts": {"type": "integer", "maximum": attempts},
                "backoff": {"properties": {"delay": {"maximum": max_delay}}}
            }
        }));
    }
    add_any_of(schema, Value::Array(branches));
    // `lifo` cannot be combined with a priority.
    if schema["properties"].get("lifo").is_some() && schema["properties"].get("priority").is_some()
    {
        add_any_of(
            schema,
            json!([
                {"properties": {"lifo": {"enum": [false, null]}}},
                {"properties": {"priority": {"maximum": 0}}},
            ]),
        );
    }
}

/// Adds a rule (`anyOf` branches) to a schema, next to rules it has.
fn add_any_of(schema: &mut Map<String, Value>, branches: Value) {
    let rule = json!({"anyOf": branches});
    match schema.get_mut("allOf").and_then(Value::as_array_mut) {
        Some(rules) => rules.push(rule),
        None => {
            schema.insert("allOf".into(), json!([rule]));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::{Backoff, JobOptions, MAX_DELAY_MS, exponential_wait};

    /// What the document allows for exponential backoff: the backoff's own
    /// range (`Backoff.delay` ≤ a year) and the branches.
    fn document_allows(attempts: u32, delay: u64) -> bool {
        delay <= MAX_DELAY_MS && (delay == 0 || attempts <= 1 || in_a_tier(attempts, delay))
    }

    fn in_a_tier(attempts: u32, delay: u64) -> bool {
        backoff_tiers()
            .iter()
            .any(|(max_attempts, max_delay)| attempts <= *max_attempts && delay <= *max_delay)
    }

    #[test]
    fn the_backoff_branches_say_exactly_what_the_server_accepts() {
        for attempts in 1..=80u32 {
            let cap = max_exponential_delay(attempts);
            for delay in [0, 1, 2, cap.saturating_sub(1), cap, cap + 1, MAX_DELAY_MS] {
                let opts = JobOptions {
                    attempts: Some(attempts),
                    backoff: Some(Backoff::Exponential { delay }),
                    ..JobOptions::default()
                };
                assert_eq!(
                    opts.validate().is_ok(),
                    document_allows(attempts, delay),
                    "attempts {attempts}, delay {delay}"
                );
                if opts.validate().is_ok() {
                    assert!(exponential_wait(delay, attempts) <= MAX_DELAY_MS);
                }
            }
        }
        assert!(backoff_tiers().len() <= 8, "few enough cases for a fuzzer");
    }
}
