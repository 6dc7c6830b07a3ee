"""Mutation fuzzing of a live ``pyzenoh router``, with real eclipse-zenoh clients watching.

A fixed sequence of seeds (:func:`tests.fuzz.mutate.make_case`) is run against one router
subprocess, 16 connections at a time, bounded by a count and a time (more under
``CI=true``). Meanwhile a healthy eclipse-zenoh publisher/subscriber/queryable set keeps
using the same router. The router must end every input with a clean close or normal
processing: it stays alive, never hangs a connection, keeps serving the healthy clients,
keeps its memory bounded, holds no state of the closed sessions afterwards (read from its
admin space), and logs no traceback. A log problem is triaged to the seed that
causes it and reported with the bytes that reproduce it.

``bench/fuzz_router.py`` runs the same fuzzer for as long as asked (nightly).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pyzenoh.codec import (
    Declare,
    DeclareQueryable,
    DeclareSubscriber,
    DeclareToken,
    NetworkOam,
    WhatAmI,
    WireExpr,
    ZenohId,
)
from pyzenoh.codec.network import OAM_LINKSTATE, QOS_DECLARE
from pyzenoh.routing.linkstate import LinkState, encode_linkstates
from pyzenoh.transport.link import Link, LinkClosed, LinkConfig, Role
from tests.fuzz.mutate import (
    ROUTER_ID,
    ROUTER_ZID,
    HealthyClients,
    LogWatch,
    Report,
    Router,
    describe,
    fuzz,
    problem_signature,
    replay,
    rss_kb,
    run_router,
    triage,
)

pytestmark = pytest.mark.interop
pytest.importorskip("zenoh")

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
#: The seeds: BASE_SEED, BASE_SEED + 1, ... (the same inputs on every run).
BASE_SEED = 1_000_000
INPUTS = 50_000 if IN_CI else 30_000
SECONDS = 15.0 if IN_CI else 14.0  # ~6,000 inputs on 2 busy cores; longer: bench/fuzz_router.py
CONCURRENCY = 16
HEALTH_EVERY = 3.0
#: "Does not grow without bound": what the router may keep after the run (KiB). Tens of
#: thousands of connections, fragments of up to 2 MiB each, 16 at a time.
RSS_GROWTH_LIMIT_KB = 128 * 1024


@pytest.fixture(scope="module")
def fuzz_router(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Router]:
    with run_router(tmp_path_factory.mktemp("fuzz")) as router:
        yield router


def _summary(report: Report, rss_start: int, rss_end: int) -> str:
    kinds = ", ".join(f"{k} {n}" for k, n in report.by_kind.most_common())
    return (
        f"{report.inputs} inputs in {report.seconds:.1f} s ({report.rate:.0f}/s), "
        f"{report.established} established, {report.bytes_sent / 1e6:.1f} MB sent; "
        f"closes: {kinds}; router RSS {rss_start} -> {rss_end} KiB; "
        f"{report.health_checks} health checks"
    )


async def _explain_problems(router: Router, report: Report) -> str:
    """Name the seed behind each log problem (replayed one at a time) and its bytes."""
    lines: list[str] = []
    watch = LogWatch(router.log)
    watch.poll()  # skip what is already there
    distinct = {problem_signature(p): (p, w) for p, w in reversed(report.problems)}  # first of each
    for problem, window in list(distinct.values())[:3]:
        lines.append(f"router log:\n{problem}")
        for seed, again in await triage(router, window, watch, seconds=60.0):
            case, outcome = await replay(router.port, seed)
            lines.append(f"reproduced by {describe(case, outcome)}\nlog on replay:\n{again}")
    return "\n".join(lines)


@pytest.mark.slow
def test_router_survives_mutated_inputs(fuzz_router: Router, capsys: pytest.CaptureFixture[str]) -> None:
    router = fuzz_router
    pid = router.proc.pid
    health = HealthyClients(router.endpoint)
    try:
        assert health.check() is None, "the healthy clients do not work before fuzzing"
        watch = LogWatch(router.log)
        watch.poll()
        rss_start = rss_kb(pid)
        report = asyncio.run(
            fuzz(
                router,
                range(BASE_SEED, BASE_SEED + INPUTS),
                concurrency=CONCURRENCY,
                seconds=SECONDS,
                watch=watch,
                health=health,
                health_every=HEALTH_EVERY,
            )
        )
        final_health = health.check()
        leftovers = health.leftovers(ROUTER_ID)
        rss_end = rss_kb(pid)
    finally:
        health.close()
    leaked = [x.text for x, _ in report.leaks] + [x.text for x in leftovers]
    with capsys.disabled():
        print(f"\nrouter fuzz: {_summary(report, rss_start, rss_end)}")

    assert router.alive(), f"the router died:\n{router.log.read_text()[-4000:]}"
    assert not report.router_died
    assert report.inputs > 0 and report.established > 0
    assert not report.anomalies, "\n".join(
        f"{a.anomaly}: seed {a.seed} ({a.strategy}), ended {a.kind}" for a in report.anomalies[:10]
    )
    if report.problems:
        pytest.fail(f"tracebacks in the router log:\n{asyncio.run(_explain_problems(router, report))}")
    assert not report.health_failures, report.health_failures
    assert final_health is None, f"the healthy clients stopped working: {final_health}"
    assert not leaked, f"state the router holds for no open session (bench/fuzz_router.py bisects): {leaked}"
    assert rss_end - rss_start < RSS_GROWTH_LIMIT_KB, _summary(report, rss_start, rss_end)


# --- the bugs the fuzzer found, reduced to one case each ----------------------------------------


def _open(port: int, zid: ZenohId, whatami: WhatAmI, refusal_ok: bool = False) -> tuple[socket.socket, Link]:
    """A session on a blocking socket (handshake done; or refused, when ``refusal_ok``)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    link = Link(LinkConfig(zid, whatami), Role.OPENER, time.monotonic())
    sock.sendall(link.data_to_send())
    while not link.is_established:
        data = sock.recv(65536)
        assert data or refusal_ok, "the router closed during the handshake"
        if not data:
            break
        for ev in link.receive_data(data, time.monotonic()):
            assert refusal_ok or not isinstance(ev, LinkClosed), ev
        if link.is_closed:
            break
        sock.sendall(link.data_to_send())
    return sock, link


