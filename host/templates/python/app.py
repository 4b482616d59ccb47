"""{{name}}: an Airlock job handler in Python.

Input: ``{"orderId": "o1", "amount": 42.5}`` (see ``payload.json``).
"""

from __future__ import annotations

from dataclasses import dataclass

from airlock_sdk import Context, FatalError, handler


@dataclass
class Input:
    order_id: str  # read from the JSON key `orderId` (or `order_id`)
    amount: float


@handler
def run(data: Input, ctx: Context) -> dict:
    if data.amount <= 0:
        # No retry can fix bad input.
        raise FatalError("amount must be positive")

    # A durable step: once its result is recorded, a retry gets it instead of running it again.
    @ctx.step("charge")
    def charge() -> dict:
        ctx.log.info(f"charging {data.order_id} for {data.amount}")
        return {"chargeId": f"ch_{data.order_id}"}

    ctx.progress(100)
    return {"orderId": data.order_id, "chargeId": charge["chargeId"]}
