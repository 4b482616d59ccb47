//! `airlock job`: shows one job; `airlock job export` writes its
//! transcripts.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::{Args, Subcommand};
use serde_json::Value;

use super::print;
use crate::cli::client::{ApiClient, Connection};

/// `airlock job`: show one job, or another action on it.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct JobArgs {
    /// Another action on the job.
    #[command(subcommand)]
    pub action: Option<JobCommand>,
    /// The job, as `<queue>:<id>`.
    #[arg(required = true)]
    pub job: Option<String>,
}

/// `airlock job ...` actions beyond showing it.
#[derive(Debug, Subcommand)]
pub enum JobCommand {
    /// Write the job's transcripts (`GET /v1/jobs/{ref}/transcript`) as
    /// JSON: what `airlock replay --transcript FILE` reads.
    Export {
        /// The job, as `<queue>:<id>`.
        job: String,
        /// The file to write (default: standard output).
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
}

/// `airlock job export`.
pub async fn export(
    conn: &Connection,
    job: &str,
    output: Option<&std::path::Path>,
) -> anyhow::Result<i32> {
    let client = ApiClient::new(conn)?;
    let transcripts: Value = client.get(&format!("/v1/jobs/{job}/transcript")).await?;
    let runs = transcripts["runs"].as_array().map_or(0, Vec::len);
    if runs == 0 {
        anyhow::bail!(
            "{job} has no transcripts: its queue records them only when bound with --record-transcripts"
        );
    }
    let text = serde_json::to_string_pretty(&transcripts)?;
    match output {
        Some(path) => {
            std::fs::write(path, text + "\n")
                .with_context(|| format!("--output: cannot write {}", path.display()))?;
            eprintln!(
                "wrote {runs} run transcript(s) of {job} to {}",
                path.display()
            );
        }
        None => println!("{text}"),
    }
    Ok(0)
}

/// `airlock job`.
pub async fn job(conn: &Connection, json_output: bool, job_ref: &str) -> anyhow::Result<i32> {
    let client = ApiClient::new(conn)?;
    let job: Value = client.get(&format!("/v1/jobs/{job_ref}")).await?;
    // Its children (invoked, or a flow's) and its batch's jobs, as the
    // timeline lists them.
    let timeline: Value = if json_output {
        Value::Null
    } else {
        client.get(&format!("/v1/jobs/{job_ref}/timeline")).await?
    };
    print(json_output, &job, |j| {
        let s = |k: &str| {
            j[k].as_str()
                .map(str::to_string)
                .unwrap_or_else(|| j[k].to_string())
        };
        println!("job         {job_ref}");
        println!("name        {}", s("name"));
        println!("state       {}", s("state"));
        if let Some(why) = j["waiting"]["message"].as_str() {
            println!("waiting     {why}");
        }
        println!(
            "attempts    {} made, {} started",
            j["attemptsMade"], j["attemptsStarted"]
        );
        println!("progress    {}", j["progress"]);
        println!("data        {}", j["data"]);
        if j["returnvalue"] != Value::Null {
            println!("result      {}", j["returnvalue"]);
        }
        if let Some(reason) = j["failedReason"].as_str() {
            println!("failed      {reason}");
        }
        println!("handler     {}", s("handlerDigest"));
        println!(
            "measured    fuel {}  memory {} bytes  time {} ms",
            j["metrics"]["fuelUsed"], j["metrics"]["peakMemoryBytes"], j["metrics"]["wallTimeMs"]
        );
        if let Some(batch) = timeline["batch"].as_object() {
            // The measurements above are then the job's share of the batch's.
            let jobs: Vec<&str> = batch["jobs"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|b| b["ref"].as_str())
                .collect();
            println!(
                "batch       {} ({} jobs, measured as this job's share): {}",
                batch["id"].as_str().unwrap_or_default(),
                batch["size"],
                jobs.join(" ")
            );
        }
        let steps = j["steps"].as_array().map(|a| a.len()).unwrap_or(0);
        if steps > 0 {
            println!("steps       {}", j["steps"]);
        }
        if let Some(parent) = j["parentKey"].as_str() {
            println!("parent      {parent}");
        }
        for child in timeline["children"].as_array().into_iter().flatten() {
            println!(
                "child       {} {}",
                child["ref"].as_str().unwrap_or_default(),
                child["state"].as_str().unwrap_or_default()
            );
        }
        println!("logs ({}):", j["logCount"]);
        for line in j["logs"].as_array().into_iter().flatten() {
            println!("  {}", line.as_str().unwrap_or(""));
        }
    });
    Ok(0)
}
