"""The router's admin space (``@/<zid>/router/**``) in the shapes of a real 1.10.2 router.

The MEASURED_* constants and the expectations below were read off a real eclipse-zenoh
1.10.2 router (the Python wheel, ``adminspace/enabled: true``) with client and peer
sessions, and off a pair of such routers. Every wait is bounded; every router and
session started here is stopped here.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, TypeVar

import pytest

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
from pyzenoh.errors import UsageError
from pyzenoh.localnet import free_port
from pyzenoh.router.admin import (
    ADMIN_QUERYABLE_ID,
    METRICS_ENCODING,
    AdminSpace,
    SessionInfo,
    admin_enabled,
    dot_graph,
    entity_sources,
    metrics_payload,
    metrics_text,
    parse_parameters,
    router_json,
    stats_families,
)
from pyzenoh.router.config import RouterConfig
from pyzenoh.router.daemon import RouterDaemon, RouterStats
from pyzenoh.routing import RoutingStats, Send
from pyzenoh.routing.network import Network

WAIT = 10.0
T = TypeVar("T")

# --- what the real router answered -------------------------------------------------------------

#: ``@/<zid>/router``: JSON object keys (sorted: serde_json maps) and a session's keys.
MEASURED_ROUTER_KEYS = ["locators", "metadata", "plugins", "sessions", "version", "zid"]
MEASURED_SESSION_KEYS = ["links", "peer", "region", "shm", "weight", "whatami"]
MEASURED_ROUTER_WEIGHT = {"actual_weight": 100, "dst_weight": None, "src_weight": None}
#: ``@/<zid>/router/metrics`` of zenohd (no ``stats`` feature), before gzip; {Z} {V} filled in.
MEASURED_METRICS = (
    "# HELP zenoh_build Zenoh build version.\n"
    "# TYPE zenoh_build info\n"
    'zenoh_build_info{{local_id="{Z}",local_whatami="router",version="{V}"}} 1\n'
    "# EOF\n "
)
MEASURED_METRICS_NO_DESCRIPTORS = (
    'zenoh_build_info{{local_id="{Z}",local_whatami="router",version="{V}"}} 1\n # EOF\n'
)
#: gzip header of the metrics reply: no name, mtime 0, "fastest" flag, OS 255.
MEASURED_GZIP_HEADER = bytes.fromhex("1f8b08000000000004ff")
#: ``linkstate/north`` of router 8c52... linked to 4ac5...
MEASURED_DOT_PAIR = (
    "graph {\n"
    '    0 [ label = "8c52eb840dd3ee4909309fafad39395c" ]\n'
    '    1 [ label = "4ac5dab1d534e84b0f52ba8bebc83554" ]\n'
    '    1 -- 0 [ label = "100.56779317314918" ]\n'
    "}\n"
)
MEASURED_DOT_ALONE = 'graph {\n    0 [ label = "ebe98461f5ab66778c8c6c47bff401e5" ]\n}\n'

R = "ebe98461f5ab66778c8c6c47bff401e5"  # router
B = "8c52eb840dd3ee4909309fafad39395c"  # another router
C1, C2 = "cde4fbad4085c15a435d66b4e1ce3b10", "884059f541d0a2797347c85b4e354609"  # clients
P = "20c404ecdbee965359ddb5467bfd7c2c"  # peer


# --- configuration -----------------------------------------------------------------------------


def test_admin_enabled_by_default_like_zenohd() -> None:
    assert admin_enabled({}) is True
    assert admin_enabled({"adminspace": {}}) is True
    assert admin_enabled({"adminspace": {"enabled": None}}) is True
    assert admin_enabled({"adminspace": {"enabled": True}}) is True
    assert admin_enabled({"adminspace": {"enabled": False, "permissions": {"read": True}}}) is False
    with pytest.raises(UsageError):
        admin_enabled({"adminspace": {"enabled": "no"}})
    with pytest.raises(UsageError):
        admin_enabled({"adminspace": []})


# --- payload builders --------------------------------------------------------------------------


def test_router_json_has_zenohd_layout() -> None:
    sessions = [
        SessionInfo(P, WhatAmI.PEER, (("tcp/127.0.0.1:45083", "tcp/127.0.0.1:58608"),)),
        SessionInfo(C2, WhatAmI.CLIENT, (("tcp/127.0.0.1:45083", "tcp/127.0.0.1:58596"),)),
        SessionInfo(B, WhatAmI.ROUTER, (("tcp/127.0.0.1:36106", "tcp/127.0.0.1:33515"),)),
    ]
    got = router_json(R, ["tcp/127.0.0.1:45083"], sessions, version="v1.10.2-x")
    # The real router's bytes for the same sessions (shm true there: pyzenoh has no shm).
    expected = (
        '{"locators":["tcp/127.0.0.1:45083"],"metadata":null,"plugins":null,"sessions":['
        '{"links":[{"dst":"tcp/127.0.0.1:58608","src":"tcp/127.0.0.1:45083"}],'
        f'"peer":"{P}","region":"south:0:peer","shm":false,"weight":null,"whatami":"peer"}},'
        '{"links":[{"dst":"tcp/127.0.0.1:58596","src":"tcp/127.0.0.1:45083"}],'
        f'"peer":"{C2}","region":"south:0:client","shm":false,"weight":null,"whatami":"client"}},'
        '{"links":[{"dst":"tcp/127.0.0.1:33515","src":"tcp/127.0.0.1:36106"}],'
        f'"peer":"{B}","region":"north","shm":false,'
        '"weight":{"actual_weight":100,"dst_weight":null,"src_weight":null},"whatami":"router"}],'
        f'"version":"v1.10.2-x","zid":"{R}"}}'
    )
    assert got.decode() == expected
    meta = json.loads(router_json(R, [], [], metadata={"name": "edge"}))
    assert meta["metadata"] == {"name": "edge"} and meta["sessions"] == []
    assert meta["version"].startswith("v1.10.2-pyzenoh-")


def test_entity_sources_single_router() -> None:
    local = [
        ("dup/k", WhatAmI.CLIENT, C1),
        ("dup/k", WhatAmI.CLIENT, C1),  # two subscribers of one client: listed once
        ("dup/k", WhatAmI.PEER, P),
        ("dup/k", WhatAmI.CLIENT, C2),
        ("demo/q", WhatAmI.CLIENT, C2),
    ]
    got = entity_sources(R, local)
    # Measured: the router lists itself once per region (clients, peers) holding the key.
    assert got == {
        "demo/q": {"routers": [R], "peers": [], "clients": [C2]},
        "dup/k": {"routers": [R, R], "peers": [P], "clients": [C1, C2]},
    }
    assert list(got["dup/k"]) == ["routers", "peers", "clients"]  # struct order, not sorted
    assert entity_sources(R, [("demo/pub", WhatAmI.PEER, P)], north_source=False) == {
        "demo/pub": {"routers": [], "peers": [P], "clients": []}
    }


def test_entity_sources_mesh() -> None:
    remote = {
        "demo/s": [B, R],  # held by the other router and by us: we come after it
        "demo/onlyb": [B],
        f"@/{B}/router/**": [B],  # admin spaces are never listed
        f"@/{B}/router/config/**": [B],
        "demo/ours": [R],  # only our own: nothing from the mesh
    }
    got = entity_sources(R, [("demo/s", WhatAmI.CLIENT, C1)], remote)
    assert got == {
        "demo/onlyb": {"routers": [B], "peers": [], "clients": []},
        "demo/s": {"routers": [B, R], "peers": [], "clients": [C1]},
    }


def test_dot_graph_is_petgraph_text() -> None:
    assert dot_graph([R]) == MEASURED_DOT_ALONE
    assert dot_graph([B, "4ac5dab1d534e84b0f52ba8bebc83554"], [(1, 0, 100.56779317314918)]) == MEASURED_DOT_PAIR
    assert '1 -- 0 [ label = "100" ]' in dot_graph(["a", "b"], [(1, 0, 100.0)])


def test_metrics_text_is_zenohd_text_then_pyzenoh_families() -> None:
    z, v = R, "v1.10.2-x"
    assert metrics_text(z, version=v) == MEASURED_METRICS.format(Z=z, V=v)
    assert metrics_text(z, version=v, descriptors=False) == MEASURED_METRICS_NO_DESCRIPTORS.format(Z=z, V=v)
    stats = RouterStats(links_accepted=3, by_reason={"GENERIC": 2})
    text = metrics_text(z, stats_families("pyzenoh_router", stats), version=v)
    assert text.startswith(MEASURED_METRICS.format(Z=z, V=v).removesuffix("# EOF\n "))
    assert text.endswith("\n# EOF\n ")
    assert "# TYPE pyzenoh_router_links_accepted counter\npyzenoh_router_links_accepted_total 3\n" in text
    assert 'pyzenoh_router_links_closed_by_reason_total{reason="GENERIC"} 2\n' in text
    bare = metrics_text(z, stats_families("pyzenoh_router", stats), version=v, descriptors=False)
    assert not any(line.startswith("# ") for line in bare.splitlines()[:-1]) and bare.endswith("# EOF\n")


def test_metrics_payload_gzip_and_encoding() -> None:
    data, enc = metrics_payload("x\n")
    assert data[:10] == MEASURED_GZIP_HEADER and gzip.decompress(data) == b"x\n"
    assert str(enc) == METRICS_ENCODING + ";content-encoding=gzip"
    assert (enc.id, enc.schema) == (15, b" version=1.0.0; charset=utf-8;content-encoding=gzip")  # as on the wire
    data, enc = metrics_payload("x\n", compression=False)
    assert data == b"x\n" and str(enc) == METRICS_ENCODING


def test_stats_families_cover_every_counter() -> None:
    names = {f.name for f in stats_families("pyzenoh_routing", RoutingStats(dropped={"unknown key id": 4}))}
    assert {"pyzenoh_routing_pushes_routed", "pyzenoh_routing_dropped", "pyzenoh_routing_query_timeouts"} <= names
    assert parse_parameters("compression=false;descriptors=false;compression=true") == {
        "compression": "false", "descriptors": "false"
    }  # fmt: skip
    assert parse_parameters("") == {}


# --- the admin face in a real (unstarted) daemon: no sockets --------------------------------


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
        f"@/{z}/router", f"@/{z}/router/metrics", f"@/{z}/router/linkstate/north",
        f"@/{z}/router/linkstate/south:0:peer", f"@/{z}/router/subscriber/demo/s",
        f"@/{z}/router/token/demo/t",
    }  # fmt: skip
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
    """Just what AdminSpace reads: the attributes the daemon and the core promise."""
    sent: list[tuple[int, NetworkMessage]] = []
    faces: dict[int, Any] = {}

    def add_local_face(zid: ZenohId, sink: Callable[[Send], None], whatami: WhatAmI, name: str) -> int:
        faces[99] = SimpleNamespace(zid=zid, whatami=whatami, link=None, sink=sink)
        return 99

    link = SimpleNamespace(local_address=("::1", 7447), remote_address=("::1", 50000))
    faces[1] = SimpleNamespace(zid=ZenohId.from_str(B), whatami=WhatAmI.ROUTER, link=link)
    core_faces = {1: SimpleNamespace(zid=ZenohId.from_str(B), whatami=WhatAmI.ROUTER, subs={}, qabls={}, tokens={})}
    # The core's mesh state defaults to a router without router links.
    core.setdefault("network", Network(ZenohId.from_str(R), WhatAmI.ROUTER))
    core.setdefault("router_entities", lambda kind: {})
    return SimpleNamespace(
        zid=ZenohId.from_str(R), config=SimpleNamespace(metadata=None), _faces=faces, sent=sent,
        listeners=[], locators=lambda: ["tcp/[::1]:7447"], stats=RouterStats(),
        add_local_face=add_local_face, local_input=lambda face, msg: sent.append((face, msg)),
        remove_local_face=lambda face: faces.pop(face, None),
        core=SimpleNamespace(stats=RoutingStats(), _faces=core_faces, **core),
    )  # fmt: skip


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
    assert info["sessions"] == [{
        "links": [{"dst": "tcp/[::1]:50000", "src": "tcp/[::1]:7447"}], "peer": B, "region": "north",
        "shm": False, "weight": MEASURED_ROUTER_WEIGHT, "whatami": "router",
    }]  # fmt: skip
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


# --- real eclipse-zenoh clients against an in-process pyzenoh router -----------------------


@dataclass
class InProcessRouter:
    daemon: RouterDaemon
    admin: AdminSpace
    loop: asyncio.AbstractEventLoop
    endpoint: str

    @property
    def zid(self) -> str:
        return str(self.daemon.zid)

    def call(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` in the router's loop (its state is only touched there)."""

        async def run() -> T:
            return fn()

        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(WAIT)


