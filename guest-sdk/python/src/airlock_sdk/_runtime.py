"""The glue between the ``run`` export and a handler function."""

from __future__ import annotations

import inspect
import json
import sys
import traceback
import typing
from dataclasses import dataclass
from typing import Any, Callable, Optional, Tuple, TypeVar

from . import _host
from .codec import DecodeError, decode_value, to_json, validate_type
from .context import Context, JobInfo, JobRef, flush_output
from .errors import AirlockError, RetryAfterError, job_error

try:  # present only while componentize-py builds the component
    import wit_world as _wit_world

    _WorldBase: type = _wit_world.WitWorld
except ImportError:  # plain CPython: tests, IDEs
    _WorldBase = object

__all__ = [
    "handler",
    "HandlerSpec",
    "decode_data",
    "encode_output",
    "execute",
    "failure",
    "install_world",
    "job_info",
    "spec_of",
    "world_for",
]

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class HandlerSpec:
    """A handler function and what it takes."""

    fn: Callable[..., Any]
    input_type: Any
    wants_context: bool


def spec_of(fn: Callable[..., Any]) -> HandlerSpec:
    """Checks a handler's signature (``run(data[, ctx])``) and the type its
    data is decoded into; raises :class:`TypeError` — at build time, since
    componentize-py imports the app while building."""
    if not callable(fn):
        raise TypeError("@handler decorates a function")
    params = [
        p
        for p in inspect.signature(fn).parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    if len(params) not in (1, 2):
        raise TypeError(
            f"handler {getattr(fn, '__name__', fn)!r} must take (data, ctx) or (data), "
            f"it takes {len(params)} positional parameters"
        )
    hints = typing.get_type_hints(fn)
    input_type = hints.get(params[0].name, Any)
    validate_type(input_type)
    return HandlerSpec(fn, input_type, len(params) == 2)


def handler(fn: F) -> F:
    """Makes ``fn`` the component's handler: ``def run(data, ctx) -> Any``.

    ``data`` is the job's JSON data, decoded into ``fn``'s annotation for it
    (a dataclass, a TypedDict, ``dict``, ...; a mismatch fails the job as
    fatal, naming the field). The return value is encoded as JSON (``None``
    is ``null``) and becomes the job's return value. Exceptions fail the
    job: :class:`FatalError` (and :class:`InvokeError`) at once, anything
    else as a retryable failure — but a :class:`RetryAfterError` runs the
    job again after its delay, using up no attempt.

    Defines ``WitWorld`` (the class componentize-py looks for) in ``fn``'s
    module, bound to ``fn``; one handler per module. ``fn`` itself is
    returned unchanged, so tests can call it directly.
    """
    spec = spec_of(fn)
    install_world(fn, lambda: world_for(spec))
    return fn


def install_world(fn: Callable[..., Any], make_world: Callable[[], type]) -> None:
    """Sets ``WitWorld`` in ``fn``'s module to ``make_world()``, unless the
    module defines a ``WitWorld`` of its own. A module has one handler: a
    second function decorated there (``@handler`` or ``@batch_handler``)
    raises :class:`RuntimeError`."""
    module = sys.modules.get(getattr(fn, "__module__", ""), None)
    if module is None:
        return
    existing = getattr(module, "WitWorld", None)
    bound = getattr(existing, "_airlock_handler", None)
    if bound is not None and bound.fn is not fn:
        raise RuntimeError(
            f"only one handler (@handler or @batch_handler) per module: {bound.fn.__name__!r} "
            f"already is {module.__name__}'s handler"
        )
    if existing is None or bound is not None:
        setattr(module, "WitWorld", make_world())


def execute(spec: HandlerSpec, job: JobInfo, data: str) -> Tuple[str, str]:
    """Runs one job: ``("ok", output JSON)`` or ``("retry" | "fatal", message)``.

    Every call is one job and starts clean, also when the host calls ``run``
    again on the same instance (a warm instance): a new :class:`Context`
    (its own step, sleep, wait and invoke occurrence counts). When the handler
    returns or raises, ``print`` output is flushed and the context is ended:
    a call through it later raises :class:`FatalError` without reaching the
    host.

    A :class:`RetryAfterError` escaping the handler ends the run with the
    host's ``retry-after`` (which does not return).

    A fake host's :class:`_host.Suspend` (a durable sleep, wait or invoke),
    its :class:`_host.Ended` (a retry-after, a rate limit, a refused start)
    and :class:`MemoryError` propagate: the real host stops the instance
    there, and a memory cap hit is reported best by the host itself.
    """
    value, invalid = decode_data(data, spec.input_type)
    if invalid is not None:
        return ("fatal", invalid)
    ctx = Context(job)
    try:
        result = spec.fn(value, ctx) if spec.wants_context else spec.fn(value)
    except (_host.Suspend, _host.Ended, MemoryError):
        raise
    except BaseException as e:  # every failure becomes a job error
        if isinstance(e, RetryAfterError):
            # Not a failure: run again later. The host ends the run here.
            flush_output()
            _host.current().retry_after(e.delay_ms, e.reason)
        return failure(ctx, e)
    finally:
        # The job is over: its print output goes to its own log, and a ctx
        # the handler kept (in a global, on a warm instance) is dead for
        # every later job.
        flush_output()
        ctx._end()
    return encode_output(result)


def failure(ctx: Context, e: BaseException) -> Tuple[str, str]:
    """How exception ``e``, raised by the handler, fails the run:
    ``("retry" | "fatal", message)`` (:func:`job_error`). One that is not
    an :class:`AirlockError` (a bug, most likely) also logs its traceback
    through ``ctx`` at error level."""
    kind, message = job_error(e)
    if not isinstance(e, AirlockError):
        try:
            ctx.log.error("".join(traceback.format_exception(type(e), e, e.__traceback__)).rstrip())
        except Exception:
            pass
    return (kind, message)


def decode_data(data: str, input_type: Any) -> Tuple[Any, Optional[str]]:
    """A job's data (JSON text) decoded into ``input_type``: ``(value,
    None)``, or ``(None, message)`` when it is not JSON or does not fit —
    the job's fatal failure (``invalid job data: ...``, naming the field)."""
    try:
        raw = json.loads(data)
    except ValueError as e:
        return (None, f"invalid job data: {e}")
    try:
        return (decode_value(raw, input_type), None)
    except DecodeError as e:
        return (None, e.describe())


def encode_output(result: Any) -> Tuple[str, str]:
    """A handler's result as the job's return value: ``("ok", JSON text)``,
    or ``("fatal", message)`` when JSON cannot hold it."""
    try:
        return ("ok", to_json(result))
    except (TypeError, ValueError) as e:
        return ("fatal", f"handler output could not be encoded as JSON: {e}")


def job_info(job: Any) -> JobInfo:
    """The SDK's :class:`JobInfo` of the contract's ``job`` record."""
    parent = getattr(job, "parent", None)
    return JobInfo(
        id=job.id,
        queue=job.queue,
        name=job.name,
        attempt=job.attempt,
        max_attempts=job.max_attempts,
        enqueued_at_ms=job.enqueued_at_ms,
        started_at_ms=job.started_at_ms,
        parent=JobRef(parent.queue, parent.id) if parent is not None else None,
    )


def world_for(spec: HandlerSpec) -> type:
    """The ``WitWorld`` class componentize-py instantiates to call the
    ``run`` export, dispatching to ``spec``'s function.

    Raises :class:`TypeError` while componentize-py builds a component for
    the ``batch-handler`` world (``--batch``): that world's ``run-batch``
    needs a ``@batch_handler``."""
    if hasattr(_WorldBase, "run_batch"):
        raise TypeError(
            f"@handler {getattr(spec.fn, '__name__', spec.fn)!r} in a component built for the "
            "batch-handler world (--batch): decorate a batch function with @batch_handler, "
            "or build without --batch"
        )

    class WitWorld(_WorldBase):  # type: ignore[misc, valid-type]
        _airlock_handler = spec

        def run(self, job: Any) -> str:
            kind, text = execute(spec, job_info(job), job.data)
            if kind == "ok":
                return text
            raise _host.current().job_error(kind, text)

    return WitWorld
