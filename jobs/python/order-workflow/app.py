"""The order workflow, as a durable Python Airlock handler: the port of the
Rust `jobs/order-workflow` (same step ids, outputs, messages and KV counter).

1. ``verify-fraud-risk`` scores the order; a risky order goes through
   ``flag-order-for-review`` and the workflow stops there;
2. ``charge-payment`` charges the customer once, however often the job
   is retried, resumed or recovered after a crash: a recorded step is
   replayed, not run again (only a crash between the charge and its
   record would charge twice);
3. a durable sleep ``wait-before-review`` of 24 hours (``reviewDelayMs``
   overrides it) parks the job without holding a worker;
4. ``send-customer-review-request`` asks for a review;
5. with ``notifyEvent``, the event of that name (``{orderId, chargeId}``)
   is sent once (``notify``), and the output names its id (``notified``).

With ``chargeQueue``, step 2 is the payment handler's: the charge is
invoked as a job named ``charge`` on that queue (``{orderId, amount}``),
the order parked until it ended; a charge that failed for good fails the
order fatally (``the charge failed: ...``, with the charge's reason). The
same component is that payment handler: a job named ``charge`` runs
``charge-payment`` alone and returns the charge. (The binding of the
orders' queue lists the charges' queue and the event in its ``starts``.)

Input: ``{"orderId": "o1", "amount": 99.5, "customerEmail": "c@example.com",
"chargeQueue"?: "charges", "notifyEvent"?: "order.reviewed"}``.

Every charge also bumps the KV counter ``charges:<orderId>``, so tests can
prove from outside that the charge really ran once.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Optional

from airlock_sdk import Context, FatalError, InvokeError, handler

REVIEW_DELAY = timedelta(hours=24)
RISKY_AMOUNT = 5_000.0


@dataclass
class Order:
    order_id: str
    amount: float
    customer_email: Optional[str] = None
    review_delay_ms: Optional[int] = None
    # Busy time between charging and sleeping: lets tests kill the host
    # between two steps.
    pause_after_charge_ms: Optional[int] = None
    # The queue of the payment handler that charges the order; absent: the
    # charge is a step of this job.
    charge_queue: Optional[str] = None
    # The event sent once the review was requested.
    notify_event: Optional[str] = None


def display(number: float) -> str:
    """A number as Rust's `Display` writes an f64 (`100`, not `100.0`)."""
    if number.is_integer() and abs(number) < 1e16:
        return str(int(number))
    return repr(number)


def parse_count(text: Optional[str]) -> int:
    """The counter's value; 0 when absent or not a number (as Rust's
    `str::parse::<u64>().ok()` would have it)."""
    if text is not None and re.fullmatch(r"\+?[0-9]+", text):
        return int(text)
    return 0


def charge_payment(order: Order, ctx: Context) -> dict:
    """``charge-payment``: charges the order once (bumping ``charges:<orderId>``)."""

    @ctx.step("charge-payment")
    def charge() -> dict:
        ctx.log.info(f"charging order {order.order_id} for {display(order.amount)}")
        counter = f"charges:{order.order_id}"
        charges = parse_count(ctx.kv.get(counter))
        ctx.kv.set(counter, str(charges + 1))
        return {"chargeId": f"ch_{order.order_id}", "amount": order.amount}

    return charge


@handler
def run(order: Order, ctx: Context) -> dict:
    """A ``charge`` job is the payment handler's, any other an order."""
    for name, key in (("review_delay_ms", "reviewDelayMs"), ("pause_after_charge_ms", "pauseAfterChargeMs")):
        value = getattr(order, name)
        if value is not None and value < 0:
            raise FatalError(
                f"invalid job data at field `{key}`: invalid value: integer `{value}`, expected u64"
            )
    if ctx.job.name == "charge":
        return charge_payment(order, ctx)
    return order_workflow(order, ctx)


def order_workflow(order: Order, ctx: Context) -> dict:
    if order.amount <= 0:
        raise FatalError("order amount must be positive")

    @ctx.step("verify-fraud-risk")
    def risk() -> dict:
        score = int(min(order.amount / RISKY_AMOUNT * 100.0, 100.0))
        ctx.log.info(f"order {order.order_id} risk score {score}")
        return {"score": score, "flagged": order.amount >= RISKY_AMOUNT}

    if risk["flagged"]:

        @ctx.step("flag-order-for-review")
        def flagged() -> bool:
            ctx.log.warn(f"order {order.order_id} flagged for manual review")
            return True

        return {
            "status": "flagged_for_review",
            "orderId": order.order_id,
            "reviewRequested": False,
        }

    if order.charge_queue is not None:
        try:
            charge = ctx.invoke(
                "charge-payment",
                order.charge_queue,
                "charge",
                {"orderId": order.order_id, "amount": order.amount},
            )
        except InvokeError as e:
            raise FatalError(f"the charge failed: {e}") from e
    else:
        charge = charge_payment(order, ctx)
    ctx.progress(50)
    if order.pause_after_charge_ms is not None:
        until = time.monotonic() + order.pause_after_charge_ms / 1000
        while time.monotonic() < until:
            pass

    if order.review_delay_ms is not None:
        delay = timedelta(milliseconds=order.review_delay_ms)
    else:
        delay = REVIEW_DELAY
    ctx.sleep("wait-before-review", delay)

    @ctx.step("send-customer-review-request")
    def review_requested() -> bool:
        to = order.customer_email if order.customer_email is not None else "customer"
        ctx.log.info(f"review request for order {order.order_id} sent to {to}")
        return True

    ctx.progress(100)

    outcome = {
        "status": "completed",
        "orderId": order.order_id,
        "chargeId": charge["chargeId"],
        "reviewRequested": True,
    }
    if order.notify_event is not None:
        outcome["notified"] = ctx.send_event(
            "notify",
            order.notify_event,
            {"orderId": order.order_id, "chargeId": charge["chargeId"]},
        )
    return outcome
