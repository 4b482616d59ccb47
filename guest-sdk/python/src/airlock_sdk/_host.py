"""The seam between the SDK and the host.

Everything the SDK asks of Airlock goes through one :class:`Host` object
with plain-Python arguments and results. Inside a component that is
:class:`airlock_sdk._bindings.WitHost`, a thin adapter over the bindings
componentize-py generates at build time (``wit_world``); under plain CPython
there are no bindings, and tests install a fake
(:class:`airlock_sdk.testing.FakeHost`) with :func:`install`.
"""

from __future__ import annotations

from typing import List, Optional, Protocol, Tuple

__all__ = ["Host", "HostFailure", "Suspend", "current", "install"]

Headers = List[Tuple[str, bytes]]


class HostFailure(Exception):
    """A host call answered with the contract's ``host-error``; the SDK turns
    it into :class:`airlock_sdk.HostError` naming the call."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail


class Suspend(BaseException):
    """Raised by a fake host's ``sleep_until`` (``kind="sleep"``) or durable
    waits (``kind="wait"``; ``wake_at_ms`` is the wait's deadline) to stop
    the run the way the real host does (the real call never returns: the
    instance is stopped). A ``BaseException`` so that handler code's
    ``except Exception`` cannot swallow it."""

    def __init__(self, step_id: str, wake_at_ms: int, kind: str = "sleep") -> None:
        what = "waiting" if kind == "wait" else "suspended"
        super().__init__(f"{what} at `{step_id}` until {wake_at_ms}")
        self.step_id = step_id
        self.wake_at_ms = wake_at_ms
        self.kind = kind


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
