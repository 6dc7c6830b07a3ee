"""A deterministic mutation fuzzer for a live ``pyzenoh router``, and the driver that runs it.

Seeds are the real byte streams captured from eclipse-zenoh 1.10.2 (``tests/vectors``):
whole client/peer/router streams, their handshake batches, and the network messages they
carried. :func:`make_case` turns an integer seed into one :class:`FuzzCase` with
``random.Random(seed)`` only, so a seed names an input exactly:

* ``raw_*`` cases are bytes from the first byte on: mutated captured streams, mutated
  handshake batches, splices of several captures, random garbage, length-prefix lies.
* ``hs_*`` cases open with a valid InitSyn; once the router's InitAck is read the
  OpenSyn (with its cookie) and the post-handshake batches are generated from the seed
  and the negotiated parameters (:meth:`FuzzCase.after_init_ack`): mutated batches and
  messages, huge VLEs, extension chains, unknown mandatory extensions, FRAGMENT abuse,
  sequence-number jumps, splices, transport messages out of place, synthetic messages.

The driver (:func:`fuzz`) opens one TCP connection per case (many at once), sends it, reads
until the router closes or a short timeout, and classifies the close. The router's log is
watched for tracebacks (:class:`LogWatch`); :func:`triage` replays recent seeds one at a
time to name the one that caused one. :class:`HealthyClients` is a real eclipse-zenoh
publisher/subscriber/queryable set that must keep working through the same router.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from pyzenoh.codec import (
    Declare,
    DeclareFinal,
    DeclareKeyExpr,
    DeclareQueryable,
    DeclareSubscriber,
    DeclareToken,
    Del,
    Encoding,
    EntityGlobalId,
    Extension,
    Fragment,
    Frame,
    InitAck,
    InitSyn,
    Interest,
    InterestMode,
    InterestOptions,
    Join,
    KeepAlive,
    NetworkOam,
    OpenSyn,
    Push,
    Put,
    Query,
    QueryBody,
    Reply,
    Request,
    Response,
    ResponseFinal,
    Timestamp,
    TransportOam,
    UndeclareKeyExpr,
    UndeclareQueryable,
    UndeclareSubscriber,
    UndeclareToken,
    WhatAmI,
    WireExpr,
    ZenohId,
    decode_batch,
    encode_network_message,
)
from pyzenoh.codec.network import OAM_LINKSTATE
from pyzenoh.errors import CloseReason, PyZenohError
from pyzenoh.localnet import LOOPBACK, free_port, wait_listening
from pyzenoh.routing.linkstate import LinkState, encode_linkstates

VECTORS = Path(__file__).resolve().parents[1] / "vectors"
CAPTURE_FILES = ("zenoh-sessions.json", "zenoh-router-links.json")
#: The router under test takes the id of the captured router, so captured messages that
#: name it (link states, responder ids) name it again.
ROUTER_ID = "a1a2a3a4a5a6a7a8"
ROUTER_ZID = ZenohId.from_str(ROUTER_ID)

ID_INIT = 0x01
ID_OPEN = 0x02
ID_CLOSE = 0x03
ID_KEEPALIVE = 0x04
ID_FRAME = 0x05
ID_FRAGMENT = 0x06
FLAG_Z = 0x80
FLAG_R = 0x20
FLAG_M = 0x40
EXT_PRIORITY = 0x31
EXT_FIRST = 0x02
EXT_DROP = 0x03
DATA = 5
SN_MASKS = (0x7F, 0x3FFF, 0x0FFF_FFFF, 0xFFFF_FFFF)
#: Unknown extension ids with the mandatory bit set (unit, z64, zbuf).
MANDATORY_UNKNOWN = (0x1F, 0x1E, 0x3E, 0x3D, 0x5D, 0x5C)
#: Largest post-handshake input of an ordinary case (the huge-FRAGMENT case goes beyond).
MAX_POST_BYTES = 96 * 1024
#: The huge-FRAGMENT case: at most this many bytes of never-finished fragments.
HUGE_FRAGMENT_BYTES = 2 * 1024 * 1024

# --- wire helpers --------------------------------------------------------------------------


def vle(value: int) -> bytes:
    """Plain LEB128 of any non-negative int: 10+ bytes for values >= 2**63."""
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def huge_vle(rng: random.Random) -> bytes:
    """A variable-length integer no 64-bit field should accept (or only just)."""
    pick = rng.randrange(10)
    if pick == 0:
        return b"\xff" * 9 + b"\x01"  # 10 bytes, > 2**64
    if pick == 1:
        return b"\x80" * 9 + b"\x01"  # 10 bytes of leading zero groups
    if pick == 2:
        return b"\xff" * rng.randint(10, 40) + b"\x00"
    if pick == 3:
        return vle(1 << 64)
    if pick == 4:
        return vle((1 << 64) - 1)
    if pick == 5:
        return b"\xff" * 9  # Zenoh's 9-byte form of 2**64 - 1
    if pick == 6:
        return vle(rng.choice((1 << 32, (1 << 32) - 1, 1 << 16, 1 << 31, 1 << 63)))
    if pick == 7:
        return vle(1 << rng.randint(65, 200))
    if pick == 8:
        return b"\x80" * rng.randint(1, 9)  # never ends (runs into what follows)
    return b"\xff" * 8 + b"\x7f"


def prefix(payload: bytes) -> bytes:
    """A batch on TCP: u16 little-endian length + payload (cut to 65535 bytes)."""
    payload = payload[:0xFFFF]
    return len(payload).to_bytes(2, "little") + payload


def ext_chain(exts: Sequence[bytes], unterminated: bool = False) -> bytes:
    """Extensions (each ``header + value``, no Z bit) as a chain: Z on all but the last."""
    out = bytearray()
    for i, ext in enumerate(exts):
        z = i < len(exts) - 1 or unterminated
        out.append(ext[0] | (FLAG_Z if z else 0))
        out += ext[1:]
    return bytes(out)


def ext_unit(ext_id: int) -> bytes:
    return bytes((ext_id & 0x1F,))


def ext_z64(ext_id: int, value: int | bytes) -> bytes:
    return bytes(((ext_id & 0x1F) | 0x20,)) + (vle(value) if isinstance(value, int) else value)


def ext_zbuf(ext_id: int, data: bytes) -> bytes:
    return bytes(((ext_id & 0x1F) | 0x40,)) + vle(len(data)) + data


def random_ext(rng: random.Random, mandatory: bool = False) -> bytes:
    """One extension with an id no message knows (M bit as asked), sometimes malformed."""
    ext_id = rng.randrange(0x0A, 0x10) | (0x10 if mandatory else 0)
    enc = rng.randrange(7)
    if enc <= 2:
        return ext_unit(ext_id)
    if enc <= 4:
        return ext_z64(ext_id, rng.choice((0, 1, 0x7F, 0x80, 1 << 40)) if enc == 3 else huge_vle(rng))
    if enc == 5:
        return ext_zbuf(ext_id, rng.randbytes(rng.randrange(24)))
    return bytes((ext_id | 0x40,)) + vle(rng.choice((1 << 20, 0xFFFF_FFFF, 1 << 64)))  # length lie


def transport_header(
    mid: int,
    reliable: bool,
    sn: int | bytes,
    priority: int = DATA,
    exts: Sequence[bytes] = (),
    unterminated: bool = False,
    more: bool = False,
) -> bytes:
    """A FRAME or FRAGMENT header: id + flags, SN (an int or raw VLE bytes), extensions."""
    chain = ([ext_z64(EXT_PRIORITY, priority)] if priority != DATA else []) + list(exts)
    header = mid | (FLAG_R if reliable else 0) | (FLAG_M if more else 0)
    if chain:
        header |= FLAG_Z
    out = bytes((header,)) + (vle(sn) if isinstance(sn, int) else sn)
    return out + ext_chain(chain, unterminated) if chain else out


def read_vle_len(data: bytes, pos: int) -> int:
    """How many bytes the LEB128 at ``pos`` takes (to the end when it never ends)."""
    n = 0
    while pos + n < len(data):
        n += 1
        if data[pos + n - 1] < 0x80:
            break
    return n


# --- the corpus ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Message:
    """One network message of a capture, as bytes, with the frame it came in."""

    raw: bytes
    reliable: bool
    priority: int


@dataclass(frozen=True, slots=True)
class Stream:
    """One direction of one captured connection."""

    name: str
    whatami: WhatAmI  # what the sender of this stream was
    zid: ZenohId | None  # the sender's id (from its INIT)
    data: bytes  # the whole stream, length prefixes included
    handshake: tuple[bytes, ...]  # INIT/OPEN batch payloads
    post: tuple[bytes, ...]  # every batch payload after the handshake
    messages: tuple[Message, ...]  # network messages, fragments reassembled


def _sender_whatami(role: str) -> WhatAmI:
    text = role.lower()
    if "client mode" in text or "client implementation" in text:
        return WhatAmI.CLIENT
    if "peer mode" in text:
        return WhatAmI.PEER
    return WhatAmI.ROUTER if "router" in text else WhatAmI.CLIENT


def _split_batches(data: bytes) -> list[bytes]:
    out: list[bytes] = []
    pos = 0
    while pos + 2 <= len(data):
        n = int.from_bytes(data[pos : pos + 2], "little")
        out.append(data[pos + 2 : pos + 2 + n])
        pos += 2 + n
    return out


def _parse_stream(name: str, whatami: WhatAmI, data: bytes) -> Stream:
    handshake: list[bytes] = []
    post: list[bytes] = []
    messages: list[Message] = []
    frags: dict[tuple[bool, int], bytearray] = {}
    zid: ZenohId | None = None
    for payload in _split_batches(data):
        decoded = decode_batch(payload, keep_raw=True)
        if decoded and isinstance(decoded[0], InitSyn | OpenSyn):
            if isinstance(decoded[0], InitSyn):
                zid = decoded[0].zid
            handshake.append(payload)
            continue
        post.append(payload)
        for tm in decoded:
            if isinstance(tm, Frame):
                messages.extend(Message(raw, tm.reliable, tm.priority) for raw in tm.raw)
            elif isinstance(tm, Fragment):
                acc = frags.setdefault((tm.reliable, tm.priority), bytearray())
                acc += tm.payload
                if not tm.more:
                    messages.append(Message(bytes(acc), tm.reliable, tm.priority))
                    acc.clear()
    return Stream(name, whatami, zid, data, tuple(handshake), tuple(post), tuple(messages))


@cache
def corpus() -> tuple[Stream, ...]:
    """Every captured stream (both directions: a router must survive either)."""
    streams: list[Stream] = []
    for filename in CAPTURE_FILES:
        doc = json.loads((VECTORS / filename).read_text())
        for sc in doc["scenarios"]:
            by_key: dict[tuple[int, str], bytearray] = {}
            for rec in sc["records"]:
                by_key.setdefault((rec["conn"], rec["dir"]), bytearray()).extend(bytes.fromhex(rec["hex"]))
            for (conn, direction), data in sorted(by_key.items()):
                sender = sc["roles"]["a" if direction == "a->b" else "b"]
                name = f"{sc['name']}/{conn}/{direction}"
                streams.append(_parse_stream(name, _sender_whatami(sender), bytes(data)))
    return tuple(streams)


@cache
def _small_streams() -> tuple[int, ...]:
    return tuple(i for i, s in enumerate(corpus()) if len(s.data) <= 4096)


@cache
def _handshake_batches() -> tuple[bytes, ...]:
    return tuple(b for s in corpus() for b in s.handshake)


@cache
def _init_syns() -> tuple[bytes, ...]:
    return tuple(b for s in corpus() for b in s.handshake if b[0] & 0x1F == ID_INIT and not b[0] & 0x20)


# --- byte-level mutations -------------------------------------------------------------------

INTERESTING = (0x00, 0x01, 0x02, 0x03, 0x05, 0x06, 0x1D, 0x1E, 0x20, 0x3F, 0x40, 0x7F, 0x80, 0x81, 0xFE, 0xFF)


def mutate_bytes(rng: random.Random, data: bytes, count: int) -> bytes:
    """``count`` random edits: bit flips, interesting bytes, inserts, deletes, duplicates,
    truncation, huge VLEs, arithmetic, u16 lies, Z bits, swaps."""
    buf = bytearray(data)
    for _ in range(count):
        n = len(buf)
        op = rng.randrange(13)
        if n == 0 or op == 3:
            pos = rng.randint(0, n)
            buf[pos:pos] = rng.randbytes(rng.randint(1, 8))
        elif op == 0:
            buf[rng.randrange(n)] ^= 1 << rng.randrange(8)
        elif op == 1:
            buf[rng.randrange(n)] = rng.choice(INTERESTING)
        elif op == 2:
            buf[rng.randrange(n)] = rng.randrange(256)
        elif op == 4:
            pos = rng.randrange(n)
            del buf[pos : pos + rng.randint(1, 16)]
        elif op == 5:
            pos = rng.randrange(n)
            chunk = buf[pos : pos + rng.randint(1, 32)]
            at = rng.randint(0, n)
            buf[at:at] = chunk
        elif op == 6:
            del buf[rng.randrange(n) :]
        elif op == 7:
            pos = rng.randrange(n)
            buf[pos : pos + rng.randint(0, 2)] = huge_vle(rng)
        elif op == 8:
            pos = rng.randrange(n)
            buf[pos] = (buf[pos] + rng.randint(-35, 35)) & 0xFF
        elif op == 9 and n >= 2:
            pos = rng.randrange(n - 1)
            value = rng.choice((0, 1, 0x7FFF, 0x8000, 0xFFFF, n, n + 1, max(n - 1, 0)))
            buf[pos : pos + 2] = (value & 0xFFFF).to_bytes(2, "little")
        elif op == 10:
            buf[rng.randrange(n)] |= FLAG_Z
        elif op == 11 and n >= 4:
            a, b = sorted(rng.sample(range(n), 2))
            width = rng.randint(1, max(1, min(8, b - a)))
            buf[a : a + width], buf[b : b + width] = buf[b : b + width], buf[a : a + width]
        else:
            buf[rng.randrange(n)] = 0x00
    return bytes(buf)


def splice(rng: random.Random, pieces: Sequence[bytes], count: int) -> bytes:
    """Random slices of ``pieces`` glued together."""
    out = bytearray()
    for _ in range(count):
        src = rng.choice(pieces)
        if not src:
            continue
        a = rng.randrange(len(src))
        out += src[a : a + rng.randint(1, min(len(src) - a, 512))]
    return bytes(out)


# --- the negotiated link and a framer that keeps SNs right ------------------------------------


@dataclass(frozen=True, slots=True)
class Negotiated:
    """What the router's InitAck settled (and its cookie)."""

    resolution: int = 0x0A
    batch_size: int = 0xFFFF
    qos: bool = True
    patch: int = 1
    cookie: bytes = b""

    @classmethod
    def of(cls, ack: InitAck) -> Negotiated:
        return cls(ack.resolution, ack.batch_size, ack.qos, ack.patch or 0, ack.cookie)

    @property
    def mask(self) -> int:
        return SN_MASKS[self.resolution & 0x03]

    @property
    def max_payload(self) -> int:
        return self.batch_size - 2


