"""Test probe for refused HTTP requests (the Python twin of
``jobs/js/http-refusal-probe``): it sends ``ctx.http.get(url)`` and, with
``read``, reads the body as text. It catches nothing: a request the host
refuses or cuts off fails the job with the SDK's :class:`FatalError`
(``HTTP request refused: <the host's reason>``), any other failure with its
:class:`HttpError` (retryable for transport failures).

Data: ``{"url": str, "via"?: "ctx" | "global", "read"?: bool, "body"?: str}``
(with ``body``, a POST of that text; ``via`` is
the TypeScript twin's choice of fetch; here every request goes through
``ctx.http``); the result is ``{"status": <HTTP status>, "bytes": <UTF-8
bytes of the body read as text; 0 without read>}``. ``ctx.http`` reads the
whole body before it returns either way, so a cap on the body fails the
request with or without ``read``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional

from airlock_sdk import Context, handler


@dataclass
class Probe:
    url: str
    via: Optional[str] = None
    read: bool = False
    body: Optional[str] = None


@handler
def run(data: Probe, ctx: Context) -> Dict[str, int]:
    if data.body is None:
        response = ctx.http.get(data.url)
    else:
        response = ctx.http.post(data.url, data=data.body)
    size = len(response.text.encode()) if data.read else 0
    return {"status": response.status, "bytes": size}
