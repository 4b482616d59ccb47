"""Batch handlers: one call with many jobs (a queue bound with ``batch``),
one outcome per job — the glue between the ``batch-handler`` world's
exports and a plain function. The Python twin of the Rust SDK's
``batch_handler!`` (``guest-sdk/src/batch.rs``).

.. code-block:: python

    from airlock_sdk import BatchJob, Context, FatalError, batch_handler

    @batch_handler
    def insert(jobs: list[BatchJob[Row]], ctx: Context) -> list:
        # one request for every row, then one outcome per job, in order
        return [saved(j) if j.data.ok else FatalError("bad row") for j in jobs]

What the SDK does:

- each job's data is decoded on its own into ``T`` of the annotation
  ``list[BatchJob[T]]`` (``Any`` without one); a job whose data is not JSON
  or does not fit fails alone as *fatal*, naming the field; the function
  gets the others, in order;
- the function returns one item per job it got, in order: an exception
  instance fails that job (``FatalError`` at once, any other as a retry —
  the mapping of ``@handler``'s exceptions); anything else is the job's
  return value, encoded as JSON (one JSON cannot hold fails that job as
  *fatal*). A list of another length — or something else than a list or
  a tuple — fails every job of the batch as *fatal*;
- an exception the function raises fails every job of the batch (also
  those whose data did not decode), as that exception fails a ``@handler``
  job — except that a :class:`~airlock_sdk.RetryAfterError` is a plain
  retry here: the host has no retry-after for a batch;
- ``run`` (one job, as the ``handler`` world's) calls the same function
  with a batch of one, so the component also serves a queue bound
  without ``batch``.

In a batch, the :class:`~airlock_sdk.Context` is the batch's:
``ctx.job`` is its first job (of those the host gave, decoded or not),
progress and log lines go to every job of the batch (the host does it),
and KV, configuration, secrets and HTTP work as in a single run. Durable
steps, sleeps, waits, children and starts belong to one job: the host
refuses them in a batch, and the whole batch fails as *fatal*, naming the
call.
"""

from __future__ import annotations

import collections.abc
import inspect
import typing
from dataclasses import dataclass
from typing import Any, Callable, Generic, List, Optional, Sequence, Tuple, TypeVar

from . import _host
from ._runtime import (
    _WorldBase,
    decode_data,
    encode_output,
    failure,
    install_world,
    job_info,
)
from .codec import validate_type
from .context import Context, JobInfo, flush_output
from .errors import job_error

__all__ = ["BatchJob", "BatchSpec", "batch_handler", "batch_spec_of", "execute_batch", "execute_one"]

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

# The annotations of a list of jobs: `list[...]`, `List[...]`, `Sequence[...]`.
_LIST_ORIGINS = (list, collections.abc.Sequence)


@dataclass(frozen=True)
class BatchJob(Generic[T]):
    """One job of a batch: who it is, and its decoded data."""

    #: The job (id, queue, name, attempt, ...).
    job: JobInfo
    #: Its data, decoded into ``T`` of the handler's ``list[BatchJob[T]]``.
    data: T


@dataclass(frozen=True)
class BatchSpec:
    """A batch function and what it takes."""

    fn: Callable[..., Any]
    #: What each job's data is decoded into.
    input_type: Any
    wants_context: bool


def _item_type(fn_name: str, annotation: Any) -> Any:
    """``T`` of ``list[BatchJob[T]]``: what each job's data is decoded into."""
    if annotation in (Any, list) or annotation in _LIST_ORIGINS:
        return Any
    origin = typing.get_origin(annotation)
    if origin in _LIST_ORIGINS:
        args = typing.get_args(annotation)
        if not args or args[0] is BatchJob or args[0] is Any:
            return Any
        if typing.get_origin(args[0]) is BatchJob:
            return typing.get_args(args[0])[0]
    raise TypeError(
        f"batch handler {fn_name!r}: annotate its first parameter `list[BatchJob[T]]` (T: what "
        f"each job's data is decoded into), `list[BatchJob]`, `list` or nothing; not {annotation!r}"
    )


