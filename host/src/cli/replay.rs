//! `airlock replay`: runs recorded jobs against another handler version
//! in a local sandbox (see [`crate::replay`]) and says, per job, whether
//! it did the same, something different, or diverged at step N.
//!
//! The transcripts come from the API (`GET /v1/jobs/{ref}/transcript`, the
//! job's read rules) or from a file holding that answer; with `--handler
//! NAME@DIGEST` the host replays instead (`POST /v1/jobs/{ref}/replay`),
//! against that uploaded version. Exit code: 0 when
//! every job replayed the same, 2 when one was different and none
//! diverged, 3 when one diverged; 1 for a usage, load or API error.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::Args;
use serde::Deserialize;
use serde_json::{Value, json};

use super::client::{ApiClient, Connection};
use super::limits::LimitFlags;
use crate::replay::{self, Report, Verdict};
use crate::sandbox::transcript::Transcript;

/// Arguments of `airlock replay`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The job to replay, `<queue>:<id>`.
    pub job: Option<String>,
    /// The handler version to run instead: a component file (`.wasm`),
    /// replayed here, or an uploaded version as `NAME@DIGEST`, replayed on
    /// the host (`POST /v1/jobs/{ref}/replay`, admin).
    #[arg(long, value_name = "FILE|NAME@DIGEST")]
    pub handler: String,
    /// Read the job's transcripts from this file (the JSON
    /// `GET /v1/jobs/{ref}/transcript` answers) instead of the API.
    #[arg(long, value_name = "FILE", conflicts_with = "queue")]
    pub transcript: Option<PathBuf>,
    /// Replay a sample instead: the newest completed, failed and delayed
    /// jobs of this queue that have transcripts.
    #[arg(long, conflicts_with = "job")]
    pub queue: Option<String>,
    /// With `--queue`: how many jobs at most.
    #[arg(long, default_value_t = 100)]
    pub last: usize,
    /// The replayed runs' limits (over the sandbox defaults).
    #[command(flatten)]
    pub limits: LimitFlags,
}

/// `GET /v1/jobs/{ref}/transcript`'s answer, as read back.
#[derive(Debug, Deserialize)]
struct Transcripts {
    runs: Vec<RunTranscript>,
}

#[derive(Debug, Deserialize)]
struct RunTranscript {
    transcript: Transcript,
}

/// Runs the command; returns the exit code.
pub async fn execute(
    conn: &Connection,
    json_output: bool,
    args: ReplayArgs,
) -> anyhow::Result<i32> {
    let limits = super::run::local_limits(&args.limits)?;
    if let Some((_, digest)) = uploaded(&args.handler) {
        return on_host(conn, json_output, &args, digest).await;
    }
    let jobs = transcripts_of(conn, &args).await?;
    let (sandbox, component) = super::run::local_component(std::path::Path::new(&args.handler))
        .await
        .context("--handler")?;

    let mut reports = Vec::new();
    for (job, runs) in jobs {
        if runs.is_empty() {
            if args.queue.is_none() {
                anyhow::bail!(
                    "{job} has no transcripts: its queue records them only when bound with --record-transcripts (`recordTranscripts`)"
                );
            }
            continue;
        }
        reports.push(replay::replay(&sandbox, &component, &job, &runs, &limits).await);
    }
    finish(json_output, &args, reports)
}

/// `NAME@DIGEST` as its parts, when `handler` is written so and names no
/// file here.
fn uploaded(handler: &str) -> Option<(&str, &str)> {
    let (name, digest) = handler.rsplit_once('@')?;
    (!std::path::Path::new(handler).exists() && !name.is_empty()).then_some((name, digest))
}

/// Replays on the host, against an uploaded version.
async fn on_host(
    conn: &Connection,
    json_output: bool,
    args: &ReplayArgs,
    digest: &str,
) -> anyhow::Result<i32> {
    if args.transcript.is_some() {
        anyhow::bail!(
            "--handler NAME@DIGEST replays on the host, from the job's stored transcripts; with --transcript FILE give a component file"
        );
    }
    let client = ApiClient::new(conn)?;
    let refs = match (&args.job, &args.queue) {
        (Some(job), _) => vec![job.clone()],
        (None, Some(queue)) => newest(&client, queue, args.last).await?,
        (None, None) => anyhow::bail!("name a job (`<queue>:<id>`), or --queue Q for a sample"),
    };
    let mut reports = Vec::new();
    for job in refs {
        let answer: Result<Report, _> = client
            .json(
                reqwest::Method::POST,
                &format!("/v1/jobs/{job}/replay"),
                &json!({"digest": digest}),
            )
            .await;
        match answer {
            Ok(report) => reports.push(report),
            // A sample skips the jobs without transcripts (409).
            Err(e) if args.queue.is_some() && format!("{e:#}").contains("no transcripts") => {}
            Err(e) => return Err(e.context(format!("replaying {job} on the host"))),
        }
    }
    finish(json_output, args, reports)
}

