"""``quic/HOST:PORT`` links between pyzenoh and real eclipse-zenoh 1.10.2.

* real zenoh clients over QUIC to ``pyzenoh router`` (pub/sub both ways, get, liveliness,
  a fragmented payload), a client trusting another CA refused with the router serving on;
* a pyzenoh client session over QUIC to a real zenoh router (both ways, fragmented);
* router links over QUIC both ways between pyzenoh and real routers.
"""

from __future__ import annotations

import contextlib
import json
import queue
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import zenoh

import pyzenoh.session as pz
from pyzenoh.localnet import free_port
from tests.fixtures.procs import opened, pyzenoh_router_process
from tests.interop.test_tls_interop import crosses, zenoh_crosses
from tests.interop.test_unixsock_interop import big_crosses
from tests.security.certs import Pki
from tests.waits import until

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]

WAIT = 15.0


@dataclass
class PyRouter:
    log: Path
    tcp: str
    quic: str


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return Pki(tmp_path_factory.mktemp("quic-pki"))


def listen_tls(pki: Pki) -> dict[str, Any]:
    return {**pki.listen_config(pki.server()), "root_ca_certificate": str(pki.ca_cert)}


@contextlib.contextmanager
def pyzenoh_router(
    tmp: Path, pki: Pki, connect: list[str] | None = None, acl: dict[str, Any] | None = None
) -> Iterator[PyRouter]:
    port, qport = free_port(), free_port()
    config = {
        "mode": "router",
        "listen": {"endpoints": [f"tcp/127.0.0.1:{port}", f"quic/127.0.0.1:{qport}"]},
        "connect": {"endpoints": connect or []},
        "scouting": {"multicast": {"enabled": False}},
        "transport": {"link": {"tls": listen_tls(pki)}},
    }
    if acl is not None:
        config["access_control"] = acl
    with pyzenoh_router_process(config, tmp / f"pz-router-{port}.json5", [port]) as (proc, log):
        yield PyRouter(log, f"tcp/127.0.0.1:{port}", f"quic/127.0.0.1:{qport}")
        assert proc.poll() is None, log.read_text()


def zopen(endpoint: str, tls: dict[str, Any] | None = None) -> zenoh.Session:
    c = zenoh.Config()
    c.insert_json5("mode", '"client"')
    c.insert_json5("connect/endpoints", json.dumps([endpoint]))
    c.insert_json5("scouting/multicast/enabled", "false")
    if tls is not None:
        c.insert_json5("transport/link/tls", json.dumps(tls))
    return zenoh.open(c)


