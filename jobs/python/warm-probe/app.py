"""Test probe for warm instances (the Python twin of ``jobs/warm-probe`` and
``jobs/js/warm-probe``): it keeps, in a module-level list, every job this
instance ran (id and ``tag``) and reports what it kept before the current
job. On a fresh instance per job it always sees nothing; on a warm instance
it sees the earlier jobs of that instance.

Data: ``{"tag": str, "mode"?: "grow" | "retry" | "keep-ctx"}``; the result
is ``{"seen": [{"id", "tag"}, ...], "count": <jobs this instance ran before>}``.

- ``grow``: also keeps 1 MiB more in a global every job, so an instance that
  keeps running jobs reaches its memory cap;
- ``retry``: records the job, then fails it as retryable;
- ``keep-ctx``: keeps this job's ctx in a global.

In every job, a ctx an earlier job kept is tried (``ctx.log.info``), and
``staleCtx`` says what happened: ``"threw: <message>"`` (what the SDK does)
or ``"worked"``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional

from airlock_sdk import Context, RetryError, handler


@dataclass
class Probe:
    tag: str
    mode: Optional[str] = None


seen: List[Dict[str, str]] = []
hoard: List[bytearray] = []
kept_ctx: Optional[Context] = None


@handler
def run(data: Probe, ctx: Context) -> Dict[str, Any]:
    global kept_ctx
    output: Dict[str, Any] = {"seen": list(seen), "count": len(seen)}
    if kept_ctx is not None:
        try:
            kept_ctx.log.info("stale")
            output["staleCtx"] = "worked"
        except Exception as e:
            output["staleCtx"] = f"threw: {e}"
    seen.append({"id": ctx.job.id, "tag": data.tag})
    if data.mode == "grow":
        hoard.append(bytearray(b"\x07") * (1 << 20))
    elif data.mode == "retry":
        raise RetryError("warm-probe: asked to fail")
    elif data.mode == "keep-ctx":
        kept_ctx = ctx
    return output
