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
//!
//! Recording: when the queue binding's config sets `LEDGER_URL`, the entry
//! is POSTed to `{LEDGER_URL}/v1/ledger` (with the transaction id as its
//! `Idempotency-Key`, so a retry records it once) and the ledger's id is
//! returned; without it the entry id is derived locally.
//!
//! Built with the feature `amount-in-cents` (the crate
//! `payment-webhook-cents` builds this very source so), the ledger gets the
//! amount in cents, an integer: a changed version for `airlock replay`'s
//! tests to catch.

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
    let ledger_record_id = match ctx.config("LEDGER_URL") {
        Some(ledger) => record(ctx, &ledger, &event)?,
        None => format!("led_{}", event.transaction_id),
    };
    ctx.info(format!("recorded ledger entry {ledger_record_id}"));
    ctx.progress(100);
    Ok(LedgerReceipt {
        processed: true,
        ledger_record_id,
    })
}

#[derive(Deserialize)]
struct Recorded {
    id: String,
}

/// POSTs the ledger entry; the ledger's id for it.
fn record(ctx: &Context, ledger: &str, event: &PaymentEvent) -> Result<String, JobError> {
    let recorded: Recorded = ctx
        .http()
        .post(&format!("{}/v1/ledger", ledger.trim_end_matches('/')))
        .header("idempotency-key", &event.transaction_id)
        .json(&serde_json::json!({
            "transactionId": event.transaction_id,
            "amount": ledger_amount(event.amount),
            "currency": event.currency.as_deref().unwrap_or("USD"),
        }))
        .send()?
        .error_for_status()?
        .json()?;
    Ok(recorded.id)
}

/// The amount as the ledger gets it: as given, or in cents with the
/// feature `amount-in-cents`.
fn ledger_amount(amount: f64) -> serde_json::Value {
    if cfg!(feature = "amount-in-cents") {
        serde_json::json!((amount * 100.0).round() as i64)
    } else {
        serde_json::json!(amount)
    }
}

airlock_guest::handler!(process_payment);
