"""The sans-IO routing core of the pyzenoh router (a stand-in for ``zenohd``).

The core sees *faces* (one per open session, identified by an ``int`` chosen by the
caller) and decoded network messages. It never does I/O and never reads a clock: every
call gets ``now`` (wall-clock seconds, a float) and returns the messages to send.

API
===

.. code-block:: python

    core = RoutingCore(zid, config=RoutingConfig(), observer=None, access_control=None)
    core.add_face(face, zid, whatami, now, subject=None) -> list[Send]  # after OpenAck
    core.handle(face, msg, now, raw=None, reliable=True) -> list[Send]
    core.handle_push_run(face, run, now, reliable=True) -> list[Send]  # a run of PUSHes
    core.forward_lone(face, batch, at, fields, wall) -> list[(face, bytes)] | None
    core.remove_face(face, now)                       -> list[Send]   # closed / lease expired
    core.next_deadline()                              -> float | None
    core.handle_timer(now)                            -> list[Send]

* :class:`Send` ``(face, message, raw, priority, reliable, express, block)``: send
  ``message`` to ``face``. When ``raw`` is not None it is the exact encoding of
  ``message`` (the bytes the message arrived with) and may be sent as is. ``priority``,
  ``express`` and ``block`` come from the message's QoS; declarations are Control/Block.
  Outputs are in the order they must be sent, per destination face.
* ``raw`` passed to :meth:`RoutingCore.handle` is the received encoding of ``msg``;
  ``reliable`` is the channel it arrived on (a routed PUSH keeps it).
* ``forward_lone`` routes a lone PUSH from its received bytes (:mod:`.lanes`): each
  destination face and the bytes of its copy, or None when the lane does not cover the
  message (then nothing was done: call ``handle``). Priority, express and block come
  from the PUSH's QoS, as for a :class:`Send`.
* Bad input from a face never raises anything but :class:`~pyzenoh.errors.PeerError`
  subclasses: messages that cannot be routed are dropped and reported to the observer
  (:class:`Dropped`) and counted in ``core.stats.dropped``; a face going over a cap of
  :class:`RoutingConfig` raises :class:`FaceLimitExceeded` *before* any state changed, and
  the caller must close that link (``exc.close_reason``) and call ``remove_face``.
  ``add_face`` refuses a router claiming our own zid with :class:`UnsupportedFace`; a
  router neighbour's bad link state or NodeId raises a :class:`~pyzenoh.errors.PeerError`
  (close that link). Misuse of the API (unknown
  face, duplicate face) raises :class:`~pyzenoh.errors.UsageError`.
* ``observer`` (optional) is called synchronously with :class:`PushRouted` (resolved key
  and destination faces of every routed PUSH), :class:`QueryRouted` and
  :class:`Dropped` events.
* Call ``handle_timer(now)`` once ``now >= next_deadline()``: it expires queries.
* ``access_control`` (an :class:`~pyzenoh.routing.access_control.AccessControl`, zenohd's
  ``access_control``) filters what enters and leaves every face added with a ``subject``
  (:class:`~pyzenoh.routing.access_control.FaceSubject`: zid, interfaces, link protocol,
  certificate common name, username): denied messages are dropped silently and counted
  per rule, ingress-denied declarations are not registered, egress-denied ones are
  never sent (nor their undeclarations), a denied query or liveliness query is answered
  with its final alone. Decisions are cached per face and, for data, in the route.

Behaviour (eclipse-zenoh 1.10.2 router, zenoh-wire.md section 6)
=================================================================

* Clients and peers are served alike ("broker" mode): nothing is sent after a face
  opens; declarations reach a face only as answers to its interests. Differences for
  peers: ``add_face`` returns the router's gossip LINKSTATE (:mod:`.regions.peers`), their own
  liveliness tokens are not echoed back, the aggregate option is ignored, an INTEREST
  Final forgets what that interest alone had declared, and nothing is routed between two
  peers (they meet directly through gossip, as with zenohd).
* Routers (:mod:`.routers`, :mod:`.network`): LINKSTATE exchange and flooding, one
  shortest-path tree per router, declarations pushed along trees with NodeId, data and
  queries along the entry router's tree; see :mod:`.routers` for the rules.
* Key-expression ids: per face, the ids it declared (D_KEYEXPR) and the ids the router
  declared to it. M = 1 resolves against the sender's table, M = 0 against the
  receiver's. Data and queries are written to each destination with the longest known
  prefix id (the destination's own ids first), else as a full string (scope 0, M = 1).
  Declarations use the non-wild prefix; when the destination has a key-expression
  interest covering it, the router declares its own id first (D_KEYEXPR).
* Interests: Current (tokens only, others ignored), Future and CurrentFuture with K, S,
  Q, T, restricted or not, aggregate or not. Current answers carry the interest id (entity
  id 0 for Current); every accepted interest, Future ones too, is then answered with
  D_FINAL; future changes follow without an interest id until INTEREST Final. Subscribers and queryables of the interested face itself are never
  declared to it; tokens are (clients only).
* Declarations are aggregated per key expression: one declaration per key per face,
  undeclared when no other face holds that key any more. Real routers' omissions are
  mirrored (each checked on the wire against 1.10.2, see
  ``tests/routing/test_wire_differential.py``): the last holder of a queryable key keeps
  the declaration it got from the others (unless they were in the other region:
  clients / peers), and a client holding a token is told that token went when the other
  holder of its key closes (or was a peer), then told again when a new holder comes.
* PUSH goes to every other face with an intersecting subscriber, once per face;
  timestamps are added to unstamped PUTs (HLC, when ``timestamping``); a route cache per
  (source face, scope, suffix, mapping) avoids matching again until a declaration
  changes.
* REQUEST is routed by target (BestMatching: among the clients, and separately among
  the peers, the first face with a complete queryable that includes the key, else all of
  them; All; AllComplete), with a fresh request id per destination.
  Replies come back with the querier's id and a full-string key; one RESPONSE_FINAL
  follows when every destination finished, timed out (ERR "Timeout" first) or went away.
  No destination: RESPONSE_FINAL at once.
"""

from pyzenoh.routing.core import RoutingCore
from pyzenoh.routing.declared import QueryableInfo
from pyzenoh.routing.faces import MAX_KEY_LEN, NORTH
from pyzenoh.routing.hlc import Hlc, ntp64
from pyzenoh.routing.types import (
    MAX_ROUTE_CACHE,
    Dropped,
    FaceLimitExceeded,
    Intercepted,
    PushRouted,
    QueryRouted,
    RoutingConfig,
    RoutingEvent,
    RoutingStats,
    Send,
    UnsupportedFace,
)

__all__ = [
    "MAX_KEY_LEN",
    "MAX_ROUTE_CACHE",
    "NORTH",
    "Dropped",
    "FaceLimitExceeded",
    "Hlc",
    "Intercepted",
    "PushRouted",
    "QueryRouted",
    "QueryableInfo",
    "RoutingConfig",
    "RoutingCore",
    "RoutingEvent",
    "RoutingStats",
    "Send",
    "UnsupportedFace",
    "ntp64",
]
