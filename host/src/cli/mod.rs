//! The `airlock` command line: one binary for running a handler locally,
//! serving queues and the API, and talking to a running host's HTTP API.

mod bind;
mod client;
mod fixtures;
mod limits;
mod new;
mod redis;
mod remote;
mod replay;
mod run;
mod serve;

use clap::{Parser, Subcommand};

pub use self::run::exit_code;

/// Airlock runs untrusted background jobs as WebAssembly components.
#[derive(Debug, Parser)]
#[command(name = "airlock", version, about)]
pub struct Cli {
    /// Where the API is (for the remote commands).
    #[command(flatten)]
    pub connection: client::Connection,
    /// Print JSON instead of human-readable output.
    #[arg(long, global = true)]
    pub json: bool,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one job through a handler locally, without Redis, and print its
    /// progress, logs, result and measurements.
    Run(Box<run::RunArgs>),
    /// Run a worker host: a BullMQ worker per bound queue, each job in its
    /// own sandbox instance; with `--listen`, the HTTP API too.
    Serve(Box<serve::ServeArgs>),
    /// Replay a recorded job (or `--queue Q --last N` of them) against
    /// another handler version in a local sandbox: every call is answered
    /// from the job's transcripts, nothing is sent anywhere. Exit 0 same,
    /// 2 different, 3 diverged.
    Replay(Box<replay::ReplayArgs>),
    /// Test a handler component against hand-written fixtures (canned
    /// answers, time skipped, nothing sent anywhere): its output or
    /// failure, steps and requests. Exit 0 when every fixture passed.
    Test(Box<fixtures::TestArgs>),
    /// Create a handler project (Rust, TypeScript, JavaScript or Python)
    /// that builds to a component with one command.
    New(new::NewArgs),
    /// Upload a handler component.
    Deploy(remote::DeployArgs),
    /// Queue bindings: bind, list, get, pause, resume.
    #[command(subcommand)]
    Queue(remote::QueueCommand),
    /// Enqueue a job (`--wait` follows it to the end with a progress bar).
    Enqueue(remote::EnqueueArgs),
    /// List a queue's jobs in one state.
    Jobs(remote::JobsArgs),
    /// Show one job (`<queue>:<id>`), logs included; `job export` writes
    /// its transcripts.
    Job(remote::JobArgs),
    /// Retry a failed job (`<queue>:<id>`).
    Retry {
        /// The job, as `<queue>:<id>`.
        job: String,
    },
    /// Cancel a job that has not finished (`<queue>:<id>`): a running one is
    /// stopped, a waiting or delayed one fails without running; either way
    /// it fails as `cancelled` and is not retried.
    Cancel(remote::CancelArgs),
    /// Schedules: set, list, delete, trigger.
    #[command(subcommand)]
    Schedule(remote::ScheduleCommand),
    /// A queue's secrets: set (value from standard input), list, delete.
    #[command(subcommand)]
    Secret(remote::SecretCommand),
    /// Managed API tokens: create (the secret is printed once), list,
    /// revoke, rotate.
    #[command(subcommand)]
    Token(remote::TokenCommand),
    /// The audit log: every change made through the API, who made it,
    /// when and from where (`--who`, `--action`, `--target`, `--since`).
    Audit(remote::AuditArgs),
    /// Send an event to the queues subscribed to it.
    Emit(remote::EmitArgs),
    /// Add a flow (a parent job and its children) from a JSON file.
    Flow(remote::FlowArgs),
    /// List the live hosts of the fleet.
    Hosts,
    /// Drain a host (stop taking jobs, finish running ones) or resume it.
    Host {
        /// `drain` or `resume`.
        #[arg(value_parser = ["drain", "resume"])]
        action: String,
        /// Host id.
        id: String,
    },
}

/// Runs the parsed command; returns the process exit code.
pub async fn execute(cli: Cli) -> anyhow::Result<i32> {
    let conn = &cli.connection;
    let json = cli.json;
    match cli.command {
        Command::Run(args) => run::execute(*args).await,
        Command::Serve(args) => serve::execute(*args).await,
        Command::Replay(args) => replay::execute(conn, json, *args).await,
        Command::Test(args) => fixtures::execute(json, *args).await,
        Command::New(args) => new::execute(args),
        Command::Deploy(args) => remote::deploy(conn, json, args).await,
        Command::Queue(cmd) => remote::queue(conn, json, cmd).await,
        Command::Enqueue(args) => remote::enqueue(conn, json, args).await,
        Command::Jobs(args) => remote::jobs(conn, json, args).await,
        Command::Job(args) => match args.action {
            Some(remote::JobCommand::Export { job, output }) => {
                remote::export(conn, &job, output.as_deref()).await
            }
            None => remote::job(conn, json, &args.job.unwrap_or_default()).await,
        },
        Command::Retry { job } => remote::retry(conn, json, &job).await,
        Command::Cancel(args) => remote::cancel(conn, json, args).await,
        Command::Schedule(cmd) => remote::schedule(conn, json, cmd).await,
        Command::Secret(cmd) => remote::secret(conn, json, cmd).await,
        Command::Token(cmd) => remote::token(conn, json, cmd).await,
        Command::Audit(args) => remote::audit(conn, json, args).await,
        Command::Emit(args) => remote::emit(conn, json, args).await,
        Command::Flow(args) => remote::flow(conn, json, args).await,
        Command::Hosts => remote::hosts(conn, json, None).await,
        Command::Host { action, id } => remote::hosts(conn, json, Some((&action, &id))).await,
    }
}

/// Default directory for compiled-component artifacts: `$AIRLOCK_CACHE_DIR`,
/// else `$XDG_CACHE_HOME/airlock`, else `~/.cache/airlock`.
pub fn default_cache_dir() -> std::path::PathBuf {
    if let Some(dir) = std::env::var_os("AIRLOCK_CACHE_DIR") {
        return dir.into();
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME") {
        return std::path::PathBuf::from(dir).join("airlock");
    }
    let home = std::env::var_os("HOME").unwrap_or_else(|| ".".into());
    std::path::PathBuf::from(home)
        .join(".cache")
        .join("airlock")
}
