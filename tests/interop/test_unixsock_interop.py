"""``unixsock-stream/PATH`` links between pyzenoh and real eclipse-zenoh 1.10.2.

* real zenoh clients over a Unix socket to ``pyzenoh router`` (pub/sub both ways, get,
  liveliness, a fragmented payload), the socket file removed when the router exits and a
  stale one replaced at start;
* a pyzenoh client session over a Unix socket to a real zenoh router;
* router links over Unix sockets both ways between pyzenoh and real routers.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import zenoh

import pyzenoh.session as pz
from pyzenoh.localnet import free_port
from tests.fixtures.procs import Proc, opened, pyzenoh_router_process, start_router
from tests.interop.test_tls_interop import crosses, zenoh_crosses
from tests.waits import until

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]

WAIT = 15.0
BIG = 300_000  # over one 65535-byte batch: fragmented on the link


@dataclass
class PyRouter:
    proc: subprocess.Popen[bytes]
    log: Path
    tcp: str
    unix: str


def sock_path(tmp: Path, name: str) -> str:
    # AF_UNIX paths are bounded (108 bytes): pytest's tmp dirs can be long
    path = tmp / f"{name}.sock"
    return str(path) if len(str(path)) < 100 else f"/tmp/pz-{os.getpid()}-{name}.sock"


@contextlib.contextmanager
def pyzenoh_router(tmp: Path, path: str, connect: list[str] | None = None) -> Iterator[PyRouter]:
    port = free_port()
    config = {
        "mode": "router",
        "listen": {"endpoints": [f"tcp/127.0.0.1:{port}", f"unixsock-stream/{path}"]},
        "connect": {"endpoints": connect or []},
        "scouting": {"multicast": {"enabled": False}},
    }
    with pyzenoh_router_process(config, tmp / f"pz-router-{port}.json5", [port]) as (proc, log):
        assert until(lambda: os.path.exists(path), WAIT)
        yield PyRouter(proc, log, f"tcp/127.0.0.1:{port}", f"unixsock-stream/{path}")


@contextlib.contextmanager
def zenoh_router(listen: list[str], connect: list[str] | None = None) -> Iterator[Proc]:
    extra: dict[str, Any] = {"listen/endpoints": listen}
    if connect:
        extra["connect/endpoints"] = connect
    proc = start_router(extra=extra)
    try:
        yield proc
    finally:
        proc.stop()


def zopen(endpoint: str) -> zenoh.Session:
    c = zenoh.Config()
    c.insert_json5("mode", '"client"')
    c.insert_json5("connect/endpoints", json.dumps([endpoint]))
    c.insert_json5("scouting/multicast/enabled", "false")
    return zenoh.open(c)


def big_crosses(pub: Any, sub: Any, key: str) -> None:
    """A payload of several batches arrives whole."""
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


@pytest.fixture(scope="module")
def pz_router(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PyRouter]:
    tmp = tmp_path_factory.mktemp("pz-unix")
    with pyzenoh_router(tmp, sock_path(tmp, "router")) as router:
        yield router
        assert router.proc.poll() is None, router.log.read_text()


def test_zenoh_clients_over_unixsock(pz_router: PyRouter) -> None:
    a = zopen(pz_router.unix)
    b = zopen(pz_router.unix)
    c = zopen(pz_router.tcp)
    with opened(a, b, c):
        assert zenoh_crosses(b, a, "ux/pubsub").startswith(b"ux/pubsub:")
        zenoh_crosses(a, c, "ux/to-tcp")
        zenoh_crosses(c, a, "ux/from-tcp")
        queryable = a.declare_queryable("ux/q", lambda q: q.reply("ux/q", b"answer"))
        deadline = time.monotonic() + WAIT
        replies: list[bytes] = []
        while not replies and time.monotonic() < deadline:
            replies = [r.ok.payload.to_bytes() for r in b.get("ux/q", timeout=2.0) if r.ok is not None]
        assert replies == [b"answer"]
        queryable.undeclare()
        token = a.liveliness().declare_token("ux/alive")
        try:
            assert until(lambda: any(r.ok is not None for r in c.liveliness().get("ux/**", timeout=2.0)), WAIT)
        finally:
            token.undeclare()
        big_crosses(b, a, "ux/big")
        big_crosses(c, a, "ux/big-from-tcp")


def test_socket_file_removed_on_exit_and_stale_one_replaced(tmp_path: Path) -> None:
    path = sock_path(tmp_path, "stale")
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(path)  # bound, never listening: what a killed process leaves behind
    stale.close()
    assert os.path.exists(path)
    with pyzenoh_router(tmp_path, path) as router:
        a = zopen(router.unix)
        with opened(a):
            assert a.info.routers_zid()
    assert not os.path.exists(path)


def test_a_live_socket_is_not_taken_over(tmp_path: Path, pz_router: PyRouter) -> None:
    path = pz_router.unix.removeprefix("unixsock-stream/")
    port = free_port()
    config = {
        "mode": "router",
        "listen": {"endpoints": [f"tcp/127.0.0.1:{port}", pz_router.unix]},
        "scouting": {"multicast": {"enabled": False}},
    }
    conf = tmp_path / "second.json5"
    conf.write_text(json.dumps(config))
    done = subprocess.run(
        [sys.executable, "-m", "pyzenoh", "router", "-c", str(conf)],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "address in use" in done.stdout + done.stderr
    assert os.path.exists(path)  # the first router's file stays
    a = zopen(pz_router.unix)
    with opened(a):
        assert a.info.routers_zid()


def test_pyzenoh_client_to_zenoh_router(tmp_path: Path) -> None:
    path = sock_path(tmp_path, "zrouter")
    port = free_port()
    with zenoh_router([f"tcp/127.0.0.1:{port}", f"unixsock-stream/{path}"]):
        assert until(lambda: os.path.exists(path), WAIT)
        ps = pz.open({"mode": "client", "connect": {"endpoints": [f"unixsock-stream/{path}"]}})
        zs = zopen(f"tcp/127.0.0.1:{port}")
        with opened(ps, zs):
            crosses(lambda data: zs.put("pzux/a", data), lambda cb: ps.declare_subscriber("pzux/a", cb), "pzux/a")
            crosses(lambda data: ps.put("pzux/b", data), lambda cb: zs.declare_subscriber("pzux/b", cb), "pzux/b")
            big_crosses(zs, ps, "pzux/big")
            big_crosses(ps, zs, "pzux/big-out")


def test_pyzenoh_router_connects_to_zenoh_router(tmp_path: Path) -> None:
    path = sock_path(tmp_path, "zr2")
    port = free_port()
    with zenoh_router([f"tcp/127.0.0.1:{port}", f"unixsock-stream/{path}"]):
        assert until(lambda: os.path.exists(path), WAIT)
        with pyzenoh_router(tmp_path, sock_path(tmp_path, "pz2"), connect=[f"unixsock-stream/{path}"]) as router:
            near = zopen(router.tcp)
            far = zopen(f"tcp/127.0.0.1:{port}")
            with opened(near, far):
                zenoh_crosses(far, near, "r2r/in")
                zenoh_crosses(near, far, "r2r/out")


def test_zenoh_router_connects_to_pyzenoh_router(pz_router: PyRouter) -> None:
    port = free_port()
    with zenoh_router([f"tcp/127.0.0.1:{port}"], connect=[pz_router.unix]):
        near = zopen(pz_router.tcp)
        far = zopen(f"tcp/127.0.0.1:{port}")
        with opened(near, far):
            zenoh_crosses(far, near, "z2p/in")
            zenoh_crosses(near, far, "z2p/out")


ACL = {
    "enabled": True,
    "default_permission": "allow",
    "rules": [
        {"id": "no-put", "messages": ["put"], "key_exprs": ["ux/acl/**"], "flows": ["ingress"], "permission": "deny"}
    ],
    "subjects": [{"id": "unix", "link_protocols": ["unixsock-stream"]}],
    "policies": [{"rules": ["no-put"], "subjects": ["unix"]}],
}


def acl_outcome(unix_ep: str, tcp_ep: str) -> tuple[list[str], list[str]]:
    """What a tcp/ subscriber gets of a unix client's and a tcp client's puts on ux/acl/*
    (then ux/ok/* markers: once a marker arrived, anything the router let through did)."""
    got: queue.Queue[str] = queue.Queue()
    u, t, sub = zopen(unix_ep), zopen(tcp_ep), zopen(tcp_ep)
    with opened(u, t, sub):
        s = sub.declare_subscriber("ux/**", lambda sample: got.put(str(sample.key_expr)))
        seen: list[str] = []
        deadline = time.monotonic() + WAIT
        while "ux/ok/t" not in seen or "ux/ok/u" not in seen:
            assert time.monotonic() < deadline, seen
            for who, session in (("u", u), ("t", t)):
                session.put(f"ux/acl/{who}", b"x")
                session.put(f"ux/ok/{who}", b"x")
            with contextlib.suppress(queue.Empty):
                while True:
                    seen.append(got.get(timeout=0.2))
        s.undeclare()
    return sorted({k for k in seen if k.startswith("ux/acl/")}), sorted(set(seen))


def test_access_control_link_protocols_differential(tmp_path: Path) -> None:
    """The same ACL (deny puts from unixsock-stream links) on zenohd and pyzenoh router."""
    zpath, ppath = sock_path(tmp_path, "acl-z"), sock_path(tmp_path, "acl-p")
    port = free_port()
    extra = {"listen/endpoints": [f"tcp/127.0.0.1:{port}", f"unixsock-stream/{zpath}"], "access_control": ACL}
    proc = start_router(extra=extra)
    try:
        assert until(lambda: os.path.exists(zpath), WAIT)
        real = acl_outcome(f"unixsock-stream/{zpath}", f"tcp/127.0.0.1:{port}")
    finally:
        proc.stop()
    pport = free_port()
    config = {
        "mode": "router",
        "listen": {"endpoints": [f"tcp/127.0.0.1:{pport}", f"unixsock-stream/{ppath}"]},
        "scouting": {"multicast": {"enabled": False}},
        "access_control": ACL,
    }
    with pyzenoh_router_process(config, tmp_path / "acl.json5", [pport]):
        assert until(lambda: os.path.exists(ppath), WAIT)
        ours = acl_outcome(f"unixsock-stream/{ppath}", f"tcp/127.0.0.1:{pport}")
    assert real[0] == ["ux/acl/t"], real
    assert ours == real


def test_admin_space_lists_the_unix_locator(pz_router: PyRouter) -> None:
    a = zopen(pz_router.unix)
    with opened(a):
        info = [json.loads(r.ok.payload.to_bytes()) for r in a.get("@/*/router", timeout=5.0) if r.ok is not None]
        assert len(info) == 1 and pz_router.unix in info[0]["locators"], info
        assert pz_router.tcp in info[0]["locators"]
