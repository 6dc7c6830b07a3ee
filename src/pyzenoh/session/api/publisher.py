"""Publishers: their settings, and the fast path of a plain put.

A :class:`PublisherState` holds what a publisher precomputes at declaration: its key,
QoS and the encoded PUSH up to the payload. A put with nothing but a payload is handed to
the loop as a :class:`~pyzenoh.session.runtime.handoff.Joinable`: the puts of one
publisher that the loop finds queued one after the other are encoded and sent as one run
(``put_encoded_run``), one route decision and one queueing on the link for all of them.
"""

from __future__ import annotations

import functools
from typing import Any, Self

from pyzenoh.codec import Push, Put, WireExpr
from pyzenoh.codec.network import qos_value
from pyzenoh.codec.primitives import write_vle
from pyzenoh.errors import UsageError
from pyzenoh.keyexpr import KeyExpr
from pyzenoh.session import instrumentation as ins
from pyzenoh.session import types as t
from pyzenoh.session.api.arguments import (
    CALL_TIMEOUT_S,
    block_of,
    del_body,
    locality_of,
    prio_of,
    put_body,
)
from pyzenoh.session.api.entities import Entity, MatchingListener
from pyzenoh.session.api.operations import is_plain_put, matching_registration, publisher_send
from pyzenoh.session.core import SessionCore
from pyzenoh.session.handlers import make_sink
from pyzenoh.session.runtime import Runtime
from pyzenoh.session.runtime.handoff import Joinable


class PublisherState:
    """What a publisher precomputes: its key, QoS and the encoded PUSH prefix."""

    __slots__ = (
        "block",
        "core",
        "destination",
        "encoding",
        "express",
        "key",
        "key_expr",
        "local",
        "prefix",
        "priority",
        "reliable",
        "wire_encoding",
    )

    def __init__(
        self,
        key_expr: KeyExpr,
        encoding: t.Encoding | str | None,
        congestion_control: t.CongestionControl | None,
        priority: t.Priority | None,
        express: bool | None,
        reliability: t.Reliability | None,
        allowed_destination: t.Locality | None = None,
    ) -> None:
        self.key_expr = key_expr
        self.destination = locality_of(allowed_destination, "allowed_destination")
        self.key = str(key_expr)
        self.wire_encoding = t.to_encoding(encoding)
        self.encoding = t.Encoding.from_wire(self.wire_encoding)
        self.priority = prio_of(priority)
        self.block = block_of(congestion_control)
        self.express = bool(express)
        self.reliable = reliability is not t.Reliability.BEST_EFFORT
        self.local = 0
        self.prefix = b""
        self.core: SessionCore | None = None  # the session's, once declared

    def bind(self, local: int, expr_id: int) -> None:
        """Precompute the PUSH bytes up to the payload length, for the declared expr id."""
        self.local = local
        push = Push(
            WireExpr(expr_id, "", True),
            Put(b"", self.wire_encoding),
            qos=qos_value(self.priority, self.block, self.express),
        )
        out = bytearray()
        push.write(out)
        assert out[-1] == 0  # the empty payload's length
        self.prefix = bytes(out[:-1])

    def encode(self, payload: bytes) -> bytes:
        n = len(payload)
        if n < 0x80:
            return self.prefix + bytes((n,)) + payload
        out = bytearray(self.prefix)
        write_vle(out, n)
        out += payload
        return bytes(out)

    def put_run(self, payloads: list[bytes]) -> None:
        """In the loop: the plain puts of ``payloads`` (drained together), in order, as
        one run of PUSHes."""
        assert self.core is not None, "puts are handed over only once declared"
        self.core.put_encoded_run(
            self.key,
            [self.encode(p) for p in payloads],
            payloads,
            self.wire_encoding,
            priority=self.priority,
            block=self.block,
            express=self.express,
            reliable=self.reliable,
            destination=self.destination,
        )

    def declare(self, rt: Runtime) -> None:
        """In the loop: declare the publisher and bind the prefix."""
        core = self.core = rt.core
        local = core.declare_publisher(self.key)
        self.bind(local, core.declare_keyexpr(self.key))


class PublisherSettings:
    """What a publisher (sync or asyncio) was declared with, read from its state."""

    _state: PublisherState

    @property
    def encoding(self) -> t.Encoding:
        return self._state.encoding

    @property
    def priority(self) -> t.Priority:
        return t.Priority(self._state.priority)

    @property
    def congestion_control(self) -> t.CongestionControl:
        return t.CongestionControl.BLOCK if self._state.block else t.CongestionControl.DROP

    @property
    def reliability(self) -> t.Reliability:
        return t.Reliability.RELIABLE if self._state.reliable else t.Reliability.BEST_EFFORT


class Publisher(PublisherSettings, Entity):
    def __init__(self, rt: Runtime, state: PublisherState) -> None:
        super().__init__(rt, state.key_expr, functools.partial(rt.core.undeclare_publisher, state.local), state.local)
        self._state = state

    @property
    def matching_status(self) -> t.MatchingStatus:
        local = self._state.local
        return t.MatchingStatus(self._rt.call(lambda: self._rt.core.publisher_matching(local), CALL_TIMEOUT_S))

    def put(
        self,
        payload: Any,
        *,
        encoding: t.Encoding | str | None = None,
        attachment: Any = None,
        timestamp: t.Timestamp | None = None,
        timestamp_instrumentation: ins.TimestampInstrumentation | None = None,
        source_info: t.SourceInfo | None = None,
    ) -> None:
        rt = self._rt
        if rt.closed or self._undeclared:
            raise UsageError("the publisher is undeclared or its session closed")
        st = self._state
        if not rt.wait_room(st.block):
            return
        if is_plain_put(encoding, attachment, timestamp, timestamp_instrumentation, source_info):
            rt.submit(Joinable(st, t.to_payload(payload), st.put_run))
            return
        body = put_body(payload, encoding if encoding is not None else st.encoding, attachment, timestamp, source_info)
        rt.submit(publisher_send(rt, st, body, timestamp_instrumentation))

    def delete(
        self,
        *,
        attachment: Any = None,
        timestamp: t.Timestamp | None = None,
        timestamp_instrumentation: ins.TimestampInstrumentation | None = None,
        source_info: t.SourceInfo | None = None,
    ) -> None:
        rt = self._rt
        if rt.closed or self._undeclared:
            raise UsageError("the publisher is undeclared or its session closed")
        st = self._state
        if not rt.wait_room(st.block):
            return
        rt.submit(publisher_send(rt, st, del_body(attachment, timestamp, source_info), timestamp_instrumentation))

    def declare_matching_listener(self, handler: Any = None) -> MatchingListener[Any]:
        rt = self._rt
        sink, returned = make_sink(handler, asynchronous=False, dispatcher=rt.dispatcher)
        registration = matching_registration(rt, self._state.local, sink, querier=False)
        rt.call(registration.add, CALL_TIMEOUT_S)
        return MatchingListener(rt, self.key_expr, registration.remove, returned)

    def undeclare(self) -> None:
        self._undeclare()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.undeclare()
