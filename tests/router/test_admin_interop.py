"""The router's admin space (``@/<zid>/router/**``) in the shapes of a real 1.10.2 router.

Real eclipse-zenoh clients (and routers) against an in-process pyzenoh router; the
expectations below, like the MEASURED_* constants (admin_measured.py), were read off a
real eclipse-zenoh 1.10.2 router (the Python wheel, ``adminspace/enabled: true``) with
client and peer sessions, and off a pair of such routers. Every wait is bounded; every
router and session started here is stopped here.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest

from pyzenoh.localnet import free_port
from pyzenoh.router.admin import METRICS_ENCODING
from tests.fixtures.inprocess import InProcessRouter, running_inprocess_router
from tests.router.admin_measured import (
    MEASURED_GZIP_HEADER,
    MEASURED_METRICS,
    MEASURED_ROUTER_KEYS,
    MEASURED_ROUTER_WEIGHT,
    MEASURED_SESSION_KEYS,
)

WAIT = 10.0
T = TypeVar("T")


@pytest.fixture
def zopen(inprocess_router: InProcessRouter, zenoh_sessions: Callable[..., Any]) -> Callable[..., Any]:
    """Real sessions (``mode``, ``endpoint``) on the in-process router by default."""
    return lambda mode="client", endpoint=None: zenoh_sessions(endpoint or inprocess_router.endpoint, mode)


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
def test_router_info_for_real_clients(inprocess_router: InProcessRouter, zopen: Callable[..., Any]) -> None:
    a, b, p = zopen(), zopen(), zopen("peer")
    z = inprocess_router.zid
    [got] = zget(a, f"@/{z}/router")
    assert (got.key, got.encoding, got.replier, got.eid) == (f"@/{z}/router", "application/json", z, 1)
    assert got.payload == json.dumps(got.json(), separators=(",", ":"), sort_keys=True).encode()
    info = got.json()
    assert list(info) == MEASURED_ROUTER_KEYS
    assert info["zid"] == z and info["locators"] == [inprocess_router.endpoint] and info["plugins"] is None
    assert info["version"].startswith("v1.10.2")
    sessions = {s["peer"]: s for s in info["sessions"]}
    assert {str(a.zid()), str(b.zid()), str(p.zid())} <= set(sessions)
    for s in sessions.values():
        assert list(s) == MEASURED_SESSION_KEYS and s["weight"] is None
    assert sessions[str(a.zid())]["region"] == "south:0:client" and sessions[str(a.zid())]["whatami"] == "client"
    assert sessions[str(p.zid())]["region"] == "south:0:peer" and sessions[str(p.zid())]["whatami"] == "peer"
    [link] = sessions[str(a.zid())]["links"]
    assert link["src"] == inprocess_router.endpoint and link["dst"].startswith("tcp/127.0.0.1:")
    assert [g.key for g in zget(a, "@/*/router")] == [f"@/{z}/router"]


@pytest.mark.interop
def test_entities_for_real_clients(inprocess_router: InProcessRouter, zopen: Callable[..., Any]) -> None:
    a, b, p = zopen(), zopen(), zopen("peer")
    za, zb, zp, z = str(a.zid()), str(b.zid()), str(p.zid()), inprocess_router.zid
    keep = [
        a.declare_subscriber("adm/k", lambda s: None),
        a.declare_subscriber("adm/k", lambda s: None),
        p.declare_subscriber("adm/k", lambda s: None),
        b.declare_subscriber("adm/k", lambda s: None),
        a.declare_queryable("adm/q/*", lambda q: None, complete=True),
        a.liveliness().declare_token("adm/t"),
        p.liveliness().declare_token("adm/tp"),
        a.declare_publisher("adm/pub"),
        b.declare_querier("adm/qr"),
    ]

    def entities() -> dict[str, Any]:
        return {g.key: g.json() for g in zget(a, f"@/{z}/router/*/adm/**")}

    got = poll(entities, lambda e: len(e) == 6)
    base = f"@/{z}/router"
    assert set(got) == {
        f"{base}/subscriber/adm/k",
        f"{base}/queryable/adm/q/*",
        f"{base}/token/adm/t",
        f"{base}/token/adm/tp",
        f"{base}/publisher/adm/pub",
        f"{base}/querier/adm/qr",
    }
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
def test_metrics_for_real_clients(inprocess_router: InProcessRouter, zopen: Callable[..., Any]) -> None:
    a = zopen()
    z = inprocess_router.zid
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
def test_linkstate_for_real_clients(inprocess_router: InProcessRouter, zopen: Callable[..., Any]) -> None:
    a, p = zopen(), zopen("peer")
    z = inprocess_router.zid
    got = {g.key: g for g in zget(a, f"@/{z}/router/linkstate/*")}
    assert set(got) == {f"@/{z}/router/linkstate/north", f"@/{z}/router/linkstate/south:0:peer"}
    assert all(g.encoding == "text/plain" for g in got.values())
    north = got[f"@/{z}/router/linkstate/north"].payload.decode()
    assert north.startswith(f'graph {{\n    0 [ label = "{z}" ]\n') and north.endswith("}\n")
    south = got[f"@/{z}/router/linkstate/south:0:peer"].payload.decode()
    assert f'    0 [ label = "{z}" ]\n' in south and f'[ label = "{p.zid()}" ]' in south
    assert zget(a, f"@/{z}/router/linkstate") == []


@pytest.mark.interop
def test_at_star_star_reaches_the_admin_space(inprocess_router: InProcessRouter, zopen: Callable[..., Any]) -> None:
    a = zopen()
    z = inprocess_router.zid
    keep = a.declare_subscriber("star/x", lambda s: None)
    got = poll(lambda: zget(a, "@/**"), lambda g: any(x.key.endswith("/subscriber/star/x") for x in g))
    ours = {g.key for g in got if g.replier == z}
    assert {
        f"@/{z}/router",
        f"@/{z}/router/metrics",
        f"@/{z}/router/linkstate/north",
        f"@/{z}/router/linkstate/south:0:peer",
        f"@/{z}/router/subscriber/star/x",
    } <= ours
    assert all(k.startswith(f"@/{z}/router") for k in ours)
    # The rest is the session's own admin space.
    assert all(g.key.startswith(f"@/{a.zid()}/session") for g in got if g.replier != z)
    del keep


@pytest.mark.interop
def test_pyzenoh_client_reads_the_admin_space(inprocess_router: InProcessRouter) -> None:
    import pyzenoh.session as pz

    z = inprocess_router.zid
    with pz.open({"mode": "client", "connect": {"endpoints": [inprocess_router.endpoint]}}) as s:
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
    from tests.fixtures.pyzenoh_router import zenoh, zenoh_config

    with running_inprocess_router() as ours:
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
                keep = [
                    c.declare_subscriber("mesh/ours", lambda s: None),
                    d.declare_subscriber("mesh/real", lambda s: None),
                ]
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
