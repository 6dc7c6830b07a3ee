"""The sans-IO link, both roles, driven against each other with a fake clock."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyzenoh.codec import (
    BatchReader,
    Close,
    Declare,
    DeclareSubscriber,
    Fragment,
    Frame,
    InitAck,
    InitSyn,
    KeepAlive,
    OpenAck,
    OpenSyn,
    Push,
    Put,
    WhatAmI,
    WireExpr,
    ZenohId,
    decode_batch,
    encode_network_message,
    frame_batch,
)
from pyzenoh.errors import CloseReason
from pyzenoh.transport.link import (
    Established,
    Event,
    Link,
    LinkClosed,
    LinkConfig,
    ReassemblyBudget,
    Received,
    Role,
    State,
    initial_sn,
    sn_mask,
)
from tests.hyp import ROUNDTRIP

ZA = ZenohId.from_str("a1a2a3a4a5a6a7a8")
ZC = ZenohId.from_str("c1c2c3c4c5c6c7c8")


def cfg(zid: ZenohId = ZC, whatami: WhatAmI = WhatAmI.CLIENT, **kw: object) -> LinkConfig:
    return LinkConfig(zid, whatami, **kw)  # type: ignore[arg-type]


def pump(a: Link, b: Link, now: float = 0.0, rounds: int = 20) -> tuple[list[Event], list[Event]]:
    """Exchange bytes until both sides are quiet; returns (events of a, events of b)."""
    ea: list[Event] = []
    eb: list[Event] = []
    for _ in range(rounds):
        da = a.data_to_send()
        db = b.data_to_send()
        if not da and not db:
            break
        if da:
            eb += b.receive_data(da, now)
        if db:
            ea += a.receive_data(db, now)
    return ea, eb


def pair(
    opener: LinkConfig | None = None, acceptor: LinkConfig | None = None
) -> tuple[Link, Link, list[Event], list[Event]]:
    a = Link(opener or cfg(), Role.OPENER, 0.0)
    b = Link(acceptor or cfg(ZA, WhatAmI.ROUTER), Role.ACCEPTOR, 0.0)
    ea, eb = pump(a, b)
    return a, b, ea, eb


def batches(data: bytes) -> list[bytes]:
    return BatchReader().feed(data)


def push(key: str, payload: bytes) -> Push:
    return Push(WireExpr(0, key), Put(payload))


def received(events: list[Event]) -> list[Received]:
    return [e for e in events if isinstance(e, Received)]


def test_handshake_both_roles() -> None:
    a, b, ea, eb = pair()
    assert a.is_established and b.is_established
    pa = next(e for e in ea if isinstance(e, Established))
    pb = next(e for e in eb if isinstance(e, Established))
    assert pa.zid == ZA and pa.whatami is WhatAmI.ROUTER
    assert pb.zid == ZC and pb.whatami is WhatAmI.CLIENT
    assert pa.qos and pb.qos and pa.patch == pb.patch == 1
    # the deterministic initial SNs of real nodes (zenoh-wire.md 2.4 / captures)
    assert pa.own_initial_sn == 18510363 == pb.initial_sn
    assert pb.own_initial_sn == 225861153 == pa.initial_sn


def test_negotiation_takes_minimums() -> None:
    _, _, ea, _ = pair(
        cfg(batch_size=65480, resolution=0x0A), cfg(ZA, WhatAmI.ROUTER, batch_size=49152, resolution=0x05)
    )
    pa = next(e for e in ea if isinstance(e, Established))
    assert pa.batch_size == 49152
    assert pa.resolution == 0x05  # 16-bit SN, 16-bit request id
    _, _, ea, _ = pair(cfg(qos=False), None)
    assert not next(e for e in ea if isinstance(e, Established)).qos
    _, _, ea, _ = pair(None, cfg(ZA, WhatAmI.ROUTER, qos=False))
    assert not next(e for e in ea if isinstance(e, Established)).qos


def test_acceptor_never_acks_shm_lowlatency_compression() -> None:
    b = Link(cfg(ZA, WhatAmI.ROUTER), Role.ACCEPTOR, 0.0)
    syn = InitSyn(
        ZC, WhatAmI.CLIENT, batch_size=65480, qos=True, shm=b"\x01", lowlatency=True, compression=True, patch=7
    )
    out = b.receive_data(frame_batch(_enc(syn)), 0.0)
    assert out == []
    [ack] = decode_batch(batches(b.data_to_send())[0])
    assert isinstance(ack, InitAck)
    assert ack.shm is None and not ack.lowlatency and not ack.compression
    assert ack.patch == 1 and ack.qos and ack.batch_size == 65480 and len(ack.cookie) >= 16


def test_opener_refuses_larger_resolution() -> None:
    a = Link(cfg(resolution=0x05), Role.OPENER, 0.0)
    a.data_to_send()
    ack = InitAck(ZA, WhatAmI.ROUTER, resolution=0x0A, cookie=b"x")
    events = a.receive_data(frame_batch(_enc(ack)), 0.0)
    assert _closed(events).reason == CloseReason.INVALID
    assert _sent_close(a) == CloseReason.INVALID


def _enc(msg: object) -> bytes:
    out = bytearray()
    msg.write(out)  # type: ignore[attr-defined]
    return bytes(out)


def _closed(events: list[Event]) -> LinkClosed:
    return next(e for e in events if isinstance(e, LinkClosed))


def _sent_close(link: Link) -> int:
    msgs = [m for p in batches(link.data_to_send()) for m in decode_batch(p)]
    close = [m for m in msgs if isinstance(m, Close)]
    assert close, msgs
    return close[-1].reason


def test_bad_cookie_closes() -> None:
    b = Link(cfg(ZA, WhatAmI.ROUTER), Role.ACCEPTOR, 0.0)
    b.receive_data(frame_batch(_enc(InitSyn(ZC, WhatAmI.CLIENT))), 0.0)
    b.data_to_send()
    events = b.receive_data(frame_batch(_enc(OpenSyn(10_000, 5, cookie=b"forged"))), 0.0)
    assert _closed(events).reason == CloseReason.INVALID
    assert _sent_close(b) == CloseReason.INVALID
    assert b.is_closed


def test_wrong_version_closes() -> None:
    b = Link(cfg(ZA, WhatAmI.ROUTER), Role.ACCEPTOR, 0.0)
    events = b.receive_data(frame_batch(_enc(InitSyn(ZC, WhatAmI.CLIENT, version=8))), 0.0)
    assert _closed(events).reason == CloseReason.INVALID
    assert _sent_close(b) == CloseReason.INVALID


def test_client_client_refused() -> None:
    a = Link(cfg(), Role.OPENER, 0.0)
    b = Link(cfg(ZA, WhatAmI.CLIENT), Role.ACCEPTOR, 0.0)
    _, eb = pump(a, b)
    assert _closed(eb).reason == CloseReason.INVALID
    assert not a.is_established


def test_garbage_closes() -> None:
    b = Link(cfg(ZA, WhatAmI.ROUTER), Role.ACCEPTOR, 0.0)
    events = b.receive_data(b"\x03\x00\xff\xff\xff", 0.0)
    assert _closed(events).reason == CloseReason.INVALID
    assert b.receive_data(b"\x01\x00\x04", 0.0) == []  # closed links ignore input


def test_frame_before_handshake_closes() -> None:
    b = Link(cfg(ZA, WhatAmI.ROUTER), Role.ACCEPTOR, 0.0)
    events = b.receive_data(frame_batch(_enc(Frame(True, 1, (push("a", b"x"),)))), 0.0)
    assert _closed(events).reason == CloseReason.INVALID


def test_unknown_mandatory_extension_closes_unsupported() -> None:
    _, b, _, _ = pair()
    raw = bytearray(encode_network_message(push("a/b", b"x")))
    raw[0] |= 0x80  # Z: an extension follows the WireExpr
    raw[6:6] = bytes([0x1E])  # after header, scope, "a/b": unit ext 0x0e, mandatory
    frame = bytearray()
    Frame(True, pump_sn(b), ()).write_header(frame)
    events = b.receive_data(frame_batch(bytes(frame) + bytes(raw)), 1.0)
    assert _closed(events).reason == CloseReason.UNSUPPORTED


def pump_sn(link: Link) -> int:
    assert link.peer is not None
    return link.peer.initial_sn


def test_messages_flow_and_batch_together() -> None:
    a, b, _, _ = pair()
    msgs = [push(f"k/{i}", bytes([i]) * 10) for i in range(50)]
    for m in msgs:
        a.send(m)
    a.send(Declare(DeclareSubscriber(1, WireExpr(0, "k/**")), qos=0x08))
    data = a.data_to_send()
    # Two batches, one FRAME each: the control frame first, then the 50 data messages.
    per_batch = [decode_batch(p) for p in batches(data)]
    assert [[f.priority for f in frames] for frames in per_batch] == [[0], [5]]
    assert len(per_batch[1][0].messages) == 50
    got = received(b.receive_data(data, 1.0))
    assert [r.message for r in got][1:] == msgs
    assert isinstance(got[0].message, Declare)
    assert got[1].raw == encode_network_message(msgs[0])


def test_raw_bytes_are_forwarded_verbatim() -> None:
    a, b, _, _ = pair()
    raw = encode_network_message(push("fwd/x", b"payload"))
    a.send(raw, priority=2, reliable=False)
    [r] = received(b.receive_data(a.data_to_send(), 1.0))
    assert r.raw == raw and r.priority == 2 and not r.reliable


def test_without_qos_everything_is_priority_data() -> None:
    a, b, _, _ = pair(cfg(qos=False), None)
    a.send(Declare(DeclareSubscriber(1, WireExpr(0, "k/**")), qos=0x08))
    a.send(push("k/1", b"x"))
    data = a.data_to_send()
    frames = [m for p in batches(data) for m in decode_batch(p)]
    assert all(isinstance(f, Frame) and f.priority == 5 for f in frames)
    assert len(received(b.receive_data(data, 1.0))) == 2


SENDS = st.lists(st.tuples(st.integers(0, 7), st.booleans()), min_size=1, max_size=40)


@given(sends=SENDS, qos=st.booleans(), batch_size=st.sampled_from([64, 300, 65_535]))
def test_one_frame_per_batch_and_send_order(sends: list[tuple[int, bool]], qos: bool, batch_size: int) -> None:
    # zenoh-pico reads everything after a FRAME header as that frame: a batch holds one
    # FRAME or one FRAGMENT. Without QoS there is one lane, in send order; with QoS each
    # priority keeps its own send order.
    a, b, _, _ = pair(cfg(qos=qos, batch_size=batch_size), None)
    msgs = [push(f"o/{i}", bytes(i % 7 * 20)) for i in range(len(sends))]
    for m, (prio, reliable) in zip(msgs, sends, strict=True):
        a.send(m, priority=prio, reliable=reliable)
    data = a.data_to_send()
    for payload in batches(data):
        [one] = decode_batch(payload)
        assert isinstance(one, Frame | Fragment)
    got = [r.message for r in received(b.receive_data(data, 1.0))]
    if qos:
        for prio in range(8):
            sent_here = [m for m, (p, _) in zip(msgs, sends, strict=True) if p == prio]
            assert [m for m in got if m in sent_here] == sent_here
    else:
        assert got == msgs


def test_priority_frame_without_qos_closes() -> None:
    _, b, _, _ = pair(cfg(qos=False), None)
    frame = Frame(True, pump_sn(b), (push("a", b"x"),), priority=2)
    events = b.receive_data(frame_batch(_enc(frame)), 1.0)
    assert isinstance(_closed(events), LinkClosed)


def test_batches_respect_negotiated_size() -> None:
    a, b, _, _ = pair(cfg(batch_size=1000), None)
    for i in range(100):
        a.send(push("k", bytes(100)))
    data = a.data_to_send()
    sizes = [len(p) + 2 for p in batches(data)]
    assert max(sizes) <= 1000 and len(sizes) > 5
    assert len(received(b.receive_data(data, 1.0))) == 100


@pytest.mark.parametrize("size", [0, 1, 950, 1000, 5000, 100_000])
def test_fragmentation_round_trip(size: int) -> None:
    a, b, _, _ = pair(cfg(batch_size=1000), None)
    big = push("big", bytes(range(256)) * (size // 256) + bytes(size % 256))
    a.send(big)
    a.send(push("after", b"x"))
    data = a.data_to_send()
    assert all(len(p) + 2 <= 1000 for p in batches(data))
    got = received(b.receive_data(data, 1.0))
    assert [r.message for r in got] == [big, push("after", b"x")]
    if size >= 1000:
        frags = [m for p in batches(data) for m in decode_batch(p) if isinstance(m, Fragment)]
        assert frags[0].first and not any(f.first for f in frags[1:])
        assert all(f.more for f in frags[:-1]) and not frags[-1].more
        assert [f.sn for f in frags] == list(range(frags[0].sn, frags[0].sn + len(frags)))


def test_fragment_reassembly_cap() -> None:
    a, b, _, _ = pair(cfg(batch_size=1000), cfg(ZA, WhatAmI.ROUTER, max_message_size=3000))
    a.send(push("big", bytes(10_000)))
    a.send(push("small", b"ok"))
    got = received(b.receive_data(a.data_to_send(), 1.0))
    assert [r.message for r in got] == [push("small", b"ok")]
    assert b.is_established


def _first_fragments(link: Link, size: int) -> bytes:
    """The fragments of a ``size``-byte PUSH from ``link``, all but the last."""
    link.send(push("big", bytes(size)))
    ps = batches(link.data_to_send())
    return b"".join(frame_batch(p) for p in ps[:-1])


def test_reassembly_budget_is_shared_and_closes_the_link_over_it() -> None:
    budget = ReassemblyBudget(5_000)
    acceptor = cfg(ZA, WhatAmI.ROUTER)
    a1, b1 = Link(cfg(batch_size=1000), Role.OPENER, 0.0), Link(acceptor, Role.ACCEPTOR, 0.0, reassembly_budget=budget)
    a2, b2 = Link(cfg(batch_size=1000), Role.OPENER, 0.0), Link(acceptor, Role.ACCEPTOR, 0.0, reassembly_budget=budget)
    pump(a1, b1)
    pump(a2, b2)
    b1.receive_data(_first_fragments(a1, 4_000), 1.0)  # unfinished: ~3,000 bytes held
    assert 2_000 < budget.used < 4_000 and b1.is_established
    events = b2.receive_data(_first_fragments(a2, 4_000), 1.0)  # would go over: closed
    assert b2.is_closed and "reassembly budget" in _closed(events).detail
    held = budget.used
    assert 2_000 < held < 4_000  # the closed link gave its bytes back
    b1.connection_lost()
    assert budget.used == 0


def test_unfinished_reassembly_is_dropped_after_its_timeout() -> None:
    budget = ReassemblyBudget(1 << 20)
    a = Link(cfg(batch_size=1000), Role.OPENER, 0.0)
    b = Link(cfg(ZA, WhatAmI.ROUTER, reassembly_timeout_s=2.0), Role.ACCEPTOR, 0.0, reassembly_budget=budget)
    pump(a, b)
    b.receive_data(_first_fragments(a, 4_000), 1.0)
    assert budget.used > 0
    deadline = b.next_deadline()
    assert deadline is not None and deadline <= 3.0
    b.receive_data(frame_batch(_enc(KeepAlive())), 2.5)  # the link is alive, the message is not
    assert b.handle_timer(3.0) == [] and b.is_established
    assert budget.used == 0


def test_fragment_without_first_is_dropped_with_patch() -> None:
    _, b, _, _ = pair()
    sn = pump_sn(b)
    raw = encode_network_message(push("x", b"y"))
    orphan = Fragment(True, sn, raw[:3], more=False)
    assert received(b.receive_data(frame_batch(_enc(orphan)), 1.0)) == []
    good = [Fragment(True, sn + 1, raw[:3], more=True, first=True), Fragment(True, sn + 2, raw[3:])]
    got = received(b.receive_data(b"".join(frame_batch(_enc(f)) for f in good), 1.0))
    assert [r.message for r in got] == [push("x", b"y")]


def test_sn_wrap_and_duplicates() -> None:
    # 8-bit resolution: mask 0x7f, so SNs wrap quickly
    a, b, _, _ = pair(cfg(resolution=0x00), cfg(ZA, WhatAmI.ROUTER, resolution=0x00))
    assert sn_mask(0) == 0x7F
    count = 0
    for i in range(300):
        a.send(push("w", bytes([i % 256])))
        count += len(received(b.receive_data(a.data_to_send(), 1.0)))
    assert count == 300
    # a replayed (old) frame is silently dropped; a gap is accepted
    last = b.s.rx_last[11]
    old = Frame(True, last, (push("dup", b""),))
    assert received(b.receive_data(frame_batch(_enc(old)), 1.0)) == []
    gap = Frame(True, (last + 5) & 0x7F, (push("gap", b""),))
    assert len(received(b.receive_data(frame_batch(_enc(gap)), 1.0))) == 1
    assert b.is_established


def test_keepalive_when_idle_and_not_when_busy() -> None:
    a, b, _, _ = pair(cfg(lease_ms=4000), None)
    assert a.next_deadline() == pytest.approx(1.0)  # own lease / 4
    a.handle_timer(1.0)
    ka = [m for p in batches(a.data_to_send()) for m in decode_batch(p)]
    assert ka == [KeepAlive()]
    b.receive_data(frame_batch(_enc(KeepAlive())), 1.0)
    a.send(push("k", b"v"))
    a.data_to_send()
    a.handle_timer(2.0)  # something was sent in that interval: no keepalive
    assert a.data_to_send() == b""


def test_lease_expiry_closes_expired() -> None:
    _, b, _, _ = pair(cfg(lease_ms=3000), None)
    # b enforces a's lease (3 s); a enforces b's (10 s)
    assert b.next_deadline() is not None
    assert b.handle_timer(2.9) == []
    b.receive_data(frame_batch(_enc(KeepAlive())), 2.9)
    assert b.handle_timer(5.8) == []
    events = b.handle_timer(5.9)
    assert _closed(events).reason == CloseReason.EXPIRED


def test_handshake_timeout() -> None:
    a = Link(cfg(handshake_timeout_s=2.0), Role.OPENER, 10.0)
    assert a.next_deadline() == 12.0
    assert a.handle_timer(11.0) == []
    assert isinstance(_closed(a.handle_timer(12.0)), LinkClosed)


def test_peer_close_and_local_close() -> None:
    a, b, _, _ = pair()
    a.send(push("last", b"words"))
    events = a.close(CloseReason.GENERIC)
    assert _closed(events).by_peer is False
    got = b.receive_data(a.data_to_send(), 1.0)
    assert isinstance(got[0], Received) and got[0].message == push("last", b"words")
    assert _closed(got).by_peer and b.state is State.CLOSED


def test_initial_sn_formula() -> None:
    assert initial_sn(ZC, ZenohId.from_str("f1f2f3f4f5f6f7f8"), 0x0FFF_FFFF) == 26675721


@ROUNDTRIP
@given(st.lists(st.binary(max_size=3000), max_size=30), st.integers(200, 4000), st.data())
def test_any_traffic_any_split(payloads: list[bytes], batch: int, data: st.DataObject) -> None:
    a, b, _, _ = pair(cfg(batch_size=batch), None)
    msgs = [push(f"p/{i}", p) for i, p in enumerate(payloads)]
    for m in msgs:
        a.send(m, priority=data.draw(st.integers(0, 7)), reliable=data.draw(st.booleans()))
    stream = a.data_to_send()
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=10)))
    got: list[Event] = []
    prev = 0
    for c in [*cuts, len(stream)]:
        got += b.receive_data(stream[prev:c], 1.0)
        prev = c
    assert sorted(r.message.wire_expr.suffix for r in received(got)) == sorted(m.wire_expr.suffix for m in msgs)  # type: ignore[union-attr]


@ROUNDTRIP
@given(st.binary(max_size=200))
def test_garbage_never_raises(blob: bytes) -> None:
    _, b, _, _ = pair()
    events = b.receive_data(blob, 1.0)
    assert all(isinstance(e, Received | LinkClosed) for e in events)


def test_handshake_messages_after_established_close() -> None:
    _, b, _, _ = pair()
    events = b.receive_data(frame_batch(_enc(OpenAck(10_000, 1))), 1.0)
    assert _closed(events).reason == CloseReason.INVALID


@ROUNDTRIP
@given(
    st.lists(
        st.tuples(st.binary(min_size=1, max_size=300), st.integers(0, 7), st.booleans(), st.booleans()), max_size=12
    ),
    st.booleans(),
)
def test_batch_now_is_send_then_data_to_send(sends: list[tuple[bytes, int, bool, bool]], qos: bool) -> None:
    """An express message written at once (batch_now) is the bytes send() and
    data_to_send() give, and the SNs go on the same; refused whenever output waits."""
    _, b, _, _ = pair(cfg(qos=qos), cfg(ZA, WhatAmI.ROUTER, qos=qos, batch_size=256))
    _, d, _, _ = pair(cfg(qos=qos), cfg(ZA, WhatAmI.ROUTER, qos=qos, batch_size=256))
    for raw, prio, reliable, queue_first in sends:
        if queue_first:
            b.send(b"\x1d\x00", priority=prio)  # something waits: batch_now must refuse
            d.send(b"\x1d\x00", priority=prio)
        now = b.batch_now(raw, reliable=reliable, priority=prio)
        d.send(raw, reliable=reliable, priority=prio)
        if queue_first or len(raw) + 2 > 254:  # 254: a 256-byte batch's payload; 2: the shortest FRAME header
            assert now is None
        if now is None:  # queued instead (or a long SN left no room in one FRAME)
            b.send(raw, reliable=reliable, priority=prio)
            assert b.data_to_send() == d.data_to_send()
        else:
            assert now == d.data_to_send()
    assert b.s.tx_sn == d.s.tx_sn


def test_one_whole_batch_per_read_is_cut_out_of_the_read() -> None:
    reader = BatchReader()
    one = frame_batch(b"\x05\x01ab")
    assert reader.feed(memoryview(one)) == [b"\x05\x01ab"]
    assert reader.feed(one[:3]) == [] and reader.feed(one[3:] + one) == [b"\x05\x01ab"] * 2
    assert reader.consumed == 3 * len(one) and reader.buffered == 0


def test_open_gate_refuses_with_close_instead_of_open_ack() -> None:
    """zenohd answers an OpenSyn it refuses (a second link from a node it has a session
    with) with CLOSE(MAX_LINKS) and no OpenAck: the opener never sees the link open, so
    a real peer waits its retry period instead of redialling at once."""
    asked: list[tuple[ZenohId, WhatAmI, bytes | None]] = []

    def gate(zid: ZenohId, whatami: WhatAmI, multilink: bytes | None) -> int | None:
        asked.append((zid, whatami, multilink))
        return CloseReason.MAX_LINKS

    a = Link(cfg(ZC, WhatAmI.PEER), Role.OPENER, 0.0)
    b = Link(cfg(ZA, WhatAmI.ROUTER, open_gate=gate), Role.ACCEPTOR, 0.0)
    b.receive_data(a.data_to_send(), 0.0)  # InitSyn
    a.receive_data(b.data_to_send(), 0.0)  # InitAck
    eb = b.receive_data(a.data_to_send(), 0.0)  # OpenSyn: refused
    assert asked == [(ZC, WhatAmI.PEER, None)]
    assert _closed(eb).reason == CloseReason.MAX_LINKS and not b.is_established
    answer = b.data_to_send()
    assert [type(m) for batch in batches(answer) for m in decode_batch(batch)] == [Close]
    ea = a.receive_data(answer, 0.0)
    assert _closed(ea).reason == CloseReason.MAX_LINKS and not a.is_established
    # a gate that lets the peer in changes nothing
    _, _, ea2, eb2 = pair(acceptor=cfg(ZA, WhatAmI.ROUTER, open_gate=lambda zid, w, key: None))
    assert any(isinstance(e, Established) for e in ea2) and any(isinstance(e, Established) for e in eb2)


def _push_of_length(n: int) -> bytes:
    """An encoded PUSH of ``n`` bytes (9 or more)."""
    for size in range(n, -1, -1):
        raw = _enc(push("k", bytes(size)))
        if len(raw) == n:
            return raw
    raise AssertionError(f"no PUSH of {n} bytes")


@ROUNDTRIP
@given(
    st.integers(1, 40),
    st.sampled_from([256, 512, 2048]),
    st.integers(0, 7),
    st.booleans(),
    st.sampled_from([0, 0x7A, 0x3FF0, 0x1F_FFF0, 0xFFF_FFF0]),
    st.booleans(),
    st.booleans(),
    st.data(),
)
def test_a_run_of_equal_messages_is_framed_as_one_by_one(
    n: int, batch_size: int, prio: int, reliable: bool, sn: int, qos: bool, queue_first: bool, data: st.DataObject
) -> None:
    """send_run of equal-length messages gives the peer what sending them one by one
    gives; where no two fit one batch (framed all at once, transmit._batch_each), the
    same bytes and SNs too, unless something was queued before them (framed first then,
    in a batch of its own, where one by one the first of the run could join it)."""
    maxp = batch_size - 2
    # any length, or one that only fits a batch alone (a 128-byte payload's length takes
    # two bytes: no PUSH of 134 bytes)
    lengths = st.one_of(st.integers(9, 300), st.integers(maxp // 2 - 4, maxp - 4))
    stride = data.draw(lengths.filter(lambda k: k != 134), label="stride")
    a, b, _, _ = pair(cfg(qos=qos), cfg(ZA, WhatAmI.ROUTER, qos=qos, batch_size=batch_size))
    c, d, _, _ = pair(cfg(qos=qos), cfg(ZA, WhatAmI.ROUTER, qos=qos, batch_size=batch_size))
    ch = (prio if qos else 5) * 2 + reliable
    for link, peer in ((b, a), (d, c)):
        link.s.tx_sn[ch] = sn & link.s.mask  # near a VLE width edge, or near the wrap
        peer.s.rx_last[ch] = (sn - 1) & link.s.mask
        if queue_first:
            link.send(_push_of_length(9), priority=prio, reliable=reliable)
    one = _push_of_length(stride)
    b.send_run(one * n, range(stride, stride * n + 1, stride), reliable=reliable, priority=prio)
    for _ in range(n):
        d.send(one, reliable=reliable, priority=prio)
    run_bytes, one_by_one = b.data_to_send(), d.data_to_send()
    if 2 * stride + 2 > maxp and stride + 8 <= maxp and not queue_first:  # one message a batch
        assert run_bytes == one_by_one
        assert b.s.tx_sn == d.s.tx_sn
    got = [(e.raw, e.reliable, e.priority) for e in received(a.receive_data(run_bytes, 1.0))]
    assert got == [(e.raw, e.reliable, e.priority) for e in received(c.receive_data(one_by_one, 1.0))]
