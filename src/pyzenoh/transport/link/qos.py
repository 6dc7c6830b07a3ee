"""A link's QoS in the handshake (zenoh's ``ext/qos.rs``): on or off, and the priority
range and reliability an endpoint's metadata gives its link (``tcp/HOST:PORT?prio=1-3;rel=1``),
which decide what a session with several links sends on it (transport/multilink.py).

On the wire: plain QoS is the unit extension ``QoS``; a range or a reliability travels
instead as ``QoSLink``, a z64 whose three low bits say what follows: bit 1 a priority
range (start in bits 3-10, end in bits 11-18), bit 2 a reliability (bit 19: reliable);
``0b001`` is QoS with neither. Sending both extensions at once is an error.

Negotiation, as zenoh's: QoS is on only when both sides have it; a range or reliability
set on one side only is taken as it is; set on both, the acceptor takes the opener's
range when it lies within its own and the same reliability (else the link fails), and the
opener checks the acceptor's answer the same way the other round.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyzenoh.errors import CloseReason, DecodeError, UsageError

#: zenoh's priorities: 0 (Control) to 7 (Background).
MAX_PRIORITY = 7


@dataclass(frozen=True, slots=True)
class LinkQos:
    """A side's QoS for one link: ``priorities`` an inclusive (start, end), ``reliable``
    the link's reliability; None: not set."""

    priorities: tuple[int, int] | None = None
    reliable: bool | None = None

    @property
    def plain(self) -> bool:
        return self.priorities is None and self.reliable is None

    def to_u64(self) -> int:
        if self.plain:
            return 0b001
        value = 0
        if self.priorities is not None:
            start, end = self.priorities
            value |= 0b010 | start << 3 | end << 11
        if self.reliable is not None:
            value |= 0b100 | int(self.reliable) << 19
        return value

    def exts(self) -> tuple[bool, int | None]:
        """(the QoS unit extension, the QoSLink value): one of them."""
        return (True, None) if self.plain else (False, self.to_u64())


#: QoS with no range nor reliability of its own (an endpoint without metadata).
NO_LINK_QOS = LinkQos()


def from_metadata(metadata: dict[str, str], where: str) -> LinkQos:
    """An endpoint's ``prio`` (``N`` or ``A-B``) and ``rel`` (``0``/``1``) metadata."""
    priorities = None
    prio = metadata.get("prio")
    if prio is not None:
        first, _, last = prio.partition("-")
        try:
            start, end = int(first), int(last or first)
        except ValueError:
            raise UsageError(f"{where}: prio must be N or A-B with priorities 0-7, got {prio!r}") from None
        if not 0 <= start <= end <= MAX_PRIORITY:
            raise UsageError(f"{where}: prio must be N or A-B with priorities 0-7, got {prio!r}")
        priorities = (start, end)
    reliable = None
    rel = metadata.get("rel")
    if rel is not None:
        if rel not in ("0", "1"):
            raise UsageError(f"{where}: rel must be 0 (best effort) or 1 (reliable), got {rel!r}")
        reliable = rel == "1"
    return LinkQos(priorities, reliable)


def _refused(reason: str) -> DecodeError:
    return DecodeError(f"QoS: {reason}", -1, CloseReason.INVALID)


def from_exts(qos: bool, qos_link: int | None) -> LinkQos | None:
    """The other side's QoS from its extensions (None: QoS off)."""
    if qos and qos_link is not None:
        raise _refused("QoS and QoSLink cannot both be present")
    if qos_link is None:
        return LinkQos() if qos else None
    tag = qos_link & 0b111
    if tag == 0:
        return None
    if tag == 0b001:
        return LinkQos()
    priorities = None
    if tag & 0b010:
        start, end = (qos_link >> 3) & 0xFF, (qos_link >> 11) & 0xFF
        if not start <= end <= MAX_PRIORITY:
            raise _refused(f"bad priority range {start}-{end}")
        priorities = (start, end)
    reliable = bool((qos_link >> 19) & 1) if tag & 0b100 else None
    return LinkQos(priorities, reliable)


def _includes(outer: tuple[int, int], inner: tuple[int, int]) -> bool:
    return outer[0] <= inner[0] and inner[1] <= outer[1]


def negotiate(own: LinkQos | None, other: LinkQos | None, acceptor: bool) -> LinkQos | None:
    """The link's QoS (None: off). The acceptor takes the opener's range within its own;
    the opener keeps its own within the acceptor's answer; a reliability set on both sides
    must agree."""
    if own is None or other is None:
        return None
    priorities = own.priorities or other.priorities
    if own.priorities is not None and other.priorities is not None:
        wide, narrow = (own.priorities, other.priorities) if acceptor else (other.priorities, own.priorities)
        if not _includes(wide, narrow):
            raise _refused(f"priority range {other.priorities} does not fit {own.priorities}")
        priorities = narrow
    reliable = own.reliable if own.reliable is not None else other.reliable
    if own.reliable is not None and other.reliable is not None and own.reliable != other.reliable:
        raise _refused("the two sides set different reliabilities")
    return LinkQos(priorities, reliable)
