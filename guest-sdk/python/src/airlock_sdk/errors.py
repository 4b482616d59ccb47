"""The exceptions a handler raises, and how every exception maps onto the
contract's `job-error` (retry or fatal).

- :class:`FatalError`: a failure no retry can fix (bad input, a refused
  payment, a request the host refused: ``HTTP request refused: <reason>``,
  with :attr:`FatalError.refusal` set); the job fails at once, whatever
  attempts are left (BullMQ's ``UnrecoverableError``).
- :class:`RetryError`: a normal failure, retried per the job's ``attempts``
  and ``backoff``.
- :class:`HostError`: a ``context``/``config`` call the host could not serve;
  retryable only when the backing store is unavailable.
- :class:`HttpError`: an outgoing request failed; transport failures and
  5xx/408/429 statuses are retryable, the rest fatal.
- :class:`InvokeError`: a job ``ctx.invoke`` started failed for good, or
  did not end in time; fatal (a :class:`FatalError`: the ends are
  recorded, so a retry would meet the same).
- :class:`RetryAfterError`: not a failure — escaping the handler, it ends
  the run with the contract's ``retry-after`` (run again after its delay,
  using up no attempt).
- Any other exception is retryable, with ``"TypeName: message"``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Optional, Tuple

from .durations import Duration, duration_ms

if TYPE_CHECKING:  # a cycle at run time: context imports this module
    from .context import Failed

__all__ = [
    "AirlockError",
    "FatalError",
    "RetryError",
    "HostError",
    "HttpError",
    "HttpRefusal",
    "InvokeError",
    "RetryAfterError",
    "HostErrorKind",
    "HttpErrorKind",
    "HttpRefusalKind",
    "job_error",
]

HostErrorKind = Literal["unsupported", "invalid", "limit-exceeded", "unavailable"]
HttpErrorKind = Literal["invalid", "denied", "limit", "transport", "status", "decode"]

HOST_ERROR_KINDS: Tuple[str, ...] = ("unsupported", "invalid", "limit-exceeded", "unavailable")
HTTP_ERROR_KINDS: Tuple[str, ...] = ("invalid", "denied", "limit", "transport", "status", "decode")

HttpRefusalKind = Literal[
    "egress-rule",
    "operator",
    "address",
    "scheme",
    "too-many-requests",
    "request-too-large",
    "response-too-large",
    "timeout",
]


@dataclass(frozen=True)
class HttpRefusal:
    """A request the host refused or cut off (the contract's
    ``http-refusal``): on :attr:`FatalError.refusal` of the error it failed
    with.

    ``kind``: ``"egress-rule"`` (not on the binding's ``egress`` list),
    ``"operator"`` (not on the operator's ``--egress-allow``), ``"address"``
    (only addresses the host refuses to reach), ``"scheme"`` (no http(s)
    destination), ``"too-many-requests"`` (``maxHttpRequests`` used up),
    ``"request-too-large"`` / ``"response-too-large"`` (a body over
    ``maxHttpRequestBytes`` / ``maxHttpResponseBytes``) or ``"timeout"``
    (no response, or no next body chunk, within ``httpTimeoutMs``).
    """

    kind: HttpRefusalKind
    #: The request's URL without its query: ``https://host[:port]/path``.
    url: str
    #: The host's reason, as in the job's log
    #: (``api.example.com:443 is not in this queue's egress list``).
    reason: str


class AirlockError(Exception):
    """Base of the SDK's exceptions: a message and whether a retry can help."""

    retryable: bool = True

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message: str = message

    def __str__(self) -> str:
        return self.message


class RetryError(AirlockError):
    """A failure worth retrying (the job's ``attempts``/``backoff`` apply)."""

    retryable = True


class FatalError(AirlockError):
    """A failure no retry can fix: the job fails at once (BullMQ
    ``UnrecoverableError``).

    ``ctx.http`` raises one for a request the host refused or cut off
    (``HTTP request refused: <the host's reason>``); :attr:`refusal` then
    says which and why, and ``__cause__`` is the :class:`HttpError` the
    request failed with."""

    retryable = False
    #: The refused request, when this error is one (else ``None``).
    refusal: Optional[HttpRefusal] = None


class HostError(AirlockError):
    """A host call (steps, sleep, KV, children, secrets) failed.

    ``kind`` is the contract's ``host-error`` case: ``"unsupported"``,
    ``"invalid"``, ``"limit-exceeded"`` or ``"unavailable"``; ``what`` names the
    call (``"kv get"``); ``detail`` is the host's text. Only ``unavailable``
    (the store is unreachable right now) is retryable. The message is the
    Rust SDK's: ``kv get: <detail>``, ``kv get refused: <detail>``, ...
    """

    def __init__(self, kind: HostErrorKind, detail: str, what: str = "host call") -> None:
        if kind not in HOST_ERROR_KINDS:
            raise ValueError(f"unknown host error kind {kind!r}")
        self.kind: HostErrorKind = kind
        self.detail: str = detail
        self.what: str = what
        self.retryable = kind == "unavailable"
        super().__init__(_host_message(kind, what, detail))


def _host_message(kind: str, what: str, detail: str) -> str:
    if kind == "unavailable":
        return f"{what}: {detail}"
    if kind == "unsupported":
        return f"{what} unsupported: {detail}"
    if kind == "invalid":
        return f"{what} refused: {detail}"
    return f"{what}: limit exceeded: {detail}"


class HttpError(AirlockError):
    """An outgoing request failed.

    ``kind``: ``"invalid"`` (a bad URL or header), ``"denied"`` (the egress
    rules or the run's request cap refused it), ``"limit"`` (a body over the
    run's limit), ``"transport"`` (DNS, connect,
    TLS, timeout, reset), ``"status"`` (:meth:`Response.raise_for_status` on a
    non-2xx answer; ``status`` and ``body`` are set) or ``"decode"`` (the
    body is not the JSON expected). Transport failures and 5xx/408/429
    statuses are retryable, everything else is fatal.

    ``ctx.http`` raises a :class:`FatalError` instead when the host recorded
    why it refused or cut off the request (denials, limits and its
    timeouts): ``HTTP request refused: <the host's reason>``.
    """

    def __init__(
        self,
        kind: HttpErrorKind,
        detail: str,
        status: Optional[int] = None,
    ) -> None:
        if kind not in HTTP_ERROR_KINDS:
            raise ValueError(f"unknown HTTP error kind {kind!r}")
        self.kind: HttpErrorKind = kind
        self.detail: str = detail
        self.status: Optional[int] = status
        self.body: Optional[str] = detail if kind == "status" else None
        if kind == "transport":
            self.retryable = True
        elif kind == "status":
            self.retryable = status is not None and (status >= 500 or status in (408, 429))
        else:
            self.retryable = False
        super().__init__(_http_message(kind, detail, status))


def _http_message(kind: str, detail: str, status: Optional[int]) -> str:
    if kind == "invalid":
        return f"invalid request: {detail}"
    if kind == "denied":
        return f"request refused by the host: {detail}"
    if kind == "limit":
        return f"HTTP limit: {detail}"
    if kind == "transport":
        return f"HTTP transport: {detail}"
    if kind == "status":
        return f"HTTP status {status}: {detail}"
    return f"response body: {detail}"


class InvokeError(FatalError):
    """Why :meth:`Context.invoke <airlock_sdk.Context.invoke>` has no value.

    ``kind`` is ``"failed"`` — the child failed for good (its retries
    used, or a fatal error); :attr:`failure` says how (``.kind``: the
    child's failure kind, ``guest_fatal``, ``guest_retry``, ``timeout``,
    ...; ``.reason``; ``.attempts``) — or ``"timed_out"``: the invoke's
    timeout ran out first (the child is left to run; :attr:`failure` is
    ``None``).

    A handler may catch it; uncaught, it fails the job fatally (it is a
    :class:`FatalError`: the child's end is recorded, so a retry would meet
    the same). The message is the Rust SDK's: ``the invoked job failed for
    good after 3 attempt(s): guest_retry: <reason>`` or ``the invoked job
    did not end in time``."""

    def __init__(self, kind: Literal["failed", "timed_out"], failure: "Optional[Failed]" = None) -> None:
        if kind not in ("failed", "timed_out"):
            raise ValueError(f"unknown invoke error kind {kind!r}")
        if kind == "failed" and failure is None:
            raise ValueError("a failed invoke needs its failure")
        self.kind: Literal["failed", "timed_out"] = kind
        #: How the child failed (``kind``, ``reason``, ``attempts``), for
        #: ``kind == "failed"``; else ``None``.
        self.failure: "Optional[Failed]" = failure if kind == "failed" else None
        if self.failure is not None:
            f = self.failure
            message = (
                f"the invoked job failed for good after {f.attempts} attempt(s): {f.kind}: {f.reason}"
            )
        else:
            message = "the invoked job did not end in time"
        super().__init__(message)

    @property
    def reason(self) -> Optional[str]:
        """The child's failure reason (``None`` for a time-out)."""
        return None if self.failure is None else self.failure.reason


class RetryAfterError(RetryError):
    """Run this job again after ``delay`` (seconds, a ``timedelta`` or a
    string like ``"30s"``): raised out of the handler — from its own code
    or from a step, which records nothing then — it ends the run with the
    contract's ``retry-after``, as :meth:`Context.retry_after
    <airlock_sdk.Context.retry_after>` does: the job waits in BullMQ's
    delayed set and runs again from the start, using up no attempt, and
    ``reason`` goes to its log. The delay is capped at a day; a job may
    ask 100 times, after which the host fails the run as an ordinary
    retryable error.

    ``ctx.http`` raises one for a 429 when asked (``retry_on_429=True``);
    :func:`airlock_sdk.retry_after_from` makes one of any response. Caught
    and not re-raised, it does nothing."""

    def __init__(self, reason: str, delay: Duration) -> None:
        if not isinstance(reason, str):
            raise TypeError(f"reason must be a str, not {type(reason).__name__}")
        #: The delay in whole milliseconds.
        self.delay_ms: int = duration_ms(delay)
        self.reason: str = reason
        super().__init__(reason)


def job_error(exc: BaseException) -> Tuple[Literal["retry", "fatal"], str]:
    """How an exception escaping the handler fails the job: ``("retry" |
    "fatal", message)``."""
    if isinstance(exc, AirlockError):
        return ("retry" if exc.retryable else "fatal", exc.message)
    text = str(exc)
    name = type(exc).__name__
    return ("retry", f"{name}: {text}" if text else name)
