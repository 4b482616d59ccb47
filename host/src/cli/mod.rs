//! The `airlock` command line: one binary for running a handler locally,
//! serving queues, and talking to a running host's HTTP API.

mod run;

use clap::{Parser, Subcommand};

/// Airlock runs untrusted background jobs as WebAssembly components.
#[derive(Debug, Parser)]
#[command(name = "airlock", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one job through a handler locally, without Redis, and print its
    /// progress, logs, result and measurements.
    Run(run::RunArgs),
}

/// Runs the parsed command; returns the process exit code.
pub async fn execute(cli: Cli) -> anyhow::Result<i32> {
    match cli.command {
        Command::Run(args) => run::execute(args).await,
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
