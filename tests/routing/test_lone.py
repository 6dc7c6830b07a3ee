"""The lone-PUSH lane (routing/lone.py) routes to the same bytes as the full path.

Two cores with the same identity, faces and clock get the same traffic; one routes every
PUSH with :meth:`RoutingCore.handle` (the definition), the other offers it to
:meth:`RoutingCore.forward_lone` first and falls back to ``handle`` when the lane says
None. Every destination must receive the same messages, byte for byte, in the same
order, with the same router timestamps, and the counters must agree.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyzenoh.codec import (
    Del,
    Encoding,
    Frame,
    Push,
    Put,
    Timestamp,
    WhatAmI,
    WireExpr,
    ZenohId,
    encode_batch,
    encode_network_message,
)
from pyzenoh.codec.network import QOS_BLOCK, QOS_EXPRESS
from pyzenoh.routing import RoutingConfig, RoutingCore
from pyzenoh.routing.access_control import (
    AccessControl,
    FaceSubject,
    parse_access_control,
)
from pyzenoh.routing.hlc import ntp64
from pyzenoh.transport.fastpath import PushFields, push_of, scan_lone
from tests.hyp import ROUNDTRIP
from tests.routing.support import CAPTURE_EPOCH, ROUTER_ZID, d_keyexpr, d_sub, u_sub, we

SOURCE = 0


def lone(push: Push) -> tuple[bytes, int, PushFields]:
    """The batch a client writes for one express put, and what the link's scan finds."""
    batch = encode_batch([Frame(True, 3, (push,), 5)])
    found = scan_lone(batch)
    assert found is not None, push
    fields, _, _, at = found
    return batch, at, fields


def setup(core: RoutingCore, dest_ids: bool) -> None:
    for face in range(4):
        core.add_face(face, ZenohId(0xC0 + face), WhatAmI.CLIENT, 0.0)
    core.handle(SOURCE, d_keyexpr(3, "k/a"), 0.0)
    if dest_ids:  # destination 2 knows the key by an id of its own: another head
        core.handle(2, d_keyexpr(5, "k"), 0.0)
    core.handle(1, d_sub(1, "k/**"), 0.0)
    core.handle(2, d_sub(1, "k/*"), 0.0)
    core.handle(3, d_sub(1, "other"), 0.0)


def per_face(sends: list) -> dict[int, list[bytes]]:  # type: ignore[type-arg]
    out: dict[int, list[bytes]] = {}
    for s in sends:
        out.setdefault(s.face, []).append(s.raw if s.raw is not None else encode_network_message(s.message))
    return out


class Pair:
    """The definition and the lane, side by side."""

    def __init__(self, config: RoutingConfig, dest_ids: bool) -> None:
        self.full = RoutingCore(ROUTER_ZID, config=config)
        self.lane = RoutingCore(ROUTER_ZID, config=config)
        for core in (self.full, self.lane):
            setup(core, dest_ids)
        self.expected: dict[int, list[bytes]] = {}
        self.got: dict[int, list[bytes]] = {}
        self.covered = 0

    def control(self, face: int, msg: object) -> None:
        """A declaration (or anything but a lone PUSH) to both cores."""
        for core in (self.full, self.lane):
            core.handle(face, msg, 1.0)  # type: ignore[arg-type]

    def push(self, push: Push, wall: float) -> None:
        batch, at, fields = lone(push)
        decoded = push_of(fields, batch)
        for face, raws in per_face(self.full.handle(SOURCE, decoded, 1.0, batch[at:], wall=wall)).items():
            self.expected.setdefault(face, []).extend(raws)
        out = self.lane.forward_lone(SOURCE, batch, at, fields, wall)
        if out is None:
            for face, raws in per_face(self.lane.handle(SOURCE, decoded, 1.0, batch[at:], wall=wall)).items():
                self.got.setdefault(face, []).extend(raws)
        else:
            self.covered += 1
            for face, data in out:
                self.got.setdefault(face, []).append(data)

    def check(self) -> None:
        assert self.got == self.expected
        assert self.lane.stats.pushes_routed == self.full.stats.pushes_routed
        assert self.lane.stats.lone_pushes_routed == self.covered
        assert self.lane.stats.dropped == self.full.stats.dropped


KEYS = st.sampled_from([we("k/a"), WireExpr(3, "", True), WireExpr(3, "/b", True), we("k/a/b"), we("other"),
                        we("nobody"), WireExpr(9, "", True), we("k/*")])  # fmt: skip
QOS = st.sampled_from([5, 5 | QOS_EXPRESS, 5 | QOS_BLOCK, 3 | QOS_EXPRESS | QOS_BLOCK, 7])
HLC_ID = ZenohId.from_str("e1e2e3e4")


