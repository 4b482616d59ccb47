//! `airlock cancel`: asks for a job to be cancelled, and with `--wait`
//! waits until it has failed as `cancelled`.

use reqwest::Method;
use serde_json::{Value, json};

use super::print;
use crate::cli::client::{ApiClient, Connection};

/// `airlock cancel`.
#[derive(Debug, clap::Args)]
pub struct CancelArgs {
    /// The job, as `<queue>:<id>`.
    pub job: String,
    /// Why, in words (kept in the job's `failedReason`).
    #[arg(long)]
    pub reason: Option<String>,
    /// Wait until the job has failed (at most 5 minutes); exits 0 when it
    /// failed as `cancelled`, 1 when it finished otherwise first.
    #[arg(long)]
    pub wait: bool,
}

/// `airlock cancel JOB [--reason R] [--wait]`.
pub async fn cancel(conn: &Connection, json_output: bool, args: CancelArgs) -> anyhow::Result<i32> {
    let client = ApiClient::new(conn)?;
    let job_ref = &args.job;
    let body = match &args.reason {
        Some(reason) => json!({ "reason": reason }),
        None => json!({}),
    };
    let accepted: Value = client
        .json(Method::POST, &format!("/v1/jobs/{job_ref}/cancel"), &body)
        .await?;
    if !args.wait {
        print(json_output, &accepted, |a| {
            println!(
                "{job_ref}: cancel requested (it was {})",
                a["was"].as_str().unwrap_or("unknown")
            );
        });
        return Ok(0);
    }
    let waited: Value = client
        .get(&format!("/v1/jobs/{job_ref}/wait?timeout=5m"))
        .await?;
    let job = &waited["job"];
    let reason = job["failedReason"].as_str().unwrap_or("");
    let code = match job["state"].as_str() {
        Some("failed") if job["failureKind"] == "cancelled" => {
            print(json_output, job, |_| println!("{job_ref} {reason}"));
            0
        }
        Some(state @ ("failed" | "completed")) => {
            print(json_output, job, |_| {
                eprintln!("{job_ref} {state} before the cancel took effect: {reason}")
            });
            1
        }
        other => anyhow::bail!(
            "{job_ref} is still {} after 5 minutes: the cancel takes effect when a worker of its queue takes it",
            other.unwrap_or("unknown")
        ),
    };
    Ok(code)
}
