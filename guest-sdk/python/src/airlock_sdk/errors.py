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
- Any other exception is retryable, with ``"TypeName: message"``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Optional, Tuple

__all__ = [
    "AirlockError",
    "FatalError",
    "RetryError",
    "HostError",
    "HttpError",
    "HttpRefusal",
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


def job_error(exc: BaseException) -> Tuple[Literal["retry", "fatal"], str]:
    """How an exception escaping the handler fails the job: ``("retry" |
    "fatal", message)``."""
    if isinstance(exc, AirlockError):
        return ("retry" if exc.retryable else "fatal", exc.message)
    text = str(exc)
    name = type(exc).__name__
    return ("retry", f"{name}: {text}" if text else name)
