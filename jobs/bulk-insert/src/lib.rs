//! The payment webhook's ledger writes, batched: a queue bound with
//! `batch` hands this handler up to `batch.size` payment events at once,
//! and it records them all in one request to the ledger.
//!
//! Input (each job): `{ "transactionId": "tx_1", "amount": 42.5, "currency": "EUR" }`.
//! Output (each job): `{ "processed": true, "ledgerRecordId": "led_tx_1", "batchSize": 50 }`.
//!
//! - A non-positive amount fails that job alone, fatally (`Invalid
//!   transaction amount`); the others are recorded.
//! - With `LEDGER_URL` in the binding's config, the valid entries are
//!   POSTed to `{LEDGER_URL}/v1/ledger/bulk` in one request (each kept once
//!   by its transaction id, so a retried batch records nothing twice); a
//!   failed request retries every job of the batch. Without it, entry ids
//!   are derived locally.
//! - Progress and log lines are the batch's: every job shows them.

use airlock_guest::{BatchJob, Context, JobError};
use serde::{Deserialize, Serialize};

#[derive(Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
struct PaymentEvent {
    transaction_id: String,
    amount: f64,
    #[serde(default)]
    currency: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Recorded {
    processed: bool,
    ledger_record_id: String,
    batch_size: usize,
}

#[derive(Deserialize)]
struct BulkReply {
    ids: Vec<String>,
}

fn insert(ctx: &Context, jobs: Vec<BatchJob<PaymentEvent>>) -> Vec<Result<Recorded, JobError>> {
    let size = jobs.len();
    let valid: Vec<&PaymentEvent> = jobs
        .iter()
        .map(|j| &j.input)
        .filter(|e| e.amount > 0.0 && e.amount.is_finite())
        .collect();
    ctx.info(format!("recording {} of {size} payments", valid.len()));
    let ids = match ctx.config("LEDGER_URL") {
        Some(ledger) if !valid.is_empty() => match record_all(ctx, &ledger, &valid) {
            Ok(ids) => ids,
            // The request failed: every job of the batch retries.
            Err(e) => return jobs.iter().map(|_| Err(e.clone())).collect(),
        },
        _ => valid
            .iter()
            .map(|e| format!("led_{}", e.transaction_id))
            .collect(),
    };
    ctx.progress(100);
    let mut ids = ids.into_iter();
    jobs.iter()
        .map(|j| {
            if !(j.input.amount > 0.0 && j.input.amount.is_finite()) {
                return Err(JobError::fatal("Invalid transaction amount"));
            }
            let ledger_record_id = ids
                .next()
                .ok_or_else(|| JobError::retry("the ledger answered fewer ids than entries"))?;
            Ok(Recorded {
                processed: true,
                ledger_record_id,
                batch_size: size,
            })
        })
        .collect()
}

/// POSTs every entry in one request; the ledger's ids, in order.
fn record_all(
    ctx: &Context,
    ledger: &str,
    events: &[&PaymentEvent],
) -> Result<Vec<String>, JobError> {
    let reply: BulkReply = ctx
        .http()
        .post(&format!("{}/v1/ledger/bulk", ledger.trim_end_matches('/')))
        .json(&serde_json::json!({ "entries": events }))
        .send()?
        .error_for_status()?
        .json()?;
    if reply.ids.len() != events.len() {
        return Err(JobError::retry(format!(
            "the ledger answered {} ids for {} entries",
            reply.ids.len(),
            events.len()
        )));
    }
    Ok(reply.ids)
}

airlock_guest::batch_handler!(insert);