class Framer:
    """Packs network messages into FRAMEs (FRAGMENTs when too big) with in-order SNs."""

    def __init__(self, neg: Negotiated, isn: int) -> None:
        self.neg = neg
        self.mask = neg.mask
        self.isn = isn
        self._next: dict[tuple[bool, int], int] = {}

    def prio(self, priority: int) -> int:
        return priority if self.neg.qos else DATA

    def take(self, reliable: bool, priority: int) -> int:
        key = (reliable, self.prio(priority))
        sn = self._next.get(key, self.isn)
        self._next[key] = (sn + 1) & self.mask
        return sn

    def jump(self, reliable: bool, priority: int, by: int) -> None:
        key = (reliable, self.prio(priority))
        self._next[key] = (self._next.get(key, self.isn) + by) & self.mask

    def frames(self, messages: Sequence[Message]) -> list[bytes]:
        """Batch payloads carrying ``messages`` in order (runs of one channel per FRAME)."""
        out: list[bytes] = []
        maxp = self.neg.max_payload
        batch = bytearray()
        channel: tuple[bool, int] | None = None
        for m in messages:
            ch = (m.reliable, self.prio(m.priority))
            if batch and ch == channel and len(batch) + len(m.raw) <= maxp:
                batch += m.raw
                continue
            if batch:
                out.append(bytes(batch))
                batch = bytearray()
            header = transport_header(ID_FRAME, ch[0], self.take(*ch), ch[1])
            if len(header) + len(m.raw) > maxp:
                self.jump(ch[0], ch[1], -1)
                out.extend(self.fragments(m.raw, ch[0], ch[1]))
                channel = None
                continue
            batch += header + m.raw
            channel = ch
        if batch:
            out.append(bytes(batch))
        return out

    def fragments(
        self, raw: bytes, reliable: bool = True, priority: int = DATA, sizes: Sequence[int] = ()
    ) -> list[bytes]:
        """FRAGMENT payloads carrying ``raw`` (piece sizes from ``sizes`` or the batch size)."""
        prio = self.prio(priority)
        out: list[bytes] = []
        pos = 0
        i = 0
        while pos < len(raw) or not out:
            first = i == 0 and self.neg.patch >= 1
            head_len = len(transport_header(ID_FRAGMENT, reliable, self.mask, prio, [ext_unit(EXT_FIRST)]))
            room = max(1, self.neg.max_payload - head_len)
            size = min(sizes[i], room) if i < len(sizes) else room
            chunk = raw[pos : pos + max(1, size)]
            pos += len(chunk)
            exts = [ext_unit(EXT_FIRST)] if first else []
            head = transport_header(ID_FRAGMENT, reliable, self.take(reliable, prio), prio, exts, more=pos < len(raw))
            out.append(head + chunk)
            i += 1
        return out


# --- synthetic network messages ---------------------------------------------------------------

KEYS = (
    "demo/a",
    "demo/**",
    "demo/*/x",
    "x/**",
    "q/**",
    "q/x",
    "**",
    "*",
    "@/**",
    "@/router/**",
    "@/*/router",
    "a/b/c",
    "fz/a",
    "a/$*b",
    "$*",
    "a//b",
    "/a",
    "a/",
    "**/**",
    "a/**/**",
    "a$*b",
    "\u00e9/\u00fc",
    "*/*/*/*/*/*/*/*",
    "a" * 300,
    "@",
    "@/",
    "lv/**",
    "lv/t1",
    "a/**/b/**/c",
    "a*",
    "**/x",
    "@/" + "0" * 32 + "/router",
)


