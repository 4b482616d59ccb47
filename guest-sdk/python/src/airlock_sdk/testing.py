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
it completes or fails. This module is not part of a built component.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

from . import _host
from ._runtime import execute, spec_of
from .context import JobInfo, JobRef
from .errors import HttpError

__all__ = ["FakeHost", "FakeRequest", "Outcome", "run"]


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


HttpReply = Union[Tuple[int, Dict[str, str], Union[bytes, str, Any]], HttpError]
HttpHandler = Callable[[FakeRequest], HttpReply]


class FakeHost:
    """An in-memory :class:`airlock_sdk._host.Host`, like ``airlock run``'s.

    ``failures`` maps a host call name (``"kv_get"``, ``"step_record"``, ...)
    to ``(kind, detail)`` so that call fails with that ``host-error``.
    ``http`` answers requests: ``(status, headers, body)`` (a body that is
    not bytes or str is sent as JSON) or an :class:`HttpError` to raise;
    without it every request is refused as by a binding with no egress.
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
        if self.http is None:
            raise HttpError(
                "denied",
                "not allowed by this queue's egress rules or past the job's request cap "
                "(the job's log says which)",
            )
        reply = self.http(request)
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

    def job_error(self, kind: str, message: str) -> BaseException:
        return RuntimeError(f"{kind}: {message}")


@dataclass
class Outcome:
    """How a :func:`run` ended.

    ``status`` is ``"completed"`` (``value`` is the decoded return value,
    ``output`` its JSON text), ``"retry"`` or ``"fatal"`` (``message``), or
    ``"suspended"`` when sleeps are not skipped (``wake_at_ms``).
    """

    status: str
    value: Any = None
    output: Optional[str] = None
    message: Optional[str] = None
    wake_at_ms: Optional[int] = None
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
    parent: Optional[JobRef] = None,
    max_runs: int = 100,
) -> Outcome:
    """Runs handler ``fn`` on ``data`` (any JSON value; or ``raw_data``, the
    JSON text) against ``host`` (a fresh :class:`FakeHost` by default)."""
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
            try:
                kind, result = execute(spec, job, text)
            except _host.Suspend as s:
                if not skip_sleeps:
                    return Outcome("suspended", wake_at_ms=s.wake_at_ms, runs=runs, host=host)
                host.woken.add(s.step_id)
                continue
            if kind == "ok":
                return Outcome("completed", value=json.loads(result), output=result, runs=runs, host=host)
            return Outcome(kind, message=result, runs=runs, host=host)
        raise RuntimeError(f"the job was still sleeping after {max_runs} runs")
    finally:
        _host.install(previous)
