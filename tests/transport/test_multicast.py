"""The sans-IO multicast transport against bytes captured from a real 1.10.2 peer on lo."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pyzenoh.codec.batch import decode_batch
from pyzenoh.codec.primitives import WhatAmI, ZenohId
from pyzenoh.codec.transport import Frame, Join
from pyzenoh.transport.multicast import (
    Delivered,
    MulticastConfig,
    MulticastTransport,
    PeerEvicted,
    PeerJoined,
    PeerLeft,
)
from pyzenoh.transport.multicast.state import MAX_DATAGRAM, SN_MODULUS

# Captured from eclipse-zenoh 1.10.2, peer id a1b2c3d4, listen udp/224.0.0.224:<port>#iface=lo,
# join_interval 500: a JOIN every 0.50 s, then after a put its reliable FRAME and the next JOIN.
REAL_JOIN = bytes.fromhex("a70931d4c3b2a10aa4f6b720f3c685202701")
REAL_FRAME = bytes.fromhex("25a4f6b7207d000664656d6f2f7801026869")
REAL_JOIN_AFTER = bytes.fromhex("a70931d4c3b2a10aa5f6b720f3c685202701")
REAL_ZID = ZenohId.from_str("a1b2c3d4")
PEER = "udp/127.0.0.1:57693"


def _same_as_real(now: float = 0.0) -> MulticastTransport:
    real = decode_batch(REAL_JOIN)[0]
    assert isinstance(real, Join)
    initial = (real.next_sn_reliable, real.next_sn_best_effort)
    return MulticastTransport(MulticastConfig(REAL_ZID, join_interval_s=0.5), now, initial)


def test_join_bytes_equal_the_real_join() -> None:
    t = _same_as_real()
    out, _ = t.poll(0.0)
    assert out == [REAL_JOIN]


def test_frame_takes_the_joins_sn_and_the_next_join_moves_on() -> None:
    real = decode_batch(REAL_FRAME)[0]
    assert isinstance(real, Frame)
    t = _same_as_real()
    t.poll(0.0)
    assert t.frame(real.messages, reliable=True) == REAL_FRAME
    assert t.poll(0.2)[0] == []  # not due yet
    assert t.poll(0.5)[0] == [REAL_JOIN_AFTER]
    assert t.next_deadline() == 1.0


def test_a_real_peer_joins_speaks_and_leaves_on_lease() -> None:
    t = MulticastTransport(MulticastConfig(ZenohId(0x77)), 0.0)
    assert t.on_datagram(PEER, REAL_JOIN, 1.0) == [PeerJoined(PEER, REAL_ZID, WhatAmI.PEER)]
    [ev] = t.on_datagram(PEER, REAL_FRAME, 1.1)
    assert isinstance(ev, Delivered) and ev.zid == REAL_ZID and len(ev.messages) == 1
    assert t.on_datagram(PEER, REAL_FRAME, 1.2) == []  # a replayed sn is stale
    assert t.counters.stale_frames == 1
    assert t.on_datagram(PEER, REAL_JOIN_AFTER, 5.0) == []  # refreshes the lease
    assert t.poll(14.9)[1] == []
    assert t.poll(15.0)[1] == [PeerLeft(PEER, REAL_ZID, "lease expired")]


def test_a_frame_sent_before_the_senders_first_join_is_delivered_after_it() -> None:
    """A 1.10.2 peer sometimes sends a DECLARE before its first JOIN (measured on lo)."""
    sender = MulticastTransport(MulticastConfig(ZenohId(0x11)), 0.0, (100, 200))
    rx = MulticastTransport(MulticastConfig(ZenohId(0x22)), 0.0)
    early = sender.frame((), reliable=True)  # sn 100: the JOIN below says 101 is next
    assert rx.on_datagram(PEER, early, 0.0) == []
    events = rx.on_datagram(PEER, sender.join_datagram(), 0.01)
    assert [type(e) for e in events] == [PeerJoined, Delivered]
    assert rx.counters.early_delivered == 1
    assert len(rx.on_datagram(PEER, sender.frame((), reliable=True), 0.02)) == 1  # sn 101 as usual


def test_held_frames_are_bounded_and_expire() -> None:
    from pyzenoh.transport.multicast.state import EARLY_FRAMES_PER_SOURCE, EARLY_HOLD_S, EARLY_SOURCES

    sender = MulticastTransport(MulticastConfig(ZenohId(0x11)), 0.0)
    rx = MulticastTransport(MulticastConfig(ZenohId(0x22)), 0.0)
    for _ in range(EARLY_FRAMES_PER_SOURCE + 5):
        rx.on_datagram(PEER, sender.frame((), reliable=True), 0.0)
    for n in range(EARLY_SOURCES + 5):
        rx.on_datagram(f"udp/127.0.0.1:{n + 1}", sender.frame((), reliable=True), 0.0)
    assert rx.counters.early_dropped == 5 + 6  # over the per-source bound, then the sources'
    rx.poll(EARLY_HOLD_S)
    assert rx.counters.early_dropped == 5 + 6 + EARLY_FRAMES_PER_SOURCE + EARLY_SOURCES - 1
    assert [type(e) for e in rx.on_datagram(PEER, sender.join_datagram(), EARLY_HOLD_S)] == [PeerJoined]


def test_frames_before_a_join_and_own_joins_are_ignored() -> None:
    t = _same_as_real()
    assert t.on_datagram(PEER, REAL_FRAME, 0.0) == []
    assert t.counters.unknown_senders == 1
    assert t.on_datagram("udp/127.0.0.1:1", REAL_JOIN, 0.0) == []  # our own zid looped back
    assert t.remotes() == {}


def test_a_join_claiming_a_live_zid_is_evicted_and_touches_nothing_else() -> None:
    t = MulticastTransport(MulticastConfig(ZenohId(0x77)), 0.0)
    t.on_datagram(PEER, REAL_JOIN, 0.0)
    [ev] = t.on_datagram("udp/127.0.0.1:9", REAL_JOIN, 0.1)
    assert isinstance(ev, PeerEvicted) and "live at" in ev.reason
    assert t.remotes() == {PEER: REAL_ZID}
    assert len(t.on_datagram(PEER, REAL_FRAME, 0.2)) == 1


@given(st.binary(max_size=64))
def test_garbage_never_raises(data: bytes) -> None:
    t = MulticastTransport(MulticastConfig(ZenohId(0x77)), 0.0)
    t.on_datagram(PEER, REAL_JOIN, 0.0)
    t.on_datagram(PEER, data, 0.1)


@given(st.integers(0, SN_MODULUS - 1), st.lists(st.integers(0, 3), max_size=20))
def test_sns_wrap_and_only_forward_frames_deliver(start: int, steps: list[int]) -> None:
    sender = MulticastTransport(MulticastConfig(ZenohId(0x11)), 0.0, (start, start))
    rx = MulticastTransport(MulticastConfig(ZenohId(0x22)), 0.0)
    rx.on_datagram(PEER, sender.join_datagram(), 0.0)
    delivered = 0
    for skip in steps:
        for _ in range(skip):
            sender.frame((), reliable=True)  # lost on the way
        delivered += len(rx.on_datagram(PEER, sender.frame((), reliable=True), 0.1))
    assert delivered == len(steps)
    assert rx.counters.stale_frames == 0


# --- fragments on a group: FRAGMENTs of 65,487 bytes as a real 1.10.2 peer sends them ------


def _put(key: str, size: int) -> bytes:
    from pyzenoh.codec import Push, Put, WireExpr

    out = bytearray()
    Push(WireExpr(0, key), Put(bytes(range(256)) * (size // 256) + bytes(size % 256))).write(out)
    return bytes(out)


def _member(zid: int, sn: int = 1000, **cfg: int) -> tuple[MulticastTransport, bytes]:
    """A sender and its JOIN datagram."""
    t = MulticastTransport(MulticastConfig(ZenohId(zid), **cfg), 0.0, (sn, sn))  # type: ignore[arg-type]
    return t, t.poll(0.0)[0][0]


@given(st.lists(st.integers(0, 300_000), min_size=1, max_size=6))
def test_datagrams_carry_any_messages_in_order(sizes: list[int]) -> None:
    sender, join = _member(0x11)
    receiver = MulticastTransport(MulticastConfig(ZenohId(0x22)), 0.0)
    receiver.on_datagram(PEER, join, 0.0)
    raws = [_put(f"k/{i}", n) for i, n in enumerate(sizes)]
    datagrams = sender.datagrams(raws)
    assert all(len(d) <= MAX_DATAGRAM for d in datagrams)
    got: list[bytes] = []
    for d in datagrams:
        for ev in receiver.on_datagram(PEER, d, 0.1):
            assert isinstance(ev, Delivered)
            for msg in ev.messages:
                out = bytearray()
                msg.write(out)
                got.append(bytes(out))
    assert got == raws
    assert receiver.reassembly_bytes == 0


def test_fragments_look_like_a_real_peers() -> None:
    # measured: e6 <sn> 02 ... (first), then 66 <sn> ..., the last 26 <sn> ... (no M)
    sender, _ = _member(0x11, sn=65_683_017)  # the sn of the measured fragments: 4 bytes
    datagrams = sender.datagrams([_put("f/70000", 200_000)])
    assert [len(d) for d in datagrams[:-1]] == [MAX_DATAGRAM] * (len(datagrams) - 1)
    assert [d[0] for d in datagrams] == [0xE6, 0x66, 0x66, 0x26]
    assert datagrams[0][5] == 0x02  # the first-fragment extension after a 4-byte sn


def test_a_lost_fragment_loses_that_message_only() -> None:
    sender, join = _member(0x11)
    receiver = MulticastTransport(MulticastConfig(ZenohId(0x22)), 0.0)
    receiver.on_datagram(PEER, join, 0.0)
    lost = sender.datagrams([_put("a", 150_000)])
    after = sender.datagrams([_put("b", 100_000)])
    for d in [lost[0], lost[2], *after]:  # the middle one of the first message never came
        events = receiver.on_datagram(PEER, d, 0.1)
    assert [len(e.messages) for e in events if isinstance(e, Delivered)] == [1]
    assert receiver.counters.reassembled == 1 and receiver.counters.fragments_dropped >= 1
    assert receiver.reassembly_bytes == 0


def test_reassembly_is_bounded_for_all_members_together() -> None:
    receiver = MulticastTransport(MulticastConfig(ZenohId(0x22), max_reassembly_bytes=100_000), 0.0)
    a, ja = _member(0x11)
    b, jb = _member(0x12)
    receiver.on_datagram("udp/127.0.0.1:1", ja, 0.0)
    receiver.on_datagram("udp/127.0.0.1:2", jb, 0.0)
    da, db = a.datagrams([_put("a", 200_000)]), b.datagrams([_put("b", 50_000)])
    delivered = []
    for d in da:
        delivered += receiver.on_datagram("udp/127.0.0.1:1", d, 0.1)
    assert delivered == [] and receiver.reassembly_bytes == 0  # a's was over the budget: dropped
    for d in db:
        delivered += receiver.on_datagram("udp/127.0.0.1:2", d, 0.1)
    assert len(delivered) == 1  # b's, under it, whole


def test_a_members_close_ends_it_at_once() -> None:
    sender, join = _member(0x11)
    receiver = MulticastTransport(MulticastConfig(ZenohId(0x22)), 0.0)
    receiver.on_datagram(PEER, join, 0.0)
    assert sender.close_datagram() == b"\x03\x00"  # measured
    assert receiver.on_datagram(PEER, sender.close_datagram(), 0.1) == [PeerLeft(PEER, ZenohId(0x11), "closed")]
    assert receiver.remotes() == {}