def _close_and_drain(sock: socket.socket) -> None:
    """Half-close, read until the router closes too (bounded), close."""
    deadline = time.monotonic() + 10
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_WR)
        while time.monotonic() < deadline and sock.recv(65536):
            pass
    sock.close()


def test_peer_announcing_a_taken_zid_is_refused_cleanly(tmp_path: Path) -> None:
    """A peer with the router's own id, and a second peer session with the id of a live
    one: each must be refused (or accepted) without a traceback."""
    with run_router(tmp_path) as router:
        watch = LogWatch(router.log)
        watch.poll()
        other = ZenohId.from_str("c1c2c3c4c5c6c7c8")
        first, _ = _open(router.port, other, WhatAmI.PEER)
        try:
            for zid in (ROUTER_ZID, other):
                sock, _ = _open(router.port, zid, WhatAmI.PEER, refusal_ok=True)
                _close_and_drain(sock)
        finally:
            _close_and_drain(first)
        time.sleep(0.5)  # an absence: no problem gets logged for these sessions
        problems = watch.poll()
        assert router.alive()
    assert not problems, "\n".join(problems)


def test_entities_of_an_unlinked_router_node_go_with_their_neighbour(tmp_path: Path) -> None:
    """The fuzzer's seed 753594, reduced: a router neighbour names a node linked to nobody
    in its LINKSTATE and declares a subscriber, a queryable and a token for it (NodeId 1),
    then leaves. Nothing of it may stay in the router."""
    me = ZenohId.from_str("b0b1b2b3b4b5b6b7")
    node = ZenohId.from_str("1a3cf25de4796d")
    with run_router(tmp_path) as router:
        health = HealthyClients(router.endpoint)
        try:
            sock, link = _open(router.port, me, WhatAmI.ROUTER)
            states = encode_linkstates(
                [
                    LinkState(0, 1, me, WhatAmI.ROUTER, None, (), None, False),
                    LinkState(1, 1, node, WhatAmI.ROUTER, None, (), None, False),
                ]
            )
            link.send(NetworkOam(OAM_LINKSTATE, states, QOS_DECLARE), priority=0)
            for body in (
                DeclareSubscriber(1, WireExpr(0, "demo/*/x", True)),
                DeclareQueryable(2, WireExpr(0, "demo/q", True), True, 1),
                DeclareToken(3, WireExpr(0, "demo/tok", True)),
            ):
                link.send(Declare(body, qos=QOS_DECLARE, node_id=1), priority=0)
            sock.sendall(link.data_to_send())
            _close_and_drain(sock)
            left = health.leftovers(ROUTER_ID, attempts=6)
        finally:
            health.close()
        assert router.alive()
    assert not left, [x.text for x in left]
