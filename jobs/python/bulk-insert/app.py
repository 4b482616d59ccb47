"""The payment webhook's ledger writes, batched, as a Python Airlock batch
handler: the port of the Rust `jobs/bulk-insert` (same input, output,
errors, request, log and progress). A queue bound with ``batch`` hands it
up to ``batch.size`` payment events at once, and it records them all in
one request to the ledger.

Input (each job): ``{"transactionId": "tx_1", "amount": 42.5, "currency": "EUR"}``.
Output (each job): ``{"processed": true, "ledgerRecordId": "led_tx_1", "batchSize": 50}``
(``batchSize``: how many jobs the handler got in this call).

- A non-positive amount fails that job alone, fatally (``Invalid
  transaction amount``); the others are recorded. Data that does not
  decode fails its job alone, fatally (the SDK does it).
- With ``LEDGER_URL`` in the binding's config, the valid entries are
  POSTed to ``{LEDGER_URL}/v1/ledger/bulk`` in one request (``{"entries":
  [{transactionId, amount, currency}]}``; the ledger keeps each once by its
  transaction id, so a retried batch records nothing twice) and answers
  their ids in order. A failed request fails every job of the batch with
  its error: a transport failure or a 5xx/408/429 status retries them
  all; an answer with another number of ids retries them all too. Without
  it, entry ids are derived locally (``led_<transactionId>``).
- Progress and log lines are the batch's: every job shows them.

Built for the ``batch-handler`` world (``run-batch``, and ``run`` for a
queue bound without ``batch``): the ``BATCH`` file next to this one makes
``jobs/python/build.sh`` pass ``--batch``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List, Optional

from airlock_sdk import BatchJob, Context, FatalError, HttpError, RetryError, batch_handler
from airlock_sdk.codec import DecodeError, decode_value


@dataclass
class PaymentEvent:
    transaction_id: str  # JSON `transactionId`
    amount: float
    currency: Optional[str] = None


@dataclass
class BulkReply:
    ids: List[str]


def valid(event: PaymentEvent) -> bool:
    return event.amount > 0 and math.isfinite(event.amount)


@batch_handler
def insert(jobs: List[BatchJob[PaymentEvent]], ctx: Context) -> list:
    size = len(jobs)
    entries = [j.data for j in jobs if valid(j.data)]
    ctx.log.info(f"recording {len(entries)} of {size} payments")
    ledger = ctx.config.get("LEDGER_URL")
    if ledger is not None and entries:
        # Raises when the request fails: every job of the batch fails with it.
        ids = record_all(ctx, ledger, entries)
    else:
        ids = [f"led_{e.transaction_id}" for e in entries]
    ctx.progress(100)
    remaining = iter(ids)
    outcomes: list = []
    for j in jobs:
        if not valid(j.data):
            outcomes.append(FatalError("Invalid transaction amount"))
            continue
        ledger_record_id = next(remaining, None)
        if ledger_record_id is None:
            outcomes.append(RetryError("the ledger answered fewer ids than entries"))
            continue
        outcomes.append({"processed": True, "ledgerRecordId": ledger_record_id, "batchSize": size})
    return outcomes


def record_all(ctx: Context, ledger: str, events: List[PaymentEvent]) -> List[str]:
    """POSTs every entry in one request; the ledger's ids, in order."""
    body = (
        ctx.http.post(
            f"{ledger.rstrip('/')}/v1/ledger/bulk",
            json={
                "entries": [
                    {"transactionId": e.transaction_id, "amount": e.amount, "currency": e.currency}
                    for e in events
                ]
            },
        )
        .raise_for_status()
        .json()
    )
    try:
        reply = decode_value(body, BulkReply)
    except DecodeError as e:
        raise HttpError("decode", str(e)) from None
    if len(reply.ids) != len(events):
        raise RetryError(f"the ledger answered {len(reply.ids)} ids for {len(events)} entries")
    return reply.ids