@contextlib.contextmanager
def inprocess_router(connect: tuple[str, ...] = ()) -> Iterator[InProcessRouter]:
    port = free_port()
    endpoint = f"tcp/127.0.0.1:{port}"
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="admin-router", daemon=True)
    thread.start()
    daemon = RouterDaemon(RouterConfig(listen=(endpoint,), connect=connect))
    admin = AdminSpace(daemon)

    async def start() -> None:
        await daemon.start()
        admin.attach()  # what RouterDaemon.start() will do when the admin space is on

    try:
        asyncio.run_coroutine_threadsafe(start(), loop).result(WAIT)
        yield InProcessRouter(daemon, admin, loop, endpoint)
    finally:
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(daemon.stop(), loop).result(WAIT)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(WAIT)
        loop.close()


@pytest.fixture(scope="module")
def router() -> Iterator[InProcessRouter]:
    with inprocess_router() as r:
        yield r


@pytest.fixture
def zopen(router: InProcessRouter) -> Iterator[Callable[..., Any]]:
    from tests.router.conftest import zenoh, zenoh_config

    opened: list[Any] = []

    def _open(mode: str = "client", endpoint: str | None = None) -> Any:
        s = zenoh.open(zenoh_config(endpoint or router.endpoint, mode))
        opened.append(s)
        return s

    yield _open
    for s in opened:
        with contextlib.suppress(Exception):
            s.close()