/// Prints the reports; the exit code.
fn finish(json_output: bool, args: &ReplayArgs, reports: Vec<Report>) -> anyhow::Result<i32> {
    if args.queue.is_some() && reports.is_empty() {
        anyhow::bail!(
            "--queue: none of the newest jobs has transcripts: the queue records them only when bound with --record-transcripts"
        );
    }
    let worst = reports.iter().map(Report::exit_code).max().unwrap_or(0);
    if json_output {
        let out = match (&args.queue, reports.as_slice()) {
            (None, [one]) => serde_json::to_value(one)?,
            _ => {
                let count = |v: Verdict| reports.iter().filter(|r| r.verdict == v).count();
                json!({
                    "same": count(Verdict::Same),
                    "different": count(Verdict::Different),
                    "diverged": count(Verdict::Diverged),
                    "reports": reports,
                })
            }
        };
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        for report in &reports {
            print_report(report);
        }
        if reports.len() > 1 {
            let count = |v: Verdict| reports.iter().filter(|r| r.verdict == v).count();
            println!(
                "{} jobs: {} same, {} different, {} diverged",
                reports.len(),
                count(Verdict::Same),
                count(Verdict::Different),
                count(Verdict::Diverged)
            );
        }
    }
    Ok(worst)
}

/// The jobs to replay and their transcripts, oldest run first.
async fn transcripts_of(
    conn: &Connection,
    args: &ReplayArgs,
) -> anyhow::Result<Vec<(String, Vec<Transcript>)>> {
    let runs = |t: Transcripts| t.runs.into_iter().map(|r| r.transcript).collect();
    if let Some(file) = &args.transcript {
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("--transcript: cannot read {}", file.display()))?;
        let read: Transcripts = serde_json::from_str(&text).with_context(|| {
            format!(
                "--transcript: {} is not what GET /v1/jobs/{{ref}}/transcript answers",
                file.display()
            )
        })?;
        let runs: Vec<Transcript> = runs(read);
        let job = args.job.clone().unwrap_or_else(|| {
            runs.first().map_or("the job".into(), |t| {
                airlock_core::job_ref::join(&t.job.queue, &t.job.id)
            })
        });
        return Ok(vec![(job, runs)]);
    }
    let client = ApiClient::new(conn)?;
    let refs = match (&args.job, &args.queue) {
        (Some(job), _) => vec![job.clone()],
        (None, Some(queue)) => newest(&client, queue, args.last).await?,
        (None, None) => anyhow::bail!("name a job (`<queue>:<id>`), or --queue Q for a sample"),
    };
    let mut jobs = Vec::new();
    for job in refs {
        let read: Transcripts = client
            .get(&format!("/v1/jobs/{job}/transcript"))
            .await
            .with_context(|| format!("the transcripts of {job}"))?;
        jobs.push((job, runs(read)));
    }
    Ok(jobs)
}

/// The refs of `queue`'s newest `last` completed, failed and delayed jobs.
async fn newest(client: &ApiClient, queue: &str, last: usize) -> anyhow::Result<Vec<String>> {
    let mut found: Vec<(u64, String)> = Vec::new();
    for state in ["completed", "failed", "delayed"] {
        let page: Value = client
            .get(&format!(
                "/v1/queues/{queue}/jobs?state={state}&limit={}",
                last.clamp(1, 1000)
            ))
            .await
            .with_context(|| format!("--queue {queue}: the {state} jobs"))?;
        for job in page["jobs"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
        {
            let at = job["finishedOn"]
                .as_u64()
                .or_else(|| job["timestamp"].as_u64())
                .unwrap_or(0);
            if let (Some(q), Some(id)) = (job["queue"].as_str(), job["id"].as_str()) {
                found.push((at, airlock_core::job_ref::join(q, id)));
            }
        }
    }
    found.sort_by_key(|(at, _)| std::cmp::Reverse(*at));
    Ok(found.into_iter().take(last).map(|(_, r)| r).collect())
}

fn print_report(report: &Report) {
    println!("{}", report.summary());
    if report.incomplete {
        println!("  (a transcript was cut at its size cap: calls past the cut were not recorded)");
    }
    for run in &report.runs {
        println!(
            "  run {}: recorded {}, replayed {}",
            run.run,
            replay::compare::end_kind(&run.recorded),
            replay::compare::end_kind(&run.replayed)
        );
        for job in &run.jobs {
            println!(
                "    job {} of its batch: recorded {}, replayed {}",
                job.job,
                replay::compare::end_kind(&job.recorded),
                replay::compare::end_kind(&job.replayed)
            );
        }
    }
    if report.steps_recorded != report.steps_replayed {
        println!("  steps recorded: {}", report.steps_recorded.join(", "));
        println!("  steps replayed: {}", report.steps_replayed.join(", "));
    }
    for difference in &report.differences {
        println!("  {difference}");
    }
    for r in &report.requests.added {
        println!("  new request: {} {} {}", r.method, r.url, r.body);
    }
    for r in &report.requests.changed {
        println!(
            "  changed request: {} {}\n    recorded: {}\n    new:      {}",
            r.method, r.url, r.recorded, r.replayed
        );
    }
    for r in &report.requests.missing {
        println!(
            "  request no longer sent: {} {} {}",
            r.method, r.url, r.body
        );
    }
}
