//! The report pipeline's parent: runs once every `data-extraction` child has
//! finished and aggregates their results into the final report.
//!
//! Input: `{ "reportId": "2026-11" }`. Output: totals over the children that
//! completed, plus the sources whose extraction failed (when the flow let
//! the parent run anyway).

use airlock_guest::{ChildOutcome, Context, JobError};
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Report {
    report_id: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Extract {
    source: String,
    records: u64,
    amount_cents: u64,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FinalReport {
    report_id: String,
    sources: Vec<String>,
    records: u64,
    amount_cents: u64,
    failed_children: Vec<String>,
}

fn aggregate(ctx: &Context, report: Report) -> Result<FinalReport, JobError> {
    let mut out = FinalReport {
        report_id: report.report_id,
        sources: Vec::new(),
        records: 0,
        amount_cents: 0,
        failed_children: Vec::new(),
    };
    for child in ctx.children()? {
        match child.outcome {
            ChildOutcome::Completed(value) => {
                let extract: Extract = serde_json::from_value(value).map_err(|e| {
                    JobError::fatal(format!(
                        "child {} returned an unexpected shape: {e}",
                        child.child.id
                    ))
                })?;
                out.sources.push(extract.source);
                out.records += extract.records;
                out.amount_cents += extract.amount_cents;
            }
            ChildOutcome::Failed(reason) => {
                ctx.warn(format!("child {} failed: {reason}", child.child.id));
                out.failed_children
                    .push(format!("{}:{}", child.child.queue, child.child.id));
            }
        }
    }
    out.sources.sort();
    ctx.info(format!("aggregated {} sources", out.sources.len()));
    Ok(out)
}

airlock_guest::handler!(aggregate);