@dataclass(frozen=True)
class Got:
    key: str
    encoding: str
    payload: bytes
    replier: str
    eid: int

    def json(self) -> Any:
        return json.loads(self.payload)


def zget(session: Any, selector: str, timeout: float = WAIT) -> list[Got]:
    """All OK replies of a get; fails if the get ended by its timeout (no final came)."""
    start = time.monotonic()
    out = []
    for reply in session.get(selector, timeout=timeout):
        sample = reply.ok
        assert sample is not None, reply.err.payload.to_bytes()
        rid = reply.replier_id
        out.append(Got(str(sample.key_expr), str(sample.encoding), sample.payload.to_bytes(), str(rid.zid), rid.eid))
    assert time.monotonic() - start < timeout / 2, f"get {selector} ended by its timeout"
    return out


def poll(fn: Callable[[], T], ok: Callable[[T], bool], timeout: float = WAIT) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if ok(value) or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


@pytest.mark.interop
def test_router_info_for_real_clients(router: InProcessRouter, zopen: Callable[..., Any]) -> None:
    a, b, p = zopen(), zopen(), zopen("peer")
    z = router.zid
    [got] = zget(a, f"@/{z}/router")
    assert (got.key, got.encoding, got.replier, got.eid) == (f"@/{z}/router", "application/json", z, 1)
    assert got.payload == json.dumps(got.json(), separators=(",", ":"), sort_keys=True).encode()
    info = got.json()
    assert list(info) == MEASURED_ROUTER_KEYS
    assert info["zid"] == z and info["locators"] == [router.endpoint] and info["plugins"] is None
    assert info["version"].startswith("v1.10.2")
    sessions = {s["peer"]: s for s in info["sessions"]}
    assert {str(a.zid()), str(b.zid()), str(p.zid())} <= set(sessions)
    for s in sessions.values():
        assert list(s) == MEASURED_SESSION_KEYS and s["weight"] is None
    assert sessions[str(a.zid())]["region"] == "south:0:client" and sessions[str(a.zid())]["whatami"] == "client"
    assert sessions[str(p.zid())]["region"] == "south:0:peer" and sessions[str(p.zid())]["whatami"] == "peer"
    [link] = sessions[str(a.zid())]["links"]
    assert link["src"] == router.endpoint and link["dst"].startswith("tcp/127.0.0.1:")
    assert [g.key for g in zget(a, "@/*/router")] == [f"@/{z}/router"]


