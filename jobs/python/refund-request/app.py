"""A refund request with both kinds of durable wait, as a Python Airlock
handler: the port of the Rust `jobs/refund-request` (same steps, wait ids,
progress, KV counter and output).

1. ``open-refund`` records the request;
2. a manager approves it: the step ``ask-approval`` POSTs
   ``{refundId, orderId, amount, token}`` to ``{APPROVAL_URL}/v1/approvals``
   (``APPROVAL_URL`` from the queue binding's config; the approval service
   mails the manager a link), and the handler waits for ``POST
   /v1/tokens/{token}/complete`` with ``{"approved": bool, "by": name}`` —
   3 days at most (``approvalTimeoutMs`` overrides it). No decision in
   time: ``expired``; a refusal: ``rejected``. The token is a credential
   (whoever holds it decides), so it goes only to the approval service:
   never into the progress, a log, a step's result or the output, which
   every reader of the job sees. The progress says only
   ``{"stage": "awaiting-approval"}``. Without ``APPROVAL_URL`` the job
   fails at once (fatal), naming the key;
3. ``issue-refund`` issues it once, a recorded step replayed, not run again (the KV counter
   ``refunds:<refundId>`` counts the issues, so tests can prove it);
4. the payment provider's ``refund.settled`` event with this ``refundId``
   (at ``$.refundId`` of its data) settles it — 7 days at most
   (``settleTimeoutMs``); none in time: ``unsettled``.

Input: ``{"refundId": "r1", "orderId": "o1", "amount": 25.0}``, plus
``pauseBeforeSettleMs``: busy time between issuing and waiting, which lets
tests send the event while the job still runs.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Dict, Optional, Union

from airlock_sdk import Context, FatalError, Match, handler

APPROVAL_TIMEOUT = timedelta(days=3)
SETTLE_TIMEOUT = timedelta(days=7)
U64_MAX = (1 << 64) - 1


@dataclass
class Refund:
    refund_id: str
    order_id: str
    amount: float
    approval_timeout_ms: Optional[int] = None
    settle_timeout_ms: Optional[int] = None
    pause_before_settle_ms: Optional[int] = None


@dataclass
class Decision:
    """What the manager posts to the approval token."""

    approved: bool
    by: Optional[str] = None


def display(number: float) -> str:
    """A number as Rust's `Display` writes an f64 (`25`, not `25.0`)."""
    if number.is_integer() and abs(number) < 1e16:
        return str(int(number))
    return repr(number)


def parse_count(text: Optional[str]) -> int:
    """The counter's value; 0 when absent or not a u64 (as Rust's
    `str::parse::<u64>().ok()` would have it)."""
    if text is not None and re.fullmatch(r"\+?[0-9]+", text) and int(text) <= U64_MAX:
        return int(text)
    return 0


def timeout(ms: Optional[int], default: timedelta) -> Union[timedelta, float]:
    """``ms`` milliseconds (as seconds: a ``timedelta`` cannot hold every
    u64), or ``default``."""
    return default if ms is None else ms / 1000


def outcome(status: str, refund: Refund, approved_by: Optional[str] = None,
            refund_ref: Optional[str] = None, settlement: Optional[str] = None) -> Dict[str, Any]:
    """The result, without the fields that are absent (like the Rust
    struct's `skip_serializing_if`)."""
    out: Dict[str, Any] = {"status": status, "refundId": refund.refund_id}
    for key, value in (("approvedBy", approved_by), ("refundRef", refund_ref), ("settlement", settlement)):
        if value is not None:
            out[key] = value
    return out


def ask_approval(ctx: Context, approvals: str, refund: Refund, token: str) -> bool:
    """Hands the approval token to the approval service (and no one else);
    the step's result is ``True``, never the token. A host that dies between
    the POST and recording the step sends it again on the retry: the same
    token (a wait token is the same on every run), which the service can
    dedupe."""
    ctx.http.post(
        f"{approvals.rstrip('/')}/v1/approvals",
        json={
            "refundId": refund.refund_id,
            "orderId": refund.order_id,
            "amount": refund.amount,
            "token": token,
        },
    ).raise_for_status()
    return True


@handler
def run(refund: Refund, ctx: Context) -> dict:
    for name, key in (
        ("approval_timeout_ms", "approvalTimeoutMs"),
        ("settle_timeout_ms", "settleTimeoutMs"),
        ("pause_before_settle_ms", "pauseBeforeSettleMs"),
    ):
        value = getattr(refund, name)
        if value is not None and value < 0:
            raise FatalError(
                f"invalid job data at field `{key}`: invalid value: integer `{value}`, expected u64"
            )
    if refund.amount <= 0:
        raise FatalError("refund amount must be positive")

    approvals = ctx.config.get("APPROVAL_URL")
    if approvals is None:
        raise FatalError(
            "the queue binding's config has no `APPROVAL_URL` (where to ask for the approval)"
        )

    @ctx.step("open-refund")
    def opened() -> bool:
        ctx.log.info(
            f"refund {refund.refund_id} of {display(refund.amount)} for order {refund.order_id} opened"
        )
        return True

    token = ctx.wait_token("approval")
    ctx.step("ask-approval", lambda: ask_approval(ctx, approvals, refund, token))
    ctx.progress({"stage": "awaiting-approval"})
    decision = ctx.wait_for_token(
        "approval",
        timeout=timeout(refund.approval_timeout_ms, APPROVAL_TIMEOUT),
        returns=Decision,
    )
    if decision is None:
        return outcome("expired", refund)
    if not decision.approved:
        return outcome("rejected", refund, approved_by=decision.by)

    @ctx.step("issue-refund")
    def refund_ref() -> str:
        counter = f"refunds:{refund.refund_id}"
        issued = parse_count(ctx.kv.get(counter))
        ctx.kv.set(counter, str(issued + 1))
        return f"rf_{refund.refund_id}"

    ctx.progress({"stage": "awaiting-settlement"})
    if refund.pause_before_settle_ms is not None:
        until = time.monotonic() + refund.pause_before_settle_ms / 1000
        while time.monotonic() < until:
            pass

    settled = ctx.wait_for_event(
        "settlement",
        "refund.settled",
        match=Match("$.refundId", refund.refund_id),
        timeout=timeout(refund.settle_timeout_ms, SETTLE_TIMEOUT),
    )
    return outcome(
        "settled" if settled is not None else "unsettled",
        refund,
        approved_by=decision.by,
        refund_ref=refund_ref,
        settlement=settled.id if settled is not None else None,
    )
