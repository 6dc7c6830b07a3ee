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

import asyncio
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

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
    """A link joining a session sends in the session's sequence numbers, as zenoh keeps
    them per transport: it shares the first link's send counters (each channel goes on
    one link, chosen by :func:`choose_link`). It receives from where the first link is,
    then on its own: a message the peer moved to another link is taken even if that
    link is read before the one it left (zenoh's per-transport check would drop it)."""
    a, b = joining.link, first.link
    if a is not None and b is not None and a.s.mask == b.s.mask:
        a.s.tx_sn = b.s.tx_sn
        a.s.rx_last = list(b.s.rx_last)


#: How long the first link of a new multilink session waits for the node's other links.
GATHER_S = 0.2

Gathered = list[tuple[TcpLink, Any]]


class Gathering:
    """The links of new multilink sessions, held (not read) until all ``max_links`` have
    opened or :data:`GATHER_S` has passed, then handed to ``ready`` together, a reliable
    one first (it becomes the session's first link).

    Why: a node dials its endpoints at once, and the two ends may see its links open in
    different orders. A session that starts on one link and moves a channel to another
    when it joins can have its first messages overtaken on the way: the receiver reads
    the second link first, and drops the earlier sequence numbers that arrive after,
    as zenoh's transport does (in CI a router mesh then lost its first declarations). Held
    until they are all there, the links carry each channel on one link from the start."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        max_links: int,
        ready: Callable[[Gathered], None],
        on_event: Callable[[TcpLink, Any], None],
    ) -> None:
        self.loop = loop
        self.max_links = max_links
        self.ready = ready
        #: where a held link's early events go once ``ready`` opened its session
        self.on_event = on_event
        self._held: dict[tuple[object, bytes], tuple[Gathered, asyncio.TimerHandle]] = {}
        #: what a held link read with its handshake's last message (an opener's OpenAck
        #: can come with the peer's first frames), handed to ``on_event`` once its session
        #: opened
        self._early: dict[TcpLink, list[Any]] = {}

    def offer(self, link: TcpLink, ev: Any) -> bool:
        """Hold ``link`` (Established ``ev``) of a session not open yet: True when held or
        handed on with the others; False: not a multilink session, the caller goes on."""
        if ev.multilink is None or self.max_links < 2:
            return False
        key = (ev.zid, ev.multilink)
        held = self._held.get(key)
        if held is None:
            timer = self.loop.call_later(GATHER_S, self._release, key)
            held = self._held[key] = ([], timer)
        held[0].append((link, ev))
        self._early[link] = []
        link.pause_reading()
        if len(held[0]) >= self.max_links:
            self._release(key)
        return True

    def keep(self, link: TcpLink, event: Any) -> bool:
        """Keep an event of a held link for after its session opens (False: not held)."""
        early = self._early.get(link)
        if early is None:
            return False
        early.append(event)
        return True

    def closed(self, link: TcpLink) -> None:
        """A held link closed before its session opened: it is forgotten."""
        for key, (links, timer) in list(self._held.items()):
            kept = [(lk, ev) for lk, ev in links if lk is not link]
            self._early.pop(link, None)
            if len(kept) != len(links):
                if kept:
                    links[:] = kept
                else:
                    timer.cancel()
                    del self._held[key]

    def _release(self, key: tuple[object, bytes]) -> None:
        held = self._held.pop(key, None)
        if held is None:
            return
        links, timer = held
        timer.cancel()
        links.sort(key=lambda entry: not link_reliable(entry[0]))  # a reliable link first
        self.ready(links)  # opens the session (or closes the links)
        for link, _ in links:
            for event in self._early.pop(link, ()):
                self.on_event(link, event)
            link.resume_reading()

    def close(self) -> None:
        for _, timer in self._held.values():
            timer.cancel()
        self._held.clear()
        self._early.clear()
