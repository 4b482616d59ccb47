"""JSON in and out: typed decoding of job data, encoding of results.

Job data is decoded into the type the handler's first parameter is
annotated with. Supported: ``Any``/``dict``/no annotation (the JSON value as
is), ``str``, ``int``, ``float`` (an integer is accepted), ``bool``,
``None``, ``Optional[...]``/unions, ``Literal[...]``, ``list[T]``,
``tuple[T, ...]``, ``dict[str, T]``, enums, ``TypedDict`` classes and
dataclasses (nested freely). A dataclass field ``transaction_id`` is read
from the key ``transaction_id`` or, failing that, ``transactionId``; give
``field(metadata={"json": "txId"})`` for any other key. Keys the type does
not name are ignored (dataclasses) or kept as they are (TypedDicts).

A value that does not fit raises :class:`DecodeError`, which names the
place: ``invalid job data at field `amount`: invalid type: string "x",
expected a number`` — the same shape as the Rust SDK's message.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import enum
import json
import math
import sys
import types
import typing
from typing import Any, Dict, List, Optional, Tuple, Union

from .errors import FatalError

__all__ = [
    "DecodeError",
    "decode",
    "decode_value",
    "event_payload",
    "to_json",
    "validate_type",
    "json_name",
]

_UNION_TYPES: Tuple[Any, ...] = (Union,)
if hasattr(types, "UnionType"):
    _UNION_TYPES = (Union, types.UnionType)

_ANY_TYPES = (Any, object)


class DecodeError(ValueError):
    """A JSON value does not fit a type. ``path`` is where (``""`` for the
    value itself), ``reason`` why."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"at field `{path}`: {reason}" if path else reason)

    def describe(self, subject: str = "invalid job data") -> str:
        if self.path:
            return f"{subject} at field `{self.path}`: {self.reason}"
        return f"{subject}: {self.reason}"


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean `{'true' if value else 'false'}`"
    if isinstance(value, int):
        return f"integer `{value}`"
    if isinstance(value, float):
        return f"floating point `{value!r}`"
    if isinstance(value, str):
        return "string " + json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _expected(tp: Any) -> str:
    if tp is str:
        return "a string"
    if tp is bool:
        return "a boolean"
    if tp is int:
        return "an integer"
    if tp is float:
        return "a number"
    if tp is type(None) or tp is None:
        return "null"
    origin = typing.get_origin(tp)
    if tp is list or origin in (list, tuple) or tp is tuple:
        return "an array"
    if tp is dict or origin is dict:
        return "an object"
    if origin is typing.Literal:
        return "one of " + ", ".join(json.dumps(a, ensure_ascii=False) for a in typing.get_args(tp))
    if origin in _UNION_TYPES:
        return " or ".join(_expected(a) for a in typing.get_args(tp))
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return "one of " + ", ".join(json.dumps(m.value, ensure_ascii=False) for m in tp)
    if dataclasses.is_dataclass(tp) or _is_typeddict(tp):
        return f"an object ({tp.__name__})"
    return getattr(tp, "__name__", str(tp))


def _mismatch(path: str, value: Any, tp: Any) -> DecodeError:
    return DecodeError(path, f"invalid type: {_describe(value)}, expected {_expected(tp)}")


def _is_typeddict(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, dict) and hasattr(tp, "__total__")


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def json_name(field: dataclasses.Field) -> Optional[str]:  # type: ignore[type-arg]
    """The JSON key a dataclass field was given (``metadata={"json": ...}``)."""
    alias = field.metadata.get("json") if field.metadata else None
    return alias if isinstance(alias, str) else None


_HINTS: Dict[Any, Dict[str, Any]] = {}


def _hints(tp: Any) -> Dict[str, Any]:
    # Cached: the handler's types are resolved once, while the component is
    # built (the decorator validates them), and the cache is in the snapshot.
    hints = _HINTS.get(tp)
    if hints is None:
        module = sys.modules.get(getattr(tp, "__module__", ""), None)
        hints = typing.get_type_hints(tp, globalns=vars(module) if module else None)
        _HINTS[tp] = hints
    return hints


