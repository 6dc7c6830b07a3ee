"""Every PUSH lane routes as the message lane does (see :mod:`.harness`): generated
streams, the captured sessions, and the regressions the lanes once had, by name."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyzenoh.codec import (
    Del,
    Encoding,
    Frame,
    NetworkMessage,
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
from pyzenoh.dataplane import scan_lone
from pyzenoh.routing import RoutingConfig, RoutingCore
from pyzenoh.routing.access_control import (
    AccessControl,
    FaceSubject,
    parse_access_control,
)
from pyzenoh.routing.hlc import ntp64
from tests.dataplane.harness import SOURCE, Pair
from tests.hyp import STREAMS
from tests.routing.support import (
    CAPTURE_EPOCH,
    ROUTER_ZID,
    d_keyexpr,
    d_sub,
    events,
    u_sub,
    we,
)

HLC_ID = ZenohId.from_str("e1e2e3e4")
KEYS = [
    we("k/a"),
    WireExpr(3, "", True),
    WireExpr(3, "/b", True),
    we("k/a/b"),
    we("other"),
    we("nobody"),
    WireExpr(9, "", True),
    we("k/*"),
]
QOS = [5, 5 | QOS_EXPRESS, 5 | QOS_BLOCK, 3 | QOS_EXPRESS | QOS_BLOCK, 7]


def clients(core: RoutingCore, dest_ids: bool = True) -> None:
    """Faces 1-3 (clients) subscribed to k/**, k/* and other; the source maps 3 to k/a."""
    for face in (1, 2, 3):
        zid = ZenohId(0xC0 + face)
        core.add_face(face, zid, WhatAmI.CLIENT, 0.0, FaceSubject(zid=zid))
    core.handle(SOURCE, d_keyexpr(3, "k/a"), 0.0)
    if dest_ids:  # face 2 knows the key by an id of its own: another head
        core.handle(2, d_keyexpr(5, "k"), 0.0)
    core.handle(1, d_sub(1, "k/**"), 0.0)
    core.handle(2, d_sub(1, "k/*"), 0.0)
    core.handle(3, d_sub(1, "other"), 0.0)


@st.composite
def push(draw: st.DrawFn, key: WireExpr, qos: int, wall: float, stamp: str, node: int | None) -> Push:
    ts = None
    if stamp != "none":
        offset = {"past": -10.0, "now": 0.0, "near": 0.4, "ahead": 0.6, "future": 100.0}[stamp]
        ts = Timestamp(ntp64(wall + offset) + draw(st.integers(0, 3)), HLC_ID)
    size = draw(st.sampled_from([0, 1, 8, 8, 100]))
    body: Put | Del = (
        Del(ts) if draw(st.integers(0, 6)) == 0 else Put(b"p" * size, Encoding(draw(st.sampled_from([0, 4]))), ts)
    )
    return Push(key, body, qos, None, node)


@st.composite
def batches(draw: st.DrawFn, wall: float) -> list[NetworkMessage]:
    """A batch's messages: a publisher's stream (one key, QoS and body shape: a run), a
    lone PUSH, or a mix."""
    shape = draw(st.sampled_from(["run", "lone", "lone", "mix"]))
    key, qos = draw(st.sampled_from(KEYS)), draw(st.sampled_from(QOS))
    stamp = draw(st.sampled_from(["none", "none", "past", "now", "near", "ahead", "future"]))
    node = draw(st.sampled_from([None, None, 7]))
    if shape == "lone":
        return [draw(push(key, qos, wall, stamp, node))]
    if shape == "run":
        n = draw(st.integers(4, 24))
        return [draw(push(key, qos, wall, stamp, node)) for _ in range(n)]
    return [
        draw(push(draw(st.sampled_from(KEYS)), draw(st.sampled_from(QOS)), wall, stamp, node))
        for _ in range(draw(st.integers(1, 12)))
    ]


@st.composite
def streams(draw: st.DrawFn) -> tuple[list[tuple[list[NetworkMessage], int, bool, int]], list[int]]:
    """Batches (messages, priority, reliable, subscriber change before it) and where the
    bytes are split into reads."""
    wall = CAPTURE_EPOCH
    out = []
    for _ in range(draw(st.integers(1, 16))):
        out.append(
            (draw(batches(wall)), draw(st.sampled_from([5, 5, 5, 2])), draw(st.booleans()), draw(st.integers(0, 8)))
        )
    return out, draw(st.lists(st.integers(1, 400), max_size=6))


@pytest.mark.slow
@STREAMS
@given(streams(), st.booleans(), st.booleans(), st.booleans())
def test_every_lane_routes_as_the_message_lane(
    stream: tuple[list, list[int]],
    stamping: bool,
    drop_future: bool,  # type: ignore[type-arg]
    dest_ids: bool,
) -> None:
    """Runs, lone PUSHes and joined batches, subscribers coming and going between reads,
    reads split anywhere: the same bytes to each face, stats, clock and errors."""
    pair = Pair(
        RoutingConfig(timestamping=stamping, drop_future_timestamp=drop_future), lambda core: clients(core, dest_ids)
    )
    specs, cuts = stream
    subs = {1: True, 2: True}
    data = bytearray()
    wall = CAPTURE_EPOCH
    for messages, priority, reliable, change in specs:
        if change in subs:  # a subscriber comes or goes: the routes must follow
            pair.feed(bytes(data), 1.0, wall)
            data.clear()
            pair.control(change, u_sub(1) if subs[change] else d_sub(1, "k/**" if change == 1 else "k/*"))
            subs[change] = not subs[change]
        data += pair.batch(messages, priority, reliable)
    start = 0
    for cut in cuts:  # the rest, read in pieces
        pair.feed(bytes(data[start : start + cut]), 1.0, wall)
        start += cut
    pair.feed(bytes(data[start:]), 1.0, wall)
    pair.check()


@st.composite
def neighbour_batches(draw: st.DrawFn) -> list[NetworkMessage]:
    """A router neighbour's batch: stamped by its clock (times in runs, a few apart, any
    VLE width, from 2**63 on too), another id's stamps, unstamped ones, mixed keys."""
    zid = ZenohId(draw(st.sampled_from([0xA1, 0xA1A2A3A4A5A6A7A8A9, 0x1234])))
    t0 = draw(st.sampled_from([ntp64(CAPTURE_EPOCH), 0x7F, 0x3FFF, 2**63 - 5, 2**64 - 7000]))
    size = draw(st.integers(0, 200))
    equal = draw(st.booleans())
    out: list[NetworkMessage] = []
    for i in range(draw(st.integers(1, 20))):
        ts = Timestamp(t0 + i * draw(st.sampled_from([1, 1, 200])), zid) if draw(st.integers(0, 19)) else None
        if draw(st.integers(0, 14)) == 0:
            body: Put | Del = Del(ts)
        else:
            enc = Encoding(draw(st.sampled_from([0, 4, 11])))
            body = Put(b"p" * (size if equal else draw(st.integers(0, 200))), enc, ts)
        key = draw(st.sampled_from(KEYS)) if draw(st.integers(0, 9)) == 0 else WireExpr(3, "", True)
        out.append(Push(key, body, 5, None, draw(st.sampled_from([None, 3]))))
    return out


@pytest.mark.slow
@STREAMS
@given(
    st.lists(neighbour_batches(), min_size=1, max_size=4),
    st.booleans(),
    st.booleans(),
    st.sampled_from([0.0, -1.0, 1e6]),
)
def test_stamped_runs_route_as_the_message_lane(
    specs: list[list[NetworkMessage]], stamping: bool, dest_ids: bool, skew: float
) -> None:
    """skew: the router's clock behind the stamps (a run too far ahead goes to the
    message lane, which re-stamps or drops it)."""
    config = RoutingConfig(timestamping=stamping, drop_future_timestamp=skew < 0)
    pair = Pair(config, lambda core: clients(core, dest_ids))
    pair.feed(b"".join(pair.batch(m) for m in specs), 1.0, CAPTURE_EPOCH + skew)
    pair.check()


def deny_puts_to_c2() -> AccessControl:
    return AccessControl(
        parse_access_control(
            {
                "enabled": True,
                "default_permission": "allow",
                "rules": [
                    {"id": "r", "permission": "deny", "flows": ["egress"], "messages": ["put"], "key_exprs": ["k/**"]}
                ],
                "subjects": [{"id": "s", "zids": ["c2"]}],
                "policies": [{"rules": ["r"], "subjects": ["s"]}],
            }
        )
    )


@pytest.mark.slow
@STREAMS
@given(st.lists(batches(CAPTURE_EPOCH), min_size=1, max_size=10))
def test_a_route_access_control_restricts_stays_on_the_message_lane(specs: list[list[NetworkMessage]]) -> None:
    pair = Pair(RoutingConfig(), clients, acl=deny_puts_to_c2)
    pair.feed(b"".join(pair.batch(m) for m in specs), 1.0, CAPTURE_EPOCH)
    pair.check()


def test_access_control_keeps_the_lanes_off_a_restricted_route_only() -> None:
    pair = Pair(RoutingConfig(), clients, acl=deny_puts_to_c2)
    pair.feed(pair.batch([Push(we("k/a"), Put(b"x"))]), 1.0, CAPTURE_EPOCH)  # restricted: face 2 denied
    pair.feed(pair.batch([Push(we("other"), Put(b"y"))]), 1.0, CAPTURE_EPOCH)  # not restricted
    pair.check()
    assert pair.lanes.routed.lone == 1
    assert sorted(pair.lanes.routed.per_face) == [1, 3]


def test_an_unknown_face_is_left_to_handle() -> None:
    core = RoutingCore(ROUTER_ZID)
    batch = encode_batch([Frame(True, 3, (Push(we("k/a"), Put(b"x")),), 5)])
    found = scan_lone(batch)
    assert found is not None
    assert core.forward_lone(42, batch, found[3], found[0], CAPTURE_EPOCH) is None


def lone_batches(pair: Pair, msgs: list[Push]) -> bytes:
    return b"".join(pair.batch([m]) for m in msgs)


def test_a_publishers_lone_batches_are_joined_into_one_run() -> None:
    pair = Pair(RoutingConfig(), clients)
    pair.feed(
        lone_batches(pair, [Push(WireExpr(3, "", True), Put(b"%03d" % i)) for i in range(20)]), 1.0, CAPTURE_EPOCH
    )
    pair.check()
    assert pair.lanes.routed.runs == 1 and pair.lanes.routed.lone == 0
    assert len(pair.lanes.routed.per_face[1]) == 20


def test_a_lone_push_takes_the_lone_lane() -> None:
    pair = Pair(RoutingConfig(), clients)
    for i in range(3):
        pair.feed(pair.batch([Push(WireExpr(3, "", True), Put(b"%d" % i), 5 | QOS_EXPRESS)]), 1.0, CAPTURE_EPOCH + i)
    pair.check()
    assert pair.lanes.routed.lone == 3


def test_a_neighbours_node_id_takes_the_lanes_and_keeps_it_out() -> None:
    pair = Pair(RoutingConfig(), clients)
    pair.feed(pair.batch([Push(we("k/a"), Put(b"x"), 5, None, 7)]), 1.0, CAPTURE_EPOCH)
    pair.feed(pair.batch([Push(we("k/a"), Put(b"%d" % i), 5, None, 7) for i in range(8)]), 1.0, CAPTURE_EPOCH)
    pair.check()
    assert pair.lanes.routed.lone == 1 and pair.lanes.routed.runs == 1


def test_an_observer_keeps_every_push_on_the_message_lane() -> None:
    seen: list[object] = []

    def setup(core: RoutingCore) -> None:
        core.observer = seen.append
        clients(core)

    pair = Pair(RoutingConfig(), setup)
    pair.feed(pair.batch([Push(we("k/a"), Put(b"x"))]), 1.0, CAPTURE_EPOCH)
    pair.feed(pair.batch([Push(we("k/a"), Put(b"%d" % i)) for i in range(8)]), 1.0, CAPTURE_EPOCH)
    pair.check()
    assert pair.lanes.core.stats.pushes_in_runs == pair.lanes.core.stats.lone_pushes_routed == 0


# --- the regressions the lanes once had, each by name ------------------------------------


def test_regression_a_stamped_run_reads_z64_times_from_2_63() -> None:
    """A router neighbour's run stamped from 2**63 on: the ninth byte of each z64 carries
    eight bits (the run once read such times wrong and dropped them as future)."""
    zid = ZenohId(0x1234)
    msgs = [
        Push(we("k/a"), Put(b"p" * n, Encoding(11), Timestamp(2**63 + 9 + i, zid)))
        for i, n in enumerate([0, 1, 2, 3, 4])
    ]
    pair = Pair(RoutingConfig(timestamping=True, drop_future_timestamp=True), clients)
    pair.feed(pair.batch(msgs), 1.0, CAPTURE_EPOCH)
    pair.check()


def test_regression_a_run_of_deletes_keeps_each_payload_offset() -> None:
    """Equal-length DELs: the payload starts where each message ends (a run once took it
    one byte short, and sessions dropped the samples)."""
    pair = Pair(RoutingConfig(), clients)
    pair.feed(pair.batch([Push(we("k/a"), Del()) for _ in range(6)]), 1.0, CAPTURE_EPOCH)
    pair.check()
    assert pair.lanes.routed.runs == 1 and len(pair.lanes.routed.per_face[1]) == 6


@pytest.mark.parametrize("t0", [2**56 - 3, 2**63 - 2, 2**64 - 40])
def test_regression_router_stamps_keep_the_codecs_nine_byte_vle(t0: int) -> None:
    """The router's own stamps across VLE widths and at the top of the u64 range: the
    codec's VLE (at most nine bytes) is the only rule (runs once allowed ten)."""
    pair = Pair(RoutingConfig(), clients)
    for side in (pair.reference, pair.lanes):
        side.core._tables.hlc._last = t0
    wall = 0.0  # behind the clock: consecutive stamps from t0 + 1
    pair.feed(pair.batch([Push(we("k/a"), Put(b"p%d" % i)) for i in range(8)]), 1.0, wall)
    pair.feed(pair.batch([Push(we("k/a"), Put(b"q"))]), 1.0, wall)
    pair.check()


# --- the captured sessions -------------------------------------------------------------


@pytest.mark.parametrize("scenario", ["client_router", "client_router2", "fakerouter_qos", "pyclient"])
@pytest.mark.parametrize("one_per_batch", [False, True])
def test_captured_client_messages(scenario: str, one_per_batch: bool) -> None:
    """What real 1.10.2 clients sent, re-framed on our link: as captured (a FRAME per
    message group) or one message per batch (the lone lane and joining)."""

    def setup(core: RoutingCore) -> None:
        for face in (1, 2):
            core.add_face(face, ZenohId(0xC0 + face), WhatAmI.CLIENT, 0.0)
        core.handle(1, d_sub(1, "**"), 0.0)
        core.handle(2, d_keyexpr(5, "demo"), 0.0)
        core.handle(2, d_sub(1, "demo/**"), 0.0)

    pair = Pair(RoutingConfig(), setup)
    # (messages a batch cannot hold came fragmented: the lanes never see those)
    sent = [
        (ev.message, ev.reliable)
        for ev in events(scenario)
        if ev.to_router and ev.conn == 1 and ev.message is not None and len(encode_network_message(ev.message)) < 60_000
    ]
    assert sent
    if one_per_batch:
        data = b"".join(pair.batch([m], 5, rel) for m, rel in sent)
    else:
        groups: list[list[NetworkMessage]] = [[]]
        size = 0
        for m, _ in sent:
            n = len(encode_network_message(m))
            if len(groups[-1]) == 5 or size + n > 60_000:
                groups.append([])
                size = 0
            groups[-1].append(m)
            size += n
        data = b"".join(pair.batch(g) for g in groups)
    pair.feed(data, 1.0, CAPTURE_EPOCH)
    pair.check()
