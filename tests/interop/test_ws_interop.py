"""``ws/HOST:PORT`` links between pyzenoh and real eclipse-zenoh 1.10.2.

* real zenoh clients over ws to ``pyzenoh router`` (pub/sub both ways, get, liveliness,
  a fragmented payload);
* a pyzenoh client session over ws to a real zenoh router;
* router links over ws both ways between pyzenoh and real routers;
* bad input: a text frame ends only that peer's link.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest

import pyzenoh.session as pz
from pyzenoh.localnet import free_port
from tests.fixtures.procs import opened, pyzenoh_router_process
from tests.interop.test_tls_interop import crosses, zenoh_crosses
from tests.interop.test_unixsock_interop import WAIT, big_crosses, zenoh_router, zopen
from tests.waits import until

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]


@dataclass
class PyRouter:
    proc: subprocess.Popen[bytes]
    log: Path
    tcp: str
    ws: str


@contextlib.contextmanager
def pyzenoh_router(tmp: Path, connect: list[str] | None = None) -> Iterator[PyRouter]:
    port, wport = free_port(), free_port()
    config = {
        "mode": "router",
        "listen": {"endpoints": [f"tcp/127.0.0.1:{port}", f"ws/127.0.0.1:{wport}"]},
        "connect": {"endpoints": connect or []},
        "scouting": {"multicast": {"enabled": False}},
    }
    with pyzenoh_router_process(config, tmp / f"pz-router-{port}.json5", [port, wport]) as (proc, log):
        yield PyRouter(proc, log, f"tcp/127.0.0.1:{port}", f"ws/127.0.0.1:{wport}")


@pytest.fixture(scope="module")
def pz_router(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PyRouter]:
    with pyzenoh_router(tmp_path_factory.mktemp("pz-ws")) as router:
        yield router
        assert router.proc.poll() is None, router.log.read_text()


def test_zenoh_clients_over_ws(pz_router: PyRouter) -> None:
    a = zopen(pz_router.ws)
    b = zopen(pz_router.ws)
    c = zopen(pz_router.tcp)
    with opened(a, b, c):
        assert zenoh_crosses(b, a, "ws/pubsub").startswith(b"ws/pubsub:")
        zenoh_crosses(a, c, "ws/to-tcp")
        zenoh_crosses(c, a, "ws/from-tcp")
        queryable = a.declare_queryable("ws/q", lambda q: q.reply("ws/q", b"answer"))
        deadline = time.monotonic() + WAIT
        replies: list[bytes] = []
        while not replies and time.monotonic() < deadline:
            replies = [r.ok.payload.to_bytes() for r in b.get("ws/q", timeout=2.0) if r.ok is not None]
        assert replies == [b"answer"]
        queryable.undeclare()
        token = a.liveliness().declare_token("ws/alive")
        try:
            assert until(lambda: any(r.ok is not None for r in c.liveliness().get("ws/**", timeout=2.0)), WAIT)
        finally:
            token.undeclare()
        big_crosses(b, a, "ws/big")
        big_crosses(c, a, "ws/big-from-tcp")
        # the admin space names the listener's locator and the ws sessions' links
        admin = [r.ok.payload.to_bytes() for r in c.get("@/*/router", timeout=5.0) if r.ok is not None]
        assert admin and pz_router.ws.encode() in admin[0]
        assert admin[0].count(b'"ws/127.0.0.1:') >= 3


async def _text_then_http(ws_ep: str) -> tuple[int, aiohttp.WSMsgType]:
    url = "http://" + ws_ep.removeprefix("ws/") + "/"
    async with aiohttp.ClientSession() as s:
        async with s.get(url) as r:
            status = r.status
        async with s.ws_connect(url.replace("http", "ws", 1)) as ws:
            await ws.send_str("hello")
            msg = await asyncio.wait_for(ws.receive(), WAIT)
    return status, msg.type


def test_text_frame_and_plain_get_end_only_that_peer(pz_router: PyRouter) -> None:
    a = zopen(pz_router.ws)
    with opened(a):
        status, kind = asyncio.run(_text_then_http(pz_router.ws))
        assert status == 400
        assert kind in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.CLOSING)
        zenoh_crosses(a, a, "ws/still")  # the other link is untouched
    assert pz_router.proc.poll() is None


def test_pyzenoh_client_to_zenoh_router() -> None:
    port, wport = free_port(), free_port()
    with zenoh_router([f"tcp/127.0.0.1:{port}", f"ws/127.0.0.1:{wport}"]):
        ps = pz.open({"mode": "client", "connect": {"endpoints": [f"ws/127.0.0.1:{wport}"]}})
        zs = zopen(f"tcp/127.0.0.1:{port}")
        with opened(ps, zs):
            crosses(lambda data: zs.put("pzws/a", data), lambda cb: ps.declare_subscriber("pzws/a", cb), "pzws/a")
            crosses(lambda data: ps.put("pzws/b", data), lambda cb: zs.declare_subscriber("pzws/b", cb), "pzws/b")
            big_crosses(zs, ps, "pzws/big")
            big_crosses(ps, zs, "pzws/big-out")


def test_pyzenoh_router_connects_to_zenoh_router(tmp_path: Path) -> None:
    port, wport = free_port(), free_port()
    with (
        zenoh_router([f"tcp/127.0.0.1:{port}", f"ws/127.0.0.1:{wport}"]),
        pyzenoh_router(tmp_path, connect=[f"ws/127.0.0.1:{wport}"]) as router,
    ):
        near = zopen(router.tcp)
        far = zopen(f"tcp/127.0.0.1:{port}")
        with opened(near, far):
            zenoh_crosses(far, near, "r2r/in")
            zenoh_crosses(near, far, "r2r/out")


def test_zenoh_router_connects_to_pyzenoh_router(pz_router: PyRouter) -> None:
    port = free_port()
    with zenoh_router([f"tcp/127.0.0.1:{port}"], connect=[pz_router.ws]):
        near = zopen(pz_router.tcp)
        far = zopen(f"tcp/127.0.0.1:{port}")
        with opened(near, far):
            zenoh_crosses(far, near, "z2p/in")
            zenoh_crosses(near, far, "z2p/out")


async def _garbage(ws_ep: str) -> aiohttp.WSMsgType:
    async with aiohttp.ClientSession() as s, s.ws_connect("ws://" + ws_ep.removeprefix("ws/") + "/") as ws:
        await ws.send_bytes(b"\xff" * 64)  # no INIT: the link's handshake refuses it
        while True:
            msg = await asyncio.wait_for(ws.receive(), WAIT)
            if msg.type != aiohttp.WSMsgType.BINARY:  # a CLOSE batch may come first
                return msg.type


def test_garbage_after_upgrade_ends_only_that_peer(pz_router: PyRouter) -> None:
    a = zopen(pz_router.ws)
    with opened(a):
        kind = asyncio.run(_garbage(pz_router.ws))
        assert kind in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.CLOSING)
        zenoh_crosses(a, a, "ws/after-garbage")
    assert pz_router.proc.poll() is None
