"""The handshake (zenoh-wire.md 2.3): InitSyn, InitAck (with a random cookie), OpenSyn,
OpenAck; what the two sides negotiate (the smaller resolution, batch size and patch,
QoS only if both offer it), usrpwd authentication (:mod:`pyzenoh.security.usrpwd`) and
the initial SNs. A CLOSE during the handshake is read as what the peer most likely
refused.
"""

from __future__ import annotations

import hashlib
import hmac

from pyzenoh.codec import InitAck, InitSyn, OpenAck, OpenSyn, WhatAmI, ZenohId
from pyzenoh.codec.batch import LENGTH_PREFIX
from pyzenoh.codec.compression import BATCH_HEADER_LEN
from pyzenoh.codec.transport import PROTOCOL_VERSION
from pyzenoh.errors import CloseReason, DecodeError
from pyzenoh.security.usrpwd import NONCE_LEN, AcceptorAuth
from pyzenoh.transport.link.config import (
    MAX_BATCH_SIZE,
    MIN_BATCH_SIZE,
    NUM_PRIORITIES,
    PATCH_LEVEL,
    Role,
    sn_mask,
)
from pyzenoh.transport.link.events import Established, Event, LinkClosed
from pyzenoh.transport.link.state import LinkBase, State

#: Bytes of random cookie an acceptor hands out in InitAck.
COOKIE_LEN = 24


def initial_sn(my_zid: ZenohId, other_zid: ZenohId, mask: int) -> int:
    """The deterministic initial SN real nodes use (zenoh-wire.md 2.4)."""
    digest = hashlib.shake_128(my_zid.to_wire() + other_zid.to_wire()).digest(4)
    return int.from_bytes(digest, "little") & mask