@pytest.mark.interop
def test_entities_for_real_clients(router: InProcessRouter, zopen: Callable[..., Any]) -> None:
    a, b, p = zopen(), zopen(), zopen("peer")
    za, zb, zp, z = str(a.zid()), str(b.zid()), str(p.zid()), router.zid
    keep = [
        a.declare_subscriber("adm/k", lambda s: None), a.declare_subscriber("adm/k", lambda s: None),
        p.declare_subscriber("adm/k", lambda s: None), b.declare_subscriber("adm/k", lambda s: None),
        a.declare_queryable("adm/q/*", lambda q: None, complete=True),
        a.liveliness().declare_token("adm/t"), p.liveliness().declare_token("adm/tp"),
        a.declare_publisher("adm/pub"), b.declare_querier("adm/qr"),
    ]  # fmt: skip

    def entities() -> dict[str, Any]:
        return {g.key: g.json() for g in zget(a, f"@/{z}/router/*/adm/**")}

    got = poll(entities, lambda e: len(e) == 6)
    base = f"@/{z}/router"
    assert set(got) == {f"{base}/subscriber/adm/k", f"{base}/queryable/adm/q/*", f"{base}/token/adm/t",
                        f"{base}/token/adm/tp", f"{base}/publisher/adm/pub", f"{base}/querier/adm/qr"}  # fmt: skip
    sub = got[f"{base}/subscriber/adm/k"]
    assert list(sub) == ["routers", "peers", "clients"]
    assert sub["routers"] == [z, z] and sub["peers"] == [zp] and sorted(sub["clients"]) == sorted([za, zb])
    assert got[f"{base}/queryable/adm/q/*"] == {"routers": [z], "peers": [], "clients": [za]}
    assert got[f"{base}/token/adm/t"] == {"routers": [z], "peers": [], "clients": [za]}
    assert got[f"{base}/token/adm/tp"] == {"routers": [z], "peers": [zp], "clients": []}
    assert got[f"{base}/publisher/adm/pub"] == {"routers": [], "peers": [], "clients": [za]}
    assert got[f"{base}/querier/adm/qr"] == {"routers": [], "peers": [], "clients": [zb]}
    # Selector matching as the real router does it.
    # (adm/q/* intersects **/k: every admin key intersecting the selector is answered.)
    assert {g.key for g in zget(a, f"@/{z}/router/**/k")} == {f"{base}/subscriber/adm/k", f"{base}/queryable/adm/q/*"}
    assert zget(a, f"@/{z}/router/queryable/@/{z}/router/**") == []  # the admin space is not listed
    assert all(g.encoding == "application/json" for g in zget(a, f"@/{z}/router/subscriber/**"))
    del keep


