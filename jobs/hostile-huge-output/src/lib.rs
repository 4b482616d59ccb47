//! Hostile: returns an enormous value (default 8 MiB of JSON). Must be
//! rejected as `output_too_large`.

use airlock_guest::{Context, JobError};
use serde::Deserialize;

#[derive(Deserialize)]
struct Input {
    #[serde(default = "default_bytes")]
    bytes: usize,
}

fn default_bytes() -> usize {
    8 << 20
}

fn flood(_ctx: &Context, input: Input) -> Result<String, JobError> {
    Ok("x".repeat(input.bytes))
}

airlock_guest::handler!(flood);
