//! The report pipeline's extraction step: one child job per data source,
//! run before `report-aggregator` aggregates their results (a flow).
//!
//! Input: `{ "source": "sales-eu", "records": 1200, "amountCents": 98000 }`.
//! A source named `broken` fails fatally — how the tests exercise the
//! flow's child-failure policies; `flaky-once` fails its first attempt.

use airlock_guest::{Context, JobError};
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Source {
    source: String,
    #[serde(default)]
    records: u64,
    #[serde(default)]
    amount_cents: u64,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Extract {
    source: String,
    records: u64,
    amount_cents: u64,
}

fn extract(ctx: &Context, input: Source) -> Result<Extract, JobError> {
    match input.source.as_str() {
        "broken" => return Err(JobError::fatal("source `broken` is unreachable")),
        "flaky-once" if ctx.job().attempt == 1 => {
            return Err(JobError::retry("source `flaky-once` timed out"));
        }
        _ => {}
    }
    ctx.info(format!(
        "extracted {} records from {}",
        input.records, input.source
    ));
    ctx.progress(100);
    Ok(Extract {
        source: input.source,
        records: input.records,
        amount_cents: input.amount_cents,
    })
}

airlock_guest::handler!(extract);
