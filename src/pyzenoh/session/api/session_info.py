"""``Session.info``: the session's id, the zids of its routers and peers, its transports and
links, and listeners of their events (built from the runtime's faces).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from pyzenoh.codec import ZenohId
from pyzenoh.errors import UsageError
from pyzenoh.keyexpr import KeyExpr
from pyzenoh.routing.access_control import interface_names
from pyzenoh.scouting.udp import list_interfaces
from pyzenoh.session import types as t
from pyzenoh.session.api.arguments import CALL_TIMEOUT_S
from pyzenoh.session.api.entities import (
    LinkEventsListener,
    Receiver,
    TransportEventsListener,
)
from pyzenoh.session.handlers import make_sink
from pyzenoh.session.info import Link, LinkEvent, Transport, TransportEvent, locator
from pyzenoh.session.runtime import Runtime
from pyzenoh.transport.link.qos import LinkQos
from pyzenoh.transport.mtu import tcp_mtu
from pyzenoh.transport.multilink import link_reliable


class SessionInfo:
    def __init__(self, rt: Runtime) -> None:
        self._rt = rt

    def zid(self) -> ZenohId:
        return self._rt.zid

    def _zids(self, whatami: Any) -> list[ZenohId]:
        return [p.zid for p in list(self._rt.peers.values()) if p.whatami is whatami]

    def routers_zid(self) -> list[ZenohId]:
        from pyzenoh.codec import WhatAmI

        return self._zids(WhatAmI.ROUTER)

    def peers_zid(self) -> list[ZenohId]:
        from pyzenoh.codec import WhatAmI

        return self._zids(WhatAmI.PEER)

    def transports(self) -> list[Transport]:
        """The session's transports: one per open link (a client's router; a peer's
        routers and peers), and one per member of the multicast groups it joined."""
        rt = self._rt
        if rt.closed:
            return []
        out = [tr for fid in list(rt.peers) if (tr := _face_transport(rt, fid)) is not None]
        for group in list(rt.state.groups):
            out += [Transport(m.zid, m.whatami, False, is_multicast=True) for m in list(group.members.values())]
        return out

    def links(self) -> list[Link]:
        """The session's open links."""
        rt = self._rt
        if rt.closed:
            return []
        out = []
        for fid in list(rt.peers):
            first = rt.links.get(fid)
            for link in [first, *rt.state.extra_links.get(fid, ())]:  # a session's links
                if (ln := _face_link(rt, fid, link)) is not None:
                    out.append(ln)
        return out

    def _listener(
        self, make: Callable[[t.SampleKind, int], Any], history: bool | None, handler: Any, cls: type[Receiver[Any]]
    ) -> Any:
        rt = self._rt
        if rt.closed:
            raise UsageError("the session is closed")
        sink, returned = make_sink(handler, asynchronous=False, dispatcher=rt.dispatcher if rt.threaded else None)
        local = rt.call(lambda: rt.core.add_info_listener(sink, make, bool(history)), CALL_TIMEOUT_S)
        return cls(
            rt, KeyExpr._trusted("@/info"), functools.partial(rt.core.remove_info_listener, local), returned, local
        )

    def declare_transport_events_listener(self, handler: Any = None, *, history: bool | None = None) -> Any:
        """TransportEvents: the open transports (``history``), then every transport
        opening (a reconnection included) or closing."""
        return self._listener(functools.partial(_transport_event, self._rt), history, handler, TransportEventsListener)

    def declare_link_events_listener(self, handler: Any = None, *, history: bool | None = None) -> Any:
        """LinkEvents: the open links (``history``), then every link added or removed."""
        return self._listener(functools.partial(_link_event, self._rt), history, handler, LinkEventsListener)


def _face_transport(rt: Runtime, fid: int) -> Transport | None:
    peer = rt.peers.get(fid)
    return None if peer is None else Transport(peer.zid, peer.whatami, peer.qos)


def _face_link(rt: Runtime, fid: int, link: Any = None) -> Link | None:
    """A face's link (its first unless ``link`` is given) as zenoh's info reports it."""
    peer = rt.peers.get(fid)
    link = rt.links.get(fid) if link is None else link
    if peer is None or link is None:
        return None
    proto = getattr(link, "protocol", "tcp")
    local = getattr(link, "local_address", None)
    transport = getattr(link, "transport", None)
    sock = None if transport is None else transport.get_extra_info("socket")
    mtu = tcp_mtu(sock) if proto == "tcp" else None
    return Link(
        peer.zid,
        locator(proto, local),
        locator(proto, getattr(link, "remote_address", None)),
        peer.batch_size if mtu is None else mtu,
        interfaces=list(interface_names(local[0] if local else None, list_interfaces())),
        auth_identifier=peer.username,
        # zenoh reports a QoS link's priority range (the whole range unless its endpoint
        # set one) and the link's reliability (its kind's unless the endpoint set one)
        priorities=_priorities(getattr(link, "link_qos", None), peer.qos),
        is_streamed=proto != "udp",
        reliability=t.Reliability.RELIABLE if link_reliable(link) else t.Reliability.BEST_EFFORT,
    )


def _priorities(qos: LinkQos | None, on: bool) -> tuple[int, int] | None:
    if qos is not None and qos.priorities is not None:
        return qos.priorities
    return (0, 7) if on else None


def _transport_event(rt: Runtime, kind: t.SampleKind, fid: int) -> TransportEvent | None:
    tr = _face_transport(rt, fid)
    return None if tr is None else TransportEvent(kind, tr)


def _link_event(rt: Runtime, kind: t.SampleKind, fid: int) -> LinkEvent | None:
    ln = _face_link(rt, fid)
    return None if ln is None else LinkEvent(kind, ln)