def _ext_obj(rng: random.Random, ext_id: int) -> Extension:
    """An extension object whose value matches the encoding bits of ``ext_id``."""
    enc = ext_id & 0x60
    if enc == 0x20:
        return Extension(ext_id, rng.choice((0, 1, 300, (1 << 64) - 1)))
    if enc == 0x40:
        return Extension(ext_id, rng.randbytes(rng.randrange(12)))
    return Extension(ext_id)


def _zid(rng: random.Random) -> ZenohId:
    return ZenohId(rng.getrandbits(8 * rng.randint(1, 16)) | 1)


def _wire_expr(rng: random.Random) -> WireExpr:
    scope = rng.choice((0, 0, 0, 0, 1, 2, 3, rng.randrange(1, 0x10000)))
    suffix = rng.choice(KEYS) if scope == 0 or rng.random() < 0.5 else rng.choice(("", "/x", "/**", "x"))
    if scope == 0 and not suffix:
        suffix = "demo/a"
    return WireExpr(scope, suffix, rng.random() < 0.8)


def _qos(rng: random.Random) -> int:
    return rng.choice((5, 8, 13, rng.randrange(0x40)))


def _ts(rng: random.Random) -> Timestamp | None:
    return Timestamp(rng.getrandbits(64), _zid(rng)) if rng.random() < 0.3 else None


def synth_message(rng: random.Random, payload_max: int = 256) -> bytes:
    """A well-formed network message of a random kind, key and options."""
    exts: tuple[Extension, ...] = ()
    if rng.random() < 0.1:
        exts = (Extension(rng.randrange(0x0A, 0x10)),)
    kind = rng.randrange(12)
    msg: Any
    if kind <= 2:
        body: Put | Del = (
            Put(
                rng.randbytes(rng.randrange(payload_max + 1)),
                Encoding(rng.randrange(60)),
                _ts(rng),
                attachment=rng.randbytes(4) if rng.random() < 0.2 else None,
            )
            if kind < 2
            else Del(_ts(rng))
        )
        msg = Push(_wire_expr(rng), body, _qos(rng), extensions=exts)
    elif kind == 3:
        params = rng.choice(("", "x=1", "_time=[now(-1s)..]", "a;b;c", "\u00ff" * 3))
        qbody = QueryBody(rng.randbytes(8)) if rng.random() < 0.2 else None
        msg = Request(
            rng.randrange(1 << 32),
            _wire_expr(rng),
            Query(rng.choice((None, 0, 1, 2, 3)), params, qbody),
            _qos(rng),
            target=rng.randrange(3),
            timeout_ms=rng.choice((None, 0, 1, 100, 10_000)),
            budget=rng.choice((None, 0, 1, 7)),
            extensions=exts,
        )
    elif kind == 4:
        reply = Reply(Put(rng.randbytes(rng.randrange(32))))
        msg = Response(
            rng.randrange(1 << 16),
            _wire_expr(rng),
            reply,
            _qos(rng),
            responder=EntityGlobalId(_zid(rng), rng.randrange(100)) if rng.random() < 0.5 else None,
        )
    elif kind == 5:
        msg = ResponseFinal(rng.randrange(1 << 16), _qos(rng))
    elif kind == 6:
        mode = InterestMode(rng.randrange(4))
        opts = InterestOptions(rng.randrange(16))
        we = _wire_expr(rng) if rng.random() < 0.6 else None
        msg = Interest(rng.randrange(1 << 16), mode, opts, we, rng.random() < 0.3, 8, extensions=exts)
    elif kind == 7:
        msg = NetworkOam(
            rng.choice((1, 1, 2, rng.randrange(1 << 16))), rng.choice((None, 7, rng.randbytes(rng.randrange(40)))), 8
        )
    else:
        ident = rng.choice((1, 2, 3, rng.randrange(1 << 32)))
        decl: Any = rng.choice(
            (
                DeclareKeyExpr(rng.randrange(1, 8), _wire_expr(rng)),
                UndeclareKeyExpr(rng.randrange(0, 8)),
                DeclareSubscriber(ident, _wire_expr(rng)),
                UndeclareSubscriber(ident),
                DeclareQueryable(ident, _wire_expr(rng), rng.random() < 0.5, rng.randrange(3)),
                UndeclareQueryable(ident),
                DeclareToken(ident, _wire_expr(rng)),
                UndeclareToken(ident),
                DeclareFinal(),
            )
        )
        interest_id = rng.choice((None, None, 0, rng.randrange(1 << 16)))
        msg = Declare(decl, interest_id, 8, extensions=exts)
    try:
        return encode_network_message(msg)
    except PyZenohError:
        return encode_network_message(Push(WireExpr(0, "demo/a", True), Put(b"x")))


def synth_linkstate(rng: random.Random, zid: ZenohId, whatami: WhatAmI) -> bytes:
    """A LINKSTATE OAM describing a small random graph around the sender (psid 0 is the
    sender, mostly): other nodes, the router under test itself, dangling links."""
    n = rng.randint(1, 6)
    zids = [zid] + [rng.choice((ROUTER_ZID, _zid(rng), _zid(rng), zid)) for _ in range(n - 1)]
    states = []
    for i in range(n):
        links = tuple(rng.sample(range(n + 2), rng.randint(0, min(n + 1, 4))))
        states.append(
            LinkState(
                psid=i if rng.random() < 0.9 else rng.randrange(1 << 20),
                sn=rng.choice((1, 2, 3, rng.randrange(1 << 64))),
                zid=zids[i] if rng.random() < 0.95 else None,
                whatami=(whatami if i == 0 else rng.choice((WhatAmI.ROUTER, WhatAmI.PEER, WhatAmI.CLIENT)))
                if rng.random() < 0.95
                else None,
                locators=tuple(
                    rng.choice(("tcp/127.0.0.1:7447", "tcp/[::1]:1", "udp/x:1", "a/b"))
                    for _ in range(rng.randint(0, 2))
                )
                if rng.random() < 0.5
                else None,
                links=links,
                weights=tuple(rng.randrange(0x10000) for _ in links) if rng.random() < 0.3 else None,
                gateway=rng.random() < 0.2,
            )
        )
    return encode_network_message(NetworkOam(OAM_LINKSTATE, encode_linkstates(states), 8))


# --- cases -----------------------------------------------------------------------------------

RAW_STRATEGIES: dict[str, int] = {
    "raw_stream": 9,
    "raw_handshake": 9,
    "raw_garbage": 4,
    "raw_splice": 5,
    "raw_lies": 4,
}
HS_STRATEGIES: dict[str, int] = {
    "hs_open": 6,
    "hs_replay": 3,
    "hs_batch_mut": 9,
    "hs_msg_mut": 12,
    "hs_lies": 5,
    "hs_vle": 6,
    "hs_ext": 6,
    "hs_frag": 9,
    "hs_sn": 6,
    "hs_splice": 5,
    "hs_transport": 4,
    "hs_synth": 5,
    "hs_linkstate": 5,
}
_ALL = {**RAW_STRATEGIES, **HS_STRATEGIES}
_NAMES = tuple(_ALL)
_WEIGHTS = tuple(_ALL.values())
#: Salt of the post-handshake generator (the first phase uses the seed itself).
_POST_SALT = 0x5EED_F00D


@dataclass(frozen=True, slots=True)
class FuzzCase:
    """One fuzz input. ``first`` goes out at once; with ``handshake`` it is a valid
    InitSyn and the rest comes from :meth:`after_init_ack`."""

    seed: int
    strategy: str
    first: bytes
    handshake: bool
    stream: int  # the corpus stream the case draws on
    whatami: WhatAmI
    zid: ZenohId  # the id a handshake case announces
    chunk: int  # 0: one write; n: writes of n bytes (split batches across reads)
    finish: str  # "eof": half-close and read to EOF; "wait": read briefly; "abort": RST

    def after_init_ack(self, neg: Negotiated) -> bytes:
        """OpenSyn (valid or not) + post-handshake bytes, from the seed and the InitAck."""
        rng = random.Random(self.seed ^ _POST_SALT)
        return _POST[self.strategy](rng, neg, self)


def make_case(seed: int, strategy: str | None = None, shared_ids: bool = True) -> FuzzCase:
    """The input named by ``seed`` (the strategy too, unless forced). With ``shared_ids``
    a case may announce its capture's id (which concurrent cases share) or the router's."""
    rng = random.Random(seed)
    name = strategy or rng.choices(_NAMES, _WEIGHTS)[0]
    streams = corpus()
    index = rng.randrange(len(streams))
    stream = streams[index]
    if name == "hs_linkstate":
        whatami = rng.choice((WhatAmI.ROUTER, WhatAmI.ROUTER, WhatAmI.PEER))
    elif rng.random() < 0.5:
        whatami = stream.whatami
    else:
        whatami = rng.choices((WhatAmI.CLIENT, WhatAmI.PEER, WhatAmI.ROUTER), (2, 1, 1))[0]
    # the captured id makes captured link states consistent; rarely the router's own id
    roll = rng.random()
    # unique among the cases that run at once (they have different seeds)
    zid = ZenohId((rng.getrandbits(8 * rng.randint(0, 11)) << 40) | ((seed + 1) & ((1 << 40) - 1)))
    if shared_ids and whatami is stream.whatami and stream.zid is not None and roll < 0.5:
        zid = stream.zid
    elif shared_ids and roll > 0.99:
        zid = ROUTER_ZID
    handshake = name.startswith("hs_")
    first = _init_syn(rng, whatami, zid) if handshake else _RAW[name](rng)
    roll = rng.random()
    finish = "eof" if roll < 0.88 else "wait" if roll < 0.96 else "abort"
    chunk = 0
    if rng.random() < 0.15:
        chunk = 1 if rng.random() < 0.3 else rng.randint(2, 700)
    return FuzzCase(seed, name, first, handshake, index, whatami, zid, chunk, finish)


