"""Hostile: allocates without end. Must be stopped by the queue's memory cap
(the run fails as ``memory_limit``), never by the host running out."""

from __future__ import annotations

from typing import Any

from airlock_sdk import Context, handler


@handler
def run(data: Any, ctx: Context) -> None:
    hoard = []
    while True:
        hoard.append(bytearray(1 << 20))
