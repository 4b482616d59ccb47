"""Run handlers under plain CPython, against an in-memory fake of the host.

.. code-block:: python

    import unittest
    from airlock_sdk.testing import FakeHost, run
    import app

    class AppTest(unittest.TestCase):
        def test_fatal_on_zero(self):
            out = run(app.run, {"transactionId": "tx_1", "amount": 0})
            self.assertEqual(out.status, "fatal")
            self.assertEqual(out.message, "Invalid transaction amount")

:func:`run` behaves like ``airlock run --skip-sleeps``: a durable sleep stops
the run and the job runs again from the start with its recorded steps, until
it completes or fails. A durable wait (``ctx.wait_for_event``,
``ctx.wait_for_token``) returns what the test recorded for it
(:meth:`FakeHost.complete_wait`, :meth:`FakeHost.time_out_wait`,
:meth:`FakeHost.send_event`, :meth:`FakeHost.complete_token`); without an
outcome it stops :func:`run` with ``status="suspended"`` and ``wait_id``
set, and the test can record one and call :func:`run` again with the same
host. An invoke (``ctx.invoke``, ``ctx.invoke_many``) parks the same
way until its children have ended: what ``FakeHost(answer_child=...)`` answers
for each child it starts, or what the test records
(:meth:`FakeHost.complete_child`, :meth:`FakeHost.fail_child`,
:meth:`FakeHost.time_out_invoke`). ``ctx.retry_after``, ``ctx.rate_limit``
and a :class:`~airlock_sdk.RetryAfterError` stop :func:`run` with
``status="retry_after"`` / ``"rate_limit"`` and ``delay_ms``.
:func:`run_batch` runs a ``@batch_handler`` on a batch of jobs, as the
host's ``run-batch`` does: one :class:`Outcome` per job. This module is
not part of a built component.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, NoReturn, Optional, Sequence, Tuple, Union
from urllib.parse import urlsplit

from . import _host
from ._runtime import execute, spec_of
from .batch import BatchSpec, batch_spec_of, execute_batch, execute_one
from .codec import to_json
from .context import ChildEnd, Completed, Event, Failed, JobInfo, JobRef, TimedOut
from .errors import HttpError, HttpRefusal
from .http import _without_query, error_from_code

__all__ = ["FakeHost", "FakeInvoke", "FakeJob", "FakeRequest", "FakeWait", "Outcome", "run", "run_batch"]

# The host's checks on waits (host/sandbox/src/state.rs, json_path.rs).
_MAX_WAIT_MS = 365 * 24 * 60 * 60 * 1000
_MAX_EVENT_NAME_BYTES = 256
_MATCH_PATH = re.compile(r"\$(\.[A-Za-z0-9_-]{1,64}){1,16}")
# What the bindings raise for a request the host refused or cut off, by
# refusal kind (the `wasi:http` error code the host answers with).
_REFUSAL_CODES = {
    "egress-rule": "HttpRequestDenied",
    "operator": "HttpRequestDenied",
    "address": "DestinationIpProhibited",
    "scheme": "HttpRequestDenied",
    "too-many-requests": "HttpRequestDenied",
    "request-too-large": "HttpRequestBodySize",
    "response-too-large": "HttpResponseBodySize",
    "timeout": "ConnectionReadTimeout",
}
# The host keeps a run's newest 32 refusals.
_MAX_REFUSALS = 32
# The host's bounds on starting work (host/sandbox/src/run_state/work.rs).
_MAX_INVOKE_JOBS = 10_000
_MAX_LATER_MS = 24 * 60 * 60 * 1000
_MAX_RETRY_AFTERS = 100
_U64_MAX = (1 << 64) - 1


@dataclass
class FakeJob:
    """A job the handler started through :class:`FakeHost`: enqueued
    (``ctx.enqueue``) or a child of an invoke."""

    queue: str
    name: str
    #: Its data (decoded JSON).
    data: Any
    #: Its BullMQ options (decoded), or ``None``.
    options: Optional[Dict[str, Any]]
    #: Its id, derived from the step's record key and its index, as the
    #: host derives it (``c-<digest>``): the same on every run.
    id: str
    #: The record key of the enqueue or invoke that started it.
    step_id: str
    #: Its index in that call.
    index: int = 0
    #: Whether it is an invoke's child (else it was enqueued).
    invoked: bool = False


@dataclass
class FakeInvoke:
    """An invoke as :class:`FakeHost` recorded it, the first time the job
    reached it."""

    #: Every child it asks for, in order (started or not yet).
    children: List[FakeJob]
    max_running: Optional[int]
    timeout_ms: Optional[int]
    #: When its children still running time out (ms since the Unix
    #: epoch), or ``None``.
    deadline_ms: Optional[int]
    #: The indices of the children started so far, in start order.
    started: List[int] = field(default_factory=list)


def _derived_id(step_id: str, index: int) -> str:
    return "c-" + hashlib.sha256(f"{step_id}\0{index}".encode()).hexdigest()[:40]


def _wildmatch(pattern: str, name: str) -> bool:
    """A ``starts`` pattern: ``*`` any run of characters, ``?`` one."""
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, name, re.S) is not None


def _as_end(value: Any) -> ChildEnd:
    """What a test gives as a child's end: an end, or a return value."""
    if isinstance(value, Failed):
        return Failed(value.reason, kind=value.kind or "guest_fatal",
                      attempts=value.attempts if value.attempts is not None else 1)
    if isinstance(value, (Completed, TimedOut)):
        return value
    return Completed(value)


