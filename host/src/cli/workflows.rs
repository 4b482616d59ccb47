//! CLI commands for schedules, event triggers and flows.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::{Args, Subcommand};
use reqwest::Method;
use serde_json::{Value, json};

use super::client::{ApiClient, Connection};
use super::remote::print;

/// `airlock schedule ...`.
#[derive(Debug, Subcommand)]
pub enum ScheduleCommand {
    /// Create or replace a schedule.
    Set(SetArgs),
    /// List a queue's schedules with their next runs.
    List {
        /// Queue name.
        queue: String,
    },
    /// Delete a schedule.
    Delete {
        /// Queue name.
        queue: String,
        /// Schedule id.
        id: String,
    },
    /// Run a schedule now (admin or cron token).
    Trigger {
        /// Queue name.
        queue: String,
        /// Schedule id.
        id: String,
    },
}

/// `airlock schedule set`.
#[derive(Debug, Args)]
pub struct SetArgs {
    /// Queue name.
    pub queue: String,
    /// Schedule id.
    pub id: String,
    /// Cron pattern, e.g. `0 3 * * *`.
    #[arg(long, conflicts_with = "every")]
    pub cron: Option<String>,
    /// Interval, e.g. `30s`.
    #[arg(long)]
    pub every: Option<String>,
    /// Time zone of the cron pattern, e.g. `Europe/Paris`.
    #[arg(long)]
    pub tz: Option<String>,
    /// Job data (JSON).
    #[arg(long, default_value = "{}")]
    pub data: String,
    /// Job name.
    #[arg(long)]
    pub name: Option<String>,
}

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

/// `airlock flow`.
#[derive(Debug, Args)]
pub struct FlowArgs {
    /// A JSON file with the flow tree (`{name, queue, data, children: [...]}`).
    pub file: PathBuf,
}

fn when(ms: &Value) -> String {
    ms.as_u64()
        .map(|ms| {
            let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms);
            humantime::format_rfc3339_seconds(t).to_string()
        })
        .unwrap_or_else(|| "-".into())
}

/// `airlock schedule ...`.
pub async fn schedule(
    conn: &Connection,
    json_output: bool,
    cmd: ScheduleCommand,
) -> anyhow::Result<i32> {
    let client = ApiClient::new(conn)?;
    match cmd {
        ScheduleCommand::Set(args) => {
            let mut spec = json!({
                "data": serde_json::from_str::<Value>(&args.data).with_context(|| format!("--data: not valid JSON: {}", args.data))?,
            });
            match (&args.cron, &args.every) {
                (Some(c), _) => spec["pattern"] = json!(c),
                (None, Some(e)) => {
                    let d = humantime::parse_duration(e)
                        .with_context(|| format!("--every: `{e}` is not a duration like 30s"))?;
                    spec["every"] = json!(d.as_millis() as u64);
                }
                (None, None) => anyhow::bail!("give --cron '<pattern>' or --every <interval>"),
            }
            if let Some(tz) = &args.tz {
                spec["tz"] = json!(tz);
            }
            if let Some(name) = &args.name {
                spec["name"] = json!(name);
            }
            let view: Value = client
                .json(
                    Method::PUT,
                    &format!("/v1/queues/{}/schedules/{}", args.queue, args.id),
                    &spec,
                )
                .await?;
            print(json_output, &view, |v| {
                println!(
                    "schedule {} on {}: next run {}",
                    args.id,
                    args.queue,
                    when(&v["nextRunAt"])
                );
            });
        }
        ScheduleCommand::List { queue } => {
            let list: Value = client.get(&format!("/v1/queues/{queue}/schedules")).await?;
            print(json_output, &list, |l| {
                for s in l["schedules"].as_array().into_iter().flatten() {
                    let rule = s["pattern"]
                        .as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| format!("every {} ms", s["every"]));
                    let tz = s["tz"].as_str().unwrap_or("UTC");
                    println!(
                        "{:<24} {:<20} {:<16} next {}  runs {}",
                        s["id"].as_str().unwrap_or(""),
                        rule,
                        tz,
                        when(&s["nextRunAt"]),
                        s["iterations"]
                    );
                }
            });
        }
        ScheduleCommand::Delete { queue, id } => {
            let _: Value = client
                .json(
                    Method::DELETE,
                    &format!("/v1/queues/{queue}/schedules/{id}"),
                    &json!({}),
                )
                .await?;
            if !json_output {
                println!("deleted schedule {id} of {queue}");
            }
        }
        ScheduleCommand::Trigger { queue, id } => {
            let result: Value = client
                .json(
                    Method::POST,
                    &format!("/v1/queues/{queue}/schedules/{id}/trigger"),
                    &json!({}),
                )
                .await?;
            print(json_output, &result, |r| {
                let joined = if r["coalesced"] == json!(true) {
                    " (joined the waiting run)"
                } else {
                    ""
                };
                println!("triggered {}{joined}", r["ref"].as_str().unwrap_or(""));
            });
        }
    }
    Ok(0)
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

/// `airlock flow`.
pub async fn flow(conn: &Connection, json_output: bool, args: FlowArgs) -> anyhow::Result<i32> {
    let text = std::fs::read_to_string(&args.file)
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    let tree: Value = serde_json::from_str(&text)
        .with_context(|| format!("{}: not valid JSON", args.file.display()))?;
    let client = ApiClient::new(conn)?;
    let node: Value = client.json(Method::POST, "/v1/flows", &tree).await?;
    print(json_output, &node, |n| {
        fn show(n: &Value, depth: usize) {
            println!("{}{}", "  ".repeat(depth), n["ref"].as_str().unwrap_or(""));
            for c in n["children"].as_array().into_iter().flatten() {
                show(c, depth + 1);
            }
        }
        show(n, 0);
    });
    Ok(0)
}
