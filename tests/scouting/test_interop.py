"""Scouting against real eclipse-zenoh 1.10.2, multicast through ``lo`` on a private port.

Both directions: real ``zenoh.scout()`` / zenoh clients find a pyzenoh router, pyzenoh's
scouting finds a real router, and a differential check of the HELLO locators of a real
and a pyzenoh router listening on the same wildcard address. Every wait is bounded and
everything started here is stopped here.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import ipaddress
import json
import queue
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

import pyzenoh
from pyzenoh.cli import main as cli_main
from pyzenoh.codec import WhatAmI, ZenohId
from pyzenoh.codec.scouting import Hello, decode_scouting_message
from pyzenoh.localnet import free_port
from pyzenoh.router.scouting import ScoutingSettings, start_responder
from pyzenoh.scouting import UdpScouter, list_interfaces
from pyzenoh.session.config import Config
from pyzenoh.session.handlers import ChannelClosedError
from pyzenoh.session.scouting import connect_scouted
from tests.scouting.conftest import (
    GROUP,
    WAIT,
    py_router,
    real_router,
    zenoh_scouting_config,
)
from tests.waits import until

zenoh = pytest.importorskip("zenoh")
pytestmark = pytest.mark.interop


def _settings(port: int, **kw: Any) -> ScoutingSettings:
    return ScoutingSettings(address=f"{GROUP}:{port}", interface="lo", **kw)


def _py_config(port: int, mode: str = "client", **scouting: Any) -> dict[str, Any]:
    return {"mode": mode, "scouting": {"multicast": {"address": f"{GROUP}:{port}", "interface": "lo"}, **scouting}}


@contextlib.contextmanager
def real_scout(port: int, what: str) -> Iterator[queue.Queue[Any]]:
    found: queue.Queue[Any] = queue.Queue()
    sc = zenoh.scout(found.put, what=what, config=zenoh_scouting_config(port))
    try:
        yield found
    finally:
        sc.stop()


# --- real zenoh finds pyzenoh ------------------------------------------------------------------


def test_real_scout_finds_pyzenoh_router(mcast_port: int) -> None:
    with py_router(_settings(mcast_port)) as router, real_scout(mcast_port, "router") as found:
        hello = found.get(timeout=WAIT)
        assert str(hello.zid) == str(router.daemon.zid)
        assert hello.whatami == zenoh.WhatAmI.ROUTER
        assert hello.locators == [router.endpoint]
        assert router.endpoint.startswith("tcp/127.0.0.1:")
        udp = router.responder.udp
        assert udp is not None and router.call(lambda: udp.core.stats.answered) >= 1


def test_real_client_without_endpoints_connects_to_pyzenoh_router(mcast_port: int) -> None:
    with py_router(_settings(mcast_port)) as router:
        client = zenoh.open(zenoh_scouting_config(mcast_port, "client"))
        try:
            assert [str(z) for z in client.info.routers_zid()] == [str(router.daemon.zid)]
            # and data goes through that router to a session connected the usual way
            with pyzenoh.open({"mode": "client", "connect": {"endpoints": [router.endpoint]}}) as s:
                sub = s.declare_subscriber("scout/**")
                got: list[str] = []

                def delivered() -> bool:
                    client.put("scout/a", "via-scouting")
                    item = sub.try_recv()
                    if item is not None:
                        got.append(item.payload.to_string())
                    return bool(got)

                assert until(delivered)
                assert got[0] == "via-scouting"
        finally:
            client.close()


# --- pyzenoh finds real zenoh ------------------------------------------------------------------


def test_udp_scouter_finds_real_router(mcast_port: int) -> None:
    async def first_hello() -> Hello | None:
        async with UdpScouter("router", address=f"{GROUP}:{mcast_port}", interface="lo", timeout=WAIT) as sc:
            async for hello in sc:
                return hello
        return None

    with real_router(mcast_port, zid="abcd") as (_, endpoint):
        hello = asyncio.run(first_hello())
    assert hello is not None
    assert (hello.whatami, str(hello.zid), hello.locators) == (WhatAmI.ROUTER, "abcd", (endpoint,))


def test_session_scout_api_finds_real_router(mcast_port: int) -> None:
    cfg = _py_config(mcast_port)
    with real_router(mcast_port, zid="abcd") as (_, endpoint):
        with pyzenoh.scout(what="router", config=cfg) as sc:
            hello = sc.recv(timeout=WAIT)
            assert (hello.whatami, str(hello.zid), hello.locators) == (pyzenoh.WhatAmI.ROUTER, "abcd", [endpoint])
            assert str(hello) == f"Hello {{ zid: abcd, whatami: Router, locators: [{endpoint}] }}"
        with pytest.raises(ChannelClosedError):
            sc.recv(timeout=0)
        assert list(sc) == []

        got: queue.Queue[pyzenoh.Hello] = queue.Queue()
        cb = pyzenoh.scout(got.put, what="router|peer", config=cfg)
        try:
            assert got.get(timeout=WAIT).locators == [endpoint]
            assert cb.handler is None
        finally:
            cb.stop()


def test_dropping_a_scout_stops_it(mcast_port: int) -> None:
    def scout_threads() -> int:
        return sum(t.name == "pyzenoh-scout" and t.is_alive() for t in threading.enumerate())

    before = scout_threads()
    sc = pyzenoh.scout(lambda h: None, config=_py_config(mcast_port))
    assert scout_threads() == before + 1
    del sc
    gc.collect()
    assert until(lambda: scout_threads() == before)


def test_pyzenoh_client_without_endpoints_connects_to_real_router(mcast_port: int) -> None:
    with real_router(mcast_port, zid="abcd") as (router, _):
        sub = router.declare_subscriber("scout/**")
        with pyzenoh.open(_py_config(mcast_port)) as s:
            assert [str(z) for z in s.info.routers_zid()] == ["abcd"]
            got: list[str] = []

            def delivered() -> bool:
                s.put("scout/b", "found-by-scouting")
                item = sub.try_recv()
                if item is not None:
                    got.append(item.payload.to_string())
                return bool(got)

            assert until(delivered)
            assert got[0] == "found-by-scouting"
        sub.undeclare()


def test_cli_prints_each_node_once(mcast_port: int, capsys: pytest.CaptureFixture[str]) -> None:
    with real_router(mcast_port, zid="abcd") as (_, endpoint):
        rc = cli_main(
            [
                "scout",
                "--what",
                "router",
                "--timeout",
                "1.5",
                "--json",
                "--interface",
                "lo",
                "--address",
                f"{GROUP}:{mcast_port}",
            ]
        )
    lines = capsys.readouterr().out.splitlines()
    assert rc == 0
    assert [json.loads(line) for line in lines] == [{"zid": "abcd", "whatami": "router", "locators": [endpoint]}]


# --- HELLO locators: pyzenoh next to a real router, same wildcard listen address --------------


def _sources() -> list[str]:
    out = ["127.0.0.1"]
    for iface in list_interfaces():
        if iface.active and not iface.loopback:
            out += [str(a) for a in iface.addresses if a.version == 4][:1]
    return out[:2]


def _ipv6_ok() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.parametrize("source", _sources())
@pytest.mark.parametrize("wildcard", ["0.0.0.0", "::"])
def test_hello_locators_match_a_real_router(mcast_port: int, wildcard: str, source: str) -> None:
    if wildcard == "::" and not _ipv6_ok():
        pytest.skip("no IPv6 on this host")
    host = f"[{wildcard}]" if ":" in wildcard else wildcard
    real_port = free_port()
    with (
        real_router(mcast_port, listen=f"tcp/{host}:{real_port}", zid="abcd"),
        py_router(_settings(mcast_port), listen=f"tcp/{host}:0") as router,
    ):
        py_port = int(router.endpoint.rsplit(":", 1)[1])
        hellos = _raw_scout(mcast_port, source, want={"abcd", str(router.daemon.zid)})
    assert set(hellos) == {"abcd", str(router.daemon.zid)}
    real = [loc.replace(f":{real_port}", ":P") for loc in hellos["abcd"].locators]
    ours = [loc.replace(f":{py_port}", ":P") for loc in hellos[str(router.daemon.zid)].locators]
    assert ours == real
    assert real  # the real router advertised something to compare with


def _raw_scout(port: int, source: str, want: set[str]) -> dict[str, Hello]:
    """Send ``01 09 01`` through lo from ``source``; collect the HELLOs of ``want``."""
    found: dict[str, Hello] = {}
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind((source, 0))
        s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton("127.0.0.1"))
        s.settimeout(0.5)
        deadline = time.monotonic() + WAIT
        while set(found) != want and time.monotonic() < deadline:
            s.sendto(bytes.fromhex("010901"), (GROUP, port))
            with contextlib.suppress(TimeoutError):
                while set(found) != want:
                    data, addr = s.recvfrom(65535)
                    assert ipaddress.ip_address(addr[0]).version == 4
                    msg = decode_scouting_message(data)
                    if isinstance(msg, Hello):
                        found[str(msg.zid)] = msg
    return found


# --- without multicast ---------------------------------------------------------------------------


def test_unicast_responder_answers_direct_scouts() -> None:
    settings = ScoutingSettings(enabled=False, unicast="127.0.0.1:0")

    async def first_hello(port: int) -> Hello | None:
        async with UdpScouter("router", multicast=False, targets=[f"127.0.0.1:{port}"], timeout=WAIT) as sc:
            async for hello in sc:
                return hello
        return None

    with py_router(settings) as router:
        udp = router.responder.udp
        assert udp is not None and udp.multicast_address is None and udp.unicast_address is not None
        hello = asyncio.run(first_hello(udp.unicast_address[1]))
        assert hello is not None
        assert (str(hello.zid), hello.locators) == (str(router.daemon.zid), (router.endpoint,))


def test_a_router_without_usable_interface_starts_without_scouting() -> None:
    async def run() -> None:
        settings = ScoutingSettings(interface="nosuch0")
        idle = await start_responder(settings, ZenohId(1), WhatAmI.ROUTER, list)
        assert not idle.running
        idle.close()
        with pytest.raises(OSError):
            await start_responder(settings, ZenohId(1), WhatAmI.ROUTER, list, required=True)
        off = await start_responder(ScoutingSettings(enabled=False), ZenohId(1), WhatAmI.ROUTER, list)
        assert off.udp is None

    asyncio.run(run())


def test_scouting_off_or_fruitless_leaves_the_fallback_to_the_caller(mcast_port: int) -> None:
    async def never(ep: str) -> str:
        raise AssertionError(f"nothing should be found, got {ep}")

    errors: list[str] = []
    off = Config({"mode": "client", "scouting": {"multicast": {"enabled": False}}})
    assert asyncio.run(connect_scouted(off, never, errors)) is None and errors == []
    quiet = Config(_py_config(mcast_port, timeout=300))
    assert asyncio.run(connect_scouted(quiet, never, errors)) is None
    assert len(errors) == 1 and "scouting found no router|peer|client within 0.3 s" in errors[0]


def test_hello_lists_udp_locators_as_zenohd(mcast_port: int) -> None:
    """A router listening on udp/ only: real zenoh.scout() finds its udp locator in the
    HELLO, from a pyzenoh router as from a real one."""
    with (
        py_router(_settings(mcast_port), listen="udp/127.0.0.1:0") as router,
        real_scout(mcast_port, "router") as found,
    ):
        hello = found.get(timeout=WAIT)
        assert router.endpoint.startswith("udp/127.0.0.1:")
        assert hello.locators == [router.endpoint]
    udp_ep = f"udp/127.0.0.1:{free_port()}"
    with real_router(mcast_port, listen=udp_ep) as _, real_scout(mcast_port, "router") as found:
        assert found.get(timeout=WAIT).locators == [udp_ep]
