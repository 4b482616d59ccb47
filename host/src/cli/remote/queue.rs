//! `airlock queue ...`: a queue's binding, pause and resume, what its new
//! jobs run (canary, promote, rollback), and its runs by handler version.

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
    /// Send a share of the queue's new jobs to a candidate: a component
    /// file (uploaded as a candidate of the queue's handler: nothing else
    /// runs it) or the digest of an uploaded version.
    Canary {
        /// Queue name.
        queue: String,
        /// A component file, or a version's digest.
        candidate: String,
        /// The share of new jobs that run it, 1 to 99.
        #[arg(long)]
        percent: u8,
        /// A label for an uploaded file (`v1.4.0`, a git sha).
        #[arg(long)]
        version: Option<String>,
    },
    /// Make the queue's canary candidate what its new jobs run: on this
    /// queue alone, or with --all-queues as the handler's current version.
    Promote {
        /// Queue name.
        queue: String,
        /// Make it the handler's current version: every queue bound to the
        /// handler without a version of its own runs it.
        #[arg(long)]
        all_queues: bool,
    },
    /// Undo the last change to what the queue's new jobs run: remove its
    /// canary; without one, take a promoted queue back to the handler's
    /// current version, or put its handler
    /// back to the version before its current one (every queue bound to
    /// it without a version of its own follows; --queue-only moves this queue
    /// alone).
    Rollback {
        /// Queue name.
        queue: String,
        /// Go back a version on this queue alone.
        #[arg(long)]
        queue_only: bool,
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

/// A JSON list of names as `a, b`.
fn joined(list: &Value) -> String {
    (list.as_array().into_iter().flatten())
        .filter_map(Value::as_str)
        .collect::<Vec<_>>()
        .join(", ")
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
        QueueCommand::Canary {
            queue,
            candidate,
            percent,
            version,
        } => {
            let digest = match std::fs::read(&candidate) {
                Ok(bytes) => {
                    let view: Value = client.get(&format!("/v1/queues/{queue}")).await?;
                    let handler = view["handler"].as_str().unwrap_or_default().to_string();
                    let uploaded =
                        super::deploy::upload(&client, &handler, bytes, &version, true).await?;
                    let digest = uploaded["digest"].as_str().unwrap_or_default().to_string();
                    if !json_output {
                        println!("uploaded {candidate} as a candidate of {handler}: {digest}");
                    }
                    digest
                }
                Err(_) => candidate.clone(),
            };
            let binding: Value = client
                .json(
                    Method::PUT,
                    &format!("/v1/queues/{queue}/canary"),
                    &json!({"digest": digest, "percent": percent}),
                )
                .await?;
            print(json_output, &binding, |_| {
                println!("queue {queue}: {percent} % of new jobs run {digest}");
            });
            return Ok(0);
        }
        QueueCommand::Promote { queue, all_queues } => {
            let done: Value = client
                .json(
                    Method::POST,
                    &format!("/v1/queues/{queue}/promote"),
                    &json!({"allQueues": all_queues}),
                )
                .await?;
            print(json_output, &done, |d| {
                let to = d["to"].as_str().unwrap_or("");
                match d["current"].as_bool() {
                    Some(true) => println!(
                        "{to} is handler {}'s current version; queues running it: {}",
                        d["handler"].as_str().unwrap_or(""),
                        joined(&d["queues"])
                    ),
                    _ => println!(
                        "queue {queue} runs {to} (other queues of handler {} are as they were; --all-queues moves them too)",
                        d["handler"].as_str().unwrap_or("")
                    ),
                }
            });
            return Ok(0);
        }
        QueueCommand::Rollback { queue, queue_only } => {
            let done: Value = client
                .json(
                    Method::POST,
                    &format!("/v1/queues/{queue}/rollback"),
                    &json!({"queueOnly": queue_only}),
                )
                .await?;
            print(json_output, &done, |d| {
                let handler = d["handler"].as_str().unwrap_or("");
                if let Some(candidate) = d["canaryRemoved"].as_str() {
                    println!(
                        "removed queue {queue}'s canary ({candidate}): every new job runs what it ran before"
                    );
                } else {
                    let queues = joined(&d["queues"]);
                    println!(
                        "back from {} to {}; queues moved: {queues}",
                        d["from"].as_str().unwrap_or(""),
                        d["to"].as_str().unwrap_or(""),
                    );
                    if queues.contains(',') {
                        println!(
                            "(every queue of handler {handler} moved; `airlock queue rollback {queue} --queue-only` moves one)"
                        );
                    }
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
        if let Some(version) = q["version"].as_str() {
            println!("version     {version} (this queue's own)");
        }
        if let Some(candidate) = q["canary"]["digest"].as_str() {
            println!(
                "canary      {} % of new jobs to {candidate}",
                q["canary"]["percent"]
            );
        }
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
