//! The CLI's remote commands: they talk to a running host's HTTP API.
//!
//! Human output by default; `--json` prints the API's JSON for scripts.

mod audit;
mod cancel;
mod deploy;
mod emit;
mod enqueue;
mod flow;
mod hosts;
mod job;
mod jobs;
mod queue;
mod retry;
mod schedule;
mod secrets;
mod tokens;

use serde_json::Value;

pub use self::audit::{AuditArgs, audit};
pub use self::cancel::{CancelArgs, cancel};
pub use self::deploy::{DeployArgs, deploy};
pub use self::emit::{EmitArgs, emit};
pub use self::enqueue::{EnqueueArgs, enqueue};
pub use self::flow::{FlowArgs, flow};
pub use self::hosts::hosts;
pub use self::job::{JobArgs, JobCommand, export, job};
pub use self::jobs::{JobsArgs, jobs};
pub use self::queue::{QueueCommand, queue};
pub use self::retry::retry;
pub use self::schedule::{ScheduleCommand, schedule};
pub use self::secrets::{SecretCommand, secret};
pub use self::tokens::{TokenCommand, token};

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