def _init_syn(rng: random.Random, whatami: WhatAmI, zid: ZenohId) -> bytes:
    """A valid InitSyn (some with unusual but legal parameters)."""
    res = 0x0A if rng.random() < 0.6 else rng.randrange(16)
    batch = 0xFFFF if rng.random() < 0.6 else rng.choice((64, 65, 100, 512, 1024, 2048, rng.randint(64, 0xFFFF)))
    exts: tuple[Extension, ...] = ()
    if rng.random() < 0.1:
        exts = tuple(Extension(rng.randrange(0x0A, 0x10)) for _ in range(rng.randint(1, 5)))
    msg = InitSyn(
        zid=zid,
        whatami=whatami,
        resolution=res,
        batch_size=batch,
        qos=rng.random() < 0.8,
        patch=rng.choice((None, 0, 1, 1, 1, 2, 255)),
        extensions=exts,
    )
    out = bytearray()
    msg.write(out)
    return prefix(bytes(out))


# raw cases: bytes from the first byte on


def _raw_stream(rng: random.Random) -> bytes:
    streams = corpus()
    small = _small_streams()
    s = streams[rng.choice(small)] if rng.random() < 0.9 else rng.choice(streams)
    data = s.data if rng.random() < 0.5 else s.data[: rng.randint(1, len(s.data))]
    return mutate_bytes(rng, data, rng.randint(1, 8))


def _raw_handshake(rng: random.Random) -> bytes:
    batch = rng.choice(_init_syns()) if rng.random() < 0.6 else rng.choice(_handshake_batches())
    pick = rng.randrange(6)
    if pick <= 2:
        payload = mutate_bytes(rng, batch, rng.randint(1, 4))
    elif pick == 3:  # INIT/OPEN with extensions appended (a long chain, or a mandatory one)
        exts = [random_ext(rng, rng.random() < 0.3) for _ in range(rng.choice((1, 3, 63, 64, 65, 300)))]
        payload = bytes((batch[0] | FLAG_Z,)) + batch[1:] + ext_chain(exts, rng.random() < 0.2)
    elif pick == 4:  # a huge VLE somewhere in it
        pos = rng.randrange(1, max(2, len(batch)))
        payload = batch[:pos] + huge_vle(rng) + batch[pos + rng.randint(0, 2) :]
    else:  # a mandatory unknown extension
        payload = bytes((batch[0] | FLAG_Z,)) + batch[1:] + ext_chain([ext_unit(rng.choice(MANDATORY_UNKNOWN))])
    out = prefix(payload[:0xFFFF])
    if rng.random() < 0.3:  # and something after it
        out += prefix(rng.choice(_handshake_batches())) if rng.random() < 0.5 else rng.randbytes(rng.randint(1, 64))
    return out


def _raw_garbage(rng: random.Random) -> bytes:
    pick = rng.randrange(5)
    if pick == 0:
        return rng.randbytes(rng.randint(1, 300))
    if pick == 1:  # plausible batches of random bytes
        return b"".join(prefix(rng.randbytes(rng.randint(1, 80))) for _ in range(rng.randint(1, 5)))
    if pick == 2:  # a FRAME before any handshake
        return prefix(transport_header(ID_FRAME, True, 0) + synth_message(rng))
    if pick == 3:  # every transport id, once
        return b"".join(prefix(bytes((i,)) + rng.randbytes(rng.randint(0, 12))) for i in rng.sample(range(256), 8))
    return bytes((rng.randrange(256),)) * rng.randint(1, 2000)


def _raw_splice(rng: random.Random) -> bytes:
    pieces = [s.data for s in corpus()] + list(_handshake_batches())
    return splice(rng, pieces, rng.randint(2, 6))


def _raw_lies(rng: random.Random) -> bytes:
    init = rng.choice(_init_syns())
    n = len(init)
    lie = rng.choice((0, 1, n - 1, n + 1, n + rng.randint(2, 100), 0xFFFF, 0x8000, rng.randrange(0x10000)))
    out = (lie & 0xFFFF).to_bytes(2, "little") + init
    if rng.random() < 0.5:
        out += prefix(rng.choice(_handshake_batches()))
    return out


_RAW: dict[str, Callable[[random.Random], bytes]] = {
    "raw_stream": _raw_stream,
    "raw_handshake": _raw_handshake,
    "raw_garbage": _raw_garbage,
    "raw_splice": _raw_splice,
    "raw_lies": _raw_lies,
}


# handshake cases: OpenSyn + post-handshake bytes


def _open_syn(neg: Negotiated, lease_ms: int, isn: int) -> bytes:
    out = bytearray()
    OpenSyn(lease_ms=lease_ms, initial_sn=isn, cookie=neg.cookie).write(out)
    return prefix(bytes(out))


def _opening(rng: random.Random, neg: Negotiated) -> tuple[bytes, Framer]:
    lease = 10_000 if rng.random() < 0.8 else rng.choice((1000, 60_000, 3_600_000, rng.randint(500, 100_000)))
    isn = rng.choice((0, neg.mask, neg.mask - 1, rng.randint(0, neg.mask)))
    return _open_syn(neg, lease, isn), Framer(neg, isn)


def _messages(rng: random.Random, case: FuzzCase, limit: int = 40) -> list[Message]:
    msgs = list(corpus()[case.stream].messages)
    if not msgs or rng.random() < 0.15:
        msgs += [Message(synth_message(rng), rng.random() < 0.8, rng.randrange(8)) for _ in range(rng.randint(1, 6))]
    if len(msgs) > limit:
        start = rng.randrange(len(msgs) - limit + 1) if rng.random() < 0.5 else 0
        msgs = msgs[start : start + limit]
    return msgs


def _cap(payloads: Sequence[bytes]) -> bytes:
    out = bytearray()
    for p in payloads:
        piece = prefix(p[:0xFFFF])
        if len(out) + len(piece) > MAX_POST_BYTES:
            break
        out += piece
    return bytes(out)


def _hs_open(rng: random.Random, neg: Negotiated, case: FuzzCase) -> bytes:
    """A broken OpenSyn: bad cookie, zero or huge lease, SN over resolution, extensions."""
    lease, isn, cookie = 10_000, rng.randint(0, neg.mask), neg.cookie
    pick = rng.randrange(10)
    if pick == 0:
        cookie = mutate_bytes(rng, cookie, 1) if cookie else b"x"
    elif pick == 1:
        cookie = cookie[: rng.randrange(len(cookie) + 1)]
    elif pick == 2:
        lease = 0
    elif pick == 3:
        isn = neg.mask + rng.choice((1, 2, 1 << 20, 1 << 32))
    header = ID_OPEN | (0x40 if lease and lease % 1000 == 0 and rng.random() < 0.5 else 0)
    lease_bytes = vle(lease // 1000 if header & 0x40 else lease)
    if pick == 4:
        lease_bytes = huge_vle(rng)
    isn_bytes = huge_vle(rng) if pick == 5 else vle(isn)
    exts = b""
    if pick == 6:
        exts = ext_chain([random_ext(rng) for _ in range(rng.choice((1, 10, 64, 65, 500)))], rng.random() < 0.2)
    elif pick == 7:
        exts = ext_chain([ext_unit(rng.choice(MANDATORY_UNKNOWN))])
    if exts:
        header |= FLAG_Z
    body = bytes((header,)) + lease_bytes + isn_bytes + vle(len(cookie)) + cookie + exts
    if pick == 8:
        body = mutate_bytes(rng, body, rng.randint(1, 4))
    if pick == 9:  # an OpenSyn, then another one (or an InitSyn) while established
        again = _open_syn(neg, lease, isn) if rng.random() < 0.5 else prefix(rng.choice(_init_syns()))
        return _open_syn(neg, lease, isn) + again
    out = prefix(body[:0xFFFF])
    if rng.random() < 0.5:  # frames after a (probably) refused open
        framer = Framer(neg, isn & neg.mask)
        out += _cap(framer.frames(_messages(rng, case, 5)))
    return out


def _hs_replay(rng: random.Random, neg: Negotiated, case: FuzzCase) -> bytes:
    head, framer = _opening(rng, neg)
    return head + _cap(framer.frames(_messages(rng, case)))


def _hs_batch_mut(rng: random.Random, neg: Negotiated, case: FuzzCase) -> bytes:
    head, framer = _opening(rng, neg)
    payloads = framer.frames(_messages(rng, case))
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(payloads))
        payloads[i] = mutate_bytes(rng, payloads[i], rng.randint(1, 6)) or b"\x00"
    return head + _cap(payloads)


