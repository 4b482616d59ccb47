//! `airlock enqueue`: adds a job, and with `--wait` follows it to its end
//! with a progress bar, exiting with the code of its failure kind.

use std::time::Duration;

use anyhow::Context as _;
use clap::Args;
use futures::StreamExt;
use serde_json::{Value, json};

use super::print;
use crate::cli::client::{ApiClient, Connection};
use crate::cli::run::exit_code;
use crate::sandbox::FailureKind;

/// `airlock enqueue`.
#[derive(Debug, Args)]
pub struct EnqueueArgs {
    /// Queue name.
    pub queue: String,
    /// Job data (JSON).
    pub data: String,
    /// Job name.
    #[arg(long)]
    pub name: Option<String>,
    /// Job options (BullMQ JSON), e.g. `{"attempts":3,"delay":1000}`.
    #[arg(long)]
    pub opts: Option<String>,
    /// Follow the job: live progress, then the result or the failure.
    #[arg(long)]
    pub wait: bool,
    /// The request's idempotency key (default: a fresh one). The enqueue is
    /// retried while the API is unreachable or answers 503; with the same
    /// key a retry never adds the job twice, and running the command again
    /// with this key within 24 hours answers with the same job.
    #[arg(long)]
    pub idempotency_key: Option<String>,
}

fn parse_json(flag: &str, text: &str) -> anyhow::Result<Value> {
    serde_json::from_str(text).with_context(|| format!("{flag}: not valid JSON: {text}"))
}

/// The exit code for a failed job, from the kind in its `failedReason`.
fn failure_exit_code(reason: &str) -> i32 {
    reason
        .split_once(':')
        .and_then(|(kind, _)| FailureKind::parse(kind))
        .map(exit_code)
        .unwrap_or(1)
}

/// `airlock enqueue`.
pub async fn enqueue(
    conn: &Connection,
    json_output: bool,
    args: EnqueueArgs,
) -> anyhow::Result<i32> {
    let client = ApiClient::new(conn)?;
    let mut body = json!({"data": parse_json("data", &args.data)?});
    if let Some(name) = &args.name {
        body["name"] = json!(name);
    }
    if let Some(opts) = &args.opts {
        body["opts"] = parse_json("--opts", opts)?;
    }
    let key = args
        .idempotency_key
        .clone()
        .unwrap_or_else(|| uuid::Uuid::new_v4().simple().to_string());
    let accepted: Value = client
        .post_idempotent(&format!("/v1/queues/{}/jobs", args.queue), &body, &key)
        .await?;
    let job_ref = accepted["ref"].as_str().unwrap_or_default().to_string();
    if !args.wait {
        print(json_output, &accepted, |a| {
            let dup = if a["duplicate"] == json!(true) {
                " (duplicate: nothing added)"
            } else {
                ""
            };
            println!("enqueued {job_ref}{dup}");
        });
        return Ok(0);
    }
    follow(&client, json_output, &job_ref).await
}

/// Follows a job's events with a progress bar until it finishes.
async fn follow(client: &ApiClient, json_output: bool, job_ref: &str) -> anyhow::Result<i32> {
    let bar = if json_output {
        indicatif::ProgressBar::hidden()
    } else {
        let bar = indicatif::ProgressBar::new(100);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} {msg:<10} [{bar:30}] {pos:>3}% {elapsed}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        bar.enable_steady_tick(Duration::from_millis(120));
        bar.set_message("waiting");
        bar
    };
    let path = format!("/v1/jobs/{job_ref}/events");
    let mut events = Box::pin(client.events(&path).await?);
    while let Some(event) = events.next().await {
        let (name, data) = event?;
        match name.as_str() {
            "state" => {
                let state = data["state"].as_str().unwrap_or("");
                if let Some(p) = data["progress"].as_u64() {
                    bar.set_position(p.min(100));
                }
                if state == "completed" || state == "failed" {
                    break;
                }
                bar.set_message(state.to_string());
            }
            "active" => bar.set_message("running"),
            "progress" => {
                if let Some(p) = data["data"]["progress"].as_u64() {
                    bar.set_position(p.min(100));
                } else {
                    bar.set_message(format!("{}", data["data"]["progress"]));
                }
            }
            "delayed" | "waiting" => bar.set_message(name.clone()),
            "completed" | "failed" => break,
            _ => {}
        }
    }
    bar.finish_and_clear();
    let job: Value = client.get(&format!("/v1/jobs/{job_ref}")).await?;
    match job["state"].as_str() {
        Some("completed") => {
            print(json_output, &job, |j| {
                println!("{job_ref} completed");
                println!(
                    "{}",
                    serde_json::to_string_pretty(&j["returnvalue"]).unwrap_or_default()
                );
            });
            Ok(0)
        }
        Some("failed") => {
            let reason = job["failedReason"].as_str().unwrap_or("").to_string();
            print(json_output, &job, |_| {
                eprintln!("{job_ref} failed: {reason}");
            });
            Ok(failure_exit_code(&reason))
        }
        other => anyhow::bail!(
            "the event stream ended with the job still {}",
            other.unwrap_or("unknown")
        ),
    }
}