def decode_value(value: Any, tp: Any, path: str = "") -> Any:
    """Decodes the JSON value ``value`` (as :func:`json.loads` gives it) into
    ``tp``; raises :class:`DecodeError`."""
    if tp in _ANY_TYPES:
        return value
    if tp is type(None) or tp is None:
        if value is None:
            return None
        raise _mismatch(path, value, type(None))
    if tp is str:
        if isinstance(value, str):
            return value
        raise _mismatch(path, value, tp)
    if tp is bool:
        if isinstance(value, bool):
            return value
        raise _mismatch(path, value, tp)
    if tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            return int(value)
        raise _mismatch(path, value, tp)
    if tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        raise _mismatch(path, value, tp)
    if tp is list:
        if isinstance(value, list):
            return value
        raise _mismatch(path, value, tp)
    if tp is dict:
        if isinstance(value, dict):
            return value
        raise _mismatch(path, value, tp)

    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in _UNION_TYPES:
        if value is None and type(None) in args:
            return None
        candidates = [a for a in args if a is not type(None)]
        if len(candidates) == 1:
            return decode_value(value, candidates[0], path)
        for candidate in candidates:
            try:
                return decode_value(value, candidate, path)
            except DecodeError:
                continue
        raise _mismatch(path, value, tp)
    if origin is typing.Literal:
        for allowed in args:
            if value == allowed and type(value) is type(allowed):
                return value
        raise DecodeError(
            path, f"invalid value: {_describe(value)}, expected {_expected(tp)}"
        )
    if origin in (list, List, typing.Sequence, collections.abc.Sequence):
        if not isinstance(value, list):
            raise _mismatch(path, value, list)
        (item,) = args or (Any,)
        return [decode_value(v, item, f"{path}[{i}]") for i, v in enumerate(value)]
    if origin is tuple:
        if not isinstance(value, list):
            raise _mismatch(path, value, tuple)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(decode_value(v, args[0], f"{path}[{i}]") for i, v in enumerate(value))
        if len(value) != len(args):
            raise DecodeError(
                path, f"invalid length {len(value)}, expected an array of {len(args)}"
            )
        return tuple(decode_value(v, a, f"{path}[{i}]") for i, (v, a) in enumerate(zip(value, args)))
    if origin in (dict, Dict, typing.Mapping, collections.abc.Mapping):
        if not isinstance(value, dict):
            raise _mismatch(path, value, dict)
        item = args[1] if len(args) == 2 else Any
        return {k: decode_value(v, item, _join(path, k)) for k, v in value.items()}

    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        for member in tp:
            if member.value == value and type(member.value) is type(value):
                return member
        raise DecodeError(path, f"invalid value: {_describe(value)}, expected {_expected(tp)}")
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return _decode_dataclass(value, tp, path)
    if _is_typeddict(tp):
        return _decode_typeddict(value, tp, path)
    raise TypeError(f"airlock_sdk cannot decode JSON into {tp!r}")


def _decode_dataclass(value: Any, tp: type, path: str) -> Any:
    if not isinstance(value, dict):
        raise _mismatch(path, value, tp)
    hints = _hints(tp)
    kwargs: Dict[str, Any] = {}
    for field in dataclasses.fields(tp):
        if not field.init:
            continue
        alias = json_name(field)
        keys = [alias] if alias else [field.name, _camel(field.name)]
        key = next((k for k in keys if k in value), None)
        if key is None:
            if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
                shown = alias or _camel(field.name)
                raise DecodeError(path, f"missing field `{shown}`")
            continue
        kwargs[field.name] = decode_value(value[key], hints.get(field.name, Any), _join(path, key))
    return tp(**kwargs)


def _decode_typeddict(value: Any, tp: type, path: str) -> Any:
    if not isinstance(value, dict):
        raise _mismatch(path, value, tp)
    hints = _hints(tp)
    required = getattr(tp, "__required_keys__", frozenset(hints))
    out = dict(value)
    for key, hint in hints.items():
        if key in value:
            out[key] = decode_value(value[key], hint, _join(path, key))
        elif key in required:
            raise DecodeError(path, f"missing field `{key}`")
    return out


def validate_type(tp: Any, seen: Optional[set] = None) -> None:
    """Raises :class:`TypeError` for an annotation :func:`decode_value`
    cannot decode into — at build time, when the decorator runs."""
    seen = set() if seen is None else seen
    if tp in _ANY_TYPES or tp in (str, int, float, bool, list, dict, tuple, type(None), None):
        return
    origin = typing.get_origin(tp)
    if origin is typing.Literal:
        return
    if origin is not None:
        for arg in typing.get_args(tp):
            if arg is not Ellipsis:
                validate_type(arg, seen)
        return
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return
    if (dataclasses.is_dataclass(tp) and isinstance(tp, type)) or _is_typeddict(tp):
        if tp in seen:
            return
        seen.add(tp)
        for hint in _hints(tp).values():
            validate_type(hint, seen)
        return
    raise TypeError(
        f"airlock_sdk cannot decode job data into {tp!r}: annotate with a dataclass, a "
        "TypedDict, dict, list, str, int, float, bool, Optional/Union/Literal of those, or Any"
    )


def decode(value: Any, tp: Any) -> Any:
    """Decodes a JSON value into ``tp`` the way job data is decoded: a
    mismatch is a :class:`FatalError` naming the field. For handlers that
    take ``dict``/``Any`` and decide themselves what shape they got
    (``decode(event_payload(data), Email)``)."""
    try:
        return decode_value(value, tp)
    except DecodeError as e:
        raise FatalError(e.describe()) from None


def event_payload(value: Any) -> Any:
    """The payload of an Airlock event (``POST /v1/events`` delivers jobs
    whose data is ``{name, data, id, ts}``), or the value itself when it is
    not an event: lets one handler serve both direct jobs and event
    subscriptions."""
    if (
        isinstance(value, dict)
        and isinstance(value.get("name"), str)
        and isinstance(value.get("id"), str)
        and isinstance(value.get("ts"), int)
        and not isinstance(value.get("ts"), bool)
        and value["ts"] >= 0
        and "data" in value
    ):
        return value["data"]
    return value


def _default(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {
            (json_name(f) or f.name): getattr(obj, f.name) for f in dataclasses.fields(obj)
        }
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, tuple):
        return list(obj)
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


def to_json(value: Any) -> str:
    """Compact JSON text of ``value`` (dataclasses as objects under their
    field names or ``metadata["json"]``, enums as their values, ``None`` as
    ``null``). Raises :class:`TypeError`/:class:`ValueError` for what JSON
    cannot hold (sets, bytes, NaN, ...)."""
    return json.dumps(
        value,
        default=_default,
        ensure_ascii=False,
        separators=(",", ":"),
        allow_nan=False,
    )
