"""Which of a session's links a message takes, when it has several (zenoh's multilink,
``transport/unicast/max_links`` above 1; the handshake is security/multilink.py).

zenoh's ``select`` (transport/unicast/universal/tx.rs): the link whose reliability is the
message's and whose priority range holds its priority (the narrowest range of those),
else the first whose reliability is the message's, else the first link. A link's
reliability and range are what its handshake negotiated from the endpoints' ``rel`` and
``prio`` metadata (transport/link/qos.py); without ``rel``, udp/ is best effort and every
other kind reliable.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

from pyzenoh.transport.link.qos import LinkQos
from pyzenoh.transport.tcp import TcpLink


class Choosable(Protocol):
    @property
    def protocol(self) -> str: ...

    @property
    def link_qos(self) -> LinkQos | None: ...


L = TypeVar("L", bound=Choosable)

#: The only best-effort link kind.
BEST_EFFORT_PROTOCOLS = frozenset({"udp"})


def link_reliable(link: Choosable) -> bool:
    qos = link.link_qos
    if qos is not None and qos.reliable is not None:
        return qos.reliable
    return link.protocol not in BEST_EFFORT_PROTOCOLS


def choose_link(links: Sequence[L], reliable: bool, priority: int) -> L:
    """The link of ``links`` (first: the session's first link) a message takes."""
    full: L | None = None
    full_width = 0
    partial: L | None = None
    for link in links:
        if link_reliable(link) is not reliable:
            continue
        qos = link.link_qos
        prios = None if qos is None else qos.priorities
        if prios is not None and prios[0] <= priority <= prios[1]:
            if full is None or prios[1] - prios[0] < full_width:
                full, full_width = link, prios[1] - prios[0]
        elif partial is None:
            partial = link
    return full or partial or links[0]


def share_sequence_numbers(joining: TcpLink, first: TcpLink) -> None:
    """A link joining a session counts in the session's sequence numbers, as zenoh keeps
    them per transport: it shares the first link's counters (each channel goes on one
    link, chosen by :func:`choose_link`)."""
    a, b = joining.link, first.link
    if a is not None and b is not None and a.s.mask == b.s.mask:
        a.s.tx_sn = b.s.tx_sn
        a.s.rx_last = b.s.rx_last
