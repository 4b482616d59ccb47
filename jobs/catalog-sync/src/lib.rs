//! The nightly catalog sync (`0 3 * * *`): run by a schedule, or on demand
//! through the schedule's trigger.
//!
//! Input: `{ "catalog": "main", "items": 500 }` (the schedule's template data).
//! `holdMs` keeps the run busy that long (tests use it to overlap a trigger
//! with a running sync), saying so in the job's log as it begins; the
//! result says when that busy time began and ended (`heldFromMs`,
//! `heldToMs`).

use std::time::{Duration, Instant};

use airlock_guest::{Context, JobError};
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Sync {
    #[serde(default = "default_catalog")]
    catalog: String,
    #[serde(default)]
    items: u64,
    #[serde(default)]
    hold_ms: u64,
}

fn default_catalog() -> String {
    "main".into()
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Synced {
    catalog: String,
    synced: u64,
    job_id: String,
    /// When the run's busy time began and ended, ms since the epoch: tests
    /// of per-key limits read the guests' own overlap from these.
    held_from_ms: u64,
    held_to_ms: u64,
}

fn epoch_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

fn sync(ctx: &Context, input: Sync) -> Result<Synced, JobError> {
    if input.hold_ms > 0 {
        ctx.info(format!("holding for {} ms", input.hold_ms));
    }
    let held_from_ms = epoch_ms();
    let until = Instant::now() + Duration::from_millis(input.hold_ms);
    while Instant::now() < until {
        std::hint::spin_loop();
    }
    let held_to_ms = epoch_ms();
    ctx.info(format!(
        "synced {} items of catalog {}",
        input.items, input.catalog
    ));
    Ok(Synced {
        catalog: input.catalog,
        synced: input.items,
        job_id: ctx.job().id.clone(),
        held_from_ms,
        held_to_ms,
    })
}

airlock_guest::handler!(sync);