def _hs_msg_mut(rng: random.Random, neg: Negotiated, case: FuzzCase) -> bytes:
    """Valid frames around mutated messages (reaches the network codec and the core)."""
    head, framer = _opening(rng, neg)
    msgs = _messages(rng, case)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(6)
        i = rng.randrange(len(msgs))
        m = msgs[i]
        if op <= 2:
            msgs[i] = Message(mutate_bytes(rng, m.raw, rng.randint(1, 4)) or b"\x1d", m.reliable, m.priority)
        elif op == 3:
            msgs.insert(rng.randrange(len(msgs) + 1), m)  # a duplicate (declarations twice)
        elif op == 4 and len(msgs) > 1:
            del msgs[i]  # a missing one (an id never declared, a final never sent)
        else:
            j = rng.randrange(len(msgs))
            msgs[i], msgs[j] = msgs[j], msgs[i]
    return head + _cap(framer.frames(msgs))


def _hs_lies(rng: random.Random, neg: Negotiated, case: FuzzCase) -> bytes:
    """Batch length prefixes that do not match their payloads."""
    head, framer = _opening(rng, neg)
    payloads = framer.frames(_messages(rng, case, 12))
    out = bytearray(head)
    liar = rng.randrange(len(payloads))
    for i, p in enumerate(payloads):
        n = len(p)
        if i != liar:
            out += prefix(p)
            continue
        lie = rng.choice(
            (
                0,
                1,
                n - 1,
                n + 1,
                n + rng.randint(2, 200),
                neg.max_payload,
                neg.max_payload + 1,
                0xFFFF,
                max(0, n - rng.randint(1, n)),
            )
        )
        out += (lie & 0xFFFF).to_bytes(2, "little") + p
    if rng.random() < 0.3:
        out += rng.randbytes(rng.randint(1, 100))
    return bytes(out)


def _hs_vle(rng: random.Random, neg: Negotiated, case: FuzzCase) -> bytes:
    """A 10-byte (or longer, or endless) variable-length integer where one is read."""
    head, framer = _opening(rng, neg)
    msgs = _messages(rng, case, 6)
    m = rng.choice(msgs)
    pick = rng.randrange(6)
    if pick == 0:  # the FRAME SN
        payload = transport_header(ID_FRAME, m.reliable, huge_vle(rng), framer.prio(m.priority)) + m.raw
    elif pick == 1:  # the FRAGMENT SN
        payload = transport_header(ID_FRAGMENT, True, huge_vle(rng), DATA, more=rng.random() < 0.5) + m.raw
    elif pick == 2:  # the priority extension's value
        payload = (
            transport_header(ID_FRAME, True, framer.take(True, DATA), DATA, [ext_z64(EXT_PRIORITY, huge_vle(rng))])
            + m.raw
        )
    elif pick == 3:  # the message's first VLE field (scope, request id, entity id...)
        n = read_vle_len(m.raw, 1)
        raw = m.raw[:1] + huge_vle(rng) + m.raw[1 + n :]
        payload = transport_header(ID_FRAME, True, framer.take(True, DATA), DATA) + raw
    elif pick == 4:  # a PUSH whose PUT payload length is huge
        raw = bytes((0x3D, 0x00)) + vle(6) + b"demo/a" + b"\x01" + huge_vle(rng) + b"payload"
        payload = transport_header(ID_FRAME, True, framer.take(True, DATA), DATA) + raw
    else:  # anywhere in the message
        pos = rng.randrange(len(m.raw))
        raw = m.raw[:pos] + huge_vle(rng) + m.raw[pos + rng.randint(0, 2) :]
        payload = transport_header(ID_FRAME, True, framer.take(True, DATA), DATA) + raw
    rest = framer.frames(msgs) if rng.random() < 0.5 else []
    return head + _cap([payload, *rest])


def _hs_ext(rng: random.Random, neg: Negotiated, case: FuzzCase) -> bytes:
    """Long (or endless) extension chains and unknown mandatory extensions."""
    head, framer = _opening(rng, neg)
    msgs = _messages(rng, case, 6)
    count = rng.choice((1, 2, 8, 63, 64, 65, 200, 2000))
    chain = [random_ext(rng, rng.random() < 0.05) for _ in range(count)]
    unterminated = rng.random() < 0.2
    pick = rng.randrange(7)
    m = rng.choice(msgs)
    if pick == 0:  # on the FRAME
        payload = transport_header(ID_FRAME, True, framer.take(True, DATA), DATA, chain, unterminated) + m.raw
    elif pick == 1:  # an unknown mandatory one on the FRAME
        payload = (
            transport_header(ID_FRAME, True, framer.take(True, DATA), DATA, [ext_unit(rng.choice(MANDATORY_UNKNOWN))])
            + m.raw
        )
    elif pick == 2:  # on a KEEPALIVE
        payload = bytes((ID_KEEPALIVE | FLAG_Z,)) + ext_chain(chain, unterminated)
    elif pick == 3:  # on a FRAGMENT
        payload = transport_header(ID_FRAGMENT, True, framer.take(True, DATA), DATA, chain, unterminated) + m.raw
    elif pick == 4:  # Z set on a message that has no extensions
        payload = (
            transport_header(ID_FRAME, True, framer.take(True, DATA), DATA) + bytes((m.raw[0] | FLAG_Z,)) + m.raw[1:]
        )
    elif pick == 5:  # a well-formed message carrying an unknown (maybe mandatory) extension
        ext = _ext_obj(rng, rng.choice(MANDATORY_UNKNOWN) if rng.random() < 0.5 else rng.randrange(0x0A, 0x10))
        msg = rng.choice(
            (
                Push(_wire_expr(rng), Put(b"x"), extensions=(ext,)),
                Push(_wire_expr(rng), Put(b"x", extensions=(ext,))),
                Declare(DeclareSubscriber(rng.randrange(1, 9), _wire_expr(rng), (ext,)), qos=8),
                Request(rng.randrange(100), _wire_expr(rng), Query(extensions=(ext,))),
                Interest(rng.randrange(100), InterestMode.CURRENT_FUTURE, InterestOptions(15), extensions=(ext,)),
            )
        )
        payload = transport_header(ID_FRAME, True, framer.take(True, DATA), DATA) + encode_network_message(msg)
    else:  # a chain inserted right after a message's first field
        n = 1 + read_vle_len(m.raw, 1)
        raw = bytes((m.raw[0] | FLAG_Z,)) + m.raw[1:n] + ext_chain(chain, unterminated) + m.raw[n:]
        payload = transport_header(ID_FRAME, True, framer.take(True, DATA), DATA) + raw
    rest = framer.frames(msgs) if rng.random() < 0.5 else []
    return head + _cap([payload, *rest])


