//! The payment webhook processor from our users' BullMQ worker, as an
//! Airlock handler.
//!
//! Input: `{ "transactionId": "tx_1", "amount": 42.5, "currency": "EUR" }`.
//! Output: `{ "processed": true, "ledgerRecordId": "led_tx_1" }`.
//!
//! A non-positive amount fails with `Invalid transaction amount`. The
//! original worker threw a plain `Error` and so retried it five times;
//! retrying can never make a bad amount valid, so here it is *fatal*: the job
//! fails at once (BullMQ `UnrecoverableError` semantics).

use airlock_guest::{Context, JobError};
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PaymentEvent {
    transaction_id: String,
    amount: f64,
    #[serde(default)]
    currency: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LedgerReceipt {
    processed: bool,
    ledger_record_id: String,
}

fn process_payment(ctx: &Context, event: PaymentEvent) -> Result<LedgerReceipt, JobError> {
    ctx.progress(10);
    if event.amount <= 0.0 || !event.amount.is_finite() {
        return Err(JobError::fatal("Invalid transaction amount"));
    }
    ctx.info(format!(
        "processing transaction {} for {} {}",
        event.transaction_id,
        event.amount,
        event.currency.as_deref().unwrap_or("USD")
    ));
    ctx.progress(50);
    let ledger_record_id = format!("led_{}", event.transaction_id);
    ctx.info(format!("recorded ledger entry {ledger_record_id}"));
    ctx.progress(100);
    Ok(LedgerReceipt {
        processed: true,
        ledger_record_id,
    })
}

airlock_guest::handler!(process_payment);