@pytest.mark.interop
def test_metrics_for_real_clients(router: InProcessRouter, zopen: Callable[..., Any]) -> None:
    a = zopen()
    z = router.zid
    [got] = zget(a, f"@/{z}/router/metrics")
    assert got.encoding == METRICS_ENCODING + ";content-encoding=gzip"
    assert got.payload[:10] == MEASURED_GZIP_HEADER
    text = gzip.decompress(got.payload).decode()
    version = json.loads(zget(a, f"@/{z}/router")[0].payload)["version"]
    assert text.startswith(MEASURED_METRICS.format(Z=z, V=version).removesuffix("# EOF\n "))
    assert text.endswith("\n# EOF\n ")
    messages_in = int(text.split("\npyzenoh_router_messages_in_total ")[1].split("\n")[0])
    assert messages_in > 0
    assert 'pyzenoh_router_sessions{whatami="client"} ' in text
    [plain] = zget(a, f"@/{z}/router/metrics?compression=false")
    assert plain.encoding == METRICS_ENCODING and plain.payload.startswith(b"# HELP zenoh_build ")
    [bare] = zget(a, f"@/{z}/router/metrics?compression=false;descriptors=false")
    assert bare.payload.startswith(b"zenoh_build_info{") and bare.payload.endswith(b"\n # EOF\n")


@pytest.mark.interop
def test_linkstate_for_real_clients(router: InProcessRouter, zopen: Callable[..., Any]) -> None:
    a, p = zopen(), zopen("peer")
    z = router.zid
    got = {g.key: g for g in zget(a, f"@/{z}/router/linkstate/*")}
    assert set(got) == {f"@/{z}/router/linkstate/north", f"@/{z}/router/linkstate/south:0:peer"}
    assert all(g.encoding == "text/plain" for g in got.values())
    north = got[f"@/{z}/router/linkstate/north"].payload.decode()
    assert north.startswith(f'graph {{\n    0 [ label = "{z}" ]\n') and north.endswith("}\n")
    south = got[f"@/{z}/router/linkstate/south:0:peer"].payload.decode()
    assert f'    0 [ label = "{z}" ]\n' in south and f'[ label = "{p.zid()}" ]' in south
    assert zget(a, f"@/{z}/router/linkstate") == []


