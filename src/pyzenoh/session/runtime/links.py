"""Link events: an established link becomes a face of the core (one link per node), what
it receives goes to the core, and a closed link's face is lost. A peer's locators, as
the node at the other end of a link can reach it, are worked out here.
"""

from __future__ import annotations

import logging

from pyzenoh.codec import NetworkOam
from pyzenoh.errors import CloseReason
from pyzenoh.session.runtime.pump import Pump
from pyzenoh.transport.link import Established, Event, LinkClosed, Received, ReceivedRun
from pyzenoh.transport.tcp import Endpoint, TcpLink

log = logging.getLogger(__name__)


class Links(Pump):
    """A link's events to the core's faces."""

    def _on_link_event(self, link: TcpLink, ev: Event) -> None:
        if isinstance(ev, Received | ReceivedRun):
            if link is not self._cur_link:
                fid = self._fids.get(link)
                if fid is None:
                    return
                self._cur_link = link
                self.core.select_face(fid)
            if isinstance(ev, Received):
                msg = ev.message
                self.core.on_message(msg, self.loop.time())
                if msg.__class__ is NetworkOam and self._autoconnect:
                    self._on_gossip(msg)
            else:
                self.core.on_push_run(ev.run)
            if not self._pump_scheduled:
                self._pump_scheduled = True
                self.loop.call_soon(self.pump)
        elif isinstance(ev, Established):
            if self.closed:
                link.close()
                return
            if any(p.zid == ev.zid for p in self.peers.values()):
                # one link per node, as zenoh's transport/unicast/max_links 1
                log.info("a second link to %s refused", ev.zid)
                link.close(CloseReason.MAX_LINKS)
                return
            fid = self._next_fid
            self._next_fid += 1
            self._fids[link] = fid
            self.links[fid] = link
            self.peers[fid] = ev
            if self.link is None:
                self.link, self.peer = link, ev
            self._cur_link = link
            self.core.on_established(ev, fid, self._locators(link))
            if self._blocked:
                link.pause_reading()
            self.pump()
        elif isinstance(ev, LinkClosed):
            self._link_closed(link, ev)

    def _locators(self, link: TcpLink) -> list[str]:
        """Where this peer listens, as the node at the other end of ``link`` can reach it:
        an unspecified listen address ([::], 0.0.0.0) becomes the link's own address."""
        out: list[str] = []
        local = link.local_address
        for lst in self._listeners:
            for ep in lst.endpoints:
                host = ep.host
                if host in ("::", "0.0.0.0") and local:
                    host = local[0].removeprefix("::ffff:")
                loc = str(Endpoint(host, ep.port, ep.protocol))
                if loc not in out:
                    out.append(loc)
        return out

    def _link_closed(self, link: TcpLink, ev: LinkClosed, dialled: bool = False) -> None:
        fid = self._fids.pop(link, None)
        if fid is None:
            return  # a handshake that failed: the dial or the listener handles it
        if not self.closed:
            # a link we dialled is retried (warning); one a peer accepted just ends
            log.log(
                logging.WARNING if dialled else logging.INFO,
                "session link to %s closed: %s",
                self.peers[fid].zid,
                ev.detail,
            )
        self.close_event = ev
        self.core.face_lost(fid)  # before the face's peer goes: info events are built from it
        del self.links[fid]
        del self.peers[fid]
        if self._cur_link is link:
            self._cur_link = None
        if self.link is link:
            first = next(iter(self.links), None)
            self.link = None if first is None else self.links[first]
            self.peer = None if first is None else self.peers[first]
        if self._blocked and self.link is not None:
            self.link.pause_reading()
        self.pump()
