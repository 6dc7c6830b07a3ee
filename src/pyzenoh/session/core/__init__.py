"""Sans-IO session logic of a Zenoh client or peer (zenoh-wire.md 6) over its links ("faces").

:class:`SessionCore` is fed network messages (:meth:`SessionCore.on_message`) and API
calls (``put``, ``declare_subscriber``, ``get`` ...), always with the current time when
time matters. It never does I/O: the network messages it wants sent pile up in
:attr:`SessionCore.outbox`, and what user code must receive piles up in
:attr:`SessionCore.deliveries` as ``(sink, item)`` pairs (``item is END`` closes the
sink). The runtime (:mod:`pyzenoh.session.runtime`) drains both after every call.

It behaves like a 1.10.2 client: one per-link id counter shared by subscribers,
queryables, tokens and interests; one D_SUBSCRIBER per distinct key; publishers send a
CurrentFuture K|S INTEREST and, once the router answered it with D_FINAL, only publish
on that key while a matching remote subscriber is known (write-side filtering); gets end
at RESPONSE_FINAL or with a synthesised ``ERR "Timeout"``; replies whose key does not
intersect the query are dropped unless ``_anyke`` is set.

Faces: a client has one (its router), a peer one per link (routers, and peers it connected
to or accepted). A face opened later, or again after its link was lost (reconnection),
gets the session's whole state at once: key expressions, the interests (router faces),
subscribers, queryables and tokens, then D_FINAL(0) to a peer as 1.10.2 peers do. A lost
face takes what it declared with it (token DELETEs, matching False) and ends the gets
that waited on it. Peer faces get no interests: a peer sends its declarations unasked,
then D_FINAL(0); from then on data and queries go to it only where it declared a
matching subscriber or queryable (before that, everything goes). A peer also forwards
between its clients and its other links (:mod:`.forwarding`).

:class:`SessionCore` is its state (:class:`.state.CoreState`, the tables every rule reads)
and one object per region, each in its own module and built with the state and the
regions it calls:

* :mod:`.state`: the records, the core's fields and the plumbing every region uses;
* :mod:`.matching`: which local entities and faces a key reaches, matching status;
* :mod:`.pubsub`: subscribers, publishers, puts and received PUSHes;
* :mod:`.queries`: queryables, queriers, gets and their replies;
* :mod:`.liveliness`: tokens, liveliness subscribers and gets;
* :mod:`.faces`: faces opening (state replay) and lost, the session closing;
* :mod:`.forwarding`: what a peer relays between its clients and its other links;
* :mod:`.dispatch`: received messages to their region, declarations, interests, timers.
"""

from __future__ import annotations

from pyzenoh.codec import WhatAmI, ZenohId
from pyzenoh.codec.transport import PRIORITY_DATA as PRIORITY_DATA
from pyzenoh.session import types as t
from pyzenoh.session.core.dispatch import Dispatch
from pyzenoh.session.core.faces import Faces
from pyzenoh.session.core.forwarding import Forwarding
from pyzenoh.session.core.liveliness import Liveliness
from pyzenoh.session.core.matching import Matching
from pyzenoh.session.core.pubsub import PubSub
from pyzenoh.session.core.queries import Queries
from pyzenoh.session.core.state import (
    END,
    LOCAL_AND_REMOTE,
    MAX_CACHE_KEYS,
    PRIORITY_CONTROL,
    REMOTE_ONLY,
    SESSION_LOCAL,
    TIMEOUT_PAYLOAD,
    CoreState,
    SampleBatch,
)
from pyzenoh.session.samples import PRIORITIES

__all__ = [
    "END",
    "LOCAL_AND_REMOTE",
    "MAX_CACHE_KEYS",
    "PRIORITY_CONTROL",
    "PRIORITY_DATA",
    "REMOTE_ONLY",
    "SESSION_LOCAL",
    "TIMEOUT_PAYLOAD",
    "SampleBatch",
    "SessionCore",
]

#: The name this table had here before it moved to :mod:`pyzenoh.session.samples`.
_PRIORITIES = PRIORITIES


class SessionCore(CoreState):
    """The protocol state of one session over its faces (see the module docstring): the
    state, the regions, and the session's operations, each done by its region."""

    def __init__(
        self,
        zid: ZenohId,
        mode: WhatAmI,
        responder: t.Responder,
        *,
        query_timeout_s: float = 10.0,
    ) -> None:
        super().__init__(zid, mode, responder, query_timeout_s=query_timeout_s)
        self.matching = Matching(self)
        self.forwarding = Forwarding(self, self.matching)
        self.pubsub = PubSub(self, self.matching, self.forwarding)
        self.queries = Queries(self, self.matching, self.forwarding)
        self.liveliness = Liveliness(self)
        self.face_rules = Faces(self, self.liveliness, self.matching, self.queries, self.forwarding)
        self.dispatch = Dispatch(self, self.liveliness, self.matching, self.pubsub, self.queries, self.forwarding)
        # dispatch
        self.handle_timer = self.dispatch.handle_timer
        self.next_deadline = self.dispatch.next_deadline
        self.on_message = self.dispatch.on_message
        # matching
        self.add_matching_listener = self.matching.add_matching_listener
        self.add_querier_matching_listener = self.matching.add_querier_matching_listener
        self.has_local_subscriber = self.matching.has_local_subscriber
        self.publisher_matching = self.matching.publisher_matching
        self.querier_matching = self.matching.querier_matching
        self.remove_matching_listener = self.matching.remove_matching_listener
        self.remove_querier_matching_listener = self.matching.remove_querier_matching_listener
        # pubsub
        self.declare_publisher = self.pubsub.declare_publisher
        self.declare_subscriber = self.pubsub.declare_subscriber
        self.on_push_run = self.pubsub.on_push_run
        self.put = self.pubsub.put
        self.put_encoded_run = self.pubsub.put_encoded_run
        self.subscriber_wire_id = self.pubsub.subscriber_wire_id
        self.undeclare_publisher = self.pubsub.undeclare_publisher
        self.undeclare_subscriber = self.pubsub.undeclare_subscriber
        # queries
        self.cancel_get = self.queries.cancel_get
        self.declare_querier = self.queries.declare_querier
        self.declare_queryable = self.queries.declare_queryable
        self.get = self.queries.get
        self.query_finalize = self.queries.query_finalize
        self.query_reply = self.queries.query_reply
        self.queryable_wire_id = self.queries.queryable_wire_id
        self.undeclare_querier = self.queries.undeclare_querier
        self.undeclare_queryable = self.queries.undeclare_queryable
        # liveliness
        self.cancel_liveliness_get = self.liveliness.cancel_liveliness_get
        self.declare_liveliness_subscriber = self.liveliness.declare_liveliness_subscriber
        self.declare_token = self.liveliness.declare_token
        self.liveliness_get = self.liveliness.liveliness_get
        self.undeclare_liveliness_subscriber = self.liveliness.undeclare_liveliness_subscriber
        self.undeclare_token = self.liveliness.undeclare_token
        # faces
        self.add_info_listener = self.face_rules.add_info_listener
        self.close = self.face_rules.close
        self.face_lost = self.face_rules.face_lost
        self.has_face = self.face_rules.has_face
        self.on_established = self.face_rules.on_established
        self.remove_info_listener = self.face_rules.remove_info_listener
        self.select_face = self.face_rules.select_face
