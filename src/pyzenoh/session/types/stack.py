"""Timestamp-stack values (zenoh 1.10's unstable ``timestamp_instrumentation``): where a
record is taken, which points a message is instrumented at, and the stack a received
message carries. The wire extension and the builder are :mod:`pyzenoh.session.instrumentation`'s."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from typing_extensions import override

from pyzenoh.codec.primitives import WhatAmI, ZenohId
from pyzenoh.errors import UsageError
from pyzenoh.session.types.timestamp import Timestamp


class InterceptionPoint(Enum):
    """Where a record was taken; the values are the wire bits."""

    SEND = 0x01
    ROUTE = 0x02
    RECEIVE = 0x04


@dataclass(frozen=True, slots=True)
class TimestampContext:
    """What a ``timestamp_callback`` is told: the node taking the timestamp."""

    zid: ZenohId
    whatami: WhatAmI

    @override
    def __repr__(self) -> str:
        return f"TimestampContext {{ zid: {self.zid}, whatami: {self.whatami} }}"


class TimestampInstrumentation:
    """Which interception points record a timestamp (build with the builder)."""

    __slots__ = ("_flags",)

    def __init__(self, conf_flags: int) -> None:
        if not 0 < conf_flags <= 0x07:
            raise UsageError("Invalid instrumentation config: at least one point must be active")
        self._flags = conf_flags

    @property
    def conf_flags(self) -> int:
        return self._flags

    def is_instrumented(self, point: InterceptionPoint) -> bool:
        return bool(self._flags & point.value)

    @override
    def __eq__(self, other: object) -> bool:
        return isinstance(other, TimestampInstrumentation) and self._flags == other._flags

    @override
    def __hash__(self) -> int:
        return self._flags

    @override
    def __repr__(self) -> str:
        return f"TimestampInstrumentation {{ conf_flags: {self._flags} }}"


@dataclass(frozen=True, slots=True)
class TimestampStackRecord:
    """One interception record: its point and an HLC :class:`Timestamp` (or custom bytes)."""

    point: InterceptionPoint
    _value: Timestamp | bytes

    @property
    def is_custom(self) -> bool:
        return isinstance(self._value, bytes)

    def timestamp(self) -> Timestamp | bytes:
        return self._value

    @override
    def __repr__(self) -> str:
        return f"TimestampStackRecord {{ point: {self.point.name}, timestamp: {self._value!r} }}"


@dataclass(frozen=True, slots=True)
class TimestampStack:
    """A received message's instrumentation and its records, in path order."""

    instrumentation: TimestampInstrumentation
    records: list[TimestampStackRecord]

    @override
    def __repr__(self) -> str:
        return f"TimestampStack {{ instrumentation: {self.instrumentation!r}, records: {self.records!r} }}"
