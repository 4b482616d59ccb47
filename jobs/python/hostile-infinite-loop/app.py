"""Hostile: spins forever. Must be stopped by fuel (or the deadline when the
queue runs without fuel)."""

from __future__ import annotations

from typing import Any

from airlock_sdk import Context, handler


@handler
def run(data: Any, ctx: Context) -> None:
    while True:
        pass