def batch_spec_of(fn: Callable[..., Any]) -> BatchSpec:
    """Checks a batch function's signature (``insert(jobs[, ctx])``) and the
    type each job's data is decoded into; raises :class:`TypeError` — at
    build time, since componentize-py imports the app while building."""
    if not callable(fn):
        raise TypeError("@batch_handler decorates a function")
    name = getattr(fn, "__name__", repr(fn))
    params = [
        p
        for p in inspect.signature(fn).parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    if len(params) not in (1, 2):
        raise TypeError(
            f"batch handler {name!r} must take (jobs, ctx) or (jobs), "
            f"it takes {len(params)} positional parameters"
        )
    hints = typing.get_type_hints(fn)
    input_type = _item_type(name, hints.get(params[0].name, Any))
    validate_type(input_type)
    return BatchSpec(fn, input_type, len(params) == 2)


def batch_handler(fn: F) -> F:
    """Makes ``fn`` the component's batch handler: ``def insert(jobs:
    list[BatchJob[T]], ctx) -> list``, one item per job, in order (an
    exception instance fails its job; anything else is its return value).
    See this module's docs for what happens to each job.

    Defines ``WitWorld`` (the class componentize-py looks for) in ``fn``'s
    module, with the ``batch-handler`` world's ``run-batch`` and ``run``
    (a batch of one): build the app with ``--batch``. One handler per
    module. ``fn`` itself is returned unchanged (marked, so that
    :func:`airlock_sdk.testing.run` runs it as ``run`` does), so tests can
    call it directly.
    """
    spec = batch_spec_of(fn)
    install_world(fn, lambda: batch_world_for(spec))
    try:
        fn._airlock_batch = spec  # type: ignore[attr-defined]
    except (AttributeError, TypeError):  # a callable without a __dict__
        pass
    return fn


def execute_batch(spec: BatchSpec, jobs: Sequence[Tuple[JobInfo, str]]) -> List[Tuple[str, str]]:
    """Runs a batch of ``(job, data as JSON text)``: one ``("ok", output
    JSON)`` or ``("retry" | "fatal", message)`` per job, in order.

    As :func:`airlock_sdk._runtime.execute` for one job: every call starts
    clean with a new :class:`Context` (the first job's), ended — and
    ``print`` output flushed — when the function returns or raises; a fake
    host's :class:`_host.Suspend` and :class:`_host.Ended`, and
    :class:`MemoryError`, propagate. With no job, or none whose data
    decodes, the function is not called.
    """
    count = len(jobs)
    if count == 0:
        return []
    outcomes: List[Optional[Tuple[str, str]]] = [None] * count
    batch: List[BatchJob[Any]] = []
    places: List[int] = []
    for place, (job, data) in enumerate(jobs):
        value, invalid = decode_data(data, spec.input_type)
        if invalid is not None:
            outcomes[place] = ("fatal", invalid)
        else:
            places.append(place)
            batch.append(BatchJob(job, value))
    asked = len(batch)
    if asked:
        ctx = Context(jobs[0][0])
        try:
            answered = spec.fn(batch, ctx) if spec.wants_context else spec.fn(batch)
        except (_host.Suspend, _host.Ended, MemoryError):
            raise
        except BaseException as e:  # every job of the batch fails with it
            return [failure(ctx, e)] * count
        finally:
            flush_output()
            ctx._end()
        if not isinstance(answered, (list, tuple)):
            reason = f"the batch handler returned {type(answered).__name__}, not a list of {asked} outcomes"
            return [("fatal", reason)] * count
        if len(answered) != asked:
            reason = f"the batch handler returned {len(answered)} outcomes for {asked} jobs"
            return [("fatal", reason)] * count
        for place, item in zip(places, answered):
            outcomes[place] = job_error(item) if isinstance(item, BaseException) else encode_output(item)
    # Every place is filled: a decode failure, or the function's item for it.
    return typing.cast(List[Tuple[str, str]], outcomes)


def execute_one(spec: BatchSpec, job: JobInfo, data: str) -> Tuple[str, str]:
    """Runs one job through a batch function: a batch of one."""
    return execute_batch(spec, [(job, data)])[0]


def batch_world_for(spec: BatchSpec) -> type:
    """The ``WitWorld`` class componentize-py instantiates to call the
    ``batch-handler`` world's exports, dispatching to ``spec``'s function.

    Raises :class:`TypeError` while componentize-py builds a component for
    the ``handler`` world (a build without ``--batch``), which has no
    ``run-batch`` export to serve a batch queue."""
    if _WorldBase is not object and not hasattr(_WorldBase, "run_batch"):
        raise TypeError(
            f"@batch_handler {getattr(spec.fn, '__name__', spec.fn)!r} in a component built for "
            "the handler world: build it with --batch (the batch-handler world)"
        )

    class WitWorld(_WorldBase):  # type: ignore[misc, valid-type]
        _airlock_handler = spec

        def run(self, job: Any) -> str:
            kind, text = execute_one(spec, job_info(job), job.data)
            if kind == "ok":
                return text
            raise _host.current().job_error(kind, text)

        def run_batch(self, jobs: List[Any]) -> List[Any]:
            host = _host.current()
            outcomes = execute_batch(spec, [(job_info(job), job.data) for job in jobs])
            return [host.batch_outcome(kind, text) for kind, text in outcomes]

    return WitWorld
