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
matching subscriber or queryable (before that, everything goes).

:class:`SessionCore` is made of one class per region, each in its own module (each
region builds on those it uses; all share the fields of :class:`.state.CoreState`):

* :mod:`.state`: the records, the core's fields and the plumbing every region uses;
* :mod:`.matching`: which local entities and faces a key reaches, matching status;
* :mod:`.pubsub`: subscribers, publishers, puts and received PUSHes;
* :mod:`.queries`: queryables, queriers, gets and their replies;
* :mod:`.liveliness`: tokens, liveliness subscribers and gets;
* :mod:`.faces`: faces opening (state replay) and lost, the session closing;
* :mod:`.dispatch`: received messages to their region, declarations, interests, timers.
"""

from __future__ import annotations

from pyzenoh.codec.transport import PRIORITY_DATA as PRIORITY_DATA
from pyzenoh.session.core.dispatch import Dispatch
from pyzenoh.session.core.faces import Faces
from pyzenoh.session.core.state import (
    END,
    LOCAL_AND_REMOTE,
    MAX_CACHE_KEYS,
    PRIORITY_CONTROL,
    REMOTE_ONLY,
    SESSION_LOCAL,
    TIMEOUT_PAYLOAD,
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


class SessionCore(Dispatch, Faces):
    """The protocol state of one session over its faces (see the module docstring)."""
