//! Hostile: panics. The SDK turns the panic into a retryable failure that
//! carries the panic message.

use airlock_guest::{Context, JobError};
use serde::Deserialize;

#[derive(Deserialize)]
struct Input {
    #[serde(default)]
    message: Option<String>,
}

fn explode(ctx: &Context, input: Input) -> Result<(), JobError> {
    ctx.info("about to panic");
    let message = input
        .message
        .unwrap_or_else(|| "the handler gave up".into());
    panic!("{message}");
}

airlock_guest::handler!(explode);
