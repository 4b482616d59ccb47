//! Hostile: floods stdout with buffers of nothing but newlines — empty log
//! lines, a million by default, for very little fuel. Every line must count
//! against the log caps (a per-line overhead in the byte cap, and the line
//! cap), so the host keeps only up to the caps, writes them to Redis in
//! batches, and the job still completes quickly.

use std::io::Write;

use airlock_guest::{Context, JobError};
use serde::Deserialize;

#[derive(Deserialize)]
struct Input {
    #[serde(default = "default_lines")]
    lines: usize,
}

fn default_lines() -> usize {
    1_000_000
}

fn flood(_ctx: &Context, input: Input) -> Result<usize, JobError> {
    let buffer = vec![b'\n'; 64 << 10];
    let mut stdout = std::io::stdout().lock();
    let mut left = input.lines;
    while left > 0 {
        let n = left.min(buffer.len());
        stdout
            .write_all(&buffer[..n])
            .map_err(|e| JobError::retry(format!("stdout: {e}")))?;
        left -= n;
    }
    Ok(input.lines)
}

airlock_guest::handler!(flood);
