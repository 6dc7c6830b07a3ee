"""A router's multicast listener (``udp/<group>:<port>#iface=lo``), the same configuration
on a real eclipse-zenoh 1.10.2 router and on ``pyzenoh router``: a real peer on the group,
a real client on tcp/. Samples cross both ways, the client's publisher sees the member's
subscriber, and a get or a liveliness get from the client finds nothing on the group
(zenohd routes no queries there). Each test its own group and port."""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import zenoh

from pyzenoh.localnet import free_port
from tests.fixtures.procs import Proc, pyzenoh_router_process, start_router, zenoh_config
from tests.waits import until

pytestmark = [pytest.mark.interop, pytest.mark.timeout(90)]

_groups = itertools.count((os.getpid() % 50) * 4 + 1)
JOIN_MS = 250


def group_endpoint() -> str:
    return f"udp/224.0.0.{150 + next(_groups) % 40}:{free_port()}#iface=lo"  # link-local, as 224.0.0.224


@pytest.fixture(params=["zenohd", "pyzenoh"])
def router(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str, str]]:
    """(which router, its tcp/ endpoint, its group endpoint)."""
    port, group = free_port(), group_endpoint()
    tcp = f"tcp/127.0.0.1:{port}"
    if request.param == "zenohd":
        proc: Proc = start_router(
            port,
            {
                "listen/endpoints": [tcp, group],
                "transport/multicast/join_interval": JOIN_MS,
                "adminspace/enabled": True,  # off in an in-process router unless asked
            },
        )
        try:
            yield "zenohd", tcp, group
        finally:
            proc.stop()
    else:
        config = {
            "listen": {"endpoints": [tcp, group]},
            "scouting": {"multicast": {"enabled": False}},
            "transport": {"multicast": {"join_interval": JOIN_MS}},
        }
        with pyzenoh_router_process(config, tmp_path / "router.json5", [port]):
            yield "pyzenoh", tcp, group


def member(group: str, lease_ms: int | None = None) -> Any:
    c = zenoh.Config()
    if lease_ms is not None:
        c.insert_json5("transport/link/tx/lease", str(lease_ms))
    c.insert_json5("mode", '"peer"')
    c.insert_json5("listen/endpoints", json.dumps([group]))
    c.insert_json5("scouting/multicast/enabled", "false")
    c.insert_json5("transport/multicast/join_interval", str(JOIN_MS))
    return zenoh.open(c)


def test_samples_cross_between_the_group_and_unicast(router: tuple[str, str, str]) -> None:
    name, tcp, group = router
    peer = member(group)
    client = zenoh.open(zenoh_config(tcp))
    try:
        at_peer: list[str] = []
        at_client: list[str] = []
        peer.declare_subscriber("mc/**", lambda s: at_peer.append(s.payload.to_string()))
        client.declare_subscriber("mc/**", lambda s: at_client.append(s.payload.to_string()))
        sent = [0]

        def put_from_peer() -> None:
            sent[0] += 1
            peer.put("mc/from-peer", "p")

        assert until(lambda: put_from_peer() is None and "p" in at_client), "nothing left the group"
        if name == "zenohd":
            # Measured here (2026-11-29): a 1.10.2 router started just before its group's
            # peer delivered the client's samples to the group in 1 run of 6 (in-process,
            # started a second before the peer, it did); it also re-declares subscribers
            # with the peer over the group without end; the member's subscriber reached the
            # client in 6 runs of 7. pyzenoh's side is checked below.
            return
        # the member's subscriber reaches the client's publisher through the router
        pub = client.declare_publisher("mc/from-client")
        assert until(lambda: pub.matching_status.matching), "the client never saw the group's subscriber"
        assert until(lambda: pub.put("c") is None and "c" in at_peer), "nothing reached the group"
        # each sample once at the peer (its own subscriber): the router echoes nothing back
        # to the group, which a later sample through the router would have followed
        pub.put("last")
        assert until(lambda: "last" in at_peer)
        assert at_peer.count("p") == sent[0]
    finally:
        client.close()
        peer.close()


def test_queries_do_not_cross_to_the_group(router: tuple[str, str, str]) -> None:
    _, tcp, group = router
    peer = member(group)
    client = zenoh.open(zenoh_config(tcp))
    try:
        peer.declare_queryable("mc/q", lambda q: q.reply("mc/q", "answer"))
        token = peer.liveliness().declare_token("mc/alive")
        at_client: list[str] = []
        client.declare_subscriber("mc/**", lambda s: at_client.append(s.payload.to_string()))
        # the peer is on the group and routed (a sample crosses) before the gets ask
        assert until(lambda: peer.put("mc/x", "here") is None and "here" in at_client)
        assert [r for r in client.get("mc/q", timeout=1) if r.ok] == []
        assert [r for r in client.liveliness().get("mc/**", timeout=1) if r.ok] == []
        token.undeclare()
    finally:
        client.close()
        peer.close()


