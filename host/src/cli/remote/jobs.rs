//! `airlock jobs`: lists a queue's jobs in one state, a page at a time;
//! `airlock jobs migrate` moves its parked jobs onto another version.

use clap::{Args, Subcommand};
use reqwest::Method;
use serde_json::{Value, json};

use super::print;
use crate::cli::client::{ApiClient, Connection};

/// `airlock jobs`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct JobsArgs {
    /// Another action on a queue's jobs.
    #[command(subcommand)]
    pub action: Option<JobsCommand>,
    /// Queue name.
    #[arg(required = true)]
    pub queue: Option<String>,
    /// State to list.
    #[arg(long, default_value = "waiting")]
    pub state: String,
    /// Page size.
    #[arg(long, default_value_t = 50)]
    pub limit: usize,
    /// Offset.
    #[arg(long, default_value_t = 0)]
    pub start: usize,
}

/// `airlock jobs ...` actions beyond listing.
#[derive(Debug, Subcommand)]
pub enum JobsCommand {
    /// Move the queue's jobs parked in durable sleeps and waits onto
    /// another version of its handler, each only after replaying its
    /// transcripts against that version on the host: one that diverges
    /// before the point it is parked at stays where it is.
    Migrate {
        /// Queue name.
        queue: String,
        /// The target version's digest.
        #[arg(long)]
        to: String,
        /// Replay and report only; move nothing.
        #[arg(long)]
        dry_run: bool,
    },
}

/// What `airlock jobs QUEUE` lists.
struct ListArgs {
    queue: String,
    state: String,
    limit: usize,
    start: usize,
}

/// `airlock jobs migrate`: exit 0 when nothing was refused, 3 otherwise.
async fn migrate(
    client: &ApiClient,
    json_output: bool,
    queue: &str,
    to: &str,
    dry_run: bool,
) -> anyhow::Result<i32> {
    let done: Value = client
        .json(
            Method::POST,
            &format!("/v1/queues/{queue}/migrate"),
            &json!({"to": to, "dryRun": dry_run}),
        )
        .await?;
    let refused = done["refused"].as_array().map_or(0, Vec::len);
    print(json_output, &done, |d| {
        let verb = if dry_run { "would move" } else { "moved" };
        for job in d["migrated"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
        {
            println!("{verb} {} to {to}", job.as_str().unwrap_or(""));
        }
        for r in d["refused"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
        {
            println!(
                "refused {}: {}",
                r["job"].as_str().unwrap_or(""),
                r["reason"].as_str().unwrap_or("")
            );
        }
        println!(
            "{} {verb}, {refused} refused, {} left alone (not parked, or on that version already)",
            d["migrated"].as_array().map_or(0, Vec::len),
            d["skipped"]
        );
    });
    Ok(if refused > 0 { 3 } else { 0 })
}

/// `airlock jobs`.
pub async fn jobs(conn: &Connection, json_output: bool, args: JobsArgs) -> anyhow::Result<i32> {
    let client = ApiClient::new(conn)?;
    if let Some(JobsCommand::Migrate { queue, to, dry_run }) = args.action {
        return migrate(&client, json_output, &queue, &to, dry_run).await;
    }
    let queue = args.queue.unwrap_or_default();
    let args = ListArgs {
        queue,
        state: args.state,
        limit: args.limit,
        start: args.start,
    };
    let page: Value = client
        .get(&format!(
            "/v1/queues/{}/jobs?state={}&start={}&limit={}",
            args.queue, args.state, args.start, args.limit
        ))
        .await?;
    print(json_output, &page, |p| {
        let jobs = p["jobs"].as_array().map(Vec::as_slice).unwrap_or_default();
        if jobs.is_empty() {
            if args.start == 0 {
                println!("no {} jobs in queue {}", args.state, args.queue);
            } else {
                println!(
                    "no {} jobs in queue {} from offset {}",
                    args.state, args.queue, args.start
                );
            }
        }
        for j in jobs {
            let outcome = match j["state"].as_str() {
                Some("failed") => j["failedReason"].as_str().unwrap_or("").to_string(),
                Some("completed") => j["returnvalue"].to_string(),
                _ => format!("progress {}", j["progress"]),
            };
            println!(
                "{}:{:<12} {:<10} {:<20} attempts {}  {}",
                j["queue"].as_str().unwrap_or(""),
                j["id"].as_str().unwrap_or(""),
                j["state"].as_str().unwrap_or(""),
                j["name"].as_str().unwrap_or(""),
                j["attemptsMade"],
                outcome
            );
        }
        if let Some(next) = p["next"].as_u64() {
            println!("more: --start {next}");
        }
    });
    Ok(0)
}