def _end_args(end: ChildEnd) -> Tuple[Any, ...]:
    if isinstance(end, Completed):
        return ("completed", to_json(end.value))
    if isinstance(end, Failed):
        return ("failed", end.kind or "guest_fatal", end.reason, end.attempts if end.attempts is not None else 1)
    return ("timed_out",)


@dataclass
class FakeWait:
    """A durable wait as :class:`FakeHost` recorded it, the first time the
    job reached it."""

    #: ``"event"`` or ``"token"``.
    kind: str
    timeout_ms: int
    #: When it times out (ms since the Unix epoch): ``timeout_ms`` after
    #: the first time the job got here.
    deadline_ms: int
    #: The event name (event waits).
    event: Optional[str] = None
    #: ``(path, value as JSON text)`` (event waits with a match).
    match: Optional[Tuple[str, str]] = None


def _json_equal(a: Any, b: Any) -> bool:
    """JSON value equality as the host has it (serde_json): ``1`` is neither
    ``1.0`` nor ``true``; object keys in any order."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


_MISSING = object()


def _at_path(data: Any, path: str) -> Any:
    for name in path.split(".")[1:]:
        if not isinstance(data, dict) or name not in data:
            return _MISSING
        data = data[name]
    return data


@dataclass
class FakeRequest:
    """A request a handler sent through :class:`FakeHost`."""

    method: str
    url: str
    headers: List[Tuple[str, str]]
    body: bytes
    timeout_ns: Optional[int]

    def header(self, name: str) -> Optional[str]:
        return next((v for n, v in self.headers if n.lower() == name.lower()), None)

    def json(self) -> Any:
        return json.loads(self.body)


InvokeHandler = Callable[[FakeJob], Any]
HttpReply = Union[Tuple[int, Dict[str, str], Union[bytes, str, Any]], HttpError, HttpRefusal]
HttpHandler = Callable[[FakeRequest], HttpReply]


def _destination(url: str) -> str:
    """``host:port`` of ``url``, as the host names a destination in its reasons."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    return f"{host}:{parts.port or (443 if parts.scheme == 'https' else 80)}"


