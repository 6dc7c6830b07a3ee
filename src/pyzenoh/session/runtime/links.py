"""Link events: an established link becomes a face of the core (one link per node), what
it receives goes to the core, and a closed link's face is lost. A peer's locators, as
the node at the other end of a link can reach it, are worked out here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from pyzenoh.codec import NetworkMessage, NetworkOam
from pyzenoh.errors import CloseReason
from pyzenoh.routing.access_control import interface_names
from pyzenoh.scouting.udp import list_interfaces
from pyzenoh.session.core import SessionCore
from pyzenoh.session.runtime.multicast import SessionGroup
from pyzenoh.session.runtime.pump import CorePump
from pyzenoh.session.runtime.state import RuntimeState
from pyzenoh.transport.endpoint import Endpoint
from pyzenoh.transport.link import Established, Event, LinkClosed, Received, ReceivedRun
from pyzenoh.transport.multilink import Gathered, Gathering, share_sequence_numbers
from pyzenoh.transport.tcp import TcpLink

log = logging.getLogger(__name__)


class LinkFaces:
    """A link's events to the core's faces: owns the face id of each link and which link
    the core has selected; changes ``s.links``, ``s.peers``, ``s.link``/``s.peer``."""

    def __init__(self, s: RuntimeState, core: SessionCore, pump: CorePump) -> None:
        self.s = s
        self.core = core
        self.pump = pump
        self._fids: dict[TcpLink, int] = {}
        self._next_fid = 1
        self._cur_link: TcpLink | None = None  # the link whose face the core has selected
        self._held: Gathering | None = None  # links of new multilink sessions (peer mode)
        #: the link states received, to gossip autoconnect (set by the runtime when this
        #: peer dials what gossip names: :mod:`.gossip`, which dials through these events)
        self.on_gossip: Callable[[NetworkOam], None] | None = None

    def is_open(self, link: TcpLink) -> bool:
        """``link`` is some face's (its handshake done, not yet closed)."""
        return link in self._fids

    def on_link_event(self, link: TcpLink, ev: Event) -> None:
        if isinstance(ev, Received | ReceivedRun):
            core = self.core
            if link is not self._cur_link:
                fid = self._fids.get(link)
                if fid is None:
                    if self._held is not None:
                        self._held.keep(link, ev)  # a held link's: handed on once it opens
                    return
                self._cur_link = link
                core.select_face(fid)
            if isinstance(ev, Received):
                msg = ev.message
                policies = self.s.policies
                if policies is not None:
                    kept = policies.ingress(self._fids.get(link, -1), msg, self.s.loop.time())
                    if kept is None:
                        return
                    msg = kept
                core.on_message(msg, self.s.loop.time())
                if isinstance(msg, NetworkOam) and self.on_gossip is not None:
                    self.on_gossip(msg)
            else:
                core.on_push_run(ev.run)
            self.pump.soon()
        elif isinstance(ev, Established):
            self._established(link, ev)
        elif isinstance(ev, LinkClosed):
            self.link_closed(link, ev)

    def _established(self, link: TcpLink, ev: Established) -> None:
        s = self.s
        if s.closed:
            link.close()
            return
        joined = s.joins(ev.zid, ev.multilink)
        if joined is not None:
            self._join(joined, link)
            return
        if s.peer_connected(ev.zid):
            # one session per node (with max_links above 1, its links that prove its key join it)
            log.info("another link to %s refused", ev.zid)
            link.close(CloseReason.MAX_LINKS)
            return
        # a peer's new multilink session opens with its other links (a client dials one)
        if s.config.mode == "peer" and self._gathering().offer(link, ev):
            return
        self._open(link, ev)

    def _gathering(self) -> Gathering:
        if self._held is None:
            self._held = Gathering(self.s.loop, self.s.config.max_links, self._gathered, self.on_link_event)
        return self._held

    def _gathered(self, links: Gathered) -> None:
        (link, ev), *others = links
        if self.s.closed or self.s.peer_connected(ev.zid):
            for other, _ in links:
                other.close(CloseReason.MAX_LINKS)
            return
        self._open(link, ev, [other for other, _ in others])

    def _open(self, link: TcpLink, ev: Established, others: list[TcpLink] | None = None) -> None:
        """A session's face, with its links."""
        s = self.s
        fid = self._next_fid
        self._next_fid += 1
        self._fids[link] = fid
        s.links[fid] = link
        s.peers[fid] = ev
        if s.policies is not None:
            local = link.local_address
            names = interface_names(local[0] if local else None, list_interfaces())
            s.policies.opened(fid, getattr(link, "protocol", "tcp"), tuple(names))
        if s.link is None:
            s.link, s.peer = link, ev
        self._cur_link = link
        for other in others or ():
            self._join(fid, other)
        self.core.on_established(ev, fid, self._locators(link))
        self.pump.pause_if_blocked(link)
        self.pump.pump()

    def _join(self, fid: int, link: TcpLink) -> None:
        """``link`` carries the session of face ``fid`` too (zenoh's multilink)."""
        s = self.s
        first = s.links[fid]
        assert isinstance(first, TcpLink)
        share_sequence_numbers(link, first)
        self._fids[link] = fid
        s.extra_links.setdefault(fid, []).append(link)
        log.info("session link %d to %s opened (%s)", 1 + len(s.extra_links[fid]), s.peers[fid].zid, link.protocol)
        self.pump.pause_if_blocked(link)

    def _leave(self, fid: int, link: TcpLink) -> None:
        """One of a session's links closed while it has others: it goes on over them."""
        s = self.s
        extra = s.extra_links[fid]
        if s.links[fid] is link:
            first = s.links[fid] = extra.pop(0)
            if s.link is link:
                s.link = first
        else:
            extra.remove(link)
        if not extra:
            del s.extra_links[fid]
        if self._cur_link is link:
            self._cur_link = None

    def _link_of(self, fid: int) -> TcpLink | None:
        return next((link for link, f in self._fids.items() if f == fid), None)

    # --- multicast groups ------------------------------------------------------------------

    def add_group(self, group: SessionGroup) -> int:
        """A group joined: its face (every sample goes to it), its link (the group)."""
        s = self.s
        fid = self._next_fid
        self._next_fid += 1
        s.links[fid] = group.link
        s.groups.append(group)
        if s.policies is not None:
            s.policies.opened(fid, "udp", ())
        self.core.on_established(group.established(), fid, (), group=True)
        self.pump.pump()
        return fid

    def on_group_message(self, fid: int, msg: NetworkMessage) -> None:
        """A member's message (keys in full) as the group face's."""
        if self.s.closed or fid not in self.s.links:
            return
        self._cur_link = None  # the core's selected face is no link's now
        if self.s.policies is not None:
            kept = self.s.policies.ingress(fid, msg, self.s.loop.time())
            if kept is None:
                return
            msg = kept
        self.core.select_face(fid)
        self.core.on_message(msg, self.s.loop.time())
        self.pump.soon()

    def _locators(self, link: TcpLink) -> list[str]:
        """Where this peer listens, as the node at the other end of ``link`` can reach it:
        an unspecified listen address ([::], 0.0.0.0) becomes the link's own address."""
        out: list[str] = []
        local = link.local_address
        for lst in self.s.listeners:
            for ep in lst.endpoints:
                host = ep.host
                if host in ("::", "0.0.0.0") and local:
                    host = local[0].removeprefix("::ffff:")
                loc = str(Endpoint(host, ep.port, ep.protocol))
                if loc not in out:
                    out.append(loc)
        return out

    def link_closed(self, link: TcpLink, ev: LinkClosed, dialled: bool = False) -> None:
        fid = self._fids.pop(link, None)
        if fid is None:
            if self._held is not None:
                self._held.closed(link)
            return  # a handshake that failed: the dial or the listener handles it
        s = self.s
        if fid in s.extra_links:  # one of a session's links: the session goes on
            log.info("session link to %s closed: %s (the session goes on)", s.peers[fid].zid, ev.detail)
            self._leave(fid, link)
            return
        if not s.closed:
            # a link we dialled is retried (warning); one a peer accepted just ends
            log.log(
                logging.WARNING if dialled else logging.INFO,
                "session link to %s closed: %s",
                s.peers[fid].zid,
                ev.detail,
            )
        s.close_event = ev
        self.core.face_lost(fid)  # before the face's peer goes: info events are built from it
        if s.policies is not None:
            s.policies.closed(fid)
        del s.links[fid]
        del s.peers[fid]
        if self._cur_link is link:
            self._cur_link = None
        if s.link is link:
            first = next(iter(s.peers), None)  # a link with a peer (not a group's)
            s.link = None if first is None else self._link_of(first)
            s.peer = None if first is None else s.peers[first]
        if s.link is not None:
            self.pump.pause_if_blocked(s.link)
        self.pump.pump()
