"""The fields of a link, and the plumbing its parts share.

:class:`LinkBase` holds everything a link knows: its :class:`State`, the values the
handshake negotiates, the transmit queue and SNs, the per-channel receive SNs and
reassembly buffers (:class:`ReassemblyBudget` bounds them over many links), the lease
and keepalive times. Its methods are the ones every part uses: writing one transport
message as its own batch, and ending the link (which releases what reassembly held).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from enum import Enum

from pyzenoh.codec import (
    BatchReader,
    Close,
    InitAck,
    InitSyn,
    KeepAlive,
    OpenAck,
    OpenSyn,
    WhatAmI,
    ZenohId,
)
from pyzenoh.codec.batch import LENGTH_PREFIX
from pyzenoh.errors import CloseReason, UsageError
from pyzenoh.security.multilink import AcceptorMultiLink, OpenerMultiLink
from pyzenoh.security.usrpwd import AcceptorAuth, OpenerAuth
from pyzenoh.transport.link.config import (
    MAX_BATCH_SIZE,
    NUM_PRIORITIES,
    LinkConfig,
    Role,
    sn_mask,
)
from pyzenoh.transport.link.events import Established, Event, LinkClosed
from pyzenoh.transport.link.qos import LinkQos

log = logging.getLogger(__name__)


def close_batch(out: bytearray, start: int) -> None:
    """Fill in the length prefix at ``out[start]`` (two bytes reserved there) of the batch
    written after it: batches are written straight into a link's output."""
    n = len(out) - start - LENGTH_PREFIX
    out[start] = n & 0xFF
    out[start + 1] = n >> 8


class State(Enum):
    INIT_SENT = "init-sent"  # opener: waiting for InitAck
    OPEN_SENT = "open-sent"  # opener: waiting for OpenAck
    WAIT_INIT = "wait-init"  # acceptor: waiting for InitSyn
    WAIT_OPEN = "wait-open"  # acceptor: waiting for OpenSyn
    ESTABLISHED = "established"
    CLOSED = "closed"


class ReassemblyBudget:
    """Bytes of unfinished fragmented messages that the links sharing it may hold in all.

    A router gives one to all its links, so that a few links sending fragments they never
    finish cannot exhaust its memory: the link whose fragment would go over is closed.
    """

    __slots__ = ("limit", "used")

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise UsageError("a reassembly budget must be >= 1 byte")
        self.limit = limit
        self.used = 0


class _Defrag:
    """Reassembly state of one (priority, reliability) channel."""

    __slots__ = ("active", "buf", "discarding", "next_sn", "since")

    def __init__(self) -> None:
        self.buf = bytearray()
        self.next_sn = -1
        self.active = False
        self.discarding = False
        self.since = 0.0  # when its latest fragment arrived

    def reset(self) -> None:
        self.buf = bytearray()
        self.active = False
        self.discarding = False


def _channel(priority: int, reliable: bool) -> int:
    return priority * 2 + (1 if reliable else 0)


class LinkState:
    """The fields of a :class:`~pyzenoh.transport.link.Link` and the plumbing its parts
    share (see the module docstring). An opener writes its InitSyn as it is made."""

    def __init__(
        self,
        config: LinkConfig,
        role: Role,
        now: float,
        *,
        random_bytes: Callable[[int], bytes] = os.urandom,
        keep_raw: bool = True,
        reassembly_budget: ReassemblyBudget | None = None,
    ) -> None:
        self.config = config
        self.budget = reassembly_budget
        self.role = role
        self.random_bytes = random_bytes
        self.keep_raw = keep_raw
        self.reader = BatchReader(MAX_BATCH_SIZE)
        self.out = bytearray()
        self.state = State.WAIT_INIT
        self.peer: Established | None = None
        self.close_event: LinkClosed | None = None
        self.handshake_deadline: float | None = now + config.handshake_timeout_s
        # negotiated values, final once ESTABLISHED
        self.batch_size = config.batch_size
        self.max_payload = config.batch_size - LENGTH_PREFIX
        self.resolution = config.resolution
        self.mask = sn_mask(config.resolution)
        self.qos = config.qos
        #: the link's negotiated QoS (transport/link/qos.py); None: off
        self.link_qos: LinkQos | None = None
        self.patch = config.patch
        # compression, negotiated in Init; batches carry the header once ESTABLISHED
        self.compression = False
        self.rx_compress = False
        self.tx_compress = False
        #: Bytes at the head of _out written before compression started (the OpenAck).
        self.raw_until = 0
        self.cookie = b""
        self.peer_zid: ZenohId | None = None
        self.peer_whatami: WhatAmI | None = None
        self.opener_auth = OpenerAuth(config.usrpwd)
        self.acceptor_auth: AcceptorAuth | None = None
        #: The MultiLink extension of a link we accept, when both sides offer it.
        self.acceptor_multilink: AcceptorMultiLink | None = None
        #: ... and of a link we open, when this node allows several links per session.
        self.opener_multilink = OpenerMultiLink(config.multilink) if config.multilink is not None else None
        # transmit side
        # Runs of consecutive messages with the same (priority, reliability), in send order.
        self.pending: list[tuple[int, bool, list[bytes]]] = []
        self.pending_bytes = 0
        self.tx_sn: list[int] = [0] * (NUM_PRIORITIES * 2)
        self.own_isn = 0
        self.sent_since_keepalive = False
        self.keepalive_interval = config.lease_ms / 1000.0 / config.keepalives_per_lease
        self.keepalive_deadline: float | None = None
        # receive side
        self.rx_last: list[int] = [0] * (NUM_PRIORITIES * 2)
        self.defrag: list[_Defrag] = [_Defrag() for _ in range(NUM_PRIORITIES * 2)]
        self.defrag_bytes = 0  # held by unfinished messages, over every channel
        self.lease_s = 0.0
        self.last_rx = now

    @property
    def is_established(self) -> bool:
        return self.state is State.ESTABLISHED

    @property
    def is_closed(self) -> bool:
        return self.state is State.CLOSED

    def emit(self, message: InitSyn | InitAck | OpenSyn | OpenAck | Close | KeepAlive) -> None:
        """Write one transport message as its own batch."""
        out = self.out
        start = len(out)
        out += b"\x00\x00"
        message.write(out)
        close_batch(out, start)

    def defrag_reset(self, d: _Defrag) -> None:
        held = len(d.buf)
        if held:
            self.defrag_bytes -= held
            if self.budget is not None:
                self.budget.used -= held
        d.reset()

    def closed(self, reason: int, by_peer: bool, detail: str, auth_failed: bool = False) -> LinkClosed:
        self.state = State.CLOSED
        self.pending = []
        self.pending_bytes = 0
        for d in self.defrag:
            self.defrag_reset(d)
        self.close_event = LinkClosed(reason, by_peer, detail, auth_failed)
        return self.close_event

    def fail(self, reason: int, detail: str, events: list[Event], auth_failed: bool = False) -> None:
        """Close from our side: queue CLOSE(reason) and report it."""
        if self.state is State.CLOSED:
            return
        log.debug(
            "closing link (%s): %s",
            CloseReason(reason).name if reason in CloseReason._value2member_map_ else reason,
            detail,
        )
        self.emit(Close(reason))
        events.append(self.closed(reason, False, detail, auth_failed))