class FakeHost:
    """An in-memory :class:`airlock_sdk._host.Host`, like ``airlock run``'s.

    ``failures`` maps a host call name (``"kv_get"``, ``"step_record"``,
    ``"wait_for_event"``, ...) to ``(kind, detail)`` so that call fails with
    that ``host-error``. ``http`` answers requests: ``(status, headers,
    body)`` (a body that is not bytes or str is sent as JSON), an
    :class:`HttpError` to raise, or an :class:`~airlock_sdk.HttpRefusal`:
    the host refused or cut off the request — it is recorded (see
    :meth:`refuse`) and the request fails with the error the bindings give
    for its kind. Without ``http`` every request is refused as by a binding
    with no egress (an ``egress-rule`` refusal, ``<host>:<port> is not in
    this queue's egress list``).

    Refusals: ``refusals`` (``(url, kind, reason)`` each) are recorded
    before the job runs; :meth:`refuse` records one; the list is
    ``http_refusal_log`` (``(seq, url, kind, reason)``, ``seq`` from 1, the
    newest 32), what the contract's ``http-refusals`` returns. It is the
    run's: :func:`run` empties it before each run after its first (a
    wake-up after a sleep or a wait), as the host numbers every run's
    refusals afresh.

    Durable waits: ``waits`` holds the waits the job reached (by record key:
    ``id``, ``id#2``, ...), ``wait_results`` their outcomes (JSON text, or
    ``None`` for a timeout), ``tokens`` the token of each wait (by record
    key) and
    ``wait_calls`` every wait call in order: ``("wait_for_event", key,
    event, match, timeout_ms)``, ``("wait_token", key)``,
    ``("wait_for_token", key, timeout_ms)``. A wait returns its recorded
    outcome; without one it times out once its deadline has passed, and
    otherwise parks the job (:class:`_host.Suspend`).

    Starting work: ``starts`` is the binding's (``{"queues": [...],
    "events": [...]}``, names or ``*`` patterns); a start it does not allow
    ends the run as fatal (``refused: queue `q` is not in the
    `starts.queues` of queue `test`'s binding``), as the host does.
    Without ``starts`` everything is allowed. ``jobs`` lists every job
    started (:class:`FakeJob`: enqueued, or an invoke's child once
    started), ``sent_events`` every event the job sent (``{"name",
    "data", "id"}``); an enqueue and an event are recorded as steps
    (``steps``: ``[queue, id]`` and the event id), so a replay starts
    nothing new. ``invokes`` holds the invokes the job reached (by record
    key), ``child_ends`` each one's ends so far (by index: a
    ``Completed``, ``Failed`` or ``TimedOut``). ``answer_child`` answers
    each child (a :class:`FakeJob`) as it starts: a ``Completed(value)``, a ``Failed(reason,
    kind=..., attempts=...)`` (failed for good), ``TimedOut()``, ``None``
    (still running: the test ends it later with :meth:`complete_child`,
    :meth:`fail_child` or :meth:`time_out_invoke`) or any other value (its
    return value). An invoke parks the job until every child started has
    ended (:func:`run` then runs the job again), starting them in groups of
    ``max_running``. ``retry_afters`` and ``rate_limits`` list the
    ``(delay_ms, reason)`` asked for (clamped to a day, as the host does);
    past 100 retry-afters the run fails as retryable.

    Batches: while ``batch`` is set (:func:`run_batch` sets it), the calls
    that belong to one job are refused as the host refuses them in a
    ``run-batch`` call: ``step_lookup``, ``step_record``, ``wait_token``
    and ``children_results`` answer ``invalid``, and ``sleep_until``, the
    waits, ``enqueue``, ``invoke``, ``send_event_step``, ``retry_after``
    and ``rate_limit`` end the run (:class:`_host.Ended`, ``fatal``);
    either way the whole batch fails as fatal, with a reason naming the
    first such call (``batch_failure``, also logged at error level).
    """

    def __init__(
        self,
        *,
        config: Optional[Dict[str, str]] = None,
        secrets: Optional[Dict[str, str]] = None,
        revealable: Optional[Dict[str, str]] = None,
        kv: Optional[Dict[str, str]] = None,
        children: Optional[List[Tuple[str, str, str, str]]] = None,
        http: Optional[HttpHandler] = None,
        failures: Optional[Dict[str, Tuple[str, str]]] = None,
        refusals: Optional[List[Tuple[str, str, str]]] = None,
        starts: Optional[Dict[str, List[str]]] = None,
        answer_child: Optional[InvokeHandler] = None,
    ) -> None:
        self.config: Dict[str, str] = dict(config or {})
        self.secrets: Dict[str, str] = dict(secrets or {})
        self.revealable: Dict[str, str] = dict(revealable or {})
        self.kv: Dict[str, str] = dict(kv or {})
        self.kv_ttls: Dict[str, Optional[int]] = {}
        self.children: List[Tuple[str, str, str, str]] = list(children or [])
        self.http = http
        self.failures: Dict[str, Tuple[str, str]] = dict(failures or {})
        self.logs: List[Tuple[str, str]] = []
        self.progress: List[Any] = []
        self.steps: Dict[str, str] = {}
        self.step_order: List[str] = []
        self.sleeps: Dict[str, int] = {}
        self.woken: set = set()
        self.requests: List[FakeRequest] = []
        self.waits: Dict[str, FakeWait] = {}
        self.wait_results: Dict[str, Optional[str]] = {}
        self.tokens: Dict[str, str] = {}
        self.wait_calls: List[Tuple[Any, ...]] = []
        self.events: List[Dict[str, Any]] = []
        self.http_refusal_log: List[Tuple[int, str, str, str]] = []
        self.starts: Optional[Dict[str, List[str]]] = (
            None if starts is None else {k: list(v) for k, v in starts.items()}
        )
        self.answer_child = answer_child
        #: The queue of the job being run (``run`` sets it), as refusals name it.
        self.queue = "test"
        self.jobs: List[FakeJob] = []
        self.sent_events: List[Dict[str, Any]] = []
        self.invokes: Dict[str, FakeInvoke] = {}
        self.child_ends: Dict[str, Dict[int, ChildEnd]] = {}
        self.expired_invokes: set = set()
        self.retry_afters: List[Tuple[int, str]] = []
        self.rate_limits: List[Tuple[int, str]] = []
        #: Whether the run is a batch (``run-batch``; :func:`run_batch` sets it).
        self.batch = False
        #: Why the batch run failed as a whole (the first one-job call it
        #: made), or ``None``; :func:`run_batch` clears it before each batch.
        self.batch_failure: Optional[str] = None
        for url, kind, reason in refusals or []:
            self.refuse(url, kind, reason)

    # -- what a test does to HTTP -----------------------------------------

    def refuse(self, url: str, kind: str, reason: str) -> int:
        """Records that the host refused or cut off a request to ``url``
        (stored without its query, as the host does) for ``kind``
        (``"egress-rule"``, ``"operator"``, ``"address"``, ``"scheme"``,
        ``"too-many-requests"``, ``"request-too-large"``,
        ``"response-too-large"``, ``"timeout"``) and ``reason``; its
        ``seq``. It does not fail a request by itself: the request must
        fail too (an :class:`HttpError` reply), as on the host."""
        if kind not in _REFUSAL_CODES:
            raise ValueError(f"unknown refusal kind {kind!r}")
        log = self.http_refusal_log
        seq = log[-1][0] + 1 if log else 1
        log.append((seq, _without_query(url), kind, reason))
        del log[:-_MAX_REFUSALS]
        return seq

    # -- what a test does to waits ----------------------------------------

    def complete_wait(self, wait_id: str, value: Any) -> None:
        """Records the outcome of wait ``wait_id`` (reached or not yet): what
        its ``wait_for_*`` call returns from now on. For an event wait,
        the event (an :class:`~airlock_sdk.Event` or a ``{"name", "data",
        "id", "ts"}`` dict); for a token wait, the body the token was
        completed with (any JSON value). A wait has one outcome:
        :class:`ValueError` when it has one already."""
        self._resolve(wait_id, to_json(dataclasses.asdict(value) if isinstance(value, Event) else value))

    def time_out_wait(self, wait_id: str) -> None:
        """Records that wait ``wait_id`` timed out: its call returns ``None``
        from now on (and its token is used up)."""
        self._resolve(wait_id, None)

    def complete_token(self, token: str, value: Any) -> bool:
        """``POST /v1/tokens/{token}/complete`` with ``value``: ``True`` when
        it completed the token's wait, ``False`` when the token was used
        already (completed, or its wait timed out; the API answers 409).
        :class:`KeyError` for a token the job never asked for."""
        wait_id = next((w for w, t in self.tokens.items() if t == token), None)
        if wait_id is None:
            raise KeyError(token)
        if wait_id in self.wait_results:
            return False
        self._resolve(wait_id, to_json(value))
        return True

    def send_event(self, name: str, data: Any = None, *, id: Optional[str] = None,
                   ts: Optional[int] = None) -> Dict[str, Any]:
        """``POST /v1/events``: the event (returned, ``{"name", "data",
        "id", "ts"}``) becomes the outcome of every wait without one that
        the job reached and that accepts it (its name and, with a match,
        the match's value at its path). Waits the job has not reached yet
        do not see it."""
        event = {
            "name": name,
            "data": data,
            "id": id if id is not None else f"evt_{len(self.events) + 1}",
            "ts": ts if ts is not None else int(time.time() * 1000),
        }
        self.events.append(event)
        for wait_id, wait in self.waits.items():
            if wait.kind != "event" or wait.event != name or wait_id in self.wait_results:
                continue
            if wait.match is not None:
                found = _at_path(data, wait.match[0])
                if found is _MISSING or found is None or not _json_equal(found, json.loads(wait.match[1])):
                    continue
            self.wait_results[wait_id] = to_json(event)
        return event

    # -- what a test does to invoked children -----------------------------

    def complete_child(self, invoke_id: str, value: Any = None, *, index: int = 0) -> None:
        """Records that child ``index`` of invoke ``invoke_id`` (its record
        key: ``id``, ``id#2``, ...) completed with ``value``. A child has
        one end: :class:`ValueError` when it has one already."""
        self._end_child(invoke_id, index, Completed(value))

    def fail_child(self, invoke_id: str, reason: str, *, index: int = 0,
                   kind: str = "guest_fatal", attempts: int = 1) -> None:
        """Records that child ``index`` of invoke ``invoke_id`` failed for
        good (``kind`` as the run history names it)."""
        self._end_child(invoke_id, index, Failed(reason, kind=kind, attempts=attempts))

    def time_out_invoke(self, invoke_id: str) -> None:
        """Records that invoke ``invoke_id``'s timeout ran out: its children
        without an end end as ``TimedOut``, for this and every later run."""
        self.expired_invokes.add(invoke_id)

    def invoke_ready(self, invoke_id: str) -> bool:
        """Whether the job parked at invoke ``invoke_id`` would be woken:
        every child started has ended, or its timeout ran out."""
        invoke = self.invokes.get(invoke_id)
        if invoke is None:
            return False
        if invoke_id in self.expired_invokes:
            return True
        if invoke.deadline_ms is not None and invoke.deadline_ms <= int(time.time() * 1000):
            return True
        ends = self.child_ends.get(invoke_id, {})
        return all(i in ends for i in invoke.started)

    def _end_child(self, invoke_id: str, index: int, end: ChildEnd) -> None:
        ends = self.child_ends.setdefault(invoke_id, {})
        if index in ends:
            raise ValueError(f"child {index} of invoke `{invoke_id}` has ended already")
        ends[index] = end

    def _resolve(self, wait_id: str, outcome: Optional[str]) -> None:
        if wait_id in self.wait_results:
            raise ValueError(f"wait `{wait_id}` has an outcome already")
        self.wait_results[wait_id] = outcome

    def _one_job_only(self, call: str) -> None:
        """In a batch run, what the host does for a call that belongs to one
        job (``step-lookup``, ...): the batch fails as a whole, with a reason
        naming the first such call (logged at error level), and the call is
        answered ``invalid``. Outside a batch, nothing."""
        if not self.batch:
            return
        reason = (
            f"`{call}` is not available in a batch run: a batch has no durable state of its own "
            "(steps, sleeps, waits, children and starts belong to one job); bind the queue "
            "without `batch` to use it"
        )
        if self.batch_failure is None:
            self.logs.append(("error", reason))
            self.batch_failure = reason
        raise _host.HostFailure("invalid", reason)

    def _batch_stop(self, call: str) -> None:
        """As :meth:`_one_job_only`, for a call that may stop the guest
        (``sleep-until``, ``enqueue``, ``retry-after``, ...): in a batch
        run, the guest is stopped there (:class:`_host.Ended`, ``fatal``,
        with the batch's failure reason)."""
        try:
            self._one_job_only(call)
        except _host.HostFailure:
            raise _host.Ended("fatal", self.batch_failure or call) from None

    def _maybe_fail(self, call: str) -> None:
        if call in self.failures:
            kind, detail = self.failures[call]
            raise _host.HostFailure(kind, detail)

    def report_progress_percent(self, percent: int) -> None:
        self.progress.append(percent)

    def report_progress_json(self, text: str) -> None:
        self.progress.append(json.loads(text))

    def log(self, level: str, message: str) -> None:
        self.logs.append((level, message))

    def step_lookup(self, step_id: str) -> Optional[str]:
        self._one_job_only("step-lookup")
        self._maybe_fail("step_lookup")
        return self.steps.get(step_id)

    def step_record(self, step_id: str, output: str) -> None:
        self._one_job_only("step-record")
        self._maybe_fail("step_record")
        json.loads(output)  # the host refuses output that is not JSON
        if step_id not in self.steps:
            self.step_order.append(step_id)
        self.steps[step_id] = output

    def sleep_until(self, step_id: str, wake_at_ms: int) -> None:
        self._batch_stop("sleep-until")
        self._maybe_fail("sleep_until")
        if step_id not in self.sleeps:
            self.sleeps[step_id] = wake_at_ms  # the first recorded wake-up wins
        if step_id in self.woken or time.time() * 1000 >= self.sleeps[step_id]:
            return
        raise _host.Suspend(step_id, self.sleeps[step_id])

    def wait_for_event(
        self,
        step_id: str,
        event: str,
        match: Optional[Tuple[str, str]],
        timeout_ms: int,
    ) -> Optional[str]:
        self._batch_stop("wait-for-event")
        self.wait_calls.append(("wait_for_event", step_id, event, match, timeout_ms))
        self._maybe_fail("wait_for_event")
        size = len(event.encode())
        if not 1 <= size <= _MAX_EVENT_NAME_BYTES:
            raise _host.HostFailure(
                "invalid", f"an event name is 1 to {_MAX_EVENT_NAME_BYTES} bytes; this one is {size}"
            )
        if match is not None:
            path, value = match
            if not _MATCH_PATH.fullmatch(path):
                raise _host.HostFailure(
                    "invalid",
                    f"match path `{path}`: `{path}` is not a path like `$.customerId`: `$` then "
                    "1 to 16 `.name` segments of letters, digits, `_` or `-`",
                )
            try:
                json.loads(value)
            except ValueError as e:
                raise _host.HostFailure("invalid", f"the match value is not JSON text: {e}") from None
        return self._wait(step_id, FakeWait("event", timeout_ms, 0, event, match))

    def wait_token(self, step_id: str) -> str:
        self._one_job_only("wait-token")
        self.wait_calls.append(("wait_token", step_id))
        self._maybe_fail("wait_token")
        self._check_wait_id(step_id)
        return self._token(step_id)

    def wait_for_token(self, step_id: str, timeout_ms: int) -> Optional[str]:
        self._batch_stop("wait-for-token")
        self.wait_calls.append(("wait_for_token", step_id, timeout_ms))
        self._maybe_fail("wait_for_token")
        self._check_wait_id(step_id)
        self._token(step_id)
        return self._wait(step_id, FakeWait("token", timeout_ms, 0))

    def _token(self, step_id: str) -> str:
        if step_id not in self.tokens:
            self.tokens[step_id] = "wt_" + hashlib.sha256(step_id.encode()).hexdigest()
        return self.tokens[step_id]

    @staticmethod
    def _check_wait_id(step_id: str) -> None:
        if not step_id:
            raise _host.HostFailure("invalid", "wait id must not be empty")

    def _wait(self, step_id: str, wait: FakeWait) -> Optional[str]:
        """Like the host: the recorded outcome, or a timeout past the
        deadline, or a park until it (the first run that gets here records
        the wait and its deadline)."""
        self._check_wait_id(step_id)
        if wait.timeout_ms > _MAX_WAIT_MS:
            raise _host.HostFailure(
                "invalid",
                f"a durable wait may last at most a year ({_MAX_WAIT_MS} ms); "
                f"this one asked for {wait.timeout_ms} ms",
            )
        now = int(time.time() * 1000)
        if step_id not in self.waits:
            wait.deadline_ms = now + wait.timeout_ms
            self.waits[step_id] = wait
        if step_id in self.wait_results:
            return self.wait_results[step_id]
        deadline = self.waits[step_id].deadline_ms
        if deadline <= now:
            self.wait_results[step_id] = None
            return None
        raise _host.Suspend(step_id, deadline, kind="wait")

    # -- starting work ------------------------------------------------------

    def _refuse(self, reason: str) -> "NoReturn":
        message = f"refused: {reason}"
        self.logs.append(("error", message))
        raise _host.Ended("fatal", message)

    def _allowed(self, kind: str, name: str) -> bool:
        if self.starts is None:
            return True
        return any(_wildmatch(p, name) for p in self.starts.get(kind, []))

    def _check_queue(self, queue: str) -> None:
        if not self._allowed("queues", queue):
            self._refuse(f"queue `{queue}` is not in the `starts.queues` of queue `{self.queue}`'s binding")

    @staticmethod
    def _check_step_id(step_id: str) -> None:
        if not step_id:
            raise _host.HostFailure("invalid", "step id must not be empty")

    @staticmethod
    def _parse_job(job: _host.NewJobArgs) -> Tuple[str, str, Any, Optional[Dict[str, Any]]]:
        queue, name, data, options = job
        if not queue or not name:
            raise _host.HostFailure("invalid", "a job needs a queue and a name")
        try:
            decoded = json.loads(data)
        except ValueError as e:
            raise _host.HostFailure("invalid", f"the job's data is not JSON: {e}") from None
        parsed = None
        if options is not None:
            try:
                parsed = json.loads(options)
            except ValueError as e:
                raise _host.HostFailure("invalid", f"the job's options are not JSON: {e}") from None
            if not isinstance(parsed, dict):
                raise _host.HostFailure("invalid", "the job's options are not a JSON object")
        return queue, name, decoded, parsed

    def _add(self, job: FakeJob) -> None:
        if not any(j.queue == job.queue and j.id == job.id for j in self.jobs):
            self.jobs.append(job)

    def enqueue(self, step_id: str, job: _host.NewJobArgs) -> Tuple[str, str]:
        self._batch_stop("enqueue")
        self._maybe_fail("enqueue")
        self._check_step_id(step_id)
        queue, name, data, options = self._parse_job(job)
        recorded = self.step_lookup(step_id)
        if recorded is not None:
            ref = json.loads(recorded)
            if isinstance(ref, list) and len(ref) == 2:
                return (ref[0], ref[1])
        self._check_queue(queue)
        added = FakeJob(queue, name, data, options, _derived_id(step_id, 0), step_id)
        self._add(added)
        self.step_record(step_id, to_json([added.queue, added.id]))
        return (added.queue, added.id)

    def invoke(
        self,
        step_id: str,
        jobs: List[_host.NewJobArgs],
        max_running: Optional[int],
        timeout_ms: Optional[int],
    ) -> List[Tuple[Any, ...]]:
        self._batch_stop("invoke")
        self._maybe_fail("invoke")
        self._check_step_id(step_id)
        if len(jobs) > _MAX_INVOKE_JOBS:
            raise _host.HostFailure(
                "invalid", f"an invoke starts at most {_MAX_INVOKE_JOBS} jobs; this one asked for {len(jobs)}"
            )
        if max_running == 0:
            raise _host.HostFailure("invalid", "max-running must be at least 1")
        if timeout_ms is not None and timeout_ms > _MAX_WAIT_MS:
            raise _host.HostFailure("invalid", f"an invoke may wait at most a year ({_MAX_WAIT_MS} ms)")
        if not jobs:
            return []
        parsed = [self._parse_job(job) for job in jobs]
        now = int(time.time() * 1000)
        invoke = self.invokes.get(step_id)
        if invoke is None:
            children = [
                FakeJob(q, n, d, o, _derived_id(step_id, i), step_id, i, invoked=True)
                for i, (q, n, d, o) in enumerate(parsed)
            ]
            deadline = None if timeout_ms is None else now + timeout_ms
            invoke = FakeInvoke(children, max_running, timeout_ms, deadline)
            self.invokes[step_id] = invoke
        ends = self.child_ends.setdefault(step_id, {})
        pending = [i for i in range(len(invoke.children)) if i not in ends]
        if pending and (
            step_id in self.expired_invokes
            or (invoke.deadline_ms is not None and invoke.deadline_ms <= now)
        ):
            for i in pending:
                ends[i] = TimedOut()
            pending = []
        if not pending:
            return [_end_args(ends[i]) for i in range(len(invoke.children))]
        # The next group: the first children without an end (the job is
        # woken only once every started child has ended).
        group = pending[:max_running] if max_running is not None else pending
        for i in group:
            self._check_queue(invoke.children[i].queue)
        for i in group:
            if i in invoke.started:
                continue
            child = invoke.children[i]
            invoke.started.append(i)
            self._add(child)
            if self.answer_child is not None:
                answer = self.answer_child(child)
                if answer is not None and i not in ends:
                    ends[i] = _as_end(answer)
        raise _host.Suspend(step_id, invoke.deadline_ms if invoke.deadline_ms is not None else _U64_MAX,
                            kind="invoke")

    def send_event_step(self, step_id: str, name: str, data: str) -> str:
        self._batch_stop("send-event")
        self._maybe_fail("send_event")
        self._check_step_id(step_id)
        try:
            decoded = json.loads(data)
        except ValueError as e:
            raise _host.HostFailure("invalid", f"the event's data is not JSON: {e}") from None
        recorded = self.step_lookup(step_id)
        if recorded is not None:
            got = json.loads(recorded)
            if isinstance(got, str):
                return got
        if not self._allowed("events", name):
            self._refuse(f"event `{name}` is not in the `starts.events` of queue `{self.queue}`'s binding")
        size = len(name.encode())
        if not 1 <= size <= _MAX_EVENT_NAME_BYTES:
            raise _host.HostFailure(
                "invalid", f"an event name is 1 to {_MAX_EVENT_NAME_BYTES} bytes; this one is {size}"
            )
        event_id = "e-" + hashlib.sha256(f"{step_id}".encode()).hexdigest()[:40]
        self.sent_events.append({"name": name, "data": decoded, "id": event_id})
        self.step_record(step_id, to_json(event_id))
        return event_id

    def retry_after(self, delay_ms: int, reason: str) -> None:
        self._batch_stop("retry-after")
        delay_ms = min(delay_ms, _MAX_LATER_MS)
        self.retry_afters.append((delay_ms, reason))
        if len(self.retry_afters) > _MAX_RETRY_AFTERS:
            raise _host.Ended(
                "retry",
                f"asked to retry after {delay_ms} ms more than {_MAX_RETRY_AFTERS} times: {reason}",
            )
        self.logs.append(("info", f"retry after {delay_ms} ms: {reason}"))
        raise _host.Ended("retry_after", reason, delay_ms)

    def rate_limit(self, duration_ms: int, reason: str) -> None:
        self._batch_stop("rate-limit")
        duration_ms = min(duration_ms, _MAX_LATER_MS)
        self.rate_limits.append((duration_ms, reason))
        self.logs.append(("info", f"rate limit for {duration_ms} ms: {reason}"))
        raise _host.Ended("rate_limit", reason, duration_ms)

    def children_results(self) -> List[Tuple[str, str, str, str]]:
        self._one_job_only("children-results")
        self._maybe_fail("children_results")
        return list(self.children)

    def kv_get(self, key: str) -> Optional[str]:
        self._maybe_fail("kv_get")
        return self.kv.get(key)

    def kv_set(self, key: str, value: str, ttl_ms: Optional[int]) -> None:
        self._maybe_fail("kv_set")
        self.kv[key] = value
        self.kv_ttls[key] = ttl_ms

    def kv_set_if_absent(self, key: str, value: str, ttl_ms: Optional[int]) -> bool:
        self._maybe_fail("kv_set_if_absent")
        if key in self.kv:
            return False
        self.kv_set(key, value, ttl_ms)
        return True

    def kv_delete(self, key: str) -> bool:
        self._maybe_fail("kv_delete")
        self.kv_ttls.pop(key, None)
        return self.kv.pop(key, None) is not None

    def config_get(self, key: str) -> Optional[str]:
        return self.config.get(key)

    def config_keys(self) -> List[str]:
        return sorted(self.config)

    def secret(self, name: str) -> str:
        self._maybe_fail("secret")
        if name not in self.secrets and name not in self.revealable:
            raise _host.HostFailure("invalid", f"no secret `{name}` is set for this queue")
        return f"airlock-secret:{name}"

    def reveal_secret(self, name: str) -> str:
        self._maybe_fail("reveal_secret")
        if name not in self.revealable:
            raise _host.HostFailure("invalid", f"secret `{name}` is not set with reveal")
        return self.revealable[name]

    def http_send(
        self,
        method: str,
        scheme: str,
        authority: str,
        path_with_query: str,
        headers: List[Tuple[str, bytes]],
        body: bytes,
        timeout_ns: Optional[int],
    ) -> Tuple[int, List[Tuple[str, bytes]], bytes]:
        request = FakeRequest(
            method,
            f"{scheme}://{authority}{path_with_query}",
            [(n, v.decode()) for n, v in headers],
            body,
            timeout_ns,
        )
        self.requests.append(request)
        if scheme not in ("http", "https"):
            # As the host does, whatever the egress rules say.
            reason = f"the scheme `{scheme}:` is not http or https; only HTTP requests leave the sandbox"
            reply: HttpReply = HttpRefusal("scheme", f"{scheme}:", reason)
        elif self.http is None:
            reason = f"{_destination(request.url)} is not in this queue's egress list"
            reply = HttpRefusal("egress-rule", request.url, reason)
        else:
            reply = self.http(request)
        if isinstance(reply, HttpRefusal):
            self.refuse(reply.url, reply.kind, reply.reason)
            raise error_from_code(_REFUSAL_CODES[reply.kind])
        if isinstance(reply, HttpError):
            raise reply
        status, reply_headers, reply_body = reply
        if isinstance(reply_body, str):
            content = reply_body.encode()
        elif isinstance(reply_body, bytes):
            content = reply_body
        else:
            content = json.dumps(reply_body).encode()
        return status, [(n, v.encode()) for n, v in reply_headers.items()], content

    def http_refusals(self) -> List[Tuple[int, str, str, str]]:
        return list(self.http_refusal_log)

    def job_error(self, kind: str, message: str) -> BaseException:
        return RuntimeError(f"{kind}: {message}")

    def batch_outcome(self, kind: str, text: str) -> Any:
        return (kind, text)


