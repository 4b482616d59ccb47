//! `airlock queue ...`: a queue's binding, pause and resume, rollback, and
//! its runs by handler version.

use clap::Subcommand;
use reqwest::Method;
use serde_json::{Value, json};

use super::print;
use crate::cli::bind::{self, BindArgs};
use crate::cli::client::{ApiClient, Connection};

/// `airlock queue ...`.
#[derive(Debug, Subcommand)]
pub enum QueueCommand {
    /// Create or replace a queue's binding: every field of
    /// `PUT /v1/queues/{queue}` has a flag (limits, flow control, egress,
    /// config, default job options).
    Bind(Box<BindArgs>),
    /// List bound queues with counts.
    List,
    /// Show a queue.
    Get {
        /// Queue name.
        queue: String,
    },
    /// Pause a queue.
    Pause {
        /// Queue name.
        queue: String,
    },
    /// Resume a queue.
    Resume {
        /// Queue name.
        queue: String,
    },
    /// Undo the last change to what the queue's new jobs run: remove its
    /// canary, or, without one, put its handler back to the version
    /// before its current one (every queue bound to it follows).
    Rollback {
        /// Queue name.
        queue: String,
    },
    /// The queue's runs by handler version over a window, side by side
    /// (a queue with a canary): runs by end, mean wall time and fuel.
    Versions {
        /// Queue name.
        queue: String,
        /// The window, in minutes (1 to 1440).
        #[arg(long, default_value_t = 60)]
        minutes: u32,
    },
}

fn fmt_counts(counts: &Value) -> String {
    if counts.is_null() {
        return "(counts are not shown to a producer token)".into();
    }
    [
        "waiting",
        "active",
        "delayed",
        "prioritized",
        "waitingChildren",
        "completed",
        "failed",
    ]
    .iter()
    .map(|k| format!("{k} {}", counts[*k]))
    .collect::<Vec<_>>()
    .join("  ")
}

/// `airlock queue ...`.
pub async fn queue(conn: &Connection, json_output: bool, cmd: QueueCommand) -> anyhow::Result<i32> {
    let client = ApiClient::new(conn)?;
    let view: Value = match cmd {
        QueueCommand::Bind(args) => {
            let body = bind::body(&args.spec()?)?;
            client
                .json(Method::PUT, &format!("/v1/queues/{}", args.queue), &body)
                .await
                .map_err(bind::name_the_flag)?
        }
        QueueCommand::List => {
            let list: Value = client.get("/v1/queues").await?;
            print(json_output, &list, |l| {
                for q in l["queues"].as_array().into_iter().flatten() {
                    println!(
                        "{:<24} handler {:<20} concurrency {:<4} {}",
                        q["queue"].as_str().unwrap_or(""),
                        q["handler"].as_str().unwrap_or(""),
                        q["concurrency"],
                        fmt_counts(&q["counts"])
                    );
                }
            });
            return Ok(0);
        }
        QueueCommand::Get { queue } => client.get(&format!("/v1/queues/{queue}")).await?,
        QueueCommand::Pause { queue } => {
            client
                .json(
                    Method::POST,
                    &format!("/v1/queues/{queue}/pause"),
                    &json!({}),
                )
                .await?
        }
        QueueCommand::Resume { queue } => {
            client
                .json(
                    Method::POST,
                    &format!("/v1/queues/{queue}/resume"),
                    &json!({}),
                )
                .await?
        }
        QueueCommand::Rollback { queue } => {
            let done: Value = client
                .json(
                    Method::POST,
                    &format!("/v1/queues/{queue}/rollback"),
                    &json!({}),
                )
                .await?;
            print(json_output, &done, |d| {
                let handler = d["handler"].as_str().unwrap_or("");
                if let Some(candidate) = d["canaryRemoved"].as_str() {
                    println!(
                        "removed queue {queue}'s canary ({candidate}): every new job runs {handler}'s current version"
                    );
                } else {
                    println!(
                        "handler {handler} back from {} to {}; queues following: {}",
                        d["from"].as_str().unwrap_or(""),
                        d["to"].as_str().unwrap_or(""),
                        d["queues"]
                            .as_array()
                            .map(|q| q
                                .iter()
                                .filter_map(Value::as_str)
                                .collect::<Vec<_>>()
                                .join(", "))
                            .unwrap_or_default()
                    );
                }
            });
            return Ok(0);
        }
        QueueCommand::Versions { queue, minutes } => {
            let stats: Value = client
                .get(&format!("/v1/stats?queue={queue}&minutes={minutes}"))
                .await?;
            print(json_output, &stats["versions"], |versions| {
                let Some(versions) = versions.as_object().filter(|v| !v.is_empty()) else {
                    println!(
                        "no runs by version in the last {minutes} min (a queue with a canary tallies them)"
                    );
                    return;
                };
                for (digest, v) in versions {
                    let runs: u64 = v["runs"]
                        .as_object()
                        .map(|r| r.values().filter_map(Value::as_u64).sum())
                        .unwrap_or(0);
                    let mean =
                        |field: &str| v[field].as_u64().unwrap_or(0) as f64 / runs.max(1) as f64;
                    println!(
                        "{digest}  {runs} runs {}  mean {:.1} ms, {:.0} fuel",
                        v["runs"],
                        mean("wallMs"),
                        mean("fuel")
                    );
                }
            });
            return Ok(0);
        }
    };
    print(json_output, &view, |q| {
        println!("queue       {}", q["queue"].as_str().unwrap_or(""));
        println!("handler     {}", q["handler"].as_str().unwrap_or(""));
        println!("concurrency {}", q["concurrency"]);
        println!("limits      {}", q["limits"]);
        println!("defaults    {}", q["defaultJobOptions"]);
        if !q["counts"].is_null() {
            println!("paused      {}", q["counts"]["paused"]);
        }
        println!("jobs        {}", fmt_counts(&q["counts"]));
    });
    Ok(0)
}
