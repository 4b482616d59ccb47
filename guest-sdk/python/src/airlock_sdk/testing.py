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
host. This module is not part of a built component.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple, Union
from urllib.parse import urlsplit

from . import _host
from ._runtime import execute, spec_of
from .codec import to_json
from .context import Event, JobInfo, JobRef
from .errors import HttpError, HttpRefusal
from .http import _without_query, error_from_code

__all__ = ["FakeHost", "FakeRequest", "FakeWait", "Outcome", "run"]

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

    def _resolve(self, wait_id: str, outcome: Optional[str]) -> None:
        if wait_id in self.wait_results:
            raise ValueError(f"wait `{wait_id}` has an outcome already")
        self.wait_results[wait_id] = outcome

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
        self._maybe_fail("step_lookup")
        return self.steps.get(step_id)

    def step_record(self, step_id: str, output: str) -> None:
        self._maybe_fail("step_record")
        json.loads(output)  # the host refuses output that is not JSON
        if step_id not in self.steps:
            self.step_order.append(step_id)
        self.steps[step_id] = output

    def sleep_until(self, step_id: str, wake_at_ms: int) -> None:
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
        self.wait_calls.append(("wait_token", step_id))
        self._maybe_fail("wait_token")
        self._check_wait_id(step_id)
        return self._token(step_id)

    def wait_for_token(self, step_id: str, timeout_ms: int) -> Optional[str]:
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

    def children_results(self) -> List[Tuple[str, str, str, str]]:
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


@dataclass
class Outcome:
    """How a :func:`run` ended.

    ``status`` is ``"completed"`` (``value`` is the decoded return value,
    ``output`` its JSON text), ``"retry"`` or ``"fatal"`` (``message``), or
    ``"suspended"`` (``wake_at_ms``) at a sleep when sleeps are not skipped
    or at a wait without an outcome (``wait_id`` is its record key,
    ``wake_at_ms`` its deadline).
    """

    status: str
    value: Any = None
    output: Optional[str] = None
    message: Optional[str] = None
    wake_at_ms: Optional[int] = None
    wait_id: Optional[str] = None
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
) -> Outcome:
    """Runs handler ``fn`` on ``data`` (any JSON value; or ``raw_data``, the
    JSON text) against ``host`` (a fresh :class:`FakeHost` by default).

    A sleep is skipped (``skip_sleeps``). A wait without an outcome ends the
    run ``"suspended"``, or with ``skip_waits=True`` times out at once (as
    if its deadline had passed) and the job runs again."""
    spec = spec_of(fn)
    host = host or FakeHost()
    text = raw_data if raw_data is not None else json.dumps(data, separators=(",", ":"))
    now = int(time.time() * 1000)
    job = JobInfo(
        id=f"test-{now}",
        queue="test",
        name="test",
        attempt=attempt,
        max_attempts=max(attempt, max_attempts),
        enqueued_at_ms=now,
        started_at_ms=now,
        parent=parent,
    )
    previous = _host.install(host)
    try:
        for runs in range(1, max_runs + 1):
            if runs > 1:
                host.http_refusal_log.clear()  # a new run: the host counts its refusals afresh
            try:
                kind, result = execute(spec, job, text)
            except _host.Suspend as s:
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
            if kind == "ok":
                return Outcome("completed", value=json.loads(result), output=result, runs=runs, host=host)
            return Outcome(kind, message=result, runs=runs, host=host)
        raise RuntimeError(f"the job was still sleeping or waiting after {max_runs} runs")
    finally:
        _host.install(previous)
