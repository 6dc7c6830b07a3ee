"""A peer session on a multicast group (``listen/endpoints: ["udp/<group>:<port>#iface=lo"]``):
the same scenario with a real eclipse-zenoh 1.10.2 peer as the session under test and
with a pyzenoh peer, the other member always a real peer. Samples cross both ways, in
one datagram and fragmented; queries, liveliness and matching do not cross (as between
two real peers, measured); each member is a multicast transport; a member that closes
is gone at once. Each test its own group and port. Shared memory is off on the real
peers: on one host a real peer sends large payloads on a group as shared-memory
references, which pyzenoh cannot read."""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
import zenoh

import pyzenoh
from pyzenoh.localnet import free_port
from tests.waits import WAIT, expect

pytestmark = [pytest.mark.interop, pytest.mark.timeout(90)]

_groups = itertools.count((os.getpid() % 50) * 4 + 2)
JOIN_MS = 250
BIG = 200_000  # four datagrams of FRAGMENTs


def group_endpoint() -> str:
    return f"udp/224.0.0.{100 + next(_groups) % 40}:{free_port()}#iface=lo"


def peer(lib: Any, group: str) -> Any:
    c = lib.Config()
    c.insert_json5("mode", '"peer"')
    c.insert_json5("listen/endpoints", json.dumps([group]))
    c.insert_json5("scouting/multicast/enabled", "false")
    c.insert_json5("transport/multicast/join_interval", str(JOIN_MS))
    if lib is zenoh:
        c.insert_json5("transport/shared_memory/enabled", "false")
    return lib.open(c)


def members(session: Any) -> set[str]:
    return {str(t.zid) for t in session.info.transports() if t.is_multicast}


@pytest.fixture(params=["zenoh", "pyzenoh"])
def pair(request: pytest.FixtureRequest) -> Iterator[tuple[Any, Any]]:
    """(the session under test, a real peer) on one group, each known to the other."""
    group = group_endpoint()
    other = peer(zenoh, group)
    tested = peer(zenoh if request.param == "zenoh" else pyzenoh, group)
    try:
        expect(lambda: str(other.info.zid()) in members(tested), "the tested session seeing the real peer")
        expect(lambda: str(tested.info.zid()) in members(other), "the real peer seeing the tested session")
        yield tested, other
    finally:
        tested.close()
        other.close()


class Got:
    def __init__(self) -> None:
        self.samples: list[tuple[str, int]] = []

    def __call__(self, sample: Any) -> None:
        self.samples.append((str(sample.key_expr), len(sample.payload.to_bytes())))

    def has(self, key: str, size: int) -> bool:
        return (key, size) in self.samples


def test_samples_cross_both_ways_whole_and_fragmented(pair: tuple[Any, Any]) -> None:
    tested, other = pair
    at_tested, at_other = Got(), Got()
    tested.declare_subscriber("mc/**", at_tested)
    other.declare_subscriber("mc/**", at_other)
    pub = tested.declare_publisher("mc/pub")  # its puts use a declared key expression
    # Puts go to the group whether or not a member subscribed: re-sent until seen (a
    # subscriber declared an instant ago may not be in place on the other side yet).
    expect(lambda: pub.put(b"1") or at_other.has("mc/pub", 1), "a publisher's put reaching the real peer")
    expect(lambda: other.put("mc/o", b"22") or at_tested.has("mc/o", 2), "the real peer's put reaching the session")
    tested.put("mc/big", bytes(BIG))
    expect(lambda: at_other.has("mc/big", BIG), "a fragmented put reaching the real peer")
    other.put("mc/obig", bytes(BIG))
    expect(lambda: at_tested.has("mc/obig", BIG), "the real peer's fragmented put reaching the session")
    tested.delete("mc/gone")
    expect(lambda: at_other.has("mc/gone", 0), "a delete reaching the real peer")
    pub.undeclare()


def test_queries_liveliness_and_matching_do_not_cross(pair: tuple[Any, Any]) -> None:
    tested, other = pair
    other.declare_queryable("mq/**", lambda q: q.reply(str(q.key_expr), b"answer"))
    other.declare_subscriber("mm/**", lambda s: None)
    other.liveliness().declare_token("ml/other")
    pub = tested.declare_publisher("mm/p")
    # what a real peer gets from the group: nothing, at once (no waiting for a final)
    assert [r for r in tested.get("mq/x", timeout=WAIT / 2)] == []
    assert [r for r in tested.liveliness().get("ml/**", timeout=WAIT / 2)] == []
    assert pub.matching_status.matching is False
    assert list(tested.info.peers_zid()) == [] and list(tested.info.routers_zid()) == []
    assert [t.is_multicast for t in tested.info.transports()] == [True]


def test_a_member_that_closes_is_gone_at_once(pair: tuple[Any, Any]) -> None:
    tested, other = pair
    zid = str(other.info.zid())
    other.close()  # a CLOSE on the group: not the lease's end (10 s)
    expect(lambda: zid not in members(tested), "the closed member gone", timeout=5)


def test_two_pyzenoh_peers_on_a_group() -> None:
    group = group_endpoint()
    a, b = peer(pyzenoh, group), peer(pyzenoh, group)
    try:
        got = Got()
        b.declare_subscriber("pp/**", got)
        expect(lambda: str(b.info.zid()) in members(a), "the peers meeting")
        expect(lambda: a.put("pp/x", b"abc") or got.has("pp/x", 3), "a's put reaching b")
        a.put("pp/big", bytes(BIG))
        expect(lambda: got.has("pp/big", BIG), "a fragmented put reaching b")
    finally:
        a.close()
        b.close()


@pytest.mark.parametrize(
    ("mode", "key"),
    [
        ("client", "listen/endpoints"),  # zenoh: "Multicast is only supported in north peer & south router regions"
        ("peer", "connect/endpoints"),  # zenoh: "Forbidden multicast endpoint in connect list!"
        ("client", "connect/endpoints"),  # zenoh: "Unable to connect to any of [...]"
    ],
)
def test_where_a_group_cannot_be_used_both_refuse_to_open(mode: str, key: str) -> None:
    group = group_endpoint()
    for lib in (zenoh, pyzenoh):
        c = lib.Config()
        c.insert_json5("mode", json.dumps(mode))
        c.insert_json5(key, json.dumps([group]))
        c.insert_json5("scouting/multicast/enabled", "false")
        if key == "listen/endpoints":
            c.insert_json5("connect/endpoints", "[]")
        with pytest.raises(Exception, match="(?i)multicast|unable to connect"):
            lib.open(c).close()