@pytest.fixture(scope="module")
def pz_router(pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[PyRouter]:
    with pyzenoh_router(tmp_path_factory.mktemp("pz-quic"), pki) as router:
        yield router


def test_zenoh_clients_over_quic(pz_router: PyRouter, pki: Pki) -> None:
    a = zopen(pz_router.quic, pki.connect_config())
    b = zopen(pz_router.quic, pki.connect_config())
    c = zopen(pz_router.tcp)
    with opened(a, b, c):
        assert zenoh_crosses(b, a, "q/pubsub").startswith(b"q/pubsub:")
        zenoh_crosses(a, c, "q/to-tcp")
        zenoh_crosses(c, a, "q/from-tcp")
        queryable = a.declare_queryable("q/q", lambda q: q.reply("q/q", b"answer"))
        deadline = time.monotonic() + WAIT
        replies: list[bytes] = []
        while not replies and time.monotonic() < deadline:
            replies = [r.ok.payload.to_bytes() for r in b.get("q/q", timeout=2.0) if r.ok is not None]
        assert replies == [b"answer"]
        queryable.undeclare()
        token = a.liveliness().declare_token("q/alive")
        try:
            assert until(lambda: any(r.ok is not None for r in c.liveliness().get("q/**", timeout=2.0)), WAIT)
        finally:
            token.undeclare()
        big_crosses(b, a, "q/big")
        big_crosses(a, c, "q/big-to-tcp")


def test_client_of_another_ca_is_refused_router_serves_on(pz_router: PyRouter, pki: Pki) -> None:
    rogue = pki.unrelated()
    c = zenoh.Config()
    c.insert_json5("mode", '"client"')
    c.insert_json5("connect/endpoints", json.dumps([pz_router.quic]))
    c.insert_json5("scouting/multicast/enabled", "false")
    c.insert_json5("connect/timeout_ms", "1500")
    c.insert_json5("transport/link/tls", json.dumps(rogue.connect_config()))
    with pytest.raises(zenoh.ZError):
        zenoh.open(c)
    # the reason is logged where the router's operator looks
    assert until(lambda: "connection ended before any link" in pz_router.log.read_text(), WAIT)
    a = zopen(pz_router.quic, pki.connect_config())
    with opened(a):
        assert a.info.routers_zid()


def test_pyzenoh_client_to_zenoh_router(pki: Pki) -> None:
    port, qport = free_port(), free_port()
    extra_tls = listen_tls(pki)
    with zenoh_router_tls([f"tcp/127.0.0.1:{port}", f"quic/127.0.0.1:{qport}"], extra_tls):
        ps = pz.open(
            {
                "mode": "client",
                "connect": {"endpoints": [f"quic/127.0.0.1:{qport}"]},
                "transport": {"link": {"tls": pki.connect_config()}},
            }
        )
        zs = zopen(f"tcp/127.0.0.1:{port}")
        with opened(ps, zs):
            crosses(lambda data: zs.put("pzq/a", data), lambda cb: ps.declare_subscriber("pzq/a", cb), "pzq/a")
            crosses(lambda data: ps.put("pzq/b", data), lambda cb: zs.declare_subscriber("pzq/b", cb), "pzq/b")
            big_crosses(zs, ps, "pzq/big")
            big_crosses(ps, zs, "pzq/big-out")


@contextlib.contextmanager
def zenoh_router_tls(
    listen: list[str], tls: dict[str, Any], connect: list[str] | None = None, acl: dict[str, Any] | None = None
) -> Iterator[Any]:
    from tests.fixtures.procs import start_router

    extra: dict[str, Any] = {"listen/endpoints": listen, "transport/link/tls": tls}
    if connect:
        extra["connect/endpoints"] = connect
    if acl is not None:
        extra["access_control"] = acl
    proc = start_router(extra=extra)
    try:
        yield proc
    finally:
        proc.stop()


def test_pyzenoh_router_connects_to_zenoh_router(tmp_path: Path, pki: Pki) -> None:
    port, qport = free_port(), free_port()
    tls = {**listen_tls(pki), **pki.connect_config()}
    with (
        zenoh_router_tls([f"tcp/127.0.0.1:{port}", f"quic/127.0.0.1:{qport}"], tls),
        pyzenoh_router(tmp_path, pki, connect=[f"quic/127.0.0.1:{qport}"]) as router,
    ):
        near = zopen(router.tcp)
        far = zopen(f"tcp/127.0.0.1:{port}")
        with opened(near, far):
            zenoh_crosses(far, near, "r2r/in")
            zenoh_crosses(near, far, "r2r/out")


def test_zenoh_router_connects_to_pyzenoh_router(tmp_path: Path, pki: Pki) -> None:
    with pyzenoh_router(tmp_path, pki) as router:
        port = free_port()
        tls = pki.connect_config()
        with zenoh_router_tls([f"tcp/127.0.0.1:{port}"], tls, connect=[router.quic]):
            near = zopen(router.tcp)
            far = zopen(f"tcp/127.0.0.1:{port}")
            with opened(near, far):
                zenoh_crosses(far, near, "r2r/in")
                zenoh_crosses(near, far, "r2r/out")


ACL = {
    "enabled": True,
    "default_permission": "allow",
    "rules": [
        {"id": "no-put", "messages": ["put"], "key_exprs": ["q/acl/**"], "flows": ["ingress"], "permission": "deny"}
    ],
    "subjects": [{"id": "quic", "link_protocols": ["quic"]}],
    "policies": [{"rules": ["no-put"], "subjects": ["quic"]}],
}


def acl_outcome(quic_ep: str, tcp_ep: str, pki: Pki) -> list[str]:
    """What a tcp/ subscriber gets of a quic client's and a tcp client's puts on q/acl/*
    (then q/ok/* markers: once a marker arrived, anything the router let through did)."""
    got: queue.Queue[str] = queue.Queue()
    q, t, sub = zopen(quic_ep, pki.connect_config()), zopen(tcp_ep), zopen(tcp_ep)
    with opened(q, t, sub):
        s = sub.declare_subscriber("q/**", lambda sample: got.put(str(sample.key_expr)))
        seen: list[str] = []
        deadline = time.monotonic() + WAIT
        while "q/ok/t" not in seen or "q/ok/q" not in seen:
            assert time.monotonic() < deadline, seen
            for who, session in (("q", q), ("t", t)):
                session.put(f"q/acl/{who}", b"x")
                session.put(f"q/ok/{who}", b"x")
            with contextlib.suppress(queue.Empty):
                while True:
                    seen.append(got.get(timeout=0.2))
        s.undeclare()
    return sorted({k for k in seen if k.startswith("q/acl/")})


def test_access_control_link_protocols_differential(tmp_path: Path, pki: Pki) -> None:
    """The same ACL (deny puts from quic links) on zenohd and pyzenoh router."""
    port, qport = free_port(), free_port()
    tls = listen_tls(pki)
    with zenoh_router_tls([f"tcp/127.0.0.1:{port}", f"quic/127.0.0.1:{qport}"], tls, acl=ACL):
        real = acl_outcome(f"quic/127.0.0.1:{qport}", f"tcp/127.0.0.1:{port}", pki)
    with pyzenoh_router(tmp_path, pki, acl=ACL) as router:
        ours = acl_outcome(router.quic, router.tcp, pki)
    assert real == ["q/acl/t"], real
    assert ours == real


def test_admin_space_lists_the_quic_locator(pz_router: PyRouter, pki: Pki) -> None:
    a = zopen(pz_router.quic, pki.connect_config())
    with opened(a):
        info = [json.loads(r.ok.payload.to_bytes()) for r in a.get("@/*/router", timeout=5.0) if r.ok is not None]
        assert len(info) == 1 and pz_router.quic in info[0]["locators"], info
