"""Scripted faces around a RoutingCore, message builders, and the captured sessions."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path

from pyzenoh.codec import (
    Declare,
    DeclareFinal,
    DeclareKeyExpr,
    DeclareQueryable,
    DeclareSubscriber,
    DeclareToken,
    Del,
    Fragment,
    Frame,
    Interest,
    InterestMode,
    InterestOptions,
    NetworkMessage,
    OpenAck,
    Push,
    Put,
    Query,
    Reply,
    Request,
    Response,
    ResponseFinal,
    Timestamp,
    UndeclareQueryable,
    UndeclareSubscriber,
    UndeclareToken,
    WhatAmI,
    WireExpr,
    ZenohId,
    decode_batch,
    decode_network_message,
    encode_network_message,
)
from pyzenoh.routing import RoutingConfig, RoutingCore, Send

SESSIONS_FILE = Path(__file__).resolve().parents[1] / "vectors" / "zenoh-sessions.json"

ROUTER_ZID = ZenohId.from_str("a1a2a3a4a5a6a7a8")
CLIENT_ZID = ZenohId.from_str("c1c2c3c4c5c6c7c8")
OTHER_ZID = ZenohId.from_str("d1d2d3d4d5d6d7d8")
#: Wall-clock seconds of the captures (the router's first timestamp, 0x6b019105 s).
CAPTURE_EPOCH = 1_795_264_773.0

K = InterestOptions.KEYEXPRS
S = InterestOptions.SUBSCRIBERS
Q = InterestOptions.QUERYABLES
T = InterestOptions.TOKENS
CURRENT = InterestMode.CURRENT
FUTURE = InterestMode.FUTURE
CF = InterestMode.CURRENT_FUTURE
FINAL = InterestMode.FINAL
NO_OPTIONS = InterestOptions(0)
QOS_DECL = 0x08
QOS_REQ = 0x0D


def we(key: str, scope: int = 0, sender: bool = True) -> WireExpr:
    return WireExpr(scope, key, sender)


def d_keyexpr(expr_id: int, key: str) -> Declare:
    return Declare(DeclareKeyExpr(expr_id, WireExpr(0, key, True)), qos=QOS_DECL)


def d_sub(ident: int, key: str | WireExpr, interest_id: int | None = None) -> Declare:
    w = key if isinstance(key, WireExpr) else we(key)
    return Declare(DeclareSubscriber(ident, w), interest_id, QOS_DECL)


def u_sub(ident: int) -> Declare:
    return Declare(UndeclareSubscriber(ident), qos=QOS_DECL)


def d_qabl(
    ident: int, key: str | WireExpr, complete: bool = False, distance: int = 0, interest_id: int | None = None
) -> Declare:
    w = key if isinstance(key, WireExpr) else we(key)
    return Declare(DeclareQueryable(ident, w, complete, distance), interest_id, QOS_DECL)


def u_qabl(ident: int) -> Declare:
    return Declare(UndeclareQueryable(ident), qos=QOS_DECL)


def d_token(ident: int, key: str | WireExpr, interest_id: int | None = None) -> Declare:
    w = key if isinstance(key, WireExpr) else we(key)
    return Declare(DeclareToken(ident, w), interest_id, QOS_DECL)


def u_token(ident: int, key: WireExpr | None = None) -> Declare:
    body = UndeclareToken(ident) if key is None else UndeclareToken(ident, key)
    return Declare(body, qos=QOS_DECL)


def d_final(interest_id: int) -> Declare:
    return Declare(DeclareFinal(), interest_id, QOS_DECL)


def interest(
    iid: int,
    mode: InterestMode,
    options: InterestOptions = NO_OPTIONS,
    key: str | WireExpr | None = None,
    aggregate: bool = False,
) -> Interest:
    w = key if isinstance(key, WireExpr) or key is None else we(key)
    return Interest(iid, mode, options, w, aggregate, QOS_DECL)


def put(key: str | WireExpr, payload: bytes = b"x", **kw: object) -> Push:
    w = key if isinstance(key, WireExpr) else we(key)
    return Push(w, Put(payload, **kw))  # type: ignore[arg-type]


def delete(key: str | WireExpr) -> Push:
    w = key if isinstance(key, WireExpr) else we(key)
    return Push(w, Del())


def request(
    rid: int,
    key: str | WireExpr,
    target: int = 0,
    timeout_ms: int | None = None,
    parameters: str = "",
    budget: int | None = None,
) -> Request:
    w = key if isinstance(key, WireExpr) else we(key)
    return Request(rid, w, Query(3, parameters), QOS_REQ, target=target, timeout_ms=timeout_ms, budget=budget)


def reply(rid: int, key: str | WireExpr, payload: bytes = b"r") -> Response:
    w = key if isinstance(key, WireExpr) else we(key)
    return Response(rid, w, Reply(Put(payload)), QOS_REQ)


def final(rid: int) -> ResponseFinal:
    return ResponseFinal(rid, QOS_REQ)


def strip_times(msg: NetworkMessage) -> NetworkMessage:
    """Zero the time of data timestamps (they depend on the clock), keep their HLC id."""
    if isinstance(msg, Push) and isinstance(msg.body, Put) and msg.body.timestamp is not None:
        ts = msg.body.timestamp
        return replace(msg, body=replace(msg.body, timestamp=Timestamp(0, ts.id)))
    return msg


def check_send(send: Send) -> None:
    """Every output must encode, and decode back to itself; ``raw`` must be its encoding."""
    data = encode_network_message(send.message)
    assert decode_network_message(data) == send.message
    if send.raw is not None:
        assert decode_network_message(send.raw) == send.message
    assert 0 <= send.priority <= 7


@dataclass
class Harness:
    """A core with a clock; records everything it sent, per face."""

    config: RoutingConfig = field(default_factory=RoutingConfig)
    now: float = CAPTURE_EPOCH
    core: RoutingCore = field(init=False)
    sent: dict[int, list[Send]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.core = RoutingCore(ROUTER_ZID, config=self.config)

    def open(self, face: int, zid: ZenohId | None = None, whatami: WhatAmI = WhatAmI.CLIENT) -> list[Send]:
        zid = zid or ZenohId(0xC0 + face)
        return self._record(self.core.add_face(face, zid, whatami, self.now))

    def close(self, face: int) -> list[Send]:
        return self._record(self.core.remove_face(face, self.now))

    def send(self, face: int, *msgs: NetworkMessage, raw: bool = False) -> list[Send]:
        out: list[Send] = []
        for msg in msgs:
            data = encode_network_message(msg) if raw else None
            out += self._record(self.core.handle(face, msg, self.now, data))
        return out

    def tick(self, seconds: float) -> list[Send]:
        self.now += seconds
        return self._record(self.core.handle_timer(self.now))

    def _record(self, sends: list[Send]) -> list[Send]:
        for s in sends:
            check_send(s)
            self.sent.setdefault(s.face, []).append(s)
        return sends


def msgs(sends: list[Send], face: int | None = None) -> list[NetworkMessage]:
    return [s.message for s in sends if face is None or s.face == face]


# --- captured sessions -------------------------------------------------------------------


@dataclass(frozen=True)
class Record:
    conn: int
    to_router: bool
    data: bytes


@cache
def records(scenario: str) -> tuple[Record, ...]:
    doc = json.loads(SESSIONS_FILE.read_text())
    for sc in doc["scenarios"]:
        if sc["name"] == scenario:
            return tuple(Record(r["conn"], r["dir"] == "a->b", bytes.fromhex(r["hex"])) for r in sc["records"])
    raise KeyError(scenario)


@dataclass(frozen=True)
class Event:
    """One decoded network message (or an OpenAck) of a captured stream, in capture order."""

    conn: int
    to_router: bool
    message: NetworkMessage | None  # None: the OpenAck that opened the session
    reliable: bool = True


def events(scenario: str) -> Iterator[Event]:
    """Network messages of every recorded stream, in the (chronological) record order."""
    buffers: dict[tuple[int, bool], bytearray] = {}
    frags: dict[tuple[int, bool], bytearray] = {}
    for rec in records(scenario):
        key = (rec.conn, rec.to_router)
        buf = buffers.setdefault(key, bytearray())
        buf += rec.data
        while len(buf) >= 2:
            n = int.from_bytes(buf[:2], "little")
            if len(buf) < 2 + n:
                break
            batch = bytes(buf[2 : 2 + n])
            del buf[: 2 + n]
            for tm in decode_batch(batch):
                if isinstance(tm, OpenAck):
                    yield Event(rec.conn, rec.to_router, None)
                elif isinstance(tm, Frame):
                    for m in tm.messages:
                        yield Event(rec.conn, rec.to_router, m, tm.reliable)
                elif isinstance(tm, Fragment):
                    acc = frags.setdefault(key, bytearray())
                    acc += tm.payload
                    if not tm.more:
                        yield Event(rec.conn, rec.to_router, decode_network_message(bytes(acc)), tm.reliable)
                        acc.clear()
