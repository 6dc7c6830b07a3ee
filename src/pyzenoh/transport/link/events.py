"""What a link reports to its caller: :class:`Established`, :class:`Received`,
:class:`ReceivedRun`, :class:`ReceivedPush` and :class:`LinkClosed` (together,
:data:`Event`)."""

from __future__ import annotations

from dataclasses import dataclass

from pyzenoh.codec import NetworkMessage, WhatAmI, ZenohId
from pyzenoh.dataplane import PushFields, PushRun, push_of
from pyzenoh.transport.link.qos import LinkQos


@dataclass(frozen=True, slots=True)
class Established:
    """The handshake finished; everything negotiated with the peer."""

    zid: ZenohId
    whatami: WhatAmI
    lease_ms: int  # the peer's lease: silence longer than this closes the link
    batch_size: int  # negotiated, prefix included
    resolution: int
    qos: bool
    patch: int
    initial_sn: int  # the peer's
    own_initial_sn: int
    #: The user name the peer authenticated with (usrpwd), None without authentication.
    username: str | None = None
    #: Batches are lz4-compressed (both sides asked for it).
    compression: bool = False
    #: The peer's proven MultiLink public key (encoded): its links carrying the same key
    #: are links of one session. None: the peer did not offer it or we do not allow it.
    multilink: bytes | None = None
    #: The link's negotiated priority range and reliability (None: QoS off; both None in
    #: it: not set), transport/link/qos.py.
    link_qos: LinkQos | None = None


# Not frozen: built for every message routed, and a frozen dataclass's __init__ costs
# three times as much. Treat it as immutable all the same.
@dataclass(slots=True)
class Received:
    """One network message from the peer, with its bytes as received."""

    message: NetworkMessage
    raw: bytes
    reliable: bool
    priority: int


# Not frozen: built for every message routed, and a frozen dataclass's __init__ costs
# three times as much. Treat it as immutable all the same.
@dataclass(slots=True)
class ReceivedRun:
    """Several PUSHes from the peer that differ only in their payload (see
    :class:`~pyzenoh.dataplane.PushRun`), in one FRAME; only with
    :attr:`LinkConfig.push_runs`."""

    run: PushRun
    reliable: bool
    priority: int


# Not frozen: built for every message routed (see Received).
@dataclass(slots=True)
class ReceivedPush:
    """A batch that was one FRAME holding one common-shape PUSH, not decoded (only with
    :attr:`LinkConfig.lone_pushes`): the batch, where the PUSH starts in it, and its fields
    as :func:`~pyzenoh.dataplane.scan_push` found them (offsets into ``batch``).
    A router forwards it from these bytes; :meth:`received` is what the link reports
    without ``lone_pushes``."""

    batch: bytes
    at: int
    fields: PushFields
    reliable: bool
    priority: int

    def received(self) -> Received:
        """The same message as a decoded :class:`Received` (raw bytes kept)."""
        return Received(push_of(self.fields, self.batch), self.batch[self.at :], self.reliable, self.priority)


@dataclass(frozen=True, slots=True)
class LinkClosed:
    """The link is over. ``by_peer``: the peer sent CLOSE or the connection dropped.

    ``auth_failed``: the handshake ended on usrpwd authentication: the acceptor refused
    the peer's credentials (or their absence), or the opener's credentials were refused
    or the peer would not check them. ``detail`` says which, never with a password.
    """

    reason: int
    by_peer: bool
    detail: str = ""
    auth_failed: bool = False


Event = Established | Received | ReceivedRun | ReceivedPush | LinkClosed
