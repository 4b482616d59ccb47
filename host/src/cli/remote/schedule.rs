//! `airlock schedule`: set, list, delete and run now (`trigger`) a queue's
//! schedules.

use anyhow::Context as _;
use clap::{Args, Subcommand};
use reqwest::Method;
use serde_json::{Value, json};

use super::print;
use crate::cli::client::{ApiClient, Connection};

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
