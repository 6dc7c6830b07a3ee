"""Timestamp-stack instrumentation (zenoh 1.10's unstable ``timestamp_instrumentation``).

A message sent with a :class:`TimestampInstrumentation` carries the network extension
``ts_stack`` (PUSH, REQUEST and RESPONSE extension 0x7): its interception points (Send,
Route, Receive) and the records collected along the path, each an HLC timestamp (or the
bytes of the sender's ``timestamp_callback``). Wire layout, as zenoh's codec::

    conf_flags: u8 (bit 0 Send, 1 Route, 2 Receive) | count: zint | count x record
    record: flags: u8 (point bits, bit 7 custom) | timestamp: zbytes

pyzenoh adds the Send record to what it sends and the Receive record to the queries and
replies it receives (a reply carries on the stack of its query, as zenoh does); a router
adds Route. Samples received by subscribers do not carry their stack yet.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Self

from pyzenoh.codec.primitives import Reader, WhatAmI, ZenohId, write_vle, write_zbytes
from pyzenoh.codec.primitives import Timestamp as WireTimestamp
from pyzenoh.errors import DecodeError, UsageError
from pyzenoh.session.types import Timestamp
from pyzenoh.session.types.stack import (
    InterceptionPoint,
    TimestampContext,
    TimestampInstrumentation,
    TimestampStack,
    TimestampStackRecord,
)

__all__ = [
    "InterceptionPoint",
    "TimestampContext",
    "TimestampInstrumentation",
    "TimestampInstrumentationBuilder",
    "TimestampStack",
    "TimestampStackRecord",
]

#: zenoh's bound on the number of records of one stack
MAX_STACK_SIZE = 255
IS_CUSTOM_TS = 0x80


class TimestampInstrumentationBuilder:
    """``TimestampInstrumentationBuilder().set_send(True).set_receive(True).build()``."""

    __slots__ = ("_flags",)

    def __init__(self) -> None:
        self._flags = 0

    def _set(self, point: InterceptionPoint, enabled: bool) -> Self:
        self._flags = self._flags | point.value if enabled else self._flags & ~point.value
        return self

    def set_send(self, enabled: bool) -> Self:
        return self._set(InterceptionPoint.SEND, enabled)

    def set_route(self, enabled: bool) -> Self:
        return self._set(InterceptionPoint.ROUTE, enabled)

    def set_receive(self, enabled: bool) -> Self:
        return self._set(InterceptionPoint.RECEIVE, enabled)

    def build(self) -> TimestampInstrumentation:
        """The instrumentation; UsageError (a ZError) when no point is enabled."""
        return TimestampInstrumentation(self._flags)


# --- the wire extension ---------------------------------------------------------------------


TimestampCallback = Callable[[TimestampContext], bytes]


def record_bytes(zid: ZenohId, now_ns: int, callback: TimestampCallback | None, whatami: WhatAmI) -> tuple[bytes, bool]:
    """(timestamp bytes, custom) for a record taken now by node ``zid``."""
    if callback is not None:
        custom = callback(TimestampContext(zid, whatami))
        if not isinstance(custom, bytes | bytearray):
            raise UsageError(f"a timestamp_callback must return bytes, not {type(custom).__name__}")
        return bytes(custom), True
    out = bytearray()
    WireTimestamp.from_ns(now_ns, zid).write(out)
    return bytes(out), False


def parse(raw: bytes) -> tuple[int, list[tuple[int, bytes]]]:
    """(conf_flags, [(record flags, timestamp bytes)]) of an extension's body."""
    r = Reader(raw)
    flags = r.u8()
    if flags == 0:
        raise DecodeError("timestamp stack with no interception point")
    count = r.vle(MAX_STACK_SIZE)
    records = []
    for _ in range(count):
        rflags = r.u8()
        records.append((rflags, r.zbytes()))
    return flags, records


def encode(conf_flags: int, records: list[tuple[int, bytes]]) -> bytes:
    out = bytearray((conf_flags,))
    write_vle(out, len(records))
    for rflags, ts in records:
        out.append(rflags)
        write_zbytes(out, ts)
    return bytes(out)


def push_record(
    raw: bytes | None,
    point: InterceptionPoint,
    zid: ZenohId,
    now_ns: int,
    callback: TimestampCallback | None,
    whatami: WhatAmI,
) -> bytes | None:
    """The extension ``raw`` with one more record at ``point`` when that point is
    instrumented (unchanged otherwise, and None stays None)."""
    if raw is None:
        return None
    try:
        flags, records = parse(raw)
    except DecodeError:
        return raw
    if not flags & point.value or len(records) >= MAX_STACK_SIZE:
        return raw
    ts, custom = record_bytes(zid, now_ns, callback, whatami)
    if not ts:
        return raw
    records.append((point.value | (IS_CUSTOM_TS if custom else 0), ts))
    return encode(flags, records)


def start(
    instrumentation: TimestampInstrumentation | None,
    zid: ZenohId,
    now_ns: int,
    callback: TimestampCallback | None,
    whatami: WhatAmI,
) -> bytes | None:
    """The extension a sender attaches: empty stack, then its own Send record."""
    if instrumentation is None:
        return None
    if not isinstance(instrumentation, TimestampInstrumentation):
        raise UsageError(f"timestamp_instrumentation must be a TimestampInstrumentation, not {instrumentation!r}")
    return push_record(encode(instrumentation.conf_flags, []), InterceptionPoint.SEND, zid, now_ns, callback, whatami)


def to_stack(raw: bytes | None) -> TimestampStack | None:
    """The user-facing stack of a received extension (malformed records are skipped,
    as zenoh does; a malformed extension gives None)."""
    if raw is None:
        return None
    try:
        flags, records = parse(raw)
    except DecodeError:
        return None
    out: list[TimestampStackRecord] = []
    for rflags, ts in records:
        try:
            point = InterceptionPoint(rflags & 0x07)
        except ValueError:
            continue
        if rflags & IS_CUSTOM_TS:
            out.append(TimestampStackRecord(point, ts))
            continue
        try:
            wire = WireTimestamp.read(Reader(ts))
        except DecodeError:
            continue
        out.append(TimestampStackRecord(point, Timestamp.from_wire(wire)))
    return TimestampStack(TimestampInstrumentation(flags), out)
