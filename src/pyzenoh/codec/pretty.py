"""Readable one-line renderings of decoded messages, for the CLI and logs."""

from __future__ import annotations

import dataclasses
from enum import Enum
from typing import Any

from pyzenoh.codec.primitives import Encoding, Timestamp, WireExpr, ZenohId

_PAYLOAD_PREVIEW = 24


def _value(v: Any) -> str:
    if isinstance(v, bytes):
        if len(v) > _PAYLOAD_PREVIEW:
            return f"{v[:_PAYLOAD_PREVIEW]!r}...({len(v)} B)"
        return repr(v)
    if isinstance(v, WireExpr | ZenohId | Encoding):
        return repr(str(v))
    if isinstance(v, Timestamp):
        return f"ts({v.to_seconds():.6f}@{v.id})"
    if isinstance(v, Enum):
        return v.name
    if isinstance(v, tuple):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return render(v)
    return repr(v)


def render(msg: Any) -> str:
    """``Name(field=value, ...)`` showing only fields that differ from their defaults."""
    parts = []
    for f in dataclasses.fields(msg):
        if not f.repr:
            continue
        value = getattr(msg, f.name)
        if f.default is not dataclasses.MISSING and value == f.default:
            continue
        if f.default_factory is not dataclasses.MISSING and value == f.default_factory():
            continue
        parts.append(f"{f.name}={_value(value)}")
    return f"{type(msg).__name__}({', '.join(parts)})"
