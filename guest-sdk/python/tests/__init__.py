"""Unit tests of the SDK's pure parts, under plain CPython with the host
faked (``airlock_sdk.testing.FakeHost``): ``python3 -m unittest`` from
``guest-sdk/python``."""

import sys
from pathlib import Path

_src = str(Path(__file__).resolve().parents[1] / "src")
if _src not in sys.path:
    sys.path.insert(0, _src)
