"""``udp/HOST:PORT`` links between pyzenoh and real eclipse-zenoh 1.10.2, differentially:
the same configuration (a udp and a tcp listener) on a real router and on ``pyzenoh
router``, real clients and peers over udp on 127.0.0.1: pub/sub both ways, get,
liveliness, payloads fragmented over several datagrams. Then a pyzenoh client over udp to
a real router, and router links over udp both ways.
"""

from __future__ import annotations

import contextlib
import json
import queue
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import zenoh

import pyzenoh.session as pz
from pyzenoh.localnet import free_port
from tests.fixtures.procs import opened, pyzenoh_router_process, start_router
from tests.interop.test_tls_interop import crosses, zenoh_crosses
from tests.waits import until, value_of

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]

WAIT = 15.0
BIG = 300_000  # over one 65487-byte datagram: fragmented over 5


@dataclass
class Router:
    kind: str
    udp: str
    tcp: str


def router_config(
    udp_port: int,
    tcp_port: int,
    connect: list[str] | None = None,
    acl: dict[str, Any] | None = None,
    max_links: int = 1,
) -> dict[str, Any]:
    extra: dict[str, Any] = {} if acl is None else {"access_control": acl}
    if max_links != 1:
        extra["transport"] = {"unicast": {"max_links": max_links}}
    return extra | {
        "mode": "router",
        "listen": {"endpoints": [f"udp/127.0.0.1:{udp_port}", f"tcp/127.0.0.1:{tcp_port}"]},
        "connect": {"endpoints": connect or []},
        "scouting": {"multicast": {"enabled": False}, "gossip": {"enabled": False}},
        "adminspace": {"enabled": True},
    }


@contextlib.contextmanager
def any_router(
    kind: str, tmp: Path, connect: list[str] | None = None, acl: dict[str, Any] | None = None, max_links: int = 1
) -> Iterator[Router]:
    """The same configuration on a real zenoh router or on ``pyzenoh router``."""
    udp_port, tcp_port = free_port(), free_port()
    config = router_config(udp_port, tcp_port, connect, acl, max_links)
    ends = Router(kind, f"udp/127.0.0.1:{udp_port}", f"tcp/127.0.0.1:{tcp_port}")
    if kind == "zenohd":
        flat = {
            "listen/endpoints": config["listen"]["endpoints"],
            "connect/endpoints": config["connect"]["endpoints"],
            "adminspace/enabled": True,
        }
        if acl is not None:
            flat["access_control"] = acl
        if max_links != 1:
            flat["transport/unicast/max_links"] = max_links
        proc = start_router(extra=flat)
        try:
            yield ends
        finally:
            proc.stop()
        return
    with pyzenoh_router_process(config, tmp / f"pz-{tcp_port}.json5", [tcp_port]) as (popen, log):
        yield ends
        assert popen.poll() is None, log.read_text()


def zopen(endpoint: str, mode: str = "client") -> zenoh.Session:
    c = zenoh.Config()
    c.insert_json5("mode", json.dumps(mode))
    c.insert_json5("connect/endpoints", json.dumps([endpoint]))
    c.insert_json5("scouting/multicast/enabled", "false")
    return zenoh.open(c)