@dataclass
class Outcome:
    """How a :func:`run` ended.

    ``status`` is ``"completed"`` (``value`` is the decoded return value,
    ``output`` its JSON text), ``"retry"`` or ``"fatal"`` (``message``),
    ``"suspended"`` (``wake_at_ms``) at a sleep when sleeps are not skipped,
    at a wait without an outcome or at an invoke whose started children
    have not all ended (``wait_id`` is its record key, ``wake_at_ms`` its
    deadline; 2**64 - 1 for an invoke without one), or ``"retry_after"`` /
    ``"rate_limit"`` when the job asked to run again later (``delay_ms``,
    ``message`` the reason).
    """

    status: str
    value: Any = None
    output: Optional[str] = None
    message: Optional[str] = None
    wake_at_ms: Optional[int] = None
    wait_id: Optional[str] = None
    delay_ms: Optional[int] = None
    runs: int = 1
    host: FakeHost = field(default_factory=FakeHost)

    @property
    def logs(self) -> List[Tuple[str, str]]:
        return self.host.logs

    @property
    def progress(self) -> List[Any]:
        return self.host.progress


def run(
    fn: Callable[..., Any],
    data: Any = None,
    *,
    host: Optional[FakeHost] = None,
    raw_data: Optional[str] = None,
    attempt: int = 1,
    max_attempts: int = 1,
    skip_sleeps: bool = True,
    skip_waits: bool = False,
    parent: Optional[JobRef] = None,
    max_runs: int = 100,
    name: str = "test",
    queue: str = "test",
) -> Outcome:
    """Runs handler ``fn`` on ``data`` (any JSON value; or ``raw_data``, the
    JSON text) against ``host`` (a fresh :class:`FakeHost` by default), as
    a job named ``name`` of ``queue``.

    A sleep is skipped (``skip_sleeps``). A wait without an outcome ends the
    run ``"suspended"``, or with ``skip_waits=True`` times out at once (as
    if its deadline had passed) and the job runs again. An invoke runs the
    job again once every child it started has ended (or its timeout ran
    out), and otherwise ends the run ``"suspended"``. A retry-after or a
    rate limit ends it (``"retry_after"``, ``"rate_limit"``): call ``run``
    again with the same host for the job's next run.

    A ``@batch_handler`` function runs as its component's ``run`` export
    runs it: a batch of one, outside batch mode (a queue bound without
    ``batch``: steps, sleeps and waits work). :func:`run_batch` runs a
    batch."""
    batch_spec = getattr(fn, "_airlock_batch", None)
    spec = None if isinstance(batch_spec, BatchSpec) else spec_of(fn)
    host = host or FakeHost()
    text = raw_data if raw_data is not None else json.dumps(data, separators=(",", ":"))
    now = int(time.time() * 1000)
    job = JobInfo(
        id=f"test-{now}",
        queue=queue,
        name=name,
        attempt=attempt,
        max_attempts=max(attempt, max_attempts),
        enqueued_at_ms=now,
        started_at_ms=now,
        parent=parent,
    )
    host.queue = queue
    previous = _host.install(host)
    try:
        for runs in range(1, max_runs + 1):
            if runs > 1:
                host.http_refusal_log.clear()  # a new run: the host counts its refusals afresh
            try:
                if spec is not None:
                    kind, result = execute(spec, job, text)
                else:
                    kind, result = execute_one(batch_spec, job, text)
            except _host.Ended as e:
                if e.kind in ("retry_after", "rate_limit"):
                    return Outcome(e.kind, message=e.message, delay_ms=e.delay_ms, runs=runs, host=host)
                return Outcome(e.kind, message=e.message, runs=runs, host=host)
            except _host.Suspend as s:
                if s.kind == "invoke":
                    if host.invoke_ready(s.step_id):
                        continue
                    return Outcome(
                        "suspended", wake_at_ms=s.wake_at_ms, wait_id=s.step_id, runs=runs, host=host
                    )
                if s.kind == "wait":
                    if not skip_waits:
                        return Outcome(
                            "suspended", wake_at_ms=s.wake_at_ms, wait_id=s.step_id, runs=runs, host=host
                        )
                    host.time_out_wait(s.step_id)
                    continue
                if not skip_sleeps:
                    return Outcome("suspended", wake_at_ms=s.wake_at_ms, runs=runs, host=host)
                host.woken.add(s.step_id)
                continue
            return _ended(kind, result, host, runs)
        raise RuntimeError(f"the job was still sleeping, waiting or invoking after {max_runs} runs")
    finally:
        _host.install(previous)