def _hs_frag(rng: random.Random, neg: Negotiated, case: FuzzCase) -> bytes:
    """FRAGMENTs out of order, never finished, huge, interleaved, dropped, or gapped."""
    head, framer = _opening(rng, neg)
    msgs = _messages(rng, case, 8)
    if rng.random() < 0.4:
        raw = synth_message(rng, payload_max=rng.choice((64, 4096, 70_000)))
    else:
        raw = rng.choice(msgs).raw
    pieces = rng.randint(2, 12)
    sizes = [max(1, len(raw) // pieces + rng.randint(-3, 3)) for _ in range(pieces)]
    reliable = rng.random() < 0.8
    prio = rng.randrange(8)
    pick = rng.randrange(9)
    if pick == 7 and rng.random() < 0.7:
        pick = 8
    if pick == 7:  # huge and never finished: the router must not keep it past the close
        chunk = max(1, neg.max_payload - 16)
        total = min(rng.randint(200_000, HUGE_FRAGMENT_BYTES), 2000 * chunk)
        frags = []
        first = True
        while total > 0:
            exts = [ext_unit(EXT_FIRST)] if first and neg.patch >= 1 else []
            frags.append(
                transport_header(ID_FRAGMENT, reliable, framer.take(reliable, prio), framer.prio(prio), exts, more=True)
                + rng.randbytes(8) * (chunk // 8)
            )
            total -= chunk
            first = False
        return head + b"".join(prefix(f) for f in frags)
    frags = framer.fragments(raw, reliable, prio, sizes)
    if pick == 0:  # out of order
        rng.shuffle(frags)
    elif pick == 1:  # never finished
        frags = frags[:-1] or frags
        last = bytearray(frags[-1])
        last[0] |= FLAG_M
        frags[-1] = bytes(last)
    elif pick == 2:  # a gap in the SNs
        framer.jump(reliable, prio, rng.choice((1, 2, neg.mask // 2, neg.mask // 2 + 1)))
        tail = framer.fragments(raw, reliable, prio, sizes)
        frags = frags[: len(frags) // 2] + tail[len(tail) // 2 :]
    elif pick == 3:  # interleaved with a frame and a fragment of another channel
        other = framer.fragments(rng.choice(msgs).raw, not reliable, (prio + 1) % 8)
        mixed = frags + framer.frames(msgs[:2]) + other
        rng.shuffle(mixed)
        frags = mixed
    elif pick == 4:  # a DROP extension in the middle
        i = rng.randrange(len(frags))
        d = bytearray(
            transport_header(
                ID_FRAGMENT,
                reliable,
                framer.take(reliable, prio),
                framer.prio(prio),
                [ext_unit(EXT_DROP)],
                more=rng.random() < 0.5,
            )
        )
        frags.insert(i, bytes(d))
    elif pick == 5:  # duplicated fragments and a mutated piece
        frags = frags + frags[: rng.randint(1, len(frags))]
        i = rng.randrange(len(frags))
        frags[i] = mutate_bytes(rng, frags[i], rng.randint(1, 3)) or b"\x06"
    elif pick == 6:  # trailing garbage after the message, or empty fragments
        garbage = raw + rng.randbytes(rng.randint(1, 20)) if rng.random() < 0.5 else b""
        frags = (
            framer.fragments(garbage, reliable, prio)
            if garbage
            else [transport_header(ID_FRAGMENT, reliable, framer.take(reliable, prio), framer.prio(prio))]
        )
    # pick 8: in order (the baseline)
    out = head + _cap(frags)
    if rng.random() < 0.3:
        out += _cap(framer.frames(msgs))
    return out


def _hs_sn(rng: random.Random, neg: Negotiated, case: FuzzCase) -> bytes:
    """Frames whose SNs jump forward, go back, repeat, exceed the resolution or wrap."""
    head, framer = _opening(rng, neg)
    msgs = _messages(rng, case, 20)
    out = bytearray(head)
    for m in msgs:
        roll = rng.random()
        ch = (m.reliable, m.priority)
        if roll < 0.15:
            framer.jump(*ch, rng.choice((1, 2, 100, neg.mask // 2, neg.mask // 2 + 1, neg.mask)))
        elif roll < 0.25:
            framer.jump(*ch, -rng.randint(1, 3))
        if roll > 0.93:  # over the resolution
            sn = neg.mask + rng.choice((1, 2, 1 << 31, (1 << 32) - 1 - neg.mask))
            out += _cap([transport_header(ID_FRAME, m.reliable, sn, framer.prio(m.priority)) + m.raw])
        else:
            out += _cap(framer.frames([m]))
        if len(out) > MAX_POST_BYTES:
            break
    return bytes(out)


def _hs_splice(rng: random.Random, neg: Negotiated, case: FuzzCase) -> bytes:
    """Messages of several captures mixed; some glued from the halves of two messages."""
    head, framer = _opening(rng, neg)
    streams = [s for s in corpus() if s.messages]
    msgs: list[Message] = []
    for _ in range(rng.randint(2, 4)):
        s = rng.choice(streams)
        a = rng.randrange(len(s.messages))
        msgs += s.messages[a : a + rng.randint(1, 10)]
    if rng.random() < 0.5:
        rng.shuffle(msgs)
    for _ in range(rng.randint(0, 3)):
        x, y = rng.choice(msgs), rng.choice(msgs)
        glued = x.raw[: rng.randint(1, len(x.raw))] + y.raw[rng.randrange(len(y.raw)) :]
        msgs.insert(rng.randrange(len(msgs) + 1), Message(glued, x.reliable, x.priority))
    return head + _cap(framer.frames(msgs))


def _hs_transport(rng: random.Random, neg: Negotiated, case: FuzzCase) -> bytes:
    """Transport messages where they make no sense, and unknown transport ids."""
    head, framer = _opening(rng, neg)
    out = bytearray(head)
    for _ in range(rng.randint(1, 4)):
        pick = rng.randrange(8)
        if pick == 0:
            out += prefix(rng.choice(_handshake_batches()))
        elif pick == 1:
            j = bytearray()
            Join(_zid(rng), WhatAmI.PEER, rng.randint(1, 10_000), rng.randrange(1 << 28), rng.randrange(1 << 28)).write(
                j
            )
            out += prefix(bytes(j))
        elif pick == 2:
            t = bytearray()
            TransportOam(rng.randrange(1 << 16), rng.choice((None, 3, rng.randbytes(10))), rng.randrange(8)).write(t)
            out += prefix(bytes(t))
        elif pick == 3:
            out += prefix(bytes((ID_CLOSE | rng.choice((0, 0x20)), rng.randrange(256))))
        elif pick == 4:
            k = bytearray()
            KeepAlive().write(k)
            out += prefix(bytes(k) * rng.randint(1, 50))
        elif pick == 5:  # an unknown transport id, or a network message outside a FRAME
            out += prefix(bytes((rng.choice((0x08, 0x0F, 0x18, 0x1D, 0x1E, 0x1F)),)) + rng.randbytes(rng.randint(0, 9)))
        elif pick == 6:  # two FRAMEs (and a keepalive) in one batch
            a = framer.frames(_messages(rng, case, 2))
            b = framer.frames(_messages(rng, case, 2))
            out += prefix((a[0] if a else b"") + b"\x04" + (b[0] if b else b""))
        else:
            out += _cap(framer.frames(_messages(rng, case, 3)))
    return bytes(out[: MAX_POST_BYTES + len(head)])


def _hs_synth(rng: random.Random, neg: Negotiated, case: FuzzCase) -> bytes:
    """Well-formed messages of every kind with odd keys, ids, QoS and options."""
    head, framer = _opening(rng, neg)
    msgs = [Message(synth_message(rng), rng.random() < 0.8, rng.randrange(8)) for _ in range(rng.randint(1, 25))]
    return head + _cap(framer.frames(msgs))


def _hs_linkstate(rng: random.Random, neg: Negotiated, case: FuzzCase) -> bytes:
    """A router or peer neighbour: link states that change (or contradict themselves),
    declarations and data routed with node ids, some of it mutated."""
    head, framer = _opening(rng, neg)
    msgs: list[Message] = []
    for _ in range(rng.randint(1, 12)):
        roll = rng.random()
        if roll < 0.45:
            raw = synth_linkstate(rng, case.zid, case.whatami)
        elif roll < 0.55:
            raw = rng.choice(corpus()[case.stream].messages or (Message(b"\x1d\x00", True, 5),)).raw
        else:
            node = rng.choice((0, 1, 2, 3, rng.randrange(1 << 16)))
            ident = rng.randrange(1, 6)
            msg = rng.choice(
                (
                    Declare(DeclareSubscriber(ident, _wire_expr(rng)), qos=8, node_id=node),
                    Declare(
                        DeclareQueryable(ident, _wire_expr(rng), rng.random() < 0.5, rng.randrange(4)),
                        qos=8,
                        node_id=node,
                    ),
                    Declare(DeclareToken(ident, _wire_expr(rng)), qos=8, node_id=node),
                    Declare(UndeclareSubscriber(ident, WireExpr(0, "demo/**", True)), qos=8, node_id=node),
                    Push(_wire_expr(rng), Put(b"ls"), node_id=node),
                    Request(rng.randrange(1 << 16), _wire_expr(rng), Query(), 13, node_id=node, budget=1),
                    Interest(rng.randrange(1 << 16), InterestMode.CURRENT_FUTURE, InterestOptions(15), node_id=node),
                )
            )
            try:
                raw = encode_network_message(msg)
            except PyZenohError:
                continue
        if rng.random() < 0.15:
            raw = mutate_bytes(rng, raw, rng.randint(1, 3)) or raw
        msgs.append(Message(raw, True, rng.choice((0, 0, 5))))
    return head + _cap(framer.frames(msgs)) if msgs else head


_POST: dict[str, Callable[[random.Random, Negotiated, FuzzCase], bytes]] = {
    "hs_open": _hs_open,
    "hs_replay": _hs_replay,
    "hs_batch_mut": _hs_batch_mut,
    "hs_msg_mut": _hs_msg_mut,
    "hs_lies": _hs_lies,
    "hs_vle": _hs_vle,
    "hs_ext": _hs_ext,
    "hs_frag": _hs_frag,
    "hs_sn": _hs_sn,
    "hs_splice": _hs_splice,
    "hs_transport": _hs_transport,
    "hs_synth": _hs_synth,
    "hs_linkstate": _hs_linkstate,
}


# --- the router under test -------------------------------------------------------------------


@dataclass
class Router:
    proc: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def endpoint(self) -> str:
        return f"tcp/{LOOPBACK}:{self.port}"

    def alive(self) -> bool:
        return self.proc.poll() is None


@contextlib.contextmanager
def run_router(tmp: Path, *extra: str, log_level: str = "info") -> Iterator[Router]:
    """``pyzenoh router`` on 127.0.0.1 with id :data:`ROUTER_ID` (a subprocess logging to a
    file), stopped by PID."""
    port = free_port()
    log = tmp / f"fuzz-router-{port}.log"
    cmd = [
        sys.executable,
        "-m",
        "pyzenoh",
        "--log-level",
        log_level,
        "router",
        "-l",
        f"tcp/{LOOPBACK}:{port}",
        "--id",
        ROUTER_ID,
        *extra,
    ]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=os.environ.copy())
    try:
        wait_listening(port, proc, 30.0)
        yield Router(proc, port, log)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


def rss_kb(pid: int) -> int:
    """VmRSS of ``pid`` in KiB (0 when it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


_PROBLEM = re.compile(r"traceback|exception", re.IGNORECASE)
_RECORD_START = re.compile(rb"^\d{4}-\d\d-\d\d ")


class LogWatch:
    """Reads a log file incrementally; returns the records that mention a traceback or an
    exception (each with its continuation lines)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self._partial = b""
        self.records = 0

    def poll(self, limit: int = 64 << 20) -> list[str]:
        try:
            with self.path.open("rb") as f:
                f.seek(self.offset)
                data = f.read(limit)
        except OSError:
            return []
        self.offset += len(data)
        data = self._partial + data
        cut = data.rfind(b"\n") + 1
        self._partial = data[cut:]
        problems: list[str] = []
        current: list[bytes] = []
        for line in data[:cut].splitlines():
            if _RECORD_START.match(line):
                self.records += 1
                if current:
                    self._flush(current, problems)
                current = [line]
            else:
                current.append(line)
        if current:
            self._flush(current, problems)
        return problems

    @staticmethod
    def _flush(lines: list[bytes], problems: list[str]) -> None:
        text = b"\n".join(lines).decode("utf-8", "replace")
        if _PROBLEM.search(text):
            problems.append(text)


def problem_signature(text: str) -> str:
    """What identifies a logged problem: its last line, numbers and ids blanked."""
    last = text.strip().splitlines()[-1] if text.strip() else ""
    return re.sub(r"[0-9a-f]{6,}|\d+", "N", last)


@dataclass(frozen=True, slots=True)
class Leftover:
    """Something the router holds that no open session accounts for."""

    text: str
    holders: frozenset[str] | None = None  # a declared entity's holder ids (None: not an entity)


# --- healthy eclipse-zenoh clients --------------------------------------------------------------


class HealthyClients:
    """A subscriber + queryable session and a publisher + getter session (eclipse-zenoh)."""

    KEY = "fuzzhealth/data"
    QKEY = "fuzzhealth/query"

    def __init__(self, endpoint: str) -> None:
        import queue

        import zenoh

        self._zenoh = zenoh
        self.checks = 0
        self.failures: list[str] = []
        self._got: queue.Queue[bytes] = queue.Queue()

        def conf() -> Any:
            c = zenoh.Config()
            c.insert_json5("mode", '"client"')
            c.insert_json5("connect/endpoints", json.dumps([endpoint]))
            c.insert_json5("scouting/multicast/enabled", "false")
            return c

        self.a = zenoh.open(conf())
        try:
            self.b = zenoh.open(conf())
        except BaseException:
            self.a.close()  # type: ignore[no-untyped-call]
            raise
        self.a.declare_subscriber(self.KEY, lambda s: self._got.put(s.payload.to_bytes()))
        self.a.declare_queryable(
            self.QKEY, lambda q: q.reply(self.QKEY, b"pong:" + str(q.parameters.get("t")).encode())
        )
        self.pub = self.b.declare_publisher(self.KEY)

    def check(self, attempts: int = 3, wait: float = 5.0) -> str | None:
        """Put and get through the router; None when both work (bounded retries)."""
        import queue

        self.checks += 1
        problem = ""
        for attempt in range(attempts):
            token = f"{self.checks}-{attempt}-{time.monotonic_ns()}".encode()
            self.pub.put(token)
            deadline = time.monotonic() + wait
            seen = False
            while not seen and time.monotonic() < deadline:
                try:
                    seen = self._got.get(timeout=max(0.01, deadline - time.monotonic())) == token
                except queue.Empty:
                    break
            if not seen:
                problem = "the subscriber did not receive the put"
                continue
            replies = self.b.get(f"{self.QKEY}?t={token.decode()}", timeout=wait, target=self._zenoh.QueryTarget.ALL)
            answers = [r.ok.payload.to_bytes() for r in replies if r.ok is not None]
            if b"pong:" + token in answers:
                return None
            problem = f"the get was not answered (got {answers!r})"
        self.failures.append(problem)
        return problem

    def _admin(self, selector: str, wait: float = 5.0) -> list[tuple[str, bytes]]:
        replies = self.b.get(selector, timeout=wait)
        return [(str(r.ok.key_expr), r.ok.payload.to_bytes()) for r in replies if r.ok is not None]

    def state(self, router_id: str) -> tuple[set[str], list[tuple[str, str, frozenset[str]]]] | None:
        """From the router's admin space: the ids of its open sessions, and every declared
        subscriber, queryable and token as (kind, key, holder ids other than the router's).
        None when the admin space does not answer."""
        base = f"@/{router_id}/router"
        info = self._admin(base)
        if not info:
            return None
        sessions = {s["peer"] for s in json.loads(info[0][1])["sessions"]}
        entities: list[tuple[str, str, frozenset[str]]] = []
        for kind in ("subscriber", "queryable", "token"):
            for key, payload in self._admin(f"{base}/{kind}/**"):
                holders = json.loads(payload)
                zids = {z for group in holders.values() if isinstance(group, list) for z in group}
                entities.append((kind, key[len(base) + len(kind) + 2 :], frozenset(zids - {router_id})))
        return sessions, entities

    def orphans(self, router_id: str) -> set[tuple[str, str, frozenset[str]]] | None:
        """Declared entities none of whose holders has an open session (None: no answer)."""
        state = self.state(router_id)
        if state is None:
            return None
        sessions, entities = state
        return {e for e in entities if not e[2] & sessions}

    def leftovers(self, router_id: str, attempts: int = 10, pause: float = 0.5) -> list[Leftover]:
        """What the router still holds beyond the healthy clients' (sessions, declared
        entities with their holders, link-state nodes), read from its admin space; asked
        again (bounded) while the last closes settle. Empty: nothing leaked."""
        problems: list[Leftover] = []
        for _ in range(attempts):
            problems = self._leftovers_once(router_id)
            if not problems:
                break
            time.sleep(pause)
        return problems

    def _leftovers_once(self, router_id: str) -> list[Leftover]:
        state = self.state(router_id)
        if state is None:
            return [Leftover("the admin space did not answer")]
        sessions, entities = state
        mine = {str(self.a.info.zid()), str(self.b.info.zid())}
        out = [Leftover(f"sessions still open: {sorted(sessions - mine)[:10]}")] if sessions - mine else []
        expected = {("subscriber", self.KEY), ("queryable", self.QKEY)}
        for kind, key, holders in entities:
            if (kind, key) not in expected or not holders <= mine:
                out.append(
                    Leftover(f"{kind} {key!r} still declared, held by {sorted(holders) or 'nobody'}", holders - mine)
                )
        for key, graph in self._admin(f"@/{router_id}/router/linkstate/**"):
            if graph.count(b"label =") != 1:
                out.append(Leftover(f"{key} still has other nodes: {graph[:300]!r}"))
        return out

    def close(self) -> None:
        for s in (self.a, self.b):
            with contextlib.suppress(Exception):
                s.close()  # type: ignore[no-untyped-call]


# --- the driver ------------------------------------------------------------------------------

CONNECT_TIMEOUT = 5.0
HANDSHAKE_TIMEOUT = 5.0
#: After a half-close the router must close within this time (or it hangs).
EOF_TIMEOUT = 15.0
#: "wait" cases read this long before closing themselves.
WAIT_TIMEOUT = 0.25
#: Bytes of a chunked case written piece by piece (the rest goes in one write).
CHUNKED_BYTES = 2048
#: Seeds remembered for triage (the most recent ones started).
RECENT_SEEDS = 20_000


@dataclass(slots=True)
class Outcome:
    seed: int
    strategy: str
    kind: str  # how the connection ended
    established: bool
    anomaly: str = ""  # non-empty: a failure (hang, refused connection, no InitAck)
    sent: bytes = b""  # every byte sent (only when asked: replays)
    nbytes: int = 0


class _Rx:
    """Splits the router's output into batches; notes InitAck, OpenAck and CLOSE."""

    __slots__ = ("ack", "buf", "close_reason", "opened")

    def __init__(self) -> None:
        self.buf = bytearray()
        self.ack: InitAck | None = None
        self.opened = False
        self.close_reason: int | None = None

    def feed(self, data: bytes) -> None:
        buf = self.buf
        buf += data
        pos = 0
        while len(buf) - pos >= 2:
            n = buf[pos] | buf[pos + 1] << 8
            if len(buf) - pos - 2 < n:
                break
            payload = bytes(buf[pos + 2 : pos + 2 + n])
            pos += 2 + n
            mid = payload[0] & 0x1F if payload else -1
            if mid == ID_CLOSE and len(payload) >= 2:
                self.close_reason = payload[1]
            elif mid == ID_INIT and self.ack is None:
                with contextlib.suppress(PyZenohError):
                    msg = decode_batch(payload)[0]
                    if isinstance(msg, InitAck):
                        self.ack = msg
            elif mid == ID_OPEN and payload[0] & 0x20:
                self.opened = True
        del buf[:pos]


def _close_kind(rx: _Rx, how: str) -> str:
    if rx.close_reason is not None:
        reason = rx.close_reason
        name = CloseReason(reason).name if reason in CloseReason._value2member_map_ else str(reason)
        return f"CLOSE({name})+{how}"
    return how


async def _send(writer: asyncio.StreamWriter, data: bytes, chunk: int) -> None:
    """Write ``data``: the first :data:`CHUNKED_BYTES` in ``chunk``-byte pieces (so the
    router sees batches split across reads), the rest at once."""
    pos = 0
    if chunk:
        end = min(len(data), CHUNKED_BYTES)
        while pos < end:
            writer.write(data[pos : pos + chunk])
            pos += chunk
            await asyncio.wait_for(writer.drain(), EOF_TIMEOUT)
            await asyncio.sleep(0)
    if pos < len(data):
        writer.write(data[pos:])
        await asyncio.wait_for(writer.drain(), EOF_TIMEOUT)


async def _read_until(
    reader: asyncio.StreamReader, rx: _Rx, timeout: float, stop: Callable[[], bool] = lambda: False
) -> bool:
    """Read until EOF (True), ``stop()`` or ``timeout`` (False)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not stop():
        left = deadline - loop.time()
        if left <= 0:
            return False
        try:
            data = await asyncio.wait_for(reader.read(1 << 16), left)
        except TimeoutError:
            return False
        if not data:
            return True
        rx.feed(data)
    return False


async def run_case(port: int, case: FuzzCase, keep_sent: bool = False) -> Outcome:
    """Open a connection, send ``case``, read until the router closes or a timeout."""
    rx = _Rx()
    sent = bytearray()
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(LOOPBACK, port), CONNECT_TIMEOUT)
    except (OSError, TimeoutError) as exc:
        return Outcome(case.seed, case.strategy, "connect-failed", False, f"cannot connect: {exc!r}")
    transport = writer.transport
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    kind = ""
    anomaly = ""
    try:
        try:
            sent += case.first
            await _send(writer, case.first, case.chunk)
            if case.handshake:
                eof = await _read_until(reader, rx, HANDSHAKE_TIMEOUT, lambda: rx.ack is not None)
                if rx.ack is None:
                    kind = _close_kind(rx, "eof" if eof else "no-initack")
                    if not eof and rx.close_reason is None:
                        anomaly = "the router did not answer a valid InitSyn"
                    return Outcome(
                        case.seed, case.strategy, kind, False, anomaly, bytes(sent) if keep_sent else b"", len(sent)
                    )
                rest = case.after_init_ack(Negotiated.of(rx.ack))
                sent += rest
                await _send(writer, rest, case.chunk)
            if case.finish == "abort":
                kind = "abort"
            elif case.finish == "wait":
                eof = await _read_until(reader, rx, WAIT_TIMEOUT)
                kind = _close_kind(rx, "eof" if eof else "open")
            else:
                writer.write_eof()
                eof = await _read_until(reader, rx, EOF_TIMEOUT)
                kind = _close_kind(rx, "eof" if eof else "hang")
                if not eof:
                    anomaly = f"the router did not close within {EOF_TIMEOUT} s of our EOF"
        except TimeoutError:  # (an OSError too: first)
            kind = "hang"
            anomaly = f"the router did not read our input within {EOF_TIMEOUT} s"
        except OSError:  # reset, broken pipe, not connected: the router closed first
            kind = _close_kind(rx, "reset")
    finally:
        transport.abort()  # RST: no TIME_WAIT on our side
    return Outcome(case.seed, case.strategy, kind, rx.opened, anomaly, bytes(sent) if keep_sent else b"", len(sent))


@dataclass
class Report:
    inputs: int = 0
    skipped: int = 0  # cases the ``skip`` predicate left out
    seconds: float = 0.0
    bytes_sent: int = 0
    established: int = 0
    by_kind: Counter[str] = field(default_factory=Counter)
    by_strategy: Counter[str] = field(default_factory=Counter)
    anomalies: list[Outcome] = field(default_factory=list)
    #: Log records with a traceback/exception, with the seeds run around them.
    problems: list[tuple[str, list[int]]] = field(default_factory=list)
    health_checks: int = 0
    health_failures: list[str] = field(default_factory=list)
    #: Entities no open session holds, seen at several health checks in a row, with the
    #: seeds started before they were first seen.
    leaks: list[tuple[Leftover, list[int]]] = field(default_factory=list)
    #: The last seeds started (at most RECENT_SEEDS), oldest first.
    recent: list[int] = field(default_factory=list)
    router_died: bool = False

    @property
    def rate(self) -> float:
        return self.inputs / self.seconds if self.seconds > 0 else 0.0


async def fuzz(
    router: Router,
    seeds: Iterable[int],
    *,
    concurrency: int = 16,
    seconds: float = 20.0,
    watch: LogWatch | None = None,
    health: HealthyClients | None = None,
    health_every: float = 3.0,
    progress: Callable[[Report], None] | None = None,
    progress_every: float = 10.0,
    skip: Callable[[FuzzCase], bool] = lambda case: False,
    leak_checks: int = 4,
) -> Report:
    """Run cases (``concurrency`` connections at a time) until ``seeds`` or ``seconds`` run out.

    With ``health``, every ``health_every`` seconds the healthy clients are checked and the
    router's declared entities are read from its admin space: one held by no open session
    at ``leak_checks`` checks in a row is a leak (fuzz sessions last well under that).
    """
    report = Report()
    loop = asyncio.get_running_loop()
    start = loop.time()
    deadline = start + seconds
    it = iter(seeds)
    recent: deque[int] = deque(maxlen=RECENT_SEEDS)  # the last seeds started, for triage
    stop = False

    def next_case() -> FuzzCase | None:
        nonlocal stop
        while not stop and loop.time() < deadline:
            seed = next(it, None)
            if seed is None:
                stop = True
                return None
            case = make_case(seed)
            if not skip(case):
                return case
            report.skipped += 1
        return None

    async def worker() -> None:
        nonlocal stop
        while (case := next_case()) is not None:
            recent.append(case.seed)
            out = await run_case(router.port, case)
            report.inputs += 1
            report.bytes_sent += out.nbytes
            report.established += out.established
            report.by_kind[out.kind] += 1
            report.by_strategy[case.strategy] += 1
            if out.anomaly:
                report.anomalies.append(out)
                if not router.alive():
                    report.router_died = True
                    stop = True

    streaks: dict[tuple[str, str, frozenset[str]], tuple[int, list[int]]] = {}
    reported: set[tuple[str, str, frozenset[str]]] = set()

    async def check_leaks(health: HealthyClients) -> None:
        orphans = await asyncio.to_thread(health.orphans, ROUTER_ID)
        if orphans is None:
            return
        for o in list(streaks):
            if o not in orphans:
                del streaks[o]
        for o in orphans - reported:
            count, window = streaks.get(o, (0, list(recent)))
            streaks[o] = (count + 1, window)
            if count + 1 >= leak_checks:
                reported.add(o)
                kind, key, holders = o
                what = f"{kind} {key!r} held by {sorted(holders) or 'nobody'}, with no open session"
                report.leaks.append((Leftover(what, holders), window))

    async def monitor() -> None:
        next_health = loop.time() + health_every
        next_progress = loop.time() + progress_every
        while not stop and loop.time() < deadline:
            await asyncio.sleep(0.5)
            if watch is not None:
                found = watch.poll()
                if found:
                    window = list(recent)
                    report.problems.extend((p, window) for p in found)
            if not router.alive():
                report.router_died = True
                return
            now = loop.time()
            if health is not None and now >= next_health:
                problem = await asyncio.to_thread(health.check)
                report.health_checks += 1
                if problem:
                    report.health_failures.append(f"at {now - start:.1f} s: {problem}")
                await check_leaks(health)
                next_health = loop.time() + health_every
            if progress is not None and now >= next_progress:
                report.seconds = now - start
                progress(report)
                next_progress = now + progress_every

    workers = [asyncio.create_task(worker()) for _ in range(concurrency)]
    mon = asyncio.create_task(monitor())
    try:
        await asyncio.gather(*workers)
    finally:
        stop = True
        for w in workers:
            w.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        # not cancelled: a health check in its thread finishes (bounded) before we go on
        await asyncio.gather(mon, return_exceptions=True)
    report.seconds = loop.time() - start
    report.recent = list(recent)
    if watch is not None:
        await asyncio.sleep(0.3)  # the last closes are logged
        found = watch.poll()
        report.problems.extend((p, list(recent)) for p in found)
    report.router_died = report.router_died or not router.alive()
    return report


async def triage(
    router: Router,
    seeds: Sequence[int],
    watch: LogWatch,
    *,
    settle: float = 0.05,
    seconds: float = 120.0,
    max_found: int = 1,
) -> list[tuple[int, str]]:
    """Replay ``seeds`` one at a time, newest first; the seeds after which the log shows a
    problem (at most ``max_found``, within ``seconds``)."""
    watch.poll()
    found: list[tuple[int, str]] = []
    deadline = time.monotonic() + seconds
    for seed in reversed(list(dict.fromkeys(seeds))):
        if not router.alive() or time.monotonic() > deadline or len(found) >= max_found:
            break
        await run_case(router.port, make_case(seed))
        await asyncio.sleep(settle)
        problems = watch.poll()
        if problems:
            found.append((seed, problems[0]))
    return found


async def replay(port: int, seed: int) -> tuple[FuzzCase, Outcome]:
    """Run one seed and keep every byte sent (for a bug report)."""
    case = make_case(seed)
    return case, await run_case(port, case, keep_sent=True)


def describe(case: FuzzCase, outcome: Outcome) -> str:
    """A reproducer: the seed, how it ended, and the bytes sent (hex)."""
    stream = corpus()[case.stream].name
    head = f"seed {case.seed}: {case.strategy} (stream {stream}, {case.whatami}, chunk {case.chunk}, "
    lines = [head + f"finish {case.finish}) -> {outcome.kind}"]
    if case.handshake:
        lines.append(f"  InitSyn batch: {case.first.hex()}")
        lines.append(f"  then (OpenSyn with the router's cookie + the rest): {outcome.sent[len(case.first) :].hex()}")
    else:
        lines.append(f"  bytes: {outcome.sent.hex()}")
    return "\n".join(lines)