@pytest.mark.interop
def test_at_star_star_reaches_the_admin_space(router: InProcessRouter, zopen: Callable[..., Any]) -> None:
    a = zopen()
    z = router.zid
    keep = a.declare_subscriber("star/x", lambda s: None)
    got = poll(lambda: zget(a, "@/**"), lambda g: any(x.key.endswith("/subscriber/star/x") for x in g))
    ours = {g.key for g in got if g.replier == z}
    assert {f"@/{z}/router", f"@/{z}/router/metrics", f"@/{z}/router/linkstate/north",
            f"@/{z}/router/linkstate/south:0:peer", f"@/{z}/router/subscriber/star/x"} <= ours  # fmt: skip
    assert all(k.startswith(f"@/{z}/router") for k in ours)
    # The rest is the session's own admin space.
    assert all(g.key.startswith(f"@/{a.zid()}/session") for g in got if g.replier != z)
    del keep


@pytest.mark.interop
def test_pyzenoh_client_reads_the_admin_space(router: InProcessRouter) -> None:
    import pyzenoh.session as pz

    z = router.zid
    with pz.open({"mode": "client", "connect": {"endpoints": [router.endpoint]}}) as s:
        replies = list(s.get(f"@/{z}/router", timeout=WAIT))
        assert len(replies) == 1 and replies[0].ok is not None
        sample = replies[0].ok
        assert str(sample.key_expr) == f"@/{z}/router" and str(sample.encoding) == "application/json"
        assert list(json.loads(sample.payload.to_bytes())) == MEASURED_ROUTER_KEYS
        assert replies[0].replier_id is not None and str(replies[0].replier_id.zid) == z
        [metrics] = list(s.get(f"@/{z}/router/metrics", timeout=WAIT))
        assert metrics.ok is not None
        assert gzip.decompress(metrics.ok.payload.to_bytes()).startswith(b"# HELP zenoh_build ")


@pytest.mark.interop
def test_admin_space_with_a_real_router_in_the_mesh() -> None:
    """Each router answers for itself; a query reaches every router of the mesh."""
    from tests.router.conftest import zenoh, zenoh_config

    with inprocess_router() as ours:
        if not hasattr(ours.daemon.core, "router_entities"):
            pytest.skip("this tree's router has no router-to-router mesh yet")
        real_endpoint = f"tcp/127.0.0.1:{free_port()}"
        conf = zenoh.Config()
        conf.insert_json5("mode", '"router"')
        conf.insert_json5("listen/endpoints", f'["{real_endpoint}"]')
        conf.insert_json5("connect/endpoints", f'["{ours.endpoint}"]')
        conf.insert_json5("scouting/multicast/enabled", "false")
        conf.insert_json5("adminspace/enabled", "true")
        real = zenoh.open(conf)
        try:
            zr, zo = str(real.zid()), ours.zid
            with contextlib.ExitStack() as stack:
                c = zenoh.open(zenoh_config(ours.endpoint))
                stack.callback(c.close)
                d = zenoh.open(zenoh_config(real_endpoint))
                stack.callback(d.close)
                keep = [c.declare_subscriber("mesh/ours", lambda s: None),
                        d.declare_subscriber("mesh/real", lambda s: None)]  # fmt: skip
                routers = poll(lambda: {g.replier for g in zget(c, "@/*/router")}, lambda r: r == {zr, zo})
                assert routers == {zr, zo}
                info = json.loads(zget(c, f"@/{zo}/router")[0].payload)
                [north] = [s for s in info["sessions"] if s["peer"] == zr]
                assert north["region"] == "north" and north["whatami"] == "router"
                assert north["weight"] == MEASURED_ROUTER_WEIGHT
                sub = poll(lambda: zget(c, f"@/{zo}/router/subscriber/mesh/real"), lambda g: len(g) == 1)
                assert [g.json() for g in sub] == [{"routers": [zr], "peers": [], "clients": []}]
                theirs = poll(lambda: zget(c, f"@/{zr}/router/subscriber/mesh/ours"), lambda g: len(g) == 1)
                assert [g.json() for g in theirs] == [{"routers": [zo], "peers": [], "clients": []}]
                north_graph = zget(c, f"@/{zo}/router/linkstate/north")[0].payload.decode()
                assert zr in north_graph and zo in north_graph and " -- " in north_graph
                del keep
        finally:
            real.close()
