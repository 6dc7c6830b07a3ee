"""What a link announces and enforces: 1.10.2's limits and defaults, the two roles,
:class:`LinkConfig`, and the SN resolution (zenoh-wire.md 2)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from pyzenoh.codec import WhatAmI, ZenohId
from pyzenoh.codec.transport import (
    DEFAULT_RESOLUTION,
    PRIORITY_DATA,  # noqa: F401 (re-exported)
)
from pyzenoh.errors import UsageError
from pyzenoh.security.multilink import MultiLinkKey
from pyzenoh.security.usrpwd import UsrPwd
from pyzenoh.transport.link.qos import NO_LINK_QOS, LinkQos

#: Default lease announced in OPEN (1.10.2 default).
DEFAULT_LEASE_MS = 10_000
#: KEEPALIVEs sent per own lease period when idle (1.10.2 default).
KEEPALIVES_PER_LEASE = 4
#: open_timeout / accept_timeout of 1.10.2.
DEFAULT_HANDSHAKE_TIMEOUT_S = 10.0
#: Largest batch a TCP link can carry, the 2-byte length prefix included.
MAX_BATCH_SIZE = 0xFFFF
#: Reassembled messages larger than this are discarded (1.10.2 max_message_size).
DEFAULT_MAX_MESSAGE_SIZE = 1 << 30
#: An unfinished fragmented message that gets no fragment for this long is dropped.
DEFAULT_REASSEMBLY_TIMEOUT_S = 10.0
#: The smallest batch size we accept from a peer: a FRAME header plus a few bytes.
MIN_BATCH_SIZE = 64
PATCH_LEVEL = 1
NUM_PRIORITIES = 8

# Resolution code (2 bits) -> SN mask; the SN must fit a bounded number of VLE bytes.
_SN_MASKS = (0x7F, 0x3FFF, 0x0FFF_FFFF, 0xFFFF_FFFF)


def sn_mask(resolution: int) -> int:
    """The frame SN mask for a resolution byte (bits 0-1 are the frame SN code)."""
    return _SN_MASKS[resolution & 0x03]


class Role(Enum):
    OPENER = "opener"
    ACCEPTOR = "acceptor"


@dataclass(frozen=True, slots=True)
class LinkConfig:
    """What this side announces and enforces."""

    zid: ZenohId
    whatami: WhatAmI
    lease_ms: int = DEFAULT_LEASE_MS
    keepalives_per_lease: int = KEEPALIVES_PER_LEASE
    batch_size: int = MAX_BATCH_SIZE
    resolution: int = DEFAULT_RESOLUTION
    qos: bool = True
    patch: int = PATCH_LEVEL
    handshake_timeout_s: float = DEFAULT_HANDSHAKE_TIMEOUT_S
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
    reassembly_timeout_s: float = DEFAULT_REASSEMBLY_TIMEOUT_S
    #: usrpwd authentication (security/usrpwd.py): the credentials presented when this
    #: side opens, the users required when it accepts. None: no authentication.
    usrpwd: UsrPwd | None = None
    #: Hand runs of same-shape PUSHes on as one :class:`ReceivedRun` each (a router routes
    #: them together) instead of one :class:`Received` per message.
    push_runs: bool = False
    #: With push_runs: runs may hold timestamped PUSHes (what a session gets from a router).
    stamped_runs: bool = False
    #: Hand a batch that is one FRAME of one common-shape PUSH on undecoded, as a
    #: :class:`ReceivedPush` (a router forwards it from its bytes: every ping-pong message).
    lone_pushes: bool = False
    #: Offer (opener) or accept (acceptor) lz4 batch compression (codec/compression.py);
    #: on only when both sides ask for it (zenoh's transport/unicast/compression/enabled).
    compression: bool = False
    #: False on datagram links (udp/): a batch is a whole datagram, no length prefix, so
    #: the peer may send the full negotiated batch size (zenoh's non-streamed links).
    streamed: bool = True
    #: The acceptor asks its owner before the OpenAck whether this peer may open a link
    #: (a close reason refuses it: CLOSE goes instead of the OpenAck, as zenohd answers a
    #: second link from a node it has a session with). A peer refused after its OpenAck
    #: takes it as a lost link and dials again at once; refused here it waits its retry.
    #: Called with the peer's zid, kind and proven MultiLink key (None without one).
    open_gate: Callable[[ZenohId, WhatAmI, bytes | None], int | None] | None = None
    #: The priority range and reliability this side gives the link (an endpoint's
    #: ``prio``/``rel`` metadata; transport/link/qos.py), negotiated when ``qos`` is on.
    link_qos: LinkQos = NO_LINK_QOS
    #: This node's MultiLink key (security/multilink.py) when it accepts several links per
    #: session (``transport/unicast/max_links`` above 1); None: one link per session.
    multilink: MultiLinkKey | None = None

    def __post_init__(self) -> None:
        if not MIN_BATCH_SIZE <= self.batch_size <= MAX_BATCH_SIZE:
            raise UsageError(f"batch size {self.batch_size} out of {MIN_BATCH_SIZE}..{MAX_BATCH_SIZE}")
        if self.lease_ms <= 0 or self.keepalives_per_lease <= 0:
            raise UsageError("lease and keepalives per lease must be positive")
        if self.resolution & ~0x0F:
            raise UsageError(f"resolution 0x{self.resolution:02x} has reserved bits")
