"""Outbound HTTP from a handler: a small blocking, requests-like client over
``wasi:http/outgoing-handler``.

Requests go only where the queue binding's ``egress`` list (within the
operator's) allows; anything else fails with ``HttpError(kind="denied")`` and
the reason is in the job's log. Put a secret's placeholder
(``ctx.secret(name)``) in a header and the host sends the value instead, to
the secret's own destinations only. Redirects are returned, not followed.

>>> r = ctx.http.post(f"{ledger}/v1/ledger", json={"amount": 5},
...                   headers={"idempotency-key": tx_id}, timeout=10)
>>> r.raise_for_status().json()["id"]
"""

from __future__ import annotations

import json as _json
from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple, Union
from urllib.parse import urlencode, urlsplit

from . import _host
from .durations import Duration, duration_ms
from .errors import HttpError

__all__ = ["Http", "Response", "Headers", "error_from_code", "error_from_stream_text", "split_url"]

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


def split_url(url: str, params: Optional[Mapping[str, Any]] = None) -> Tuple[str, str, str]:
    """``(scheme, authority, path_with_query)`` of an ``http(s)://`` URL;
    raises ``HttpError(kind="invalid")``."""
    try:
        parts = urlsplit(url)
    except ValueError as e:
        raise HttpError("invalid", f"url `{url}`: {e}") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise HttpError("invalid", f"url `{url}`: only http:// and https:// URLs")
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
    whole :class:`Response`; failures raise :class:`HttpError`."""

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
    ) -> Response:
        """Sends ``method`` to ``url``.

        ``json`` sends a JSON body (and ``content-type: application/json``),
        ``data`` raw bytes, text or a form (a mapping, url-encoded);
        ``bearer`` adds ``authorization: Bearer <token>`` (pass a secret's
        placeholder); ``timeout`` (seconds, ``timedelta`` or ``"10s"``)
        bounds connecting, the first response byte and each gap between
        body bytes (the job's ``httpTimeoutMs`` and deadline cap it anyway).
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
        status, response_headers, content = _host.current().http_send(
            method.upper(), scheme, authority, path, encoded, body, timeout_ns
        )
        return Response(status, response_headers, content, url)

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
