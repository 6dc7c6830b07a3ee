"""Where a sample stopped on its way to a subscriber: the mesh audit's one rule (sans-IO,
no Spark). Inputs are what the routers' recordings say: the hops the sample made (each
router it entered, what that router sent it on, what access control denied, what a full
queue dropped) and the router links open at the time, from every recording.

The mesh routes a sample along router links toward the subscriber's router. Of the
routers it reached, the one nearest the subscriber's router (fewest open router links
away) is where it stopped; what that router did with it toward the next router (or, on
the subscriber's router, toward the subscriber's face) says why:

``access_control``  denied on the way in, or on the way out to that face
``interceptor``     dropped by an interceptor (downsampling, low_pass_filter) on the
                    way in, or on the way out to that face
``queue_full``      the router's route listed the face, the send was dropped
``lost_on_link``    sent on a router link, the next router never received it
``link_down``       sent or not, the router link closing within the settle time
                    after the sample; or no open router link led from where it was
                    toward the subscriber's router
``no_route``        the router had no route toward the face
``not_recorded``    the next router on the way is not among the recordings
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

ACCESS_CONTROL = "access_control"
INTERCEPTOR = "interceptor"
QUEUE_FULL = "queue_full"
LOST_ON_LINK = "lost_on_link"
LINK_DOWN = "link_down"
NO_ROUTE = "no_route"
NOT_RECORDED = "not_recorded"


@dataclass(frozen=True, slots=True)
class Hop:
    """What one router's recording says it did with the sample (links are that router's,
    of recorder run ``run``)."""

    router: str
    run: int
    sent: frozenset[int]
    denied: frozenset[int]
    dropped: frozenset[int]
    ingress_denied: bool = False
    intercepted: frozenset[int] = frozenset()
    ingress_intercepted: bool = False


@dataclass(frozen=True, slots=True)
class RouterLink:
    """A router's face to another router: link ``link`` of its run ``run``, open from
    ``open_ns`` until ``close_ns`` (None: still open when the recording ends)."""

    router: str
    run: int
    link: int
    peer: str
    open_ns: int
    close_ns: int | None

    def open_at(self, t_ns: int) -> bool:
        return self.open_ns <= t_ns and (self.close_ns is None or t_ns < self.close_ns)


@dataclass(frozen=True, slots=True)
class Loss:
    """Where a sample stopped: the router, the face or router link (``"A->B"``), why."""

    router: str | None
    link: str | None
    reason: str


class Topology:
    """The router links of every recording, asked for the mesh as it was at a time."""

    def __init__(self, links: Iterable[RouterLink], recorded: Iterable[str]) -> None:
        self.links = tuple(links)
        self.recorded = frozenset(recorded)

    def distances_to(self, target: str, t_ns: int) -> dict[str, int]:
        """Router links away from ``target`` at ``t_ns`` (a link counts when either end
        recorded it open)."""
        near: dict[str, set[str]] = {}
        for x in self.links:
            if x.open_at(t_ns):
                near.setdefault(x.router, set()).add(x.peer)
                near.setdefault(x.peer, set()).add(x.router)
        dist = {target: 0}
        todo = deque([target])
        while todo:
            here = todo.popleft()
            for there in near.get(here, ()):
                if there not in dist:
                    dist[there] = dist[here] + 1
                    todo.append(there)
        return dist

    def toward(self, router: str, t_ns: int, dist: dict[str, int]) -> list[RouterLink]:
        """``router``'s open faces to a router one link nearer the target."""
        here = dist.get(router)
        if here is None:
            return []
        return [x for x in self.links if x.router == router and x.open_at(t_ns) and dist.get(x.peer, here) == here - 1]


def _at_face(hop: Hop, link: int, name: str) -> Loss | None:
    """Why ``hop``'s router did not send on ``link`` (None: it did)."""
    if hop.ingress_denied or link in hop.denied:
        return Loss(hop.router, name, ACCESS_CONTROL)
    if hop.ingress_intercepted or link in hop.intercepted:
        return Loss(hop.router, name, INTERCEPTOR)
    if link in hop.sent:
        return None
    if link in hop.dropped:
        return Loss(hop.router, name, QUEUE_FULL)
    return Loss(hop.router, name, NO_ROUTE)


def where_lost(
    hops: Iterable[Hop],
    target_router: str,
    target_link: int,
    t_ns: int,
    topology: Topology,
    settle_ns: int,
) -> Loss:
    """Where a sample first seen at ``t_ns`` stopped on its way to face ``target_link``
    of ``target_router`` (a subscriber it did not reach). ``hops`` in the order the
    sample reached them (its entry router first); ``settle_ns``: a router link closing
    this soon after ``t_ns`` took the sample down with it."""
    by_router = {h.router: h for h in hops}
    if not by_router:
        return Loss(None, None, NOT_RECORDED)
    last = by_router.get(target_router)
    if last is not None:
        face_name = f"{target_router}#{target_link}"
        why = _at_face(last, target_link, face_name)
        return why if why is not None else Loss(target_router, face_name, LOST_ON_LINK)
    dist = topology.distances_to(target_router, t_ns)
    reached = [r for r in by_router if r in dist]
    if not reached:
        # No open router link led from where it was toward the subscriber's router.
        return Loss(next(iter(by_router)), None, LINK_DOWN)
    nearest = min(reached, key=lambda r: (dist[r], r))
    hop = by_router[nearest]
    found: list[Loss] = []
    for face in topology.toward(nearest, t_ns, dist):
        name = f"{nearest}->{face.peer}"
        closing = face.close_ns is not None and face.close_ns <= t_ns + settle_ns
        why = _at_face(hop, face.link, name)
        if why is None:  # sent, and the next router never had it
            if face.peer not in topology.recorded:
                why = Loss(nearest, name, NOT_RECORDED)
            else:
                why = Loss(nearest, name, LINK_DOWN if closing else LOST_ON_LINK)
        elif why.reason == NO_ROUTE and closing:  # the route went with the link
            why = Loss(nearest, name, LINK_DOWN)
        found.append(why)
    if not found:
        return Loss(nearest, None, NO_ROUTE)
    order = {
        LOST_ON_LINK: 0,
        LINK_DOWN: 1,
        NOT_RECORDED: 2,
        ACCESS_CONTROL: 3,
        INTERCEPTOR: 4,
        QUEUE_FULL: 5,
        NO_ROUTE: 6,
    }
    return min(found, key=lambda loss: order[loss.reason])
