"""The payment webhook processor, as a Python Airlock handler: the port of
the Rust `jobs/payment-webhook` (same input, output, errors, logs and
progress).

Input: ``{"transactionId": "tx_1", "amount": 42.5, "currency": "EUR"}``.
Output: ``{"processed": true, "ledgerRecordId": "led_tx_1"}``.

A non-positive amount fails with ``Invalid transaction amount``, *fatally*:
retrying can never make a bad amount valid (BullMQ ``UnrecoverableError``).

Recording: when the queue binding's config sets ``LEDGER_URL``, the entry is
POSTed to ``{LEDGER_URL}/v1/ledger`` (with the transaction id as its
``idempotency-key``, so a retry records it once) and the ledger's id is
returned; without it the entry id is derived locally.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

from airlock_sdk import Context, FatalError, HttpError, handler


@dataclass
class PaymentEvent:
    transaction_id: str  # JSON `transactionId`
    amount: float
    currency: Optional[str] = None


def display(number: float) -> str:
    """A number as Rust's `Display` writes an f64 (`100`, not `100.0`)."""
    if number.is_integer() and abs(number) < 1e16:
        return str(int(number))
    return repr(number)


@handler
def run(event: PaymentEvent, ctx: Context) -> dict:
    ctx.progress(10)
    if event.amount <= 0 or not math.isfinite(event.amount):
        raise FatalError("Invalid transaction amount")
    currency = event.currency if event.currency is not None else "USD"
    ctx.log.info(
        f"processing transaction {event.transaction_id} for {display(event.amount)} {currency}"
    )
    ctx.progress(50)
    ledger = ctx.config.get("LEDGER_URL")
    if ledger is not None:
        ledger_record_id = record(ctx, ledger, event, currency)
    else:
        ledger_record_id = f"led_{event.transaction_id}"
    ctx.log.info(f"recorded ledger entry {ledger_record_id}")
    ctx.progress(100)
    return {"processed": True, "ledgerRecordId": ledger_record_id}


def record(ctx: Context, ledger: str, event: PaymentEvent, currency: str) -> str:
    """POSTs the ledger entry; the ledger's id for it."""
    recorded = (
        ctx.http.post(
            f"{ledger.rstrip('/')}/v1/ledger",
            headers={"idempotency-key": event.transaction_id},
            json={
                "transactionId": event.transaction_id,
                "amount": event.amount,
                "currency": currency,
            },
        )
        .raise_for_status()
        .json()
    )
    if not isinstance(recorded, dict) or not isinstance(recorded.get("id"), str):
        raise HttpError("decode", "missing field `id`")
    return recorded["id"]
