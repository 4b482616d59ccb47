"""The seam between the SDK and the host.

Everything the SDK asks of Airlock goes through one :class:`Host` object
with plain-Python arguments and results. Inside a component that is
:class:`airlock_sdk._bindings.WitHost`, a thin adapter over the bindings
componentize-py generates at build time (``wit_world``); under plain CPython
there are no bindings, and tests install a fake
(:class:`airlock_sdk.testing.FakeHost`) with :func:`install`.
"""

from __future__ import annotations

from typing import Any, List, Optional, Protocol, Tuple

__all__ = ["Host", "HostFailure", "Suspend", "Ended", "current", "install"]

Headers = List[Tuple[str, bytes]]


class HostFailure(Exception):
    """A host call answered with the contract's ``host-error``; the SDK turns
    it into :class:`airlock_sdk.HostError` naming the call."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail


class Suspend(BaseException):
    """Raised by a fake host's ``sleep_until`` (``kind="sleep"``), durable
    waits (``kind="wait"``; ``wake_at_ms`` is the wait's deadline) or
    invokes (``kind="invoke"``, parked until its children have ended;
    ``wake_at_ms`` is its deadline, 2**64 - 1 without one) to stop the run
    the way the real host does (the real call never returns: the instance
    is stopped). A ``BaseException`` so that handler code's ``except
    Exception`` cannot swallow it."""

    def __init__(self, step_id: str, wake_at_ms: int, kind: str = "sleep") -> None:
        what = {"wait": "waiting", "invoke": "waiting for children"}.get(kind, "suspended")
        super().__init__(f"{what} at `{step_id}` until {wake_at_ms}")
        self.step_id = step_id
        self.wake_at_ms = wake_at_ms
        self.kind = kind


class Ended(BaseException):
    """Raised by a fake host where the real one ends the run from inside a
    call that never returns: ``retry_after`` (``kind="retry_after"``),
    ``rate_limit`` (``kind="rate_limit"``; ``delay_ms`` is the pause), a
    start the binding's ``starts`` refuses (``kind="fatal"``) or a
    ``retry_after`` past the job's 100 (``kind="retry"``). ``message`` is
    the reason (for ``fatal``/``retry``: the job's failure reason). A
    ``BaseException``, like :class:`Suspend`."""

    def __init__(self, kind: str, message: str, delay_ms: Optional[int] = None) -> None:
        super().__init__(f"{kind}: {message}" if delay_ms is None else f"{kind} {delay_ms} ms: {message}")
        self.kind = kind
        self.message = message
        self.delay_ms = delay_ms


#: A job to start, as the host takes it: ``(queue, name, data as JSON text,
#: options as JSON text or None)``.
NewJobArgs = Tuple[str, str, str, Optional[str]]


class Host(Protocol):
    """What the SDK needs from Airlock (see ``wit/airlock.wit``)."""

    def report_progress_percent(self, percent: int) -> None: ...

    def report_progress_json(self, text: str) -> None: ...

    def log(self, level: str, message: str) -> None: ...

    def step_lookup(self, step_id: str) -> Optional[str]: ...

    def step_record(self, step_id: str, output: str) -> None: ...

    def sleep_until(self, step_id: str, wake_at_ms: int) -> None: ...

    def wait_for_event(
        self,
        step_id: str,
        event: str,
        match: Optional[Tuple[str, str]],
        timeout_ms: int,
    ) -> Optional[str]:
        """``match`` is ``(path, value as JSON text)``. The event as JSON
        text (``{"name","data","id","ts"}``), ``None`` on timeout; while
        neither came, the call does not return (the job is parked)."""
        ...

    def wait_token(self, step_id: str) -> str: ...

    def wait_for_token(self, step_id: str, timeout_ms: int) -> Optional[str]:
        """The JSON text the token was completed with, ``None`` on timeout;
        while neither came, the call does not return (the job is parked)."""
        ...

    def children_results(self) -> List[Tuple[str, str, str, str]]:
        """``(queue, id, "completed" | "failed", JSON text | reason)`` per child."""
        ...

    def enqueue(self, step_id: str, job: NewJobArgs) -> Tuple[str, str]:
        """Adds ``job`` once (a step); ``(queue, id)`` of the job added
        (or recorded). A queue the binding's ``starts`` refuses ends the
        run as fatal (the call does not return)."""
        ...

    def invoke(
        self,
        step_id: str,
        jobs: List[NewJobArgs],
        max_running: Optional[int],
        timeout_ms: Optional[int],
    ) -> List[Tuple[Any, ...]]:
        """The ends of ``jobs`` in their order, once all have ended:
        ``("completed", JSON text)``, ``("failed", kind, reason,
        attempts)`` or ``("timed_out",)``; until then, the call does not
        return (the job is parked)."""
        ...

    def send_event_step(self, step_id: str, name: str, data: str) -> str:
        """The contract's ``send-event``: sends event ``name`` with ``data``
        (JSON text) once (a step); its id. (Not ``send_event``: that is
        :class:`airlock_sdk.testing.FakeHost`'s ``POST /v1/events``.)"""
        ...

    def retry_after(self, delay_ms: int, reason: str) -> None:
        """Ends the run to run again in ``delay_ms``; does not return."""
        ...

    def rate_limit(self, duration_ms: int, reason: str) -> None:
        """Ends the run, pausing the queue for ``duration_ms``; does not return."""
        ...

    def kv_get(self, key: str) -> Optional[str]: ...

    def kv_set(self, key: str, value: str, ttl_ms: Optional[int]) -> None: ...

    def kv_set_if_absent(self, key: str, value: str, ttl_ms: Optional[int]) -> bool: ...

    def kv_delete(self, key: str) -> bool: ...

    def config_get(self, key: str) -> Optional[str]: ...

    def config_keys(self) -> List[str]: ...

    def secret(self, name: str) -> str: ...

    def reveal_secret(self, name: str) -> str: ...

    def http_send(
        self,
        method: str,
        scheme: str,
        authority: str,
        path_with_query: str,
        headers: Headers,
        body: bytes,
        timeout_ns: Optional[int],
    ) -> Tuple[int, Headers, bytes]:
        """Sends one request; ``(status, headers, body)``. Raises
        :class:`airlock_sdk.HttpError`."""
        ...

    def http_refusals(self) -> List[Tuple[int, str, str, str]]:
        """The requests of this run the host refused or cut off, oldest
        first (the newest 32): ``(seq, url without query, kind, reason)``,
        ``seq`` counting from 1 per run, ``kind`` the contract's
        ``http-refusal-kind`` (``"egress-rule"``, ``"timeout"``, ...)."""
        ...

    def job_error(self, kind: str, message: str) -> BaseException:
        """The exception that makes the ``run`` export return
        ``err(job-error.<kind>(message))``."""
        ...

    def batch_outcome(self, kind: str, text: str) -> Any:
        """One job's item of the list the ``run-batch`` export returns:
        ``ok(text)`` for ``kind == "ok"``, else
        ``err(job-error.<kind>(text))``."""
        ...


_current: Optional[Host] = None


def install(host: Optional[Host]) -> Optional[Host]:
    """Makes ``host`` the one the SDK talks to; returns the previous one."""
    global _current
    previous = _current
    _current = host
    return previous


def current() -> Host:
    """The installed host: the bindings inside a component, a fake in tests."""
    if _current is None:
        raise RuntimeError(
            "airlock_sdk: no host. Inside a component the bindings are installed when "
            "airlock_sdk is imported (componentize-py builds them); in tests use "
            "airlock_sdk.testing.FakeHost / airlock_sdk.testing.run"
        )
    return _current
