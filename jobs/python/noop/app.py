"""The smallest handler: returns ``{}``. Used by the benchmarks to measure
what Airlock (and the Python runtime) costs per job."""

from __future__ import annotations

from typing import Any

from airlock_sdk import Context, handler


@handler
def run(data: Any, ctx: Context) -> dict:
    return {}
