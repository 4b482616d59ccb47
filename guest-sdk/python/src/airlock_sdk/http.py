"""Outbound HTTP from a handler: a small blocking, requests-like client over
``wasi:http/outgoing-handler``.

Requests go only where the queue binding's ``egress`` list (within the
operator's) allows, within the run's HTTP limits. A request the host
refuses or cuts off fails, through ``ctx.http``, with a :class:`FatalError`
carrying the host's reason (``HTTP request refused: api.example.com:443 is
not in this queue's egress list``; see :class:`Refusals`). Put a secret's placeholder
(``ctx.secret(name)``) in a header and the host sends the value instead, to
the secret's own destinations only. Redirects are returned, not followed.
A rate-limited API's 429 can end the run to run again after its
``Retry-After`` (``retry_on_429=True``, or ``raise retry_after_from(r)``).

>>> r = ctx.http.post(f"{ledger}/v1/ledger", json={"amount": 5},
...                   headers={"idempotency-key": tx_id}, timeout=10)
>>> r.raise_for_status().json()["id"]
"""

from __future__ import annotations

import json as _json
import re
import time
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Tuple, Union
from urllib.parse import urlencode, urlsplit

from . import _host
from .durations import Duration, duration_ms
from .errors import FatalError, HttpError, HttpRefusal, RetryAfterError

__all__ = [
    "Http",
    "Response",
    "Headers",
    "Refusals",
    "error_from_code",
    "error_from_stream_text",
    "refusal_error",
    "split_url",
    "parse_retry_after",
    "retry_after_from",
]

HeaderInput = Union[Mapping[str, str], List[Tuple[str, str]], None]


def error_from_code(name: str, value: Any = None) -> HttpError:
    """The :class:`HttpError` for a ``wasi:http`` ``error-code`` case
    (``"HttpRequestDenied"``, ``"ConnectionRefused"``, ...), worded as the
    Rust SDK words it."""
    if name == "HttpRequestDenied":
        return HttpError(
            "denied",
            "not allowed by this queue's egress rules or past the job's request cap "
            "(the job's log says which)",
        )
    if name == "DestinationIpProhibited":
        return HttpError(
            "denied",
            "the destination resolves to an address this host refuses "
            "(private, loopback, link-local)",
        )
    if name in ("HttpRequestBodySize", "HttpResponseBodySize"):
        which = "request" if name == "HttpRequestBodySize" else "response"
        limit = f" of {value} bytes" if isinstance(value, int) else ""
        return HttpError("limit", f"{which} body larger than the job's limit{limit}")
    if value is None:
        return HttpError("transport", f"ErrorCode::{name}")
    return HttpError("transport", f"ErrorCode::{name}({value!r})")


def error_from_stream_text(what: str, debug_text: str) -> HttpError:
    """A body stream failed with a plain I/O error: wasmtime-wasi-http 48
    reports body errors as the error code's message (and a backtrace); the
    first line is kept."""
    first = debug_text.splitlines()[0] if debug_text else ""
    if "body size exceeds limit" in first:
        return HttpError("limit", f"{what}: {first}")
    return HttpError("transport", f"{what}: {first}")


_DEFAULT_PORTS = {"http": 80, "https": 443}