@st.composite
def pushes(draw: st.DrawFn) -> tuple[Push, float]:
    """A lone PUSH (any key, QoS, PUT or DEL, stamped in the past or the future or not)
    and the wall clock it arrives at."""
    wall = CAPTURE_EPOCH + draw(st.floats(0, 5))
    ts = None
    if draw(st.booleans()):
        ts = Timestamp(ntp64(wall + draw(st.sampled_from([-10.0, 0.0, 0.4, 0.6, 100.0]))), HLC_ID)
    body: Put | Del
    if draw(st.integers(0, 5)) == 0:
        body = Del(ts)
    else:
        body = Put(draw(st.binary(max_size=40)), draw(st.sampled_from([Encoding.DEFAULT, Encoding(4)])), ts)
    return Push(draw(KEYS), body, draw(QOS)), wall


@ROUNDTRIP
@given(st.lists(st.tuples(pushes(), st.integers(0, 6)), min_size=1, max_size=30), st.booleans(), st.booleans(),
       st.booleans())  # fmt: skip
def test_the_lane_routes_to_the_same_bytes_as_handle(
    steps: list[tuple[tuple[Push, float], int]], stamping: bool, dest_ids: bool, drop_future: bool
) -> None:
    """Pushes interleaved with subscriber changes (each must invalidate the lane's routes)."""
    pair = Pair(RoutingConfig(timestamping=stamping, drop_future_timestamp=drop_future), dest_ids)
    subs = {1: True, 2: True}
    for (push, wall), change in steps:
        if change in subs:  # a subscriber comes or goes between two pushes
            pair.control(change, u_sub(1) if subs[change] else d_sub(1, "k/**" if change == 1 else "k/*"))
            subs[change] = not subs[change]
        pair.push(push, wall)
    pair.check()


def test_a_plain_publication_takes_the_lane_and_is_stamped() -> None:
    pair = Pair(RoutingConfig(), dest_ids=True)
    for i in range(3):
        pair.push(Push(WireExpr(3, "", True), Put(b"%d" % i), 5 | QOS_EXPRESS), CAPTURE_EPOCH + i)
    pair.check()
    assert pair.covered == 3
    assert sorted(pair.got) == [1, 2] and all(len(v) == 3 for v in pair.got.values())


def test_a_neighbours_node_id_is_left_to_the_full_path() -> None:
    pair = Pair(RoutingConfig(), dest_ids=False)
    batch, at, fields = lone(Push(we("k/a"), Put(b"x"), 5, None, 7))
    assert fields[11] == 7
    assert pair.lane.forward_lone(SOURCE, batch, at, fields, CAPTURE_EPOCH) is None
    assert pair.lane.stats.pushes_routed == 0


def test_an_observer_is_left_to_the_full_path() -> None:
    seen: list[object] = []
    core = RoutingCore(ROUTER_ZID, observer=seen.append)
    setup(core, dest_ids=False)
    batch, at, fields = lone(Push(we("k/a"), Put(b"x"), 5))
    assert core.forward_lone(SOURCE, batch, at, fields, CAPTURE_EPOCH) is None
    assert core.handle(SOURCE, push_of(fields, batch), 1.0, batch[at:]) and seen


def test_an_unknown_face_is_left_to_handle() -> None:
    core = RoutingCore(ROUTER_ZID)
    batch, at, fields = lone(Push(we("k/a"), Put(b"x"), 5))
    assert core.forward_lone(42, batch, at, fields, CAPTURE_EPOCH) is None


def test_a_route_access_control_restricts_is_left_to_the_full_path() -> None:
    acl = AccessControl(parse_access_control({
        "enabled": True, "default_permission": "allow",
        "rules": [{"id": "r", "permission": "deny", "flows": ["egress"], "messages": ["put"],
                   "key_exprs": ["k/**"]}],
        "subjects": [{"id": "s", "zids": ["c2"]}],
        "policies": [{"rules": ["r"], "subjects": ["s"]}],
    }))  # fmt: skip
    core = RoutingCore(ROUTER_ZID, access_control=acl)
    for face in range(3):
        zid = ZenohId(0xC0 + face)
        core.add_face(face, zid, WhatAmI.CLIENT, 0.0, FaceSubject(zid=zid))
    core.handle(1, d_sub(1, "k/**"), 0.0)
    core.handle(2, d_sub(1, "k/**"), 0.0)
    batch, at, fields = lone(Push(we("k/a"), Put(b"x"), 5))
    assert core.forward_lone(SOURCE, batch, at, fields, CAPTURE_EPOCH) is None
    assert [s.face for s in core.handle(SOURCE, push_of(fields, batch), 1.0, batch[at:])] == [1]


@pytest.mark.parametrize("key", [we("nobody"), we("k/*")])
def test_a_push_nobody_hears_or_on_a_wildcard(key: WireExpr) -> None:
    """Nobody subscribed: consumed by the lane like the full path; a wildcard key: the
    full path drops and reports it."""
    pair = Pair(RoutingConfig(), dest_ids=False)
    pair.push(Push(key, Put(b"x"), 5), CAPTURE_EPOCH)
    pair.check()
    assert pair.got == {}
