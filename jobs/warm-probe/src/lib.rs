//! Test guest for warm instances: it keeps, in a global, every job it ran
//! (id and `tag`) and reports what it kept before the current job. In a
//! fresh instance per job it always sees nothing; in a warm instance it sees
//! the earlier jobs of that instance — which must all be of the same
//! tenant, queue and handler version. Same behaviour as
//! `jobs/js/warm-probe` and `jobs/python/warm-probe`.
//!
//! Every job logs `warm-probe runs <id> (<tag>)`.
//!
//! Data: `{"tag": string, "mode"?: "grow" | "retry" | "trap" | "spin" |
//! "reveal" | "leak"}`.
//! - `grow`: keeps 1 MiB more in a global every job, so an instance that
//!   keeps running jobs reaches its memory cap;
//! - `retry`: records the job, then fails it as retryable;
//! - `trap`: records the job, then traps (`unreachable`);
//! - `spin`: records the job, then computes until its fuel, deadline or a
//!   cancel stops it;
//! - `reveal`: reveals the secret named by `tag` and keeps its value in a
//!   global; `leak`: returns what `reveal` kept (as `leaked`), which the
//!   host must still redact.

use std::sync::Mutex;

use airlock_guest::{Context, JobError};
use serde::{Deserialize, Serialize};

/// Every job this instance ran: (id, tag).
static SEEN: Mutex<Vec<Seen>> = Mutex::new(Vec::new());
/// What `grow` keeps.
static HOARD: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());
/// What `reveal` kept.
static REVEALED: Mutex<Option<String>> = Mutex::new(None);

#[derive(Deserialize)]
struct Input {
    tag: String,
    #[serde(default)]
    mode: Option<String>,
}

#[derive(Clone, Serialize)]
struct Seen {
    id: String,
    tag: String,
}

#[derive(Serialize)]
struct Output {
    seen: Vec<Seen>,
    count: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    leaked: Option<String>,
}

fn probe(ctx: &Context, input: Input) -> Result<Output, JobError> {
    // Every job logs (so the host streams its log while it runs).
    ctx.info(format!("warm-probe runs {} ({})", ctx.job().id, input.tag));
    let mut seen = SEEN.lock().unwrap();
    let mut output = Output {
        seen: seen.clone(),
        count: seen.len(),
        leaked: None,
    };
    seen.push(Seen {
        id: ctx.job().id.clone(),
        tag: input.tag.clone(),
    });
    drop(seen);
    match input.mode.as_deref() {
        Some("grow") => HOARD.lock().unwrap().push(vec![7u8; 1 << 20]),
        Some("retry") => return Err(JobError::retry("warm-probe: asked to fail")),
        Some("trap") => std::process::abort(),
        Some("reveal") => *REVEALED.lock().unwrap() = Some(ctx.reveal_secret(&input.tag)?),
        Some("leak") => output.leaked = REVEALED.lock().unwrap().clone(),
        Some("spin") => {
            let mut x = 0u64;
            loop {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
        }
        _ => {}
    }
    Ok(output)
}

airlock_guest::handler!(probe);