def _ended(kind: str, text: str, host: FakeHost, runs: int = 1) -> Outcome:
    """The :class:`Outcome` of a job the handler ended: ``("ok", JSON
    text)`` completed, ``("retry" | "fatal", message)`` failed."""
    if kind == "ok":
        return Outcome("completed", value=json.loads(text), output=text, runs=runs, host=host)
    return Outcome(kind, message=text, runs=runs, host=host)


def run_batch(
    fn: Callable[..., Any],
    data: Sequence[Any] = (),
    *,
    host: Optional[FakeHost] = None,
    raw_data: Optional[Sequence[str]] = None,
    attempt: int = 1,
    max_attempts: int = 1,
    name: str = "test",
    queue: str = "test",
) -> List[Outcome]:
    """Runs batch handler ``fn`` (a ``@batch_handler`` function, or one it
    could decorate) on a batch of jobs named ``name`` of ``queue``, one per
    item of ``data`` (any JSON values; or ``raw_data``, their JSON texts),
    as the host's ``run-batch`` call does: against ``host`` (a fresh
    :class:`FakeHost` by default) in batch mode (``host.batch``; see
    :class:`FakeHost`), once. One :class:`Outcome` per job, in order:
    ``"completed"``, ``"retry"`` or ``"fatal"``, each with the same
    ``host``, whose logs and progress are the batch's. A call that belongs
    to one job (a step, a sleep, a wait, a start, a retry-after, a rate
    limit) fails every job as fatal with the host's reason, whatever the
    handler returned."""
    spec = batch_spec_of(fn)
    host = host or FakeHost()
    texts = list(raw_data) if raw_data is not None else [json.dumps(d, separators=(",", ":")) for d in data]
    now = int(time.time() * 1000)
    jobs = [
        (
            JobInfo(
                id=f"test-{now}-{i}",
                queue=queue,
                name=name,
                attempt=attempt,
                max_attempts=max(attempt, max_attempts),
                enqueued_at_ms=now,
                started_at_ms=now,
            ),
            text,
        )
        for i, text in enumerate(texts, 1)
    ]
    host.queue = queue
    was_batch = host.batch
    host.batch = True
    host.batch_failure = None
    previous = _host.install(host)
    try:
        try:
            ends = execute_batch(spec, jobs)
        except _host.Ended as e:  # a one-job call stopped the batch
            ends = [(e.kind, e.message)] * len(jobs)
        if host.batch_failure is not None:
            ends = [("fatal", host.batch_failure)] * len(jobs)
    finally:
        host.batch = was_batch
        _host.install(previous)
    return [_ended(kind, text, host) for kind, text in ends]
