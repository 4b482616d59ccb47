//! `airlock audit`: the fleet's audit log (`GET /v1/audit`, admin), newest
//! first.

use std::time::Duration;

use clap::Args;
use serde_json::Value;

use super::print;
use crate::cli::client::{ApiClient, Connection};

/// `airlock audit`.
#[derive(Debug, Args)]
pub struct AuditArgs {
    /// Only this token's changes (its name).
    #[arg(long)]
    pub who: Option<String>,
    /// Only actions starting with this, e.g. `queue.` or `secret.set`.
    #[arg(long)]
    pub action: Option<String>,
    /// Only changes to this queue, handler, token, host or job.
    #[arg(long)]
    pub target: Option<String>,
    /// Only the last DURATION, e.g. `24h`.
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub since: Option<Duration>,
    /// At most this many entries (1 to 1000).
    #[arg(long, default_value_t = 100)]
    pub limit: u64,
}

/// Runs `airlock audit`.
pub async fn audit(conn: &Connection, json_output: bool, args: AuditArgs) -> anyhow::Result<i32> {
    let client = ApiClient::new(conn)?;
    let mut query = form_urlencoded::Serializer::new(String::new());
    query.append_pair("limit", &args.limit.to_string());
    for (name, value) in [
        ("who", &args.who),
        ("action", &args.action),
        ("target", &args.target),
    ] {
        if let Some(value) = value {
            query.append_pair(name, value);
        }
    }
    if let Some(since) = args.since {
        let now = airlock_core::clock::now_ms();
        let since = now.saturating_sub(since.as_millis() as u64);
        query.append_pair("since", &since.to_string());
    }
    let listing: Value = client.get(&format!("/v1/audit?{}", query.finish())).await?;
    print(json_output, &listing, |l| {
        for e in l["entries"].as_array().into_iter().flatten() {
            let at = e["at"]
                .as_u64()
                .map(|ms| {
                    let at = std::time::UNIX_EPOCH + Duration::from_millis(ms);
                    humantime::format_rfc3339_seconds(at).to_string()
                })
                .unwrap_or_default();
            println!(
                "#{:<6} {} {:<20} {:<24} {:<28} from {:<15} {}{}",
                e["seq"],
                at,
                e["who"].as_str().unwrap_or(""),
                e["action"].as_str().unwrap_or(""),
                e["target"].as_str().unwrap_or(""),
                e["from"].as_str().unwrap_or("-"),
                e["details"],
                if e["sealed"] == Value::Bool(true) {
                    ""
                } else {
                    "  NOT SEALED"
                }
            );
        }
        for g in l["gaps"].as_array().into_iter().flatten() {
            println!(
                "entries #{}–#{} are missing (removed by hand)",
                g["fromSeq"], g["toSeq"]
            );
        }
    });
    Ok(0)
}
