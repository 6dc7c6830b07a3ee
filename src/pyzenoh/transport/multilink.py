"""Which of a session's links a message takes, when it has several (zenoh's multilink,
``transport/unicast/max_links`` above 1; the handshake is security/multilink.py).

zenoh's ``select`` (transport/unicast/universal/tx.rs) prefers a link whose reliability
and priority range both match the message, then one whose reliability matches, then the
first. Links here have no priority ranges (an endpoint's ``prio=`` is not implemented),
so: the first link whose reliability is the message's, else the first link. A udp/ link
is best effort; every other kind is reliable.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

from pyzenoh.transport.tcp import TcpLink


class HasProtocol(Protocol):
    protocol: str


L = TypeVar("L", bound=HasProtocol)

#: The only best-effort link kind.
BEST_EFFORT_PROTOCOLS = frozenset({"udp"})


def choose_link(links: Sequence[L], reliable: bool) -> L:
    """The link of ``links`` (first: the session's first link) a message takes."""
    for link in links:
        if (link.protocol not in BEST_EFFORT_PROTOCOLS) is reliable:
            return link
    return links[0]


def share_sequence_numbers(joining: TcpLink, first: TcpLink) -> None:
    """A link joining a session counts in the session's sequence numbers, as zenoh keeps
    them per transport: it shares the first link's counters (each channel goes on one
    link, chosen by :func:`choose_link`)."""
    a, b = joining.link, first.link
    if a is not None and b is not None and a.s.mask == b.s.mask:
        a.s.tx_sn = b.s.tx_sn
        a.s.rx_last = b.s.rx_last