def test_a_member_that_leaves_takes_its_subscribers_with_it(router: tuple[str, str, str]) -> None:
    """The member's lease (1 s here) runs out without a JOIN: its subscriber is withdrawn."""
    name, tcp, group = router
    if name == "zenohd":
        # Measured here (2026-11-29): the member's subscriber did not reach a 1.10.2
        # router's client within 20 s in 1 run of 7: the peer sometimes sends its DECLARE
        # before its first JOIN, and zenohd drops it (pyzenoh holds it: router/multicast.py).
        pytest.skip("zenohd 1.10.2 propagates a group member's subscriber unreliably")
    client = zenoh.open(zenoh_config(tcp))
    try:
        pub = client.declare_publisher("mc/leave/x")
        peer = member(group, lease_ms=1000)
        try:
            peer.declare_subscriber("mc/leave/**", lambda s: None)
            assert until(lambda: pub.matching_status.matching), "the group's subscriber never arrived"
        finally:
            peer.close()
        assert until(lambda: not pub.matching_status.matching), "the subscriber outlived its member"
    finally:
        client.close()


def test_garbage_and_a_forged_join_on_the_group_touch_nothing(router: tuple[str, str, str]) -> None:
    """Datagrams that decode to nothing, a FRAME from a source that never JOINed, and a
    JOIN from another port claiming the live member's zid: the router serves on (a member
    that joins afterwards is routed). Measured here: a 1.10.2 peer on the group stops its
    multicast transport on such datagrams (its JOINs stop), so a fresh peer is the check."""
    import socket

    from pyzenoh.codec.primitives import WhatAmI, ZenohId
    from pyzenoh.codec.transport import Join

    name, tcp, group = router
    if name == "zenohd":
        pytest.skip("pyzenoh's side only: the real peers on the group do not survive it")
    host, port = group.split("/", 1)[1].split("#", 1)[0].rsplit(":", 1)
    client = zenoh.open(zenoh_config(tcp))
    first = member(group)
    try:
        at_client: list[str] = []
        client.declare_subscriber("mc/**", lambda s: at_client.append(s.payload.to_string()))
        assert until(lambda: first.put("mc/x", "before") is None and "before" in at_client)
        forged = bytearray()
        Join(ZenohId.from_str(str(first.zid())), WhatAmI.PEER, 10_000, 0, 0).write(forged)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton("127.0.0.1"))
            s.bind(("127.0.0.1", 0))
            for n in range(200):  # bounded
                s.sendto(bytes([n % 256]) * (n % 64 + 1), (host, int(port)))
            s.sendto(bytes(forged), (host, int(port)))
            s.sendto(bytes.fromhex("25a4f6b7207d000664656d6f2f7801026869"), (host, int(port)))  # a FRAME, no JOIN
        first.close()
        second = member(group)
        try:
            assert until(lambda: second.put("mc/x", "after") is None and "after" in at_client)
        finally:
            second.close()
    finally:
        client.close()


def test_the_admin_space_lists_the_group_and_its_members(router: tuple[str, str, str]) -> None:
    """zenohd lists the group among its locators (no ``#iface``) and each member as a
    session ``{"group", "links", "peer", "whatami"}``; pyzenoh the same, and counts."""
    import gzip

    name, tcp, group = router
    locator = group.split("#", 1)[0]
    peer = member(group)
    client = zenoh.open(zenoh_config(tcp))
    try:

        def info() -> dict[str, Any] | None:
            for reply in client.get("@/*/router", timeout=5):
                if reply.ok:
                    doc: dict[str, Any] = json.loads(reply.ok.payload.to_string())
                    return doc
            return None

        def member_session() -> dict[str, Any] | None:
            doc = info()
            found = [s for s in (doc or {}).get("sessions", []) if s.get("peer") == str(peer.zid())]
            return found[0] if found else None

        assert until(lambda: member_session() is not None), "the member never showed"
        session = member_session()
        assert session is not None
        assert sorted(session) == ["group", "links", "peer", "whatami"], session
        assert session["group"] == locator and session["whatami"] == "peer"
        assert [sorted(link) for link in session["links"]] == [["dst", "src"]]
        doc = info()
        assert doc is not None and locator in doc["locators"]
        if name == "pyzenoh":
            zid = doc["zid"]
            [reply] = [r for r in client.get(f"@/{zid}/router/metrics", timeout=5) if r.ok]
            text = gzip.decompress(reply.ok.payload.to_bytes()).decode()
            assert f'pyzenoh_multicast_members{{group="{locator}"}} 1' in text
            assert f'pyzenoh_multicast_joins_sent_total{{group="{locator}"}}' in text
    finally:
        client.close()
        peer.close()
