//! Hostile: writes a flood of log lines through both the log import and
//! stdout. The host must keep only its cap and count the rest, and the job
//! still completes.

use airlock_guest::{Context, JobError};
use serde::Deserialize;

#[derive(Deserialize)]
struct Input {
    #[serde(default = "default_lines")]
    lines: u64,
}

fn default_lines() -> u64 {
    200_000
}

fn flood(ctx: &Context, input: Input) -> Result<u64, JobError> {
    for i in 0..input.lines {
        ctx.info(format!("log line {i} with some padding to make it longer"));
        println!("stdout line {i}");
    }
    Ok(input.lines)
}

airlock_guest::handler!(flood);
