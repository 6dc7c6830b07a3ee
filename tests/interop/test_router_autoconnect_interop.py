"""Routers that find each other by multicast scouting, as zenohd's do when
``scouting/multicast/autoconnect`` lists routers for a router (zenohd's default lists
none): two pyzenoh routers, and a pyzenoh router with a real 1.10.2 one, meet on this
test process's own group (tests/conftest.py) with no endpoint to connect to; a client of
one router then reaches a subscriber on the other."""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from pyzenoh.localnet import free_port
from pyzenoh.router.config import config_from_dict
from pyzenoh.router.daemon import RouterDaemon
from pyzenoh.scouting.core import ADDRESS_ENV
from tests.fixtures.procs import running_zenohd, zenoh_session
from tests.waits import WAIT, until

zenoh = pytest.importorskip("zenoh")

pytestmark = [pytest.mark.interop, pytest.mark.timeout(90)]


def _group() -> str:
    """A scouting group of the test's own: another test's routers (in this process or its
    subprocesses, which share the suite's group) must not answer its SCOUTs."""
    return f"{os.environ[ADDRESS_ENV].rsplit(':', 1)[0]}:{free_port()}"


def _scouting(autoconnect: list[str], strategy: str = "always", group: str = "") -> dict[str, Any]:
    return {
        "enabled": True,
        "address": group or os.environ[ADDRESS_ENV],
        "autoconnect": {"router": autoconnect},
        "autoconnect_strategy": {"router": {"to_router": strategy}},
    }


@contextlib.contextmanager
def _pyzenoh_router(autoconnect: list[str], group: str, strategy: str = "always") -> Iterator[tuple[RouterDaemon, str]]:
    endpoint = f"tcp/127.0.0.1:{free_port()}"
    tree = {
        "mode": "router",
        "listen": {"endpoints": [endpoint]},
        "scouting": {"multicast": _scouting(autoconnect, strategy, group)},
    }
    daemon = RouterDaemon(config_from_dict(tree))
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="autoconnect-router", daemon=True)
    thread.start()
    try:
        asyncio.run_coroutine_threadsafe(daemon.start(), loop).result(WAIT)
        yield daemon, endpoint
    finally:
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(daemon.stop(), loop).result(WAIT)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(WAIT)
        loop.close()


def _routed(a_endpoint: str, b_endpoint: str, key: str) -> None:
    """A client of ``a`` reaches a subscriber on ``b`` (and back)."""
    with zenoh_session(a_endpoint) as a, zenoh_session(b_endpoint) as b:
        for src, dst in ((a, b), (b, a)):
            got: queue.Queue[Any] = queue.Queue()
            sub = dst.declare_subscriber(f"{key}/**", got.put)
            assert until(lambda src=src, got=got: src.put(f"{key}/x", "hi") or not got.empty()), "no route"
            assert got.get(timeout=WAIT).payload.to_string() == "hi"
            sub.undeclare()


def test_two_pyzenoh_routers_autoconnect() -> None:
    group = _group()
    with _pyzenoh_router(["router"], group) as (a, a_ep), _pyzenoh_router(["router"], group) as (b, b_ep):
        assert until(lambda: a.faces.has_zid(b.zid) and b.faces.has_zid(a.zid)), "the routers never met"
        _routed(a_ep, b_ep, "autoconnect/pp")
        assert a.discovery.dials + b.discovery.dials >= 1


def test_greater_zid_strategy_dials_once() -> None:
    group = _group()
    with (
        _pyzenoh_router(["router"], group, "greater-zid") as (a, _),
        _pyzenoh_router(["router"], group, "greater-zid") as (b, _),
    ):
        assert until(lambda: a.faces.has_zid(b.zid) and b.faces.has_zid(a.zid)), "the routers never met"
        greater, lesser = (a, b) if a.zid.value > b.zid.value else (b, a)
        assert greater.discovery.dials == 1
        assert lesser.discovery.dials == 0


def test_a_pyzenoh_router_and_a_real_one_autoconnect() -> None:
    group = _group()
    extra = {f"scouting/multicast/{k}": v for k, v in _scouting(["router"], group=group).items()}
    with running_zenohd(extra=extra) as real, _pyzenoh_router(["router"], group) as (ours, ours_ep):
        real_zid = real.ready_line.split()[1]
        assert until(lambda: any(str(f.zid) == real_zid for f in ours.faces.view().values())), "never met"
        _routed(real.endpoint, ours_ep, "autoconnect/pr")


def test_routers_do_not_autoconnect_by_default() -> None:
    group = _group()
    with _pyzenoh_router([], group) as (a, _), _pyzenoh_router([], group) as (b, _):
        # a router's default autoconnect lists no kind: no scouting, so nothing is dialled
        # (the absence over two SCOUT periods)
        assert not until(lambda: a.faces.has_zid(b.zid) or b.faces.has_zid(a.zid), 2.5)
        assert a.discovery.dials == b.discovery.dials == 0