def big_crosses(pub: Any, sub: Any, key: str) -> None:
    """A payload of several datagrams arrives whole (best effort: retried, bounded)."""
    got: queue.Queue[bytes] = queue.Queue()
    payload = bytes(range(256)) * (BIG // 256)
    s = sub.declare_subscriber(key, lambda sample: got.put(bytes(sample.payload.to_bytes())))
    try:
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            pub.put(key, payload)
            with contextlib.suppress(queue.Empty):
                assert got.get(timeout=0.5) == payload
                return
        raise AssertionError(f"no {BIG}-byte sample crossed on {key}")
    finally:
        s.undeclare()


@pytest.mark.parametrize("kind", ["zenohd", "pyzenoh"])
def test_zenoh_clients_and_peers_over_udp(kind: str, tmp_path: Path) -> None:
    with any_router(kind, tmp_path) as r:
        a = zopen(r.udp)
        b = zopen(r.udp, "peer")
        c = zopen(r.tcp)
        with opened(a, b, c):
            assert until(lambda: bool(list(a.info.routers_zid())), WAIT)
            assert zenoh_crosses(b, a, "udp/pubsub").startswith(b"udp/pubsub:")
            zenoh_crosses(a, c, "udp/to-tcp")
            zenoh_crosses(c, a, "udp/from-tcp")
            queryable = a.declare_queryable("udp/q", lambda q: q.reply("udp/q", b"answer"))
            deadline = time.monotonic() + WAIT
            replies: list[bytes] = []
            while not replies and time.monotonic() < deadline:
                replies = [x.ok.payload.to_bytes() for x in c.get("udp/q", timeout=2.0) if x.ok is not None]
            assert replies == [b"answer"]
            queryable.undeclare()
            token = a.liveliness().declare_token("udp/alive")
            try:
                assert until(lambda: any(x.ok is not None for x in c.liveliness().get("udp/**", timeout=2.0)), WAIT)
            finally:
                token.undeclare()
            big_crosses(b, a, "udp/big")
            big_crosses(c, a, "udp/big-from-tcp")
            big_crosses(a, c, "udp/big-to-tcp")


@pytest.mark.parametrize("kind", ["zenohd", "pyzenoh"])
def test_admin_space_shows_udp_locators_and_sessions(kind: str, tmp_path: Path) -> None:
    with any_router(kind, tmp_path) as r:
        a = zopen(r.udp)
        c = zopen(r.tcp)
        with opened(a, c):
            rid = value_of(lambda: next(iter(c.info.routers_zid()), None), "router id")
            doc = value_of(
                lambda: next((json.loads(x.ok.payload.to_string()) for x in c.get(f"@/{rid}/router") if x.ok), None),
                "@/<zid>/router",
            )
            assert r.udp in doc["locators"] and r.tcp in doc["locators"]
            links = [link for sess in doc["sessions"] for link in sess["links"]]
            assert any(x["src"] == r.udp and x["dst"].startswith("udp/127.0.0.1:") for x in links)


def test_pyzenoh_client_link_info_as_zenoh(tmp_path: Path) -> None:
    """A udp link as zenoh's session reports it: mtu 65487, not streamed, best effort."""
    with any_router("zenohd", tmp_path) as r:
        ps = pz.open({"mode": "client", "connect": {"endpoints": [r.udp]}})
        zs = zopen(r.udp)
        with opened(ps, zs):
            ours, theirs = str(next(iter(ps.info.links()))), str(next(iter(zs.info.links())))
            tail = 'mtu: 65487, is_streamed: false, interfaces: ["lo"], auth_identifier: None'
            assert tail in theirs and tail in ours, (ours, theirs)
            assert ours.endswith("reliability: Some(BestEffort) }") and theirs.endswith(
                "reliability: Some(BestEffort) }"
            )
            assert f"dst: {r.udp}" in ours


def test_pyzenoh_client_to_zenoh_router(tmp_path: Path) -> None:
    with any_router("zenohd", tmp_path) as r:
        ps = pz.open({"mode": "client", "connect": {"endpoints": [r.udp]}})
        zs = zopen(r.tcp)
        with opened(ps, zs):
            crosses(lambda data: zs.put("pzudp/a", data), lambda cb: ps.declare_subscriber("pzudp/a", cb), "pzudp/a")
            crosses(lambda data: ps.put("pzudp/b", data), lambda cb: zs.declare_subscriber("pzudp/b", cb), "pzudp/b")
            big_crosses(zs, ps, "pzudp/big")
            big_crosses(ps, zs, "pzudp/big-out")


@pytest.mark.parametrize(("near_kind", "far_kind"), [("pyzenoh", "zenohd"), ("zenohd", "pyzenoh")])
def test_router_links_over_udp(near_kind: str, far_kind: str, tmp_path: Path) -> None:
    with any_router(far_kind, tmp_path) as far_r, any_router(near_kind, tmp_path, connect=[far_r.udp]) as near_r:
        near = zopen(near_r.tcp)
        far = zopen(far_r.tcp)
        with opened(near, far):
            zenoh_crosses(far, near, "r2r/in")
            zenoh_crosses(near, far, "r2r/out")
            big_crosses(far, near, "r2r/big")


@pytest.mark.parametrize(("near_kind", "far_kind"), [("pyzenoh", "zenohd"), ("zenohd", "pyzenoh")])
def test_router_multilink_over_tcp_and_udp(near_kind: str, far_kind: str, tmp_path: Path) -> None:
    """Two routers with ``max_links: 2``, one dialling the other's tcp and udp endpoints:
    one router session with both links on either side, samples crossing both ways."""
    with (
        any_router(far_kind, tmp_path, max_links=2) as far_r,
        any_router(near_kind, tmp_path, connect=[far_r.tcp, far_r.udp], max_links=2) as near_r,
    ):
        near = zopen(near_r.tcp)
        far = zopen(far_r.tcp)
        with opened(near, far):
            near_zid = value_of(lambda: next(iter(near.info.routers_zid()), None), "near router id")
            links = session_links(far, near_zid, 2)
            assert sorted(x["src"] for x in links) == sorted([far_r.tcp, far_r.udp]), links
            zenoh_crosses(far, near, "r2r/ml-in")
            zenoh_crosses(near, far, "r2r/ml-out")
            publisher_crosses(near, far, "r2r/ml-be", reliability=zenoh.Reliability.BEST_EFFORT)


def test_pyzenoh_peer_session_multilink(tmp_path: Path) -> None:
    """The client library with ``max_links: 2``: a pyzenoh peer dialling a real router's tcp
    and udp endpoints has one session with both links (the router's admin space and the
    session's ``info.links()`` agree), samples crossing both ways, best effort too; and a
    real peer dialling a pyzenoh peer's tcp and udp listeners gets one session of two."""
    with any_router("zenohd", tmp_path, max_links=2) as r:
        ps = pz.open(
            {
                "mode": "peer",
                "connect": {"endpoints": [r.tcp, r.udp]},
                "scouting": {"multicast": {"enabled": False}},
                "transport": {"unicast": {"max_links": 2}},
            }
        )
        client = zopen(r.tcp)
        with opened(ps, client):
            links = session_links(client, ps.info.zid(), 2)
            assert sorted(x["src"] for x in links) == sorted([r.tcp, r.udp]), links
            assert sorted(str(ln.dst) for ln in ps.info.links()) == sorted([r.tcp, r.udp])
            crosses(
                lambda data: ps.put("pml/out", data), lambda cb: client.declare_subscriber("pml/out", cb), "pml/out"
            )
            crosses(lambda data: client.put("pml/in", data), lambda cb: ps.declare_subscriber("pml/in", cb), "pml/in")
            publisher_crosses(client, ps, "pml/be-in", reliability=zenoh.Reliability.BEST_EFFORT)  # type: ignore[arg-type]
    tcp_port, udp_port = free_port(), free_port()
    listener = pz.open(
        {
            "mode": "peer",
            "listen": {"endpoints": [f"tcp/127.0.0.1:{tcp_port}", f"udp/127.0.0.1:{udp_port}"]},
            "scouting": {"multicast": {"enabled": False}},
            "transport": {"unicast": {"max_links": 2}},
        }
    )
    real = multilink_peer(Router("pyzenoh", f"udp/127.0.0.1:{udp_port}", f"tcp/127.0.0.1:{tcp_port}"))
    with opened(listener, real):
        value_of(lambda: len(listener.info.links()) == 2, "two links of one session")
        assert len(listener.info.transports()) == 1
        crosses(lambda data: real.put("pml/p", data), lambda cb: listener.declare_subscriber("pml/p", cb), "pml/p")


def publisher_crosses(pub_session: zenoh.Session, sub_session: zenoh.Session, key: str, **options: Any) -> None:
    """Samples of a publisher declared with ``options`` (a priority; best effort: on a
    multilink session, over udp) arrive."""
    pub = pub_session.declare_publisher(key, **options)
    try:
        crosses(lambda data: pub.put(data), lambda cb: sub_session.declare_subscriber(key, cb), key)
    finally:
        pub.undeclare()


@pytest.mark.parametrize("kind", ["zenohd", "pyzenoh"])
def test_multilink_priority_ranges(kind: str, tmp_path: Path) -> None:
    """A real peer whose two tcp endpoints carry ``?prio=1-3`` and ``?prio=4-7;rel=1``:
    each link's negotiated range and reliability, as the peer reports them, are the same on
    zenohd and pyzenoh, and samples of a priority in each range cross."""
    ports = free_port(), free_port()
    listen = [f"tcp/127.0.0.1:{port}" for port in ports]
    config: dict[str, Any] = {
        "listen/endpoints": listen,
        "transport/unicast/max_links": 2,
        "adminspace/enabled": True,
    }
    if kind == "zenohd":
        proc = start_router(extra=config)
        stack: Any = contextlib.ExitStack()
        stack.callback(proc.stop)
    else:
        tree = router_config(free_port(), ports[0], max_links=2)
        tree["listen"]["endpoints"] = listen
        stack = pyzenoh_router_process(tree, tmp_path / "pz-prio.json5", list(ports))
    with stack:
        c = zenoh.Config()
        c.insert_json5("mode", '"peer"')
        c.insert_json5("connect/endpoints", json.dumps([f"{listen[0]}?prio=1-3", f"{listen[1]}?prio=4-7;rel=1"]))
        c.insert_json5("scouting/multicast/enabled", "false")
        c.insert_json5("transport/unicast/max_links", "2")
        c.insert_json5("transport/shared_memory/enabled", "false")
        peer = zenoh.open(c)
        client = zopen(listen[0])
        with opened(peer, client):
            got = value_of(
                lambda: (
                    sorted((ln.priorities, str(ln.reliability)) for ln in peer.info.links())
                    if len(peer.info.links()) == 2
                    else None
                ),
                "two links",
            )
            assert got == [((1, 3), "Reliability.RELIABLE"), ((4, 7), "Reliability.RELIABLE")], got
            for prio, key in ((zenoh.Priority.REAL_TIME, "prio/high"), (zenoh.Priority.DATA_LOW, "prio/low")):
                publisher_crosses(peer, client, key, priority=prio)


#: Puts on acl/deny/** are refused from udp links only (access control's link_protocols).
ACL = {
    "enabled": True,
    "default_permission": "allow",
    "rules": [
        {
            "id": "no-udp-puts",
            "messages": ["put"],
            "flows": ["ingress"],
            "permission": "deny",
            "key_exprs": ["acl/deny/**"],
        }
    ],
    "subjects": [{"id": "udp", "link_protocols": ["udp"]}],
    "policies": [{"rules": ["no-udp-puts"], "subjects": ["udp"]}],
}


@pytest.mark.parametrize("kind", ["zenohd", "pyzenoh"])
def test_access_control_link_protocols_udp(kind: str, tmp_path: Path) -> None:
    with any_router(kind, tmp_path, acl=ACL) as r:
        u = zopen(r.udp)
        t = zopen(r.tcp)
        with opened(u, t):
            zenoh_crosses(u, t, "acl/ok/u")  # udp, another key: allowed
            zenoh_crosses(t, u, "acl/deny/t")  # tcp: allowed
            got: queue.Queue[bytes] = queue.Queue()
            sub = t.declare_subscriber("acl/deny/u", lambda sample: got.put(bytes(sample.payload.to_bytes())))
            try:
                zenoh_crosses(u, t, "acl/ok/after")  # the subscriber's route is in place
                for _ in range(20):
                    u.put("acl/deny/u", b"refused")
                zenoh_crosses(u, t, "acl/ok/fence")  # sent after the refused puts: they had their chance
                assert got.empty()
            finally:
                sub.undeclare()


def test_bad_datagrams_end_only_their_source(tmp_path: Path) -> None:
    """pyzenoh router: junk from one source (a flood of 2000 datagrams, bounded) ends that
    source's link with a warning, is counted in the metrics, and a udp client is served
    throughout."""
    udp_port, tcp_port = free_port(), free_port()
    config = router_config(udp_port, tcp_port)
    with pyzenoh_router_process(config, tmp_path / "pz-bad.json5", [tcp_port]) as (popen, log):
        a = zopen(f"udp/127.0.0.1:{udp_port}")
        c = zopen(f"tcp/127.0.0.1:{tcp_port}")
        junk = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        with opened(a, c), contextlib.closing(junk):
            zenoh_crosses(a, c, "bad/before")
            junk.connect(("127.0.0.1", udp_port))
            deadline = time.monotonic() + 5.0
            for i in range(2000):
                if time.monotonic() > deadline:
                    break
                with contextlib.suppress(BlockingIOError, ConnectionRefusedError):
                    junk.send(b"\x01junk" + i.to_bytes(4, "little"))
            zenoh_crosses(a, c, "bad/after")
            zenoh_crosses(c, a, "bad/back")
            rid = value_of(lambda: next(iter(c.info.routers_zid()), None), "router id")

            def faults() -> str | None:
                for rep in c.get(f"@/{rid}/router/metrics?compression=false", timeout=5.0):
                    if rep.ok is not None:
                        text = rep.ok.payload.to_string()
                        line = next((x for x in text.splitlines() if 'udp_dropped_total{reason="faults"}' in x), None)
                        if line is not None:
                            return line
                return None

            line = value_of(faults, "the udp faults counter")
            assert 1 <= float(line.split()[-1]) <= 10
        assert popen.poll() is None
    text = log.read_text()
    assert "udp link with udp/127.0.0.1:" in text and "ended" in text


def test_pyzenoh_peer_listens_on_udp(tmp_path: Path) -> None:
    """The client library's listen side: a real peer and a real client reach a pyzenoh peer over udp."""
    port = free_port()
    ps = pz.open(
        {
            "mode": "peer",
            "listen": {"endpoints": [f"udp/127.0.0.1:{port}"]},
            "scouting": {"multicast": {"enabled": False}},
        }
    )
    zp = zopen(f"udp/127.0.0.1:{port}", "peer")
    zc = zopen(f"udp/127.0.0.1:{port}")
    with opened(zp, zc, ps):
        crosses(lambda data: zp.put("pp/a", data), lambda cb: ps.declare_subscriber("pp/a", cb), "pp/a")
        crosses(lambda data: ps.put("pp/b", data), lambda cb: zc.declare_subscriber("pp/b", cb), "pp/b")
        big_crosses(zc, ps, "pp/big")


def multilink_peer(r: Router) -> zenoh.Session:
    """A real peer with ``transport/unicast/max_links: 2`` dialling ``r``'s tcp and udp."""
    c = zenoh.Config()
    c.insert_json5("mode", '"peer"')
    c.insert_json5("connect/endpoints", json.dumps([r.tcp, r.udp]))
    c.insert_json5("scouting/multicast/enabled", "false")
    c.insert_json5("transport/unicast/max_links", "2")
    c.insert_json5("transport/shared_memory/enabled", "false")
    return zenoh.open(c)


def session_links(client: zenoh.Session, peer: Any, count: int) -> list[dict[str, str]]:
    """The admin-space links of the session with ``peer`` (a session, or a node's zid) on
    ``client``'s router, once there are ``count``."""
    rid = value_of(lambda: next(iter(client.info.routers_zid()), None), "router id")
    pid = str(peer.info.zid()) if isinstance(peer, zenoh.Session) else str(peer)

    def links() -> list[dict[str, str]] | None:
        for reply in client.get(f"@/{rid}/router"):
            if reply.ok is not None:
                doc = json.loads(reply.ok.payload.to_string())
                for sess in doc["sessions"]:
                    if sess["peer"] == pid and len(sess["links"]) == count:
                        return list(sess["links"])
        return None

    return value_of(links, f"{count} links of the peer's session")


@pytest.mark.parametrize("kind", ["zenohd", "pyzenoh"])
def test_multilink_session_over_tcp_and_udp(kind: str, tmp_path: Path) -> None:
    """Both sides with ``max_links: 2``: a real peer dialling the router's tcp and udp
    endpoints gets one session with both links (MultiLink: the peer proves the same RSA
    key on each), and reliable and best-effort samples cross both ways."""
    with any_router(kind, tmp_path, max_links=2) as r:
        peer = multilink_peer(r)
        client = zopen(r.tcp)
        with opened(peer, client):
            links = session_links(client, peer, 2)
            assert sorted(x["src"] for x in links) == sorted([r.tcp, r.udp]), links
            zenoh_crosses(peer, client, "mlink/out")
            zenoh_crosses(client, peer, "mlink/in")
            publisher_crosses(peer, client, "mlink/be-out", reliability=zenoh.Reliability.BEST_EFFORT)
            publisher_crosses(client, peer, "mlink/be-in", reliability=zenoh.Reliability.BEST_EFFORT)


@pytest.mark.parametrize("kind", ["zenohd", "pyzenoh"])
def test_peer_with_max_links_2_over_tcp_and_udp(kind: str, tmp_path: Path) -> None:
    """A real peer with ``transport/unicast/max_links: 2`` dialling a router's tcp and udp
    endpoints: the router (max_links 1) keeps one link and refuses the other with
    CLOSE(MAX_LINKS) instead of an OpenAck, so the peer serves on over the first link and
    redials the other only every retry period (pyzenoh once closed it after its OpenAck:
    the peer took that as a lost link and redialled in a hot loop, hundreds a second)."""
    with any_router(kind, tmp_path) as r:
        peer = multilink_peer(r)
        client = zopen(r.tcp)
        started = time.monotonic()
        with opened(peer, client):
            zenoh_crosses(peer, client, "ml/out")
            zenoh_crosses(client, peer, "ml/in")
            session_links(client, peer, 1)
            if kind == "pyzenoh":
                rid = next(iter(client.info.routers_zid()))
                text = next(
                    x.ok.payload.to_string() for x in client.get(f"@/{rid}/router/metrics?compression=false") if x.ok
                )
                line = next((x for x in text.splitlines() if 'refused_total{reason="max_links"}' in x), None)
                refused = 0.0 if line is None else float(line.split()[-1])
                # one refusal per retry period (1 s, then longer), not a hot loop
                assert refused <= 2 * (time.monotonic() - started) + 3, (refused, text)
