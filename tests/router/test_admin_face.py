"""The admin space as a face of a real (unstarted) daemon, or of one faked with just what it
reads: its queryable, the replies and RESPONSE_FINAL a query gets, the keys a selector
reaches, the mesh state read from the core; no sockets (``pyzenoh.router.admin``'s
face and answers).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from pyzenoh.codec import (
    Declare,
    DeclareSubscriber,
    DeclareToken,
    Encoding,
    NetworkMessage,
    Put,
    Query,
    Reply,
    Request,
    Response,
    ResponseFinal,
    WhatAmI,
    WireExpr,
    ZenohId,
)
from pyzenoh.router.admin import ADMIN_QUERYABLE_ID, AdminSpace
from pyzenoh.router.config import RouterConfig
from pyzenoh.router.daemon import RouterDaemon, RouterStats
from pyzenoh.router.state import DaemonFace
from pyzenoh.routing import RoutingStats, Send
from pyzenoh.routing.network import Network
from tests.router.admin_measured import (
    MEASURED_DOT_ALONE,
    MEASURED_DOT_PAIR,
    MEASURED_ROUTER_KEYS,
    MEASURED_ROUTER_WEIGHT,
    B,
    R,
)


@dataclass
class LocalClient:
    """A local face of the daemon standing for a client session."""

    daemon: RouterDaemon
    received: list[NetworkMessage] = field(default_factory=list)
    face: int = 0

    def __post_init__(self) -> None:
        self.face = self.daemon.add_local_face(ZenohId(0xC0FFEE), self._sink, WhatAmI.CLIENT, name="test")

    def _sink(self, send: Send) -> None:
        self.received.append(send.message)

    def send(self, msg: NetworkMessage) -> None:
        self.daemon.local_input(self.face, msg)


def test_admin_face_answers_through_the_core() -> None:
    daemon = RouterDaemon(RouterConfig(listen=("tcp/127.0.0.1:7447",)))
    admin = AdminSpace(daemon)
    admin.attach()
    admin.attach()  # idempotent
    client = LocalClient(daemon)
    client.send(Declare(DeclareSubscriber(1, WireExpr(0, "demo/s", True))))
    client.send(Declare(DeclareToken(2, WireExpr(0, "demo/t", True))))
    z = str(daemon.zid)
    client.send(Request(7, WireExpr(0, "@/**", True), Query(), qos=13))
    responses = [m for m in client.received if isinstance(m, Response)]
    finals = [m for m in client.received if isinstance(m, ResponseFinal)]
    keys = {m.wire_expr.suffix for m in responses}
    assert keys == {
        f"@/{z}/router",
        f"@/{z}/router/metrics",
        f"@/{z}/router/linkstate/north",
        f"@/{z}/router/linkstate/south:0:peer",
        f"@/{z}/router/subscriber/demo/s",
        f"@/{z}/router/token/demo/t",
    }
    assert [f.request_id for f in finals] == [7]
    for m in responses:
        assert m.request_id == 7 and m.qos == 13 and m.timestamp is None
        assert m.responder is not None and (m.responder.zid, m.responder.eid) == (daemon.zid, 1)
    by_key: dict[str, Put] = {}
    for m in responses:
        assert isinstance(m.body, Reply) and isinstance(m.body.body, Put)
        by_key[m.wire_expr.suffix] = m.body.body
    sub = by_key[f"@/{z}/router/subscriber/demo/s"]
    assert sub.encoding == Encoding.from_str("application/json")
    assert json.loads(sub.payload) == {"routers": [z], "peers": [], "clients": ["c0ffee"]}
    info = json.loads(by_key[f"@/{z}/router"].payload)
    assert list(info) == MEASURED_ROUTER_KEYS and info["sessions"] == []  # local faces are no sessions
    assert info["locators"] == []  # not started: no listener yet
    # A query on another admin key: only the final.
    client.received.clear()
    client.send(Request(8, WireExpr(0, f"@/{z}/router/queryable/**", True), Query()))
    assert client.received == [ResponseFinal(8)]
    # detach withdraws the queryable: the router answers with the final alone.
    admin.detach()
    admin.detach()
    client.received.clear()
    client.send(Request(9, WireExpr(0, f"@/{z}/router", True), Query()))
    assert client.received == [ResponseFinal(9)]
    assert admin.stats.errors == 0


class FakeNetwork:
    def dot(self) -> str:
        return MEASURED_DOT_PAIR

    def route_successors(self) -> list[tuple[str, str, str]]:
        return [(R, B, B), (B, B, B)]


def fake_daemon(**core: Any) -> Any:
    """Just what AdminSpace uses: a local face's calls on the daemon, and a read-only view
    with what RouterView promises."""
    sent: list[tuple[int, NetworkMessage]] = []
    faces: dict[int, Any] = {}

    def add_local_face(zid: ZenohId, sink: Callable[[Send], None], whatami: WhatAmI, name: str) -> int:
        faces[99] = DaemonFace(99, None, zid, whatami, sink)
        return 99

    link = SimpleNamespace(local_address=("::1", 7447), remote_address=("::1", 50000), protocol="tcp")
    faces[1] = DaemonFace(1, link, ZenohId.from_str(B), WhatAmI.ROUTER)  # type: ignore[arg-type]
    core_faces = {1: SimpleNamespace(zid=ZenohId.from_str(B), whatami=WhatAmI.ROUTER, subs={}, qabls={}, tokens={})}
    # The core's mesh state defaults to a router without router links.
    network = core.get("network", Network(ZenohId.from_str(R), WhatAmI.ROUTER))
    view = SimpleNamespace(
        zid=ZenohId.from_str(R),
        config=SimpleNamespace(metadata=None),
        stats=RouterStats(),
        routing_stats=RoutingStats(),
        faces=lambda: faces,
        core_faces=lambda: core_faces,
        face_acl=lambda face: None,
        key_of=lambda face, msg, incoming: None,
        router_entities=core.get("router_entities", lambda kind: {}),
        linkstate_dot=network.dot,
        route_successors=network.route_successors,
        locators=lambda: ["tcp/[::1]:7447"],
        access_control=lambda: None,
        groups=lambda: (),
    )
    return SimpleNamespace(
        view=view,
        sent=sent,
        add_local_face=add_local_face,
        local_input=lambda face, msg: sent.append((face, msg)),
        remove_local_face=lambda face: faces.pop(face, None),
    )


def test_mesh_state_is_read_from_the_core() -> None:
    daemon = fake_daemon(
        router_entities=lambda kind: {"demo/s": [ZenohId.from_str(B)]} if kind == "subscriber" else {},
        network=FakeNetwork(),
    )
    admin = AdminSpace(daemon)
    admin.attach()
    assert daemon.sent[0][1].body.wire_expr.suffix == f"@/{R}/router/**"
    assert daemon.sent[0][1].body.entity_id == ADMIN_QUERYABLE_ID and not daemon.sent[0][1].body.complete
    replies = {k: p for k, _, p in admin.replies(f"@/{R}/router/**")}
    assert json.loads(replies[f"@/{R}/router/subscriber/demo/s"]) == {"routers": [B], "peers": [], "clients": []}
    assert replies[f"@/{R}/router/linkstate/north"].decode() == MEASURED_DOT_PAIR
    assert json.loads(replies[f"@/{R}/router/route/successor/src/{R}/dst/{B}"]) == B
    info = json.loads(replies[f"@/{R}/router"])
    assert info["locators"] == ["tcp/[::1]:7447"]
    assert info["sessions"] == [
        {
            "links": [{"dst": "tcp/[::1]:50000", "src": "tcp/[::1]:7447"}],
            "peer": B,
            "region": "north",
            "shm": False,
            "weight": MEASURED_ROUTER_WEIGHT,
            "whatami": "router",
        }
    ]
    # Without router links: the router alone in its graph, no successors.
    alone = AdminSpace(fake_daemon())
    assert {k for k, _, _ in alone.replies(f"@/{R}/router/linkstate/north")} == {f"@/{R}/router/linkstate/north"}
    alone_replies = {k: p for k, _, p in alone.replies(f"@/{R}/router/**")}
    assert alone_replies[f"@/{R}/router/linkstate/north"].decode() == MEASURED_DOT_ALONE
    assert list(alone.replies(f"@/{R}/router/route/**")) == []


def test_selector_matching() -> None:
    admin = AdminSpace(fake_daemon())
    admin.attach()

    def keys(sel: str) -> set[str]:
        return {k.replace(R, "Z") for k, _, _ in admin.replies(sel)}

    # Each as the real router answered it.
    assert keys(f"@/{R}/router/*") == {"@/Z/router/metrics"}
    assert keys("@/*/router") == {"@/Z/router"}
    assert keys(f"@/{R}/router/linkstate") == set()
    assert keys(f"@/{R}/router/linkstate/north/**") == {"@/Z/router/linkstate/north"}
    assert keys(f"@/{R}/router/metrics/**") == {"@/Z/router/metrics"}
    assert keys(f"@/{R}/router/querier/**") == set()
    assert keys(f"@/{B}/router/**") == set()
