//! The CLI's remote commands: they talk to a running host's HTTP API.
//!
//! Human output by default; `--json` prints the API's JSON for scripts.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, Subcommand};
use futures::StreamExt;
use reqwest::Method;
use serde_json::{Value, json};

use super::bind::{self, BindArgs};
use super::client::{ApiClient, ApiFailure, Connection};
use super::run::exit_code;
use crate::sandbox::FailureKind;

/// `airlock deploy`.
#[derive(Debug, Args)]
pub struct DeployArgs {
    /// The handler component.
    pub file: PathBuf,
    /// Handler name.
    #[arg(long)]
    pub name: String,
    /// Version label.
    #[arg(long)]
    pub version: Option<String>,
    /// Also bind this queue to the handler, with default settings, when it
    /// is not bound yet (a queue bound to this handler already runs the new
    /// version; one bound to another handler is left alone, with an error).
    #[arg(long)]
    pub queue: Option<String>,
}

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

fn parse_json(flag: &str, text: &str) -> anyhow::Result<Value> {
    serde_json::from_str(text).with_context(|| format!("{flag}: not valid JSON: {text}"))
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

/// Prints `value` as JSON for `--json`, else through `human`.
pub(super) fn print(json_output: bool, value: &Value, human: impl FnOnce(&Value)) {
    if json_output {
        println!(
            "{}",
            serde_json::to_string_pretty(value).unwrap_or_default()
        );
    } else {
        human(value);
    }
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

/// `airlock deploy`.
pub async fn deploy(conn: &Connection, json_output: bool, args: DeployArgs) -> anyhow::Result<i32> {
    let bytes = std::fs::read(&args.file)
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    let client = ApiClient::new(conn)?;
    let mut path = format!("/v1/handlers/{}", args.name);
    if let Some(v) = &args.version {
        path.push_str(&format!("?version={v}"));
    }
    let version: Value = client.upload(&path, bytes).await?;
    print(json_output, &version, |v| {
        println!(
            "deployed {} {} ({} bytes)",
            args.name,
            v["digest"].as_str().unwrap_or(""),
            v["size"]
        );
    });
    if let Some(queue) = &args.queue {
        bind_if_unbound(&client, json_output, queue, &args.name).await?;
    }
    Ok(0)
}

/// `deploy --queue`: binds `queue` to `handler` unless it is bound already.
async fn bind_if_unbound(
    client: &ApiClient,
    json_output: bool,
    queue: &str,
    handler: &str,
) -> anyhow::Result<()> {
    let path = format!("/v1/queues/{queue}");
    let bound: anyhow::Result<Value> = client.get(&path).await;
    match bound {
        Ok(view) => {
            let current = view["binding"]["handler"].as_str().unwrap_or_default();
            if current != handler {
                anyhow::bail!(
                    "--queue: {queue} is bound to handler `{current}`; re-bind it with \
                     `airlock queue bind {queue} --handler {handler}`"
                );
            }
            if !json_output {
                println!("queue {queue} already runs {handler}");
            }
        }
        Err(e)
            if e.downcast_ref::<ApiFailure>()
                .is_some_and(|f| f.status == reqwest::StatusCode::NOT_FOUND) =>
        {
            let _: Value = client
                .json(Method::PUT, &path, &json!({"handler": handler}))
                .await
                .context("--queue")?;
            if !json_output {
                println!("bound queue {queue} to {handler}");
            }
        }
        Err(e) => return Err(e.context("--queue")),
    }
    Ok(())
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

/// `airlock job`.
pub async fn job(conn: &Connection, json_output: bool, job_ref: &str) -> anyhow::Result<i32> {
    let client = ApiClient::new(conn)?;
    let job: Value = client.get(&format!("/v1/jobs/{job_ref}")).await?;
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
        let steps = j["steps"].as_array().map(|a| a.len()).unwrap_or(0);
        if steps > 0 {
            println!("steps       {}", j["steps"]);
        }
        println!("logs ({}):", j["logCount"]);
        for line in j["logs"].as_array().into_iter().flatten() {
            println!("  {}", line.as_str().unwrap_or(""));
        }
    });
    Ok(0)
}

/// `airlock retry`.
pub async fn retry(conn: &Connection, json_output: bool, job_ref: &str) -> anyhow::Result<i32> {
    let client = ApiClient::new(conn)?;
    let result: Value = client
        .json(
            Method::POST,
            &format!("/v1/jobs/{job_ref}/retry"),
            &json!({}),
        )
        .await?;
    print(json_output, &result, |r| {
        println!(
            "{job_ref} is {} again",
            r["job"]["state"].as_str().unwrap_or("waiting")
        );
    });
    Ok(0)
}

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

/// `airlock hosts`, `airlock host drain|resume ID`.
pub async fn hosts(
    conn: &Connection,
    json_output: bool,
    action: Option<(&str, &str)>,
) -> anyhow::Result<i32> {
    let client = ApiClient::new(conn)?;
    let list: Value = match action {
        None => client.get("/v1/hosts").await?,
        Some((verb, id)) => {
            client
                .json(Method::POST, &format!("/v1/hosts/{id}/{verb}"), &json!({}))
                .await?
        }
    };
    print(json_output, &list, |l| {
        for h in l["hosts"].as_array().into_iter().flatten() {
            println!(
                "{:<28} {:<9} running {:>3}/{:<4} queues {:<40} {}",
                h["id"].as_str().unwrap_or(""),
                h["state"].as_str().unwrap_or(""),
                h["running"],
                h["capacity"],
                h["queues"]
                    .as_array()
                    .map(|q| q
                        .iter()
                        .filter_map(|x| x.as_str())
                        .collect::<Vec<_>>()
                        .join(","))
                    .unwrap_or_default(),
                h["address"].as_str().unwrap_or("-"),
            );
        }
    });
    Ok(0)
}
