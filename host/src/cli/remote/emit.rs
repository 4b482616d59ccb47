//! `airlock emit`: sends an event to the queues subscribed to it.

use anyhow::Context as _;
use clap::Args;
use reqwest::Method;
use serde_json::{Value, json};

use super::print;
use crate::cli::client::{ApiClient, Connection};

/// `airlock emit`.
#[derive(Debug, Args)]
pub struct EmitArgs {
    /// Event name.
    pub name: String,
    /// Event data (JSON).
    #[arg(default_value = "{}")]
    pub data: String,
    /// Idempotency id: the same id within 24 h creates no new jobs.
    #[arg(long)]
    pub id: Option<String>,
}

/// `airlock emit`.
pub async fn emit(conn: &Connection, json_output: bool, args: EmitArgs) -> anyhow::Result<i32> {
    let client = ApiClient::new(conn)?;
    let mut event = json!({
        "name": args.name,
        "data": serde_json::from_str::<Value>(&args.data).with_context(|| format!("data: not valid JSON: {}", args.data))?,
    });
    if let Some(id) = &args.id {
        event["id"] = json!(id);
    }
    let delivery: Value = client.json(Method::POST, "/v1/events", &event).await?;
    print(json_output, &delivery, |d| {
        let dup = if d["duplicate"] == json!(true) {
            " (duplicate: no new jobs)"
        } else {
            ""
        };
        println!("event {}{dup}", d["eventId"].as_str().unwrap_or(""));
        for job in d["jobs"].as_array().into_iter().flatten() {
            println!("  {}", job.as_str().unwrap_or(""));
        }
    });
    Ok(0)
}
