"""Scouting test helpers: free UDP ports, a multicast-on-``lo`` probe, in-process routers.

Every test uses its own multicast port (never 7446), so parallel runs and a real zenohd
on the machine do not interfere; sockets join the group on ``lo`` only.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest

from pyzenoh.codec import WhatAmI
from pyzenoh.localnet import free_port
from pyzenoh.router.config import RouterConfig
from pyzenoh.router.daemon import RouterDaemon
from pyzenoh.router.scouting import Responder, ScoutingSettings, start_responder

GROUP = "224.0.0.224"
WAIT = 10.0
T = TypeVar("T")


def free_udp_port() -> int:
    """A UDP port that was free a moment ago (on the wildcard, so also on the group)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("0.0.0.0", 0))
        return int(s.getsockname()[1])


@functools.cache
def multicast_on_lo() -> str | None:
    """None when a datagram sent to a group through lo comes back; else why not."""
    port = free_udp_port()
    try:
        with (
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as rx,
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as tx,
        ):
            rx.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            rx.bind((GROUP, port))
            rx.setsockopt(
                socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, socket.inet_aton(GROUP) + socket.inet_aton("127.0.0.1")
            )
            rx.settimeout(1.0)
            tx.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton("127.0.0.1"))
            tx.sendto(b"probe", (GROUP, port))
            data, _ = rx.recvfrom(64)
            return None if data == b"probe" else "multicast on lo returned other bytes"
    except OSError as exc:
        return f"multicast on lo does not work here: {exc}"


@pytest.fixture
def mcast_port() -> int:
    reason = multicast_on_lo()
    if reason is not None:
        pytest.skip(reason)
    return free_udp_port()


def zenoh_scouting_config(port: int, mode: str | None = None) -> Any:
    """A real zenoh Config that scouts on ``GROUP:port`` through lo."""
    import zenoh

    conf = zenoh.Config()
    if mode is not None:
        conf.insert_json5("mode", f'"{mode}"')
    conf.insert_json5("scouting/multicast/enabled", "true")
    conf.insert_json5("scouting/multicast/address", f'"{GROUP}:{port}"')
    conf.insert_json5("scouting/multicast/interface", '"lo"')
    return conf


@contextlib.contextmanager
def real_router(port: int, listen: str | None = None, zid: str = "abcd") -> Iterator[tuple[Any, str]]:
    """A real eclipse-zenoh router in-process, answering SCOUTs on ``GROUP:port`` via lo."""
    import zenoh

    endpoint = listen or f"tcp/127.0.0.1:{free_port()}"
    conf = zenoh_scouting_config(port, "router")
    conf.insert_json5("id", f'"{zid}"')
    conf.insert_json5("listen/endpoints", f'["{endpoint}"]')
    conf.insert_json5("scouting/delay", "0")
    session = zenoh.open(conf)
    try:
        yield session, endpoint
    finally:
        session.close()  # type: ignore[no-untyped-call]


@dataclass
class PyRouter:
    """A pyzenoh RouterDaemon plus the scouting responder, in a background loop."""

    daemon: RouterDaemon
    responder: Responder
    loop: asyncio.AbstractEventLoop
    endpoint: str

    def call(self, fn: Callable[[], T]) -> T:
        async def run() -> T:
            return fn()

        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(WAIT)


def listen_locators(daemon: RouterDaemon) -> list[str]:
    """What the lead wires as the responder's locator source."""
    return [str(ep) for listener in daemon.listeners for ep in listener.endpoints]


@contextlib.contextmanager
def py_router(settings: ScoutingSettings, listen: str = "tcp/127.0.0.1:0") -> Iterator[PyRouter]:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="scouting-router", daemon=True)
    thread.start()
    daemon = RouterDaemon(RouterConfig(listen=(listen,)))
    holder: list[Responder] = []

    async def start() -> None:
        await daemon.start()
        holder.append(await start_responder(settings, daemon.zid, WhatAmI.ROUTER, lambda: listen_locators(daemon)))

    try:
        asyncio.run_coroutine_threadsafe(start(), loop).result(WAIT)
        yield PyRouter(daemon, holder[0], loop, listen_locators(daemon)[0])
    finally:
        with contextlib.suppress(Exception):
            if holder:
                asyncio.run_coroutine_threadsafe(_close(holder[0]), loop).result(WAIT)
            asyncio.run_coroutine_threadsafe(daemon.stop(), loop).result(WAIT)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(WAIT)
        loop.close()


async def _close(responder: Responder) -> None:
    responder.close()
