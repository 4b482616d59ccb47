"""Test guest: writes to the job's log every way a Python handler can —
``print`` (stdout), ``sys.stderr`` and ``ctx.log`` — and returns how many
lines it wrote."""

from __future__ import annotations

import sys
from typing import Any

from airlock_sdk import Context, handler


@handler
def run(data: Any, ctx: Context) -> dict:
    print("print says", data.get("order", "hello"))
    print("stderr says", file=sys.stderr)
    ctx.log.warn("ctx.log.warn says")
    return {"lines": 3}
