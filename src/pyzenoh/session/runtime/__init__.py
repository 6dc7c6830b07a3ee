"""Runs a :class:`~pyzenoh.session.core.SessionCore` over TCP links in an asyncio loop.

A client has one link, to a router, and reconnects when it is lost; a peer listens on
``listen/endpoints`` and has a link per node it connected to or accepted (each a face of
the core). When links are dialled, retried and given up: :mod:`pyzenoh.session.connector`.

Both user APIs sit on this: the asyncio API calls it from its own loop, the sync API runs
the loop in a background thread and hands work over with :meth:`Runtime.submit` (ordered,
non-blocking) or :meth:`Runtime.call` (waits for the result). All protocol state is only
ever touched from the loop thread.

:class:`Runtime` is made of one class per concern, each in a module named for it; they
all share the fields of :class:`.state.RuntimeBase`:

* :mod:`.state` -- the fields, the link configuration, background tasks, limits;
* :mod:`.opening` -- listening, dialling ``connect/endpoints`` or scouting, a failed open;
* :mod:`.dialling` -- one dial, each endpoint in turn, the retry backoff, redialling;
* :mod:`.links` -- link events: established links as faces, received messages, closes;
* :mod:`.gossip` -- dialling the peers that gossip names (autoconnect);
* :mod:`.pump` -- the core's output to links and sinks, flow control, the core's timer;
* :mod:`.handoff` -- work handed to the loop from other threads, waiting for room;
* :mod:`.responder` -- replies from queries answered on any thread;
* :mod:`.closing` -- closing, or dropping the connections.
"""

from __future__ import annotations

from pyzenoh.session.runtime.closing import Closing
from pyzenoh.session.runtime.gossip import GOSSIP_DIAL_DELAY_S, Gossip
from pyzenoh.session.runtime.handoff import R
from pyzenoh.session.runtime.opening import Opening
from pyzenoh.session.runtime.responder import Responding
from pyzenoh.session.runtime.state import DEFAULT_ENDPOINT, DIAL_ERRORS, MAX_PENDING_OPS

__all__ = ["DEFAULT_ENDPOINT", "DIAL_ERRORS", "GOSSIP_DIAL_DELAY_S", "MAX_PENDING_OPS", "R", "Runtime"]


class Runtime(Opening, Gossip, Closing, Responding):
    """One session's event-loop side: core, link, timer, delivery and flow control (its
    fields and constructor: :class:`.state.RuntimeBase`)."""