class Handshake(LinkBase):
    """Opening a link, in either role, up to :class:`Established`."""

    def _check_version(self, version: int) -> None:
        if version != PROTOCOL_VERSION:
            raise DecodeError(f"unsupported protocol version 0x{version:02x}")

    def _check_pair(self, peer: WhatAmI) -> None:
        if self.config.whatami is WhatAmI.CLIENT and peer is WhatAmI.CLIENT:
            raise DecodeError("client-client links are not allowed")

    def _on_init_syn(self, msg: InitSyn, events: list[Event]) -> None:
        if self.role is not Role.ACCEPTOR or self.state is not State.WAIT_INIT:
            raise DecodeError("unexpected InitSyn")
        self._check_version(msg.version)
        self._check_pair(msg.whatami)
        cfg = self.config
        # each 2-bit field: the smaller of the two resolutions
        res = 0
        for shift in (0, 2):
            res |= min((cfg.resolution >> shift) & 3, (msg.resolution >> shift) & 3) << shift
        self._resolution = res
        self._mask = sn_mask(res)
        self._set_batch_size(min(cfg.batch_size, msg.batch_size, MAX_BATCH_SIZE))
        self._qos = cfg.qos and msg.qos
        self._patch = min(cfg.patch, msg.patch or 0, PATCH_LEVEL)
        self._peer_zid = msg.zid
        self._peer_whatami = msg.whatami
        self._cookie = self._random_bytes(COOKIE_LEN)
        nonce = int.from_bytes(self._random_bytes(NONCE_LEN), "little") if cfg.usrpwd is not None else 0
        self._acceptor_auth = AcceptorAuth(cfg.usrpwd, nonce)
        self._acceptor_auth.on_init_syn(msg.auth)
        self._compression = cfg.compression and msg.compression
        # never ack Shm or LowLatency: we implement neither
        self._emit(
            InitAck(
                zid=cfg.zid,
                whatami=cfg.whatami,
                resolution=res,
                batch_size=self._batch_size,
                qos=self._qos,
                patch=self._patch if msg.patch is not None else None,
                compression=self._compression,
                cookie=self._cookie,
                auth=self._acceptor_auth.init_ack(),
            )
        )
        self.state = State.WAIT_OPEN

    def _on_init_ack(self, msg: InitAck, events: list[Event]) -> None:
        if self.role is not Role.OPENER or self.state is not State.INIT_SENT:
            raise DecodeError("unexpected InitAck")
        self._check_version(msg.version)
        self._check_pair(msg.whatami)
        cfg = self.config
        for shift in (0, 2):
            if (msg.resolution >> shift) & 3 > (cfg.resolution >> shift) & 3:
                raise DecodeError(f"InitAck resolution 0x{msg.resolution:02x} exceeds ours")
        if msg.lowlatency or (msg.compression and not cfg.compression):
            raise DecodeError(
                "InitAck enables LowLatency/Compression, which we did not offer", -1, CloseReason.UNSUPPORTED
            )
        self._compression = msg.compression
        self._resolution = msg.resolution
        self._mask = sn_mask(msg.resolution)
        self._set_batch_size(min(cfg.batch_size, msg.batch_size))
        self._qos = cfg.qos and msg.qos
        self._patch = min(cfg.patch, msg.patch or 0)
        self._peer_zid = msg.zid
        self._peer_whatami = msg.whatami
        self._opener_auth.on_init_ack(msg.auth)
        self._own_isn = initial_sn(cfg.zid, msg.zid, self._mask)
        self._emit(
            OpenSyn(
                lease_ms=cfg.lease_ms, initial_sn=self._own_isn, cookie=msg.cookie, auth=self._opener_auth.open_syn()
            )
        )
        self.state = State.OPEN_SENT

    def _on_open_syn(self, msg: OpenSyn, now: float, events: list[Event]) -> None:
        if self.role is not Role.ACCEPTOR or self.state is not State.WAIT_OPEN:
            raise DecodeError("unexpected OpenSyn")
        if not hmac.compare_digest(msg.cookie, self._cookie):
            raise DecodeError("OpenSyn carries a bad cookie")
        assert self._peer_zid is not None and self._acceptor_auth is not None
        username = self._acceptor_auth.on_open_syn(msg.auth)
        self._own_isn = initial_sn(self.config.zid, self._peer_zid, self._mask)
        self._emit(
            OpenAck(lease_ms=self.config.lease_ms, initial_sn=self._own_isn, auth=self._acceptor_auth.open_ack())
        )
        self._establish(msg.lease_ms, msg.initial_sn, now, events, username)

    def _on_open_ack(self, msg: OpenAck, now: float, events: list[Event]) -> None:
        if self.role is not Role.OPENER or self.state is not State.OPEN_SENT:
            raise DecodeError("unexpected OpenAck")
        self._opener_auth.on_open_ack(msg.auth)
        self._establish(msg.lease_ms, msg.initial_sn, now, events)

    def _set_batch_size(self, size: int) -> None:
        if size < MIN_BATCH_SIZE:
            raise DecodeError(f"batch size {size} is too small")
        self._batch_size = size
        self._max_payload = size - LENGTH_PREFIX

    def _establish(
        self, peer_lease_ms: int, peer_isn: int, now: float, events: list[Event], username: str | None = None
    ) -> None:
        if peer_isn > self._mask:
            raise DecodeError(f"initial SN {peer_isn} exceeds the SN resolution")
        if peer_lease_ms == 0:
            raise DecodeError("zero lease")
        assert self._peer_zid is not None and self._peer_whatami is not None
        # (a datagram's batch has no prefix: the whole batch size is payload)
        self._reader.set_max_batch_size(self._batch_size + (0 if self.config.streamed else LENGTH_PREFIX))
        self._tx_sn = [self._own_isn] * (NUM_PRIORITIES * 2)
        self._rx_last = [(peer_isn - 1) & self._mask] * (NUM_PRIORITIES * 2)
        self._lease_s = peer_lease_ms / 1000.0
        self._last_rx = now
        self._handshake_deadline = None
        self._keepalive_deadline = now + self._keepalive_interval
        self._sent_since_keepalive = False
        self.state = State.ESTABLISHED
        if self._compression:
            # every batch after the handshake has the header byte (zenoh reconfigures the
            # link's batches once Open is done); it takes a byte of each batch's room
            self._rx_compress = self._tx_compress = True
            self._raw_until = len(self._out)
            self._max_payload -= BATCH_HEADER_LEN
        self.peer = Established(
            zid=self._peer_zid,
            whatami=self._peer_whatami,
            lease_ms=peer_lease_ms,
            batch_size=self._batch_size,
            resolution=self._resolution,
            qos=self._qos,
            patch=self._patch,
            initial_sn=peer_isn,
            own_initial_sn=self._own_isn,
            username=username,
            compression=self._compression,
        )
        events.append(self.peer)

    def _peer_close(self, reason: int) -> LinkClosed:
        """The peer sent CLOSE: during the handshake, say what it most likely refused."""
        detail = f"peer sent CLOSE({reason})"
        if self.role is Role.OPENER and self.state is State.OPEN_SENT and self._opener_auth.presents:
            user = self._opener_auth.user
            return self._closed(
                reason,
                True,
                f"{detail} in reply to our usrpwd credentials: "
                f"the peer refused user {user!r} (wrong user or password?)",
                True,
            )
        if self.role is Role.OPENER and self.state is State.INIT_SENT and reason == CloseReason.GENERIC:
            detail += " in reply to our InitSyn (does the peer require usrpwd credentials?)"
        return self._closed(reason, True, detail)