def _without_query(url: str) -> str:
    """``scheme://host[:port]/path`` of ``url`` (what the host records),
    with the scheme and host lowercased and a default port dropped, so the
    request's URL and the host's compare equal."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return url.split("?", 1)[0].split("#", 1)[0]
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    if port is not None and port != _DEFAULT_PORTS.get(scheme):
        host = f"{host}:{port}"
    return f"{scheme}://{host}{parts.path or '/'}"


#: The delay of a 429 whose ``Retry-After`` is missing or does not parse.
RETRY_AFTER_DEFAULT_MS = 1_000
#: The longest delay a ``Retry-After`` gives (the host's cap on ``retry-after``).
RETRY_AFTER_MAX_MS = 24 * 60 * 60 * 1_000

_MONTHS = {m: i for i, m in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1)}
_TIME = r"(\d{1,2}):(\d{2}):(\d{2})"
# The three forms of an HTTP date (RFC 9110, 5.6.7): IMF-fixdate
# `Sun, 06 Nov 1994 08:49:37 GMT`, RFC 850 `Sunday, 06-Nov-94 08:49:37 GMT`
# and asctime `Sun Nov  6 08:49:37 1994`.
_IMF_DATE = re.compile(r"[a-z]{3},\s+(\d{1,2})\s+([a-z]{3})\s+(\d{4})\s+" + _TIME + r"\s+(?:gmt|utc|ut|z)", re.I)
_RFC850_DATE = re.compile(r"[a-z]+,\s+(\d{1,2})-([a-z]{3})-(\d{2})\s+" + _TIME + r"\s+gmt", re.I)
_ASCTIME_DATE = re.compile(r"[a-z]{3}\s+([a-z]{3})\s+(\d{1,2})\s+" + _TIME + r"\s+(\d{4})", re.I)
_SECONDS = re.compile(r"\d+(?:\.\d+)?")


def _http_date_ms(text: str) -> Optional[int]:
    """An HTTP date as milliseconds since the Unix epoch; ``None`` when it
    is not one."""
    if match := _IMF_DATE.fullmatch(text):
        day, month, year, hh, mm, ss = match.groups()
    elif match := _RFC850_DATE.fullmatch(text):
        day, month, yy, hh, mm, ss = match.groups()
        year = str(2000 + int(yy) if int(yy) < 70 else 1900 + int(yy))
    elif match := _ASCTIME_DATE.fullmatch(text):
        month, day, hh, mm, ss, year = match.groups()
    else:
        return None
    number = _MONTHS.get(month.lower())
    if number is None:
        return None
    try:
        at = datetime(int(year), number, int(day), int(hh), int(mm), int(ss), tzinfo=timezone.utc)
    except ValueError:  # 31 Feb, 25:00:00, ...
        return None
    return int(at.timestamp() * 1000)


def _retry_after_ms(value: Optional[str], now_ms: Optional[int]) -> Optional[int]:
    if value is None:
        return None
    text = value.strip()
    if _SECONDS.fullmatch(text):
        ms = int(round(float(text) * 1000))
    else:
        at = _http_date_ms(text)
        if at is None:
            return None
        ms = at - (int(time.time() * 1000) if now_ms is None else now_ms)
    return min(max(ms, 0), RETRY_AFTER_MAX_MS)


def parse_retry_after(
    value: Optional[str],
    *,
    now_ms: Optional[int] = None,
    default_ms: int = RETRY_AFTER_DEFAULT_MS,
) -> int:
    """The delay a ``Retry-After`` header value asks for, in milliseconds:
    seconds (``"120"``; a fraction is accepted) or an HTTP date (``"Wed, 21
    Oct 2015 07:28:00 GMT"``, also the RFC 850 and asctime forms) counted
    from ``now_ms`` (the clock by default; a date past is 0). Clamped to a
    day; ``default_ms`` (1 s) when the value is missing or does not parse."""
    ms = _retry_after_ms(value, now_ms)
    return min(max(default_ms, 0), RETRY_AFTER_MAX_MS) if ms is None else ms


def retry_after_from(response: "Response", *, now_ms: Optional[int] = None) -> RetryAfterError:
    """The :class:`RetryAfterError` for ``response``: its ``Retry-After``
    delay (see :func:`parse_retry_after`: 1 s when missing or unparsable,
    a day at most), its status and URL (without query) as the reason.
    Raise it — ``raise retry_after_from(r)`` — to end the run and run the
    job again after that delay, using up no attempt (what
    ``retry_on_429=True`` does for a 429)."""
    header = response.headers.get("retry-after")
    ms = _retry_after_ms(header, now_ms)
    if ms is not None:
        said = f"Retry-After: {header.strip()}"  # type: ignore[union-attr]
    elif header is None or not header.strip():
        said = "no Retry-After"
    else:
        said = f"Retry-After {header.strip()!r} does not parse"
    where = f" from {_without_query(response.url)}" if response.url else ""
    delay = timedelta(milliseconds=RETRY_AFTER_DEFAULT_MS if ms is None else ms)
    return RetryAfterError(f"HTTP {response.status}{where} ({said})", delay)


class Refusals:
    """The refusals of one job's run that ``ctx.http`` has turned into
    errors.

    The host refuses a request (the binding's egress list, the operator's,
    the address check, the scheme, ``maxHttpRequests``) or cuts it off (a
    size or time cap) with a ``wasi:http`` error code, which the SDK reads
    as an :class:`HttpError`; its ``http-refusals`` list says why. After a
    request fails, :meth:`take` looks there for a refusal newer than the
    last one used. The host numbers a run's refusals from 1 (``seq``) and
    keeps the newest 32; this remembers the highest ``seq`` used, so a
    refusal becomes at most one error and a later failure is not blamed on
    it. One per :class:`~airlock_sdk.Context`: a warm instance's next job
    counts from none again."""

    def __init__(self, host: Callable[[], "_host.Host"]) -> None:
        self._host_of = host
        self._used = 0

    def take(self, url: str) -> Optional[HttpRefusal]:
        """The refusal behind a request to ``url`` that has just failed, or
        ``None`` when the host recorded none since the last one taken. Among
        the new ones: the newest for ``url`` (compared without query), else
        the newest (a redirect's refused hop has another URL). It and every
        older one count as used."""
        try:
            entries = self._host_of().http_refusals()
        except Exception:  # the job has ended: its host refuses every call
            return None
        fresh = [entry for entry in entries if entry[0] > self._used]
        if not fresh:
            return None
        wanted = _without_query(url)
        for_url = [entry for entry in fresh if _without_query(entry[1]) == wanted]
        seq, refused_url, kind, reason = max(for_url or fresh, key=lambda entry: entry[0])
        self._used = max(self._used, seq)
        return HttpRefusal(kind, refused_url, reason)  # type: ignore[arg-type]


def refusal_error(refusal: HttpRefusal) -> FatalError:
    """The error a refused request fails with: ``HTTP request refused: <the
    host's reason>``, the refusal on its :attr:`~FatalError.refusal`."""
    error = FatalError(f"HTTP request refused: {refusal.reason}")
    error.refusal = refusal
    return error


def split_url(url: str, params: Optional[Mapping[str, Any]] = None) -> Tuple[str, str, str]:
    """``(scheme, authority, path_with_query)`` of an absolute URL; raises
    ``HttpError(kind="invalid")``. A scheme other than ``http`` or
    ``https`` passes: the host refuses it, and says so in the job's log and
    its refusals."""
    try:
        parts = urlsplit(url)
    except ValueError as e:
        raise HttpError("invalid", f"url `{url}`: {e}") from None
    scheme = parts.scheme.lower()
    if not scheme:
        raise HttpError("invalid", f"url `{url}`: an absolute http:// or https:// URL is needed")
    if not parts.netloc or not parts.hostname:
        raise HttpError("invalid", f"url `{url}`: no host")
    path = parts.path or "/"
    query = parts.query
    if params:
        extra = urlencode([(k, v) for k, v in params.items() if v is not None], doseq=True)
        query = f"{query}&{extra}" if query else extra
    return scheme, parts.netloc, f"{path}?{query}" if query else path


class Headers(Mapping[str, str]):
    """Response headers: a case-insensitive, read-only mapping (a repeated
    header's values joined with ``", "``); :meth:`get_all` gives each value."""

    def __init__(self, entries: List[Tuple[str, bytes]]) -> None:
        self._entries = [(name.lower(), value.decode("latin-1")) for name, value in entries]

    def __getitem__(self, name: str) -> str:
        values = self.get_all(name)
        if not values:
            raise KeyError(name)
        return ", ".join(values)

    def get_all(self, name: str) -> List[str]:
        lowered = name.lower()
        return [v for n, v in self._entries if n == lowered]

    def __iter__(self) -> Iterator[str]:
        seen: Dict[str, None] = {}
        for name, _ in self._entries:
            seen.setdefault(name, None)
        return iter(seen)

    def __len__(self) -> int:
        return len({n for n, _ in self._entries})

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and any(n == name.lower() for n, _ in self._entries)

    def __repr__(self) -> str:
        return f"Headers({dict(self)!r})"


class Response:
    """An answer: ``status``, ``headers``, ``content`` (bytes), ``text``,
    ``json()``, ``ok``, ``raise_for_status()``."""

    def __init__(self, status: int, headers: List[Tuple[str, bytes]], content: bytes, url: str = "") -> None:
        self.status: int = status
        self.headers: Headers = Headers(headers)
        self.content: bytes = content
        self.url: str = url

    @property
    def status_code(self) -> int:
        """Alias of :attr:`status` (as in requests)."""
        return self.status

    @property
    def ok(self) -> bool:
        """Whether the status is 2xx."""
        return 200 <= self.status < 300

    @property
    def text(self) -> str:
        """The body as UTF-8 text (undecodable bytes replaced)."""
        return self.content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        """The body as JSON; ``HttpError(kind="decode")`` when it is not."""
        try:
            return _json.loads(self.content)
        except ValueError as e:
            raise HttpError("decode", str(e)) from None

    def raise_for_status(self) -> "Response":
        """``self`` when the status is 2xx, else ``HttpError(kind="status")``
        carrying the start of the body (retryable for 5xx, 408 and 429)."""
        if self.ok:
            return self
        text = self.content[:512].decode("utf-8", errors="replace")
        raise HttpError("status", text, status=self.status)

    def __repr__(self) -> str:
        return f"<Response [{self.status}]>"


class Http:
    """The client: ``ctx.http``. Every method sends at once and returns the
    whole :class:`Response`; failures raise :class:`HttpError`.

    ``host`` gives the host to send through (the installed one by default;
    a :class:`~airlock_sdk.Context` passes one that refuses once its job has
    ended). With ``refusals`` (``ctx.http`` has its job's), a failed request
    the host refused or cut off raises :class:`FatalError` ``HTTP request
    refused: <the host's reason>`` instead of its :class:`HttpError`; an
    ``Http()`` made without keeps the :class:`HttpError`."""

    def __init__(
        self,
        host: Optional[Callable[[], "_host.Host"]] = None,
        refusals: Optional[Refusals] = None,
    ) -> None:
        self._host_of = host if host is not None else _host.current
        self._refusals = refusals

    def request(
        self,
        method: str,
        url: str,
        *,
        params: Optional[Mapping[str, Any]] = None,
        headers: HeaderInput = None,
        json: Any = None,
        data: Union[bytes, str, Mapping[str, Any], None] = None,
        bearer: Optional[str] = None,
        timeout: Optional[Duration] = None,
        retry_on_429: bool = False,
    ) -> Response:
        """Sends ``method`` to ``url``.

        ``json`` sends a JSON body (and ``content-type: application/json``),
        ``data`` raw bytes, text or a form (a mapping, url-encoded);
        ``bearer`` adds ``authorization: Bearer <token>`` (pass a secret's
        placeholder); ``timeout`` (seconds, ``timedelta`` or ``"10s"``)
        bounds connecting, the first response byte and each gap between
        body bytes (the job's ``httpTimeoutMs`` and deadline cap it anyway).

        ``retry_on_429=True``: a ``429 Too Many Requests`` answer raises
        :class:`RetryAfterError` (:func:`retry_after_from`) instead of
        returning, so — uncaught — the run ends and the job runs again after
        the answer's ``Retry-After`` (seconds or an HTTP date; 1 s when
        missing or unparsable, a day at most), using up no attempt.

        The whole body is read before this returns. A request the host
        refused or cut off — while sending or while reading the body —
        raises :class:`FatalError` (``HTTP request refused: <reason>``,
        :attr:`~FatalError.refusal` set, the :class:`HttpError` as its
        cause); any other failure its :class:`HttpError`.
        """
        scheme, authority, path = split_url(url, params)
        pairs: List[Tuple[str, str]] = []
        if headers is not None:
            pairs.extend(headers.items() if isinstance(headers, Mapping) else headers)
        names = {name.lower() for name, _ in pairs}
        body = b""
        if json is not None and data is not None:
            raise HttpError("invalid", "give `json` or `data`, not both")
        if json is not None:
            try:
                body = _json.dumps(json, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
            except (TypeError, ValueError) as e:
                raise HttpError("invalid", f"body: {e}") from None
            if "content-type" not in names:
                pairs.append(("content-type", "application/json"))
        elif isinstance(data, bytes):
            body = data
        elif isinstance(data, str):
            body = data.encode()
        elif data is not None:
            body = urlencode(list(data.items()), doseq=True).encode()
            if "content-type" not in names:
                pairs.append(("content-type", "application/x-www-form-urlencoded"))
        if bearer is not None:
            pairs.append(("authorization", f"Bearer {bearer}"))
        encoded: List[Tuple[str, bytes]] = []
        for name, value in pairs:
            if not isinstance(name, str) or not isinstance(value, str):
                raise HttpError("invalid", f"header `{name}`: names and values are strings")
            encoded.append((name, value.encode()))
        timeout_ns = None
        if timeout is not None:
            try:
                timeout_ns = duration_ms(timeout) * 1_000_000
            except (TypeError, ValueError) as e:
                raise HttpError("invalid", f"timeout: {e}") from None
        host = self._host_of()
        try:
            status, response_headers, content = host.http_send(
                method.upper(), scheme, authority, path, encoded, body, timeout_ns
            )
        except HttpError as e:
            refusal = None if self._refusals is None else self._refusals.take(url)
            if refusal is None:
                raise
            raise refusal_error(refusal) from e
        response = Response(status, response_headers, content, url)
        if retry_on_429 and status == 429:
            raise retry_after_from(response)
        return response

    def get(self, url: str, **kwargs: Any) -> Response:
        """A GET to ``url`` (keyword arguments as for :meth:`request`)."""
        return self.request("GET", url, **kwargs)

    def head(self, url: str, **kwargs: Any) -> Response:
        """A HEAD to ``url``."""
        return self.request("HEAD", url, **kwargs)

    def post(self, url: str, **kwargs: Any) -> Response:
        """A POST to ``url``."""
        return self.request("POST", url, **kwargs)

    def put(self, url: str, **kwargs: Any) -> Response:
        """A PUT to ``url``."""
        return self.request("PUT", url, **kwargs)

    def patch(self, url: str, **kwargs: Any) -> Response:
        """A PATCH to ``url``."""
        return self.request("PATCH", url, **kwargs)

    def delete(self, url: str, **kwargs: Any) -> Response:
        """A DELETE to ``url``."""
        return self.request("DELETE", url, **kwargs)
