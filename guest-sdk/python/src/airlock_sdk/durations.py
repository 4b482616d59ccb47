"""Durations and points in time as the SDK accepts them.

A duration is a number of seconds (``90``, ``1.5``), a
:class:`datetime.timedelta`, or a string with units: ``"500ms"``, ``"30s"``,
``"15m"``, ``"24h"``, ``"2d"``, ``"1w"``, combined as in ``"1h30m"`` or
``"1d 12h"``. A point in time is an aware :class:`datetime.datetime` (a naive
one is taken as UTC) or milliseconds since the Unix epoch.
"""

from __future__ import annotations

import math
import re
from datetime import datetime, timedelta, timezone
from typing import Union

__all__ = ["Duration", "Instant", "duration_ms", "instant_ms"]

Duration = Union[int, float, timedelta, str]
Instant = Union[datetime, int, float]

_UNIT_MS = {
    "ms": 1,
    "msec": 1,
    "millisecond": 1,
    "milliseconds": 1,
    "s": 1_000,
    "sec": 1_000,
    "secs": 1_000,
    "second": 1_000,
    "seconds": 1_000,
    "m": 60_000,
    "min": 60_000,
    "mins": 60_000,
    "minute": 60_000,
    "minutes": 60_000,
    "h": 3_600_000,
    "hr": 3_600_000,
    "hrs": 3_600_000,
    "hour": 3_600_000,
    "hours": 3_600_000,
    "d": 86_400_000,
    "day": 86_400_000,
    "days": 86_400_000,
    "w": 604_800_000,
    "week": 604_800_000,
    "weeks": 604_800_000,
}

_PART = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]+)\s*")


def duration_ms(value: Duration) -> int:
    """The duration in whole milliseconds (rounded to the nearest).

    Raises :class:`ValueError` for a negative or unparsable duration and
    :class:`TypeError` for anything that is not a duration.
    """
    if isinstance(value, bool):
        raise TypeError("a duration is seconds, a timedelta or a string like '24h', not a bool")
    if isinstance(value, timedelta):
        ms = value / timedelta(milliseconds=1)
    elif isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise ValueError(f"duration {value!r} is not finite")
        ms = value * 1_000
    elif isinstance(value, str):
        ms = _parse(value)
    else:
        raise TypeError(
            f"a duration is seconds, a timedelta or a string like '24h', not {type(value).__name__}"
        )
    if ms < 0:
        raise ValueError(f"duration {value!r} is negative")
    return int(round(ms))


def _parse(text: str) -> float:
    stripped = text.strip()
    if not stripped:
        raise ValueError("empty duration")
    try:
        # A bare number is seconds, as for numeric durations.
        return float(stripped) * 1_000
    except ValueError:
        pass
    total = 0.0
    pos = 0
    while pos < len(stripped):
        match = _PART.match(stripped, pos)
        if match is None:
            raise ValueError(f"duration {text!r} is not like '500ms', '30s', '1h30m' or '2d'")
        unit = match.group(2).lower()
        if unit not in _UNIT_MS:
            raise ValueError(f"duration {text!r}: unknown unit {match.group(2)!r}")
        total += float(match.group(1)) * _UNIT_MS[unit]
        pos = match.end()
    return total


def instant_ms(value: Instant) -> int:
    """A point in time as milliseconds since the Unix epoch (0 for anything
    before it, as the Rust SDK does)."""
    if isinstance(value, bool):
        raise TypeError("a point in time is a datetime or epoch milliseconds, not a bool")
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        ms = value.timestamp() * 1_000
    elif isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise ValueError(f"time {value!r} is not finite")
        ms = value
    else:
        raise TypeError(
            f"a point in time is a datetime or epoch milliseconds, not {type(value).__name__}"
        )
    return max(0, int(ms))
