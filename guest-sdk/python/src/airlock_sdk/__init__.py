"""Airlock SDK for Python: write Airlock job handlers as plain functions.

.. code-block:: python

    from dataclasses import dataclass
    from airlock_sdk import Context, FatalError, handler

    @dataclass
    class Payment:
        transaction_id: str      # read from "transactionId" (or "transaction_id")
        amount: float

    @handler
    def run(data: Payment, ctx: Context) -> dict:
        if data.amount <= 0:
            raise FatalError("Invalid transaction amount")
        ctx.progress(50)
        ctx.log.info(f"processing {data.transaction_id}")
        return {"processed": True}

Build it into a component with ``python -m airlock_sdk.build APP_DIR -o
handler.wasm`` (componentize-py, pinned in ``requirements.txt``). A queue
bound with ``batch`` needs a :func:`batch_handler` (many jobs in one call,
one outcome per job), built with ``--batch``. See ``README.md`` for the
whole API.
"""

from __future__ import annotations

from . import _host
from ._runtime import handler
from .batch import BatchJob, batch_handler
from .codec import decode, event_payload, to_json
from .context import (
    ChildEnd,
    ChildResult,
    Completed,
    Config,
    Context,
    Event,
    Failed,
    JobInfo,
    JobRef,
    Kv,
    Logger,
    Match,
    NewJob,
    TimedOut,
)
from .durations import Duration, Instant, duration_ms, instant_ms
from .errors import (
    AirlockError,
    FatalError,
    HostError,
    HttpError,
    HttpRefusal,
    InvokeError,
    RetryAfterError,
    RetryError,
)
from .http import Headers, Http, Response, parse_retry_after, retry_after_from

__version__ = "0.4.0"

__all__ = [
    "handler",
    "batch_handler",
    "BatchJob",
    "Context",
    "JobInfo",
    "JobRef",
    "ChildResult",
    "Completed",
    "Failed",
    "TimedOut",
    "ChildEnd",
    "NewJob",
    "Event",
    "Match",
    "Logger",
    "Kv",
    "Config",
    "Http",
    "Response",
    "Headers",
    "AirlockError",
    "FatalError",
    "RetryError",
    "HostError",
    "HttpError",
    "HttpRefusal",
    "InvokeError",
    "RetryAfterError",
    "retry_after_from",
    "parse_retry_after",
    "decode",
    "event_payload",
    "to_json",
    "Duration",
    "Instant",
    "duration_ms",
    "instant_ms",
]

try:  # the bindings exist only while componentize-py builds the component
    import wit_world as _wit_world  # noqa: F401
except ImportError:
    pass
else:
    from . import _bindings

    _host.install(_bindings.WitHost())
