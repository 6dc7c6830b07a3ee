"""Runs a :class:`~pyzenoh.session.core.SessionCore` over TCP links in an asyncio loop.

A client has one link, to a router, and reconnects when it is lost; a peer listens on
``listen/endpoints`` and has a link per node it connected to or accepted (each a face of
the core). When links are dialled, retried and given up: :mod:`pyzenoh.session.connector`.

Both user APIs sit on this: the asyncio API calls it from its own loop, the sync API runs
the loop in a background thread and hands work over with :meth:`Runtime.submit` (ordered,
non-blocking) or :meth:`Runtime.call` (waits for the result). All protocol state is only
ever touched from the loop thread.

:class:`Runtime` is its state (:class:`.state.RuntimeState`, what more than one part
reads) and one object per concern, each in a module named for it and built with the
state and the parts it calls:

* :mod:`.state` -- the shared fields: identity, links and peers, listeners, tasks, limits;
* :mod:`.pump` -- the core's output to links and sinks, flow control, the core's timer;
* :mod:`.links` -- link events: established links as faces, received messages, closes;
* :mod:`.dialling` -- one dial, each endpoint in turn, the retry backoff, redialling;
* :mod:`.gossip` -- dialling the peers that gossip names (autoconnect);
* :mod:`.discovery` -- a peer's multicast scouting: answering SCOUTs, dialling what it finds;
* :mod:`.opening` -- listening, dialling ``connect/endpoints`` or scouting, a failed open;
* :mod:`.handoff` -- work handed to the loop from other threads, waiting for room;
* :mod:`.responder` -- replies from queries answered on any thread;
* :mod:`.callbacks` -- the thread that runs sync callbacks;
* :mod:`.closing` -- closing, or dropping the connections.
"""

from __future__ import annotations

import asyncio

from pyzenoh.codec import WhatAmI
from pyzenoh.session.config import Config
from pyzenoh.session.core import SessionCore
from pyzenoh.session.runtime.callbacks import Callbacks
from pyzenoh.session.runtime.closing import Closing
from pyzenoh.session.runtime.dialling import Dialler
from pyzenoh.session.runtime.discovery import MulticastDiscovery
from pyzenoh.session.runtime.gossip import GOSSIP_DIAL_DELAY_S, GossipDials, gossip_autoconnect
from pyzenoh.session.runtime.handoff import Handoff, R
from pyzenoh.session.runtime.intercepting import link_policies
from pyzenoh.session.runtime.links import LinkFaces
from pyzenoh.session.runtime.multicast import GroupLink
from pyzenoh.session.runtime.opening import Opening
from pyzenoh.session.runtime.pump import CorePump
from pyzenoh.session.runtime.responder import QueryResponder
from pyzenoh.session.runtime.state import DEFAULT_ENDPOINT, DIAL_ERRORS, MAX_PENDING_OPS, RuntimeState
from pyzenoh.transport.link import Established
from pyzenoh.transport.tcp import TcpLink

__all__ = ["DEFAULT_ENDPOINT", "DIAL_ERRORS", "GOSSIP_DIAL_DELAY_S", "MAX_PENDING_OPS", "R", "Runtime"]


class Runtime:
    """One session's event-loop side: core, links, timer, delivery and flow control; its
    state, its parts, and the operations the APIs call, each done by its part."""

    def __init__(self, config: Config, loop: asyncio.AbstractEventLoop, *, threaded: bool) -> None:
        s = self.state = RuntimeState(config, loop, threaded=threaded)
        self.config = config
        self.loop = loop
        self.threaded = threaded
        self.zid = s.zid
        self.whatami = s.whatami
        # The core answers queries through this object's query_reply/query_finalize (the
        # responder's, bound below): the responder hands them to the core in the loop.
        self.core = core = SessionCore(s.zid, s.whatami, self, query_timeout_s=config.queries_default_timeout_s)
        s.policies = link_policies(
            {k: config.get(k) for k in ("downsampling", "low_pass_filter", "qos") if config.get(k) is not None}, core
        )
        self.core_pump = CorePump(s, core)
        self.handoff = Handoff(s, self.core_pump)
        self.responder = QueryResponder(s, core, self.handoff)
        self.callbacks = Callbacks(s.zid)
        self.faces = LinkFaces(s, core, self.core_pump)
        self.dialler = Dialler(s, self.faces)
        self.gossip: GossipDials | None = None
        self.discovery: MulticastDiscovery | None = None
        if s.whatami is WhatAmI.PEER:
            dials = GossipDials(s, self.dialler)
            if gossip_autoconnect(config):
                self.gossip = dials
                self.faces.on_gossip = dials.on_gossip
            self.discovery = MulticastDiscovery(s, dials)
        self.opening = Opening(s, self.faces, self.dialler, self.core_pump, self.discovery)
        self.closing = Closing(s, core, self.core_pump, self.handoff, self.callbacks)
        # pump
        self.pump = self.core_pump.pump
        # handoff
        self.submit = self.handoff.submit
        self.call = self.handoff.call
        self.wait_room = self.handoff.wait_room
        self.await_room = self.handoff.await_room
        self.in_loop = s.in_loop
        # responder
        self.query_reply = self.responder.query_reply
        self.query_finalize = self.responder.query_finalize
        # callbacks
        self.dispatcher = self.callbacks.dispatcher
        # opening, closing
        self.connect = self.opening.connect
        self.aclose = self.closing.aclose
        self.abort = self.closing.abort

    @property
    def closed(self) -> bool:
        return self.state.closed

    @property
    def links(self) -> dict[int, TcpLink | GroupLink]:
        """Every open link, by face id."""
        return self.state.links

    @property
    def peers(self) -> dict[int, Established]:
        """The node at the other end of every open link, by face id."""
        return self.state.peers
