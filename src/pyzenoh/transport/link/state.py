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
from pyzenoh.security.usrpwd import AcceptorAuth, OpenerAuth
from pyzenoh.transport.link.config import (
    MAX_BATCH_SIZE,
    NUM_PRIORITIES,
    LinkConfig,
    Role,
    sn_mask,
)
from pyzenoh.transport.link.events import Established, Event, LinkClosed

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


class LinkBase:
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
        self._budget = reassembly_budget
        self.role = role
        self._random_bytes = random_bytes
        self._keep_raw = keep_raw
        self._reader = BatchReader(MAX_BATCH_SIZE)
        self._out = bytearray()
        self.state = State.WAIT_INIT
        self.peer: Established | None = None
        self.close_event: LinkClosed | None = None
        self._handshake_deadline: float | None = now + config.handshake_timeout_s
        # negotiated values, final once ESTABLISHED
        self._batch_size = config.batch_size
        self._max_payload = config.batch_size - LENGTH_PREFIX
        self._resolution = config.resolution
        self._mask = sn_mask(config.resolution)
        self._qos = config.qos
        self._patch = config.patch
        # compression, negotiated in Init; batches carry the header once ESTABLISHED
        self._compression = False
        self._rx_compress = False
        self._tx_compress = False
        #: Bytes at the head of _out written before compression started (the OpenAck).
        self._raw_until = 0
        self._cookie = b""
        self._peer_zid: ZenohId | None = None
        self._peer_whatami: WhatAmI | None = None
        self._opener_auth = OpenerAuth(config.usrpwd)
        self._acceptor_auth: AcceptorAuth | None = None
        # transmit side
        # Runs of consecutive messages with the same (priority, reliability), in send order.
        self._pending: list[tuple[int, bool, list[bytes]]] = []
        self._pending_bytes = 0
        self._tx_sn: list[int] = [0] * (NUM_PRIORITIES * 2)
        self._own_isn = 0
        self._sent_since_keepalive = False
        self._keepalive_interval = config.lease_ms / 1000.0 / config.keepalives_per_lease
        self._keepalive_deadline: float | None = None
        # receive side
        self._rx_last: list[int] = [0] * (NUM_PRIORITIES * 2)
        self._defrag: list[_Defrag] = [_Defrag() for _ in range(NUM_PRIORITIES * 2)]
        self._defrag_bytes = 0  # held by unfinished messages, over every channel
        self._lease_s = 0.0
        self._last_rx = now
        if role is Role.OPENER:
            self.state = State.INIT_SENT
            self._emit(
                InitSyn(
                    zid=config.zid,
                    whatami=config.whatami,
                    resolution=config.resolution,
                    batch_size=config.batch_size,
                    qos=config.qos,
                    patch=config.patch if config.patch else None,
                    compression=config.compression,
                    auth=self._opener_auth.init_syn(),
                )
            )

    @property
    def is_established(self) -> bool:
        return self.state is State.ESTABLISHED

    @property
    def is_closed(self) -> bool:
        return self.state is State.CLOSED

    @property
    def batch_size(self) -> int:
        return self._batch_size

    def _emit(self, message: InitSyn | InitAck | OpenSyn | OpenAck | Close | KeepAlive) -> None:
        """Write one transport message as its own batch."""
        out = self._out
        start = len(out)
        out += b"\x00\x00"
        message.write(out)
        close_batch(out, start)

    def _defrag_reset(self, d: _Defrag) -> None:
        held = len(d.buf)
        if held:
            self._defrag_bytes -= held
            if self._budget is not None:
                self._budget.used -= held
        d.reset()

    def _closed(self, reason: int, by_peer: bool, detail: str, auth_failed: bool = False) -> LinkClosed:
        self.state = State.CLOSED
        self._pending = []
        self._pending_bytes = 0
        for d in self._defrag:
            self._defrag_reset(d)
        self.close_event = LinkClosed(reason, by_peer, detail, auth_failed)
        return self.close_event

    def _fail(self, reason: int, detail: str, events: list[Event], auth_failed: bool = False) -> None:
        """Close from our side: queue CLOSE(reason) and report it."""
        if self.state is State.CLOSED:
            return
        log.debug(
            "closing link (%s): %s",
            CloseReason(reason).name if reason in CloseReason._value2member_map_ else reason,
            detail,
        )
        self._emit(Close(reason))
        events.append(self._closed(reason, False, detail, auth_failed))
