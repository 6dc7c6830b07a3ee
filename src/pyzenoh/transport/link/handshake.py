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
from pyzenoh.security.multilink import CHALLENGE_LEN, AcceptorMultiLink
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
from pyzenoh.transport.link.qos import from_exts, negotiate
from pyzenoh.transport.link.state import LinkState, State

#: Bytes of random cookie an acceptor hands out in InitAck.
COOKIE_LEN = 24


def initial_sn(my_zid: ZenohId, other_zid: ZenohId, mask: int) -> int:
    """The deterministic initial SN real nodes use (zenoh-wire.md 2.4)."""
    digest = hashlib.shake_128(my_zid.to_wire() + other_zid.to_wire()).digest(4)
    return int.from_bytes(digest, "little") & mask


class Handshake:
    """Opening a link, in either role, up to :class:`Established`: what the link's state
    says was negotiated. An opener writes its InitSyn as it is made."""

    __slots__ = ("s",)

    def __init__(self, s: LinkState) -> None:
        self.s = s
        if s.role is Role.OPENER:
            cfg = s.config
            s.state = State.INIT_SENT
            s.emit(
                InitSyn(
                    zid=cfg.zid,
                    whatami=cfg.whatami,
                    resolution=cfg.resolution,
                    batch_size=cfg.batch_size,
                    qos=cfg.qos and cfg.link_qos.plain,
                    qos_link=None if not cfg.qos or cfg.link_qos.plain else cfg.link_qos.to_u64(),
                    patch=cfg.patch if cfg.patch else None,
                    compression=cfg.compression,
                    auth=s.opener_auth.init_syn(),
                    multilink=None if s.opener_multilink is None else s.opener_multilink.init_syn(),
                )
            )

    def _check_version(self, version: int) -> None:
        if version != PROTOCOL_VERSION:
            raise DecodeError(f"unsupported protocol version 0x{version:02x}")

    def _check_pair(self, peer: WhatAmI) -> None:
        s = self.s
        if s.config.whatami is WhatAmI.CLIENT and peer is WhatAmI.CLIENT:
            raise DecodeError("client-client links are not allowed")

    def on_init_syn(self, msg: InitSyn, events: list[Event]) -> None:
        s = self.s
        if s.role is not Role.ACCEPTOR or s.state is not State.WAIT_INIT:
            raise DecodeError("unexpected InitSyn")
        self._check_version(msg.version)
        self._check_pair(msg.whatami)
        cfg = s.config
        # each 2-bit field: the smaller of the two resolutions
        res = 0
        for shift in (0, 2):
            res |= min((cfg.resolution >> shift) & 3, (msg.resolution >> shift) & 3) << shift
        s.resolution = res
        s.mask = sn_mask(res)
        self._set_batch_size(min(cfg.batch_size, msg.batch_size, MAX_BATCH_SIZE))
        s.link_qos = negotiate(cfg.link_qos if cfg.qos else None, from_exts(msg.qos, msg.qos_link), acceptor=True)
        s.qos = s.link_qos is not None
        qos, qos_link = s.link_qos.exts() if s.link_qos is not None else (False, None)
        s.patch = min(cfg.patch, msg.patch or 0, PATCH_LEVEL)
        s.peer_zid = msg.zid
        s.peer_whatami = msg.whatami
        s.cookie = s.random_bytes(COOKIE_LEN)
        nonce = int.from_bytes(s.random_bytes(NONCE_LEN), "little") if cfg.usrpwd is not None else 0
        s.acceptor_auth = AcceptorAuth(cfg.usrpwd, nonce)
        s.acceptor_auth.on_init_syn(msg.auth)
        s.compression = cfg.compression and msg.compression
        multilink = None
        if cfg.multilink is not None and msg.multilink is not None:
            s.acceptor_multilink = AcceptorMultiLink(cfg.multilink, s.random_bytes(CHALLENGE_LEN))
            multilink = s.acceptor_multilink.init_ack(msg.multilink)
        # never ack Shm or LowLatency: we implement neither
        s.emit(
            InitAck(
                zid=cfg.zid,
                whatami=cfg.whatami,
                resolution=res,
                batch_size=s.batch_size,
                qos=qos,
                qos_link=qos_link,
                patch=s.patch if msg.patch is not None else None,
                compression=s.compression,
                cookie=s.cookie,
                auth=s.acceptor_auth.init_ack(),
                multilink=multilink,
            )
        )
        s.state = State.WAIT_OPEN

    def on_init_ack(self, msg: InitAck, events: list[Event]) -> None:
        s = self.s
        if s.role is not Role.OPENER or s.state is not State.INIT_SENT:
            raise DecodeError("unexpected InitAck")
        self._check_version(msg.version)
        self._check_pair(msg.whatami)
        cfg = s.config
        for shift in (0, 2):
            if (msg.resolution >> shift) & 3 > (cfg.resolution >> shift) & 3:
                raise DecodeError(f"InitAck resolution 0x{msg.resolution:02x} exceeds ours")
        if msg.lowlatency or (msg.compression and not cfg.compression):
            raise DecodeError(
                "InitAck enables LowLatency/Compression, which we did not offer", -1, CloseReason.UNSUPPORTED
            )
        s.compression = msg.compression
        s.resolution = msg.resolution
        s.mask = sn_mask(msg.resolution)
        self._set_batch_size(min(cfg.batch_size, msg.batch_size))
        s.link_qos = negotiate(cfg.link_qos if cfg.qos else None, from_exts(msg.qos, msg.qos_link), acceptor=False)
        s.qos = s.link_qos is not None
        s.patch = min(cfg.patch, msg.patch or 0)
        s.peer_zid = msg.zid
        s.peer_whatami = msg.whatami
        s.opener_auth.on_init_ack(msg.auth)
        multilink = None if s.opener_multilink is None else s.opener_multilink.open_syn(msg.multilink)
        s.own_isn = initial_sn(cfg.zid, msg.zid, s.mask)
        s.emit(
            OpenSyn(
                lease_ms=cfg.lease_ms,
                initial_sn=s.own_isn,
                cookie=msg.cookie,
                auth=s.opener_auth.open_syn(),
                multilink=multilink,
            )
        )
        s.state = State.OPEN_SENT

    def on_open_syn(self, msg: OpenSyn, now: float, events: list[Event]) -> None:
        s = self.s
        if s.role is not Role.ACCEPTOR or s.state is not State.WAIT_OPEN:
            raise DecodeError("unexpected OpenSyn")
        if not hmac.compare_digest(msg.cookie, s.cookie):
            raise DecodeError("OpenSyn carries a bad cookie")
        assert s.peer_zid is not None and s.peer_whatami is not None and s.acceptor_auth is not None
        username = s.acceptor_auth.on_open_syn(msg.auth)
        multilink = None
        if s.acceptor_multilink is not None:
            s.acceptor_multilink.on_open_syn(msg.multilink)
            multilink = s.acceptor_multilink.peer_key
        gate = s.config.open_gate
        refused = None if gate is None else gate(s.peer_zid, s.peer_whatami, multilink)
        if refused is not None:
            s.fail(refused, f"{s.peer_whatami} {s.peer_zid} refused before the OpenAck", events)
            return
        s.own_isn = initial_sn(s.config.zid, s.peer_zid, s.mask)
        s.emit(
            OpenAck(
                lease_ms=s.config.lease_ms,
                initial_sn=s.own_isn,
                auth=s.acceptor_auth.open_ack(),
                multilink_ack=multilink is not None,
            )
        )
        self._establish(msg.lease_ms, msg.initial_sn, now, events, username, multilink)

    def on_open_ack(self, msg: OpenAck, now: float, events: list[Event]) -> None:
        s = self.s
        if s.role is not Role.OPENER or s.state is not State.OPEN_SENT:
            raise DecodeError("unexpected OpenAck")
        s.opener_auth.on_open_ack(msg.auth)
        multilink = None
        if s.opener_multilink is not None:
            s.opener_multilink.on_open_ack(msg.multilink_ack)
            multilink = s.opener_multilink.peer_key
        self._establish(msg.lease_ms, msg.initial_sn, now, events, multilink=multilink)

    def _set_batch_size(self, size: int) -> None:
        s = self.s
        if size < MIN_BATCH_SIZE:
            raise DecodeError(f"batch size {size} is too small")
        s.batch_size = size
        s.max_payload = size - LENGTH_PREFIX

    def _establish(
        self,
        peer_lease_ms: int,
        peer_isn: int,
        now: float,
        events: list[Event],
        username: str | None = None,
        multilink: bytes | None = None,
    ) -> None:
        s = self.s
        if peer_isn > s.mask:
            raise DecodeError(f"initial SN {peer_isn} exceeds the SN resolution")
        if peer_lease_ms == 0:
            raise DecodeError("zero lease")
        assert s.peer_zid is not None and s.peer_whatami is not None
        # (a datagram's batch has no prefix: the whole batch size is payload)
        s.reader.set_max_batch_size(s.batch_size + (0 if s.config.streamed else LENGTH_PREFIX))
        s.tx_sn = [s.own_isn] * (NUM_PRIORITIES * 2)
        s.rx_last = [(peer_isn - 1) & s.mask] * (NUM_PRIORITIES * 2)
        s.lease_s = peer_lease_ms / 1000.0
        s.last_rx = now
        s.handshake_deadline = None
        s.keepalive_deadline = now + s.keepalive_interval
        s.sent_since_keepalive = False
        s.state = State.ESTABLISHED
        if s.compression:
            # every batch after the handshake has the header byte (zenoh reconfigures the
            # link's batches once Open is done); it takes a byte of each batch's room
            s.rx_compress = s.tx_compress = True
            s.raw_until = len(s.out)
            s.max_payload -= BATCH_HEADER_LEN
        s.peer = Established(
            zid=s.peer_zid,
            whatami=s.peer_whatami,
            lease_ms=peer_lease_ms,
            batch_size=s.batch_size,
            resolution=s.resolution,
            qos=s.qos,
            patch=s.patch,
            initial_sn=peer_isn,
            own_initial_sn=s.own_isn,
            username=username,
            compression=s.compression,
            multilink=multilink,
            link_qos=s.link_qos,
        )
        events.append(s.peer)

    def peer_close(self, reason: int) -> LinkClosed:
        """The peer sent CLOSE: during the handshake, say what it most likely refused."""
        s = self.s
        detail = f"peer sent CLOSE({reason})"
        if s.role is Role.OPENER and s.state is State.OPEN_SENT and s.opener_auth.presents:
            user = s.opener_auth.user
            return s.closed(
                reason,
                True,
                f"{detail} in reply to our usrpwd credentials: "
                f"the peer refused user {user!r} (wrong user or password?)",
                True,
            )
        if s.role is Role.OPENER and s.state is State.INIT_SENT and reason == CloseReason.GENERIC:
            detail += " in reply to our InitSyn (does the peer require usrpwd credentials?)"
        return s.closed(reason, True, detail)
