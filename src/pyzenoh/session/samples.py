"""The samples a session makes of the data it receives (or publishes to itself).

:func:`wire_sample` makes the :class:`~pyzenoh.session.types.Sample` of one PUT or DEL
(a PUSH's, a reply's) with the QoS of its message.

:func:`run_samples` makes those of a run of PUSHes in one pass. A router forwards a
publisher's stream in FRAMEs of hundreds of PUSHes on one key
(:class:`~pyzenoh.dataplane.PushRun`). Their samples share everything but the
payload and the timestamp's time, so each is a small :class:`RunSample`: a
:class:`~pyzenoh.session.types.Sample` whose shared fields live once in a
:class:`RunShape` and whose payload and timestamp objects are made when read. A sample
built this way keeps its FRAME's bytes alive (at most one batch, 64 KiB) while it lives.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from typing_extensions import override

from pyzenoh import codec as _p
from pyzenoh.codec.network import qos_value
from pyzenoh.dataplane import PushRun
from pyzenoh.session import types as t

#: Wire priority -> Priority
PRIORITIES = {p.value: p for p in t.Priority}
_QOS_CC = {False: t.CongestionControl.DROP, True: t.CongestionControl.BLOCK}


# --- One message's sample -------------------------------------------------------------------


def qos_fields(qos: int) -> tuple[t.CongestionControl, t.Priority, bool]:
    prio = PRIORITIES.get(qos & 0x07, t.Priority.DATA)
    cc = t.CongestionControl.BLOCK if qos & 0x08 else t.CongestionControl.DROP
    return cc, prio, bool(qos & 0x10)


def wire_sample(ke: t.KeyExpr, body: _p.Put | _p.Del, qos: int) -> t.Sample:
    cc, prio, express = qos_fields(qos)
    ts = None if body.timestamp is None else t.Timestamp.from_wire(body.timestamp)
    att = None if body.attachment is None else t.ZBytes(body.attachment)
    info = None if body.source_info is None else t.SourceInfo.from_wire(body.source_info)
    if type(body) is _p.Put:
        return t.Sample(
            ke,
            t.ZBytes(body.payload),
            t.SampleKind.PUT,
            t.Encoding.from_wire(body.encoding),
            ts,
            cc,
            prio,
            express,
            att,
            info,
        )
    return t.Sample(
        ke,
        t.ZBytes(b""),
        t.SampleKind.DELETE,
        t.Encoding.from_wire(_p.Encoding.DEFAULT),
        ts,
        cc,
        prio,
        express,
        att,
        info,
    )


def local_sample(ke: t.KeyExpr, body: _p.Put | _p.Del, priority: int, block: bool, express: bool) -> t.Sample:
    """The sample of this session's own publication, for its own subscribers."""
    return wire_sample(ke, body, qos_value(priority, block, express))


# --- A run's samples --------------------------------------------------------------------------


class RunShape:
    """What every sample of one run shares."""

    __slots__ = ("cc", "encoding", "express", "hlc_id", "key_expr", "kind", "payloads", "priority", "times")

    def __init__(self, key_expr: t.KeyExpr, run: PushRun, priorities: dict[int, t.Priority]) -> None:
        first = run.first
        body = first.body
        qos = first.qos
        self.key_expr = key_expr
        self.kind = t.SampleKind.PUT if type(body) is _p.Put else t.SampleKind.DELETE
        wire_enc = body.encoding if type(body) is _p.Put else _p.Encoding.DEFAULT
        self.encoding = t.Encoding.from_wire(wire_enc)
        self.cc = _QOS_CC[bool(qos & 0x08)]
        self.priority = priorities.get(qos & 0x07, t.Priority.DATA)
        self.express = bool(qos & 0x10)
        self.hlc_id = None if body.timestamp is None else body.timestamp.id
        self.payloads = run.payloads()
        self.times = run.times() if run.stamped else None


class RunSample(t.Sample):
    """A sample of a run: the same fields and behaviour as any :class:`Sample`."""

    __slots__ = ("_i", "_shape")

    _shape: RunShape
    _i: int  # which message of the run

    @property
    @override
    def key_expr(self) -> t.KeyExpr:
        return self._shape.key_expr

    @property
    @override
    def payload(self) -> t.ZBytes:
        return t.ZBytes(self._shape.payloads[self._i])

    @property
    @override
    def kind(self) -> t.SampleKind:
        return self._shape.kind

    @property
    @override
    def encoding(self) -> t.Encoding:
        return self._shape.encoding

    @property
    @override
    def timestamp(self) -> t.Timestamp | None:
        shape = self._shape
        if shape.times is None or shape.hlc_id is None:
            return None
        return t.Timestamp.from_wire(_p.Timestamp(shape.times[self._i], shape.hlc_id))

    @property
    @override
    def congestion_control(self) -> t.CongestionControl:
        return self._shape.cc

    @property
    @override
    def priority(self) -> t.Priority:
        return self._shape.priority

    @property
    @override
    def express(self) -> bool:
        return self._shape.express

    @property
    @override
    def attachment(self) -> t.ZBytes | None:
        return None  # a run's messages carry no extension

    @property
    @override
    def source_info(self) -> Any:
        return None

    @property
    @override
    def timestamp_stack(self) -> Any:
        return None

    @override
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, t.Sample):
            return NotImplemented
        return _fields(self) == _fields(other)

    @override
    def __hash__(self) -> int:
        return hash(_fields(self))


def _fields(s: t.Sample) -> tuple[Any, ...]:
    """What a sample's equality and hash are made of (a Sample's dataclass fields)."""
    return (
        s.key_expr,
        s.payload,
        s.kind,
        s.encoding,
        s.timestamp,
        s.congestion_control,
        s.priority,
        s.express,
        s.attachment,
        s.source_info,
        s.timestamp_stack,
    )


_new = object.__new__
# The slots' own setters: a Sample is frozen (its __setattr__ refuses), and these are
# what its generated __init__ would reach through object.__setattr__, only faster.
_set_shape: Callable[[Any, Any], None] = vars(RunSample)["_shape"].__set__
_set_i: Callable[[Any, Any], None] = vars(RunSample)["_i"].__set__


def run_samples(key_expr: t.KeyExpr, run: PushRun, priorities: dict[int, t.Priority]) -> list[t.Sample]:
    """The samples of ``run``'s messages, in order."""
    shape = RunShape(key_expr, run, priorities)
    out: list[t.Sample] = []
    append = out.append
    for i in range(run.count):
        s = _new(RunSample)
        _set_shape(s, shape)
        _set_i(s, i)
        append(s)
    return out
