"""Joining a read's small batches into one FRAME must mean exactly what the batches mean
one by one: the same messages, bytes, channels and SN verdicts, and the same CLOSE on bad
input. Checked differentially: one link reads a stream whole, another batch by batch
(one read per batch never joins anything)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyzenoh.codec import (
    Del,
    Frame,
    KeepAlive,
    Push,
    Put,
    WhatAmI,
    WireExpr,
    encode_batch,
    frame_batch,
)
from pyzenoh.dataplane import PushRun
from pyzenoh.dataplane.joining import MAX_JOINED, MIN_JOIN, Joined, join
from pyzenoh.transport.link import (
    Event,
    Link,
    LinkClosed,
    Received,
    ReceivedPush,
    ReceivedRun,
    receive,
)
from tests.codec import strategies as cs
from tests.hyp import FUZZ, ROUNDTRIP
from tests.transport.test_link import ZA, cfg, pair


def router_side(
    resolution: int = 0x0A, qos: bool = True, batch_size: int = 65535, lone_pushes: bool = False
) -> tuple[Link, int]:
    """An established router-side link reading with runs (as the router's; with
    ``lone_pushes`` too), and the next SN it expects on the reliable data channel."""
    _, router, _, _ = pair(
        cfg(resolution=resolution, qos=qos),
        cfg(
            ZA,
            WhatAmI.ROUTER,
            resolution=resolution,
            qos=qos,
            batch_size=batch_size,
            push_runs=True,
            stamped_runs=True,
            lone_pushes=lone_pushes,
        ),
    )
    assert router.is_established
    return router, (router.s.rx_last[11] + 1) & router.s.mask


def flat(events: list[Event]) -> list[object]:
    """Events with runs spelled out message by message (the one definition)."""
    out: list[object] = []
    for e in events:
        if isinstance(e, ReceivedPush):
            e = e.received()
        if isinstance(e, ReceivedRun):
            out += [("msg", m, raw, e.reliable, e.priority) for m, raw in e.run.messages()]
        elif isinstance(e, Received):
            out.append(("msg", e.message, e.raw, e.reliable, e.priority))
        elif isinstance(e, LinkClosed):
            out.append(("closed", e.reason))
    return out


def whole_and_one_by_one(batches: list[bytes], **kw: object) -> tuple[list[Event], list[Event]]:
    a, _ = router_side(**kw)  # type: ignore[arg-type]
    b, _ = router_side(**kw)  # type: ignore[arg-type]
    whole = a.receive_data(b"".join(frame_batch(p) for p in batches), 1.0)
    one_by_one: list[Event] = []
    for p in batches:
        one_by_one += b.receive_data(frame_batch(p), 1.0)
    assert a.s.rx_last == b.s.rx_last
    return whole, one_by_one


def put(i: int, size: int = 8) -> Push:
    return Push(WireExpr(0, "demo/joined"), Put(bytes([i % 256]) * size))


def test_single_push_batches_become_one_run() -> None:
    link, sn = router_side()
    mask = link.s.mask
    batches = [encode_batch([Frame(True, (sn + i) & mask, (put(i),))]) for i in range(500)]
    events = link.receive_data(b"".join(frame_batch(p) for p in batches), 1.0)
    assert len(events) == 1 and isinstance(events[0], ReceivedRun) and events[0].run.count == 500
    assert flat(events) == flat(whole_and_one_by_one(batches)[1])
    assert link.s.rx_last[11] == (sn + 499) & mask


def test_small_batch_links_are_joined_past_their_batch_size() -> None:
    # zenoh-pico's 2 KiB batches each hold one 1 KiB PUT: joined all the same (the joined
    # FRAME never goes on the wire), bounded by MAX_JOINED, meaning what they mean one by one
    link, sn = router_side(batch_size=2048)
    batches = [encode_batch([Frame(True, (sn + i) & link.s.mask, (put(i, 1024),))]) for i in range(400)]
    joined = join(batches, 0, link.s.mask)
    assert joined is not None and link.s.reader.max_payload < len(joined.payload) <= MAX_JOINED
    assert joined.stop < len(batches)  # the bound cut it
    events = link.receive_data(b"".join(frame_batch(p) for p in batches), 1.0)
    assert sum(e.run.count if isinstance(e, ReceivedRun) else 1 for e in events) == 400  # type: ignore[union-attr]
    assert len(events) < 10
    assert flat(events) == flat(whole_and_one_by_one(batches, batch_size=2048)[1])


def test_what_is_never_joined() -> None:
    mask = 0xFFFF_FFFF
    ok = [encode_batch([Frame(True, 7 + i, (put(i),))]) for i in range(MIN_JOIN)]
    assert join(ok, 0, mask, 65535) is not None
    assert join(ok[:-1], 0, mask, 65535) is None  # too few
    gap = [*ok[:2], encode_batch([Frame(True, 20, (put(0),))]), *ok[2:]]
    assert join(gap, 0, mask, 65535) is None
    mixed = [*ok[:2], encode_batch([Frame(False, 9, (put(0),))]), *ok[2:]]  # other channel
    assert join(mixed, 0, mask, 65535) is None
    keepalive = [encode_batch([KeepAlive()]), *ok]
    assert join(keepalive, 0, mask, 65535) is None
    assert join(keepalive, 1, mask, 65535) is not None


def test_a_batch_with_a_trailing_transport_message_is_not_swallowed() -> None:
    _, sn = router_side()
    batches = [encode_batch([Frame(True, sn + i, (put(i),))]) for i in range(6)]
    batches[2] = encode_batch([Frame(True, sn + 2, (put(2),)), KeepAlive()])
    whole, one = whole_and_one_by_one(batches)
    assert flat(whole) == flat(one)


def test_a_truncated_message_never_borrows_the_next_batch() -> None:
    _, sn = router_side()
    batches = [encode_batch([Frame(True, sn + i, (put(i),))]) for i in range(6)]
    batches[1] = batches[1][:-3]  # its PUT's payload cut short: the link closes there
    whole, one = whole_and_one_by_one(batches)
    assert flat(whole) == flat(one)
    assert isinstance(whole[-1], LinkClosed)


def test_a_run_sets_a_session_free_of_raw_bytes() -> None:
    client, _, _, _ = pair(cfg(push_runs=True))
    sn = (client.s.rx_last[11] + 1) & client.s.mask
    batches = [encode_batch([Frame(True, sn + i, (Push(WireExpr(0, "k"), Del()),))]) for i in range(10)]
    events = client.receive_data(b"".join(frame_batch(p) for p in batches), 1.0)
    assert [type(e) for e in events] == [ReceivedRun]
    assert isinstance(events[0].run, PushRun) and events[0].run.count == 10  # type: ignore[union-attr]


# Streams of small batches as a publisher sends them, with every irregularity around:
# other channels and priorities, gaps, replays, other messages, transport messages, cuts.
_payload = st.binary(max_size=12)
_shapes = st.sampled_from(
    [
        lambda p: Push(WireExpr(0, "a/b"), Put(p)),
        lambda p: Push(WireExpr(3, "", True), Put(p)),
        lambda p: Push(WireExpr(0, "a/b"), Del()),
    ]
)


Spec = tuple[int, bool, int, tuple[object, ...], object, float | None]


@st.composite
def streams(draw: st.DrawFn) -> list[Spec]:
    """(SN step, reliable, priority, FRAME messages, transport message after it or None,
    the share of the batch kept or None) for each batch of a stream."""
    out: list[Spec] = []
    for _ in range(draw(st.integers(1, 24))):
        kind = draw(st.integers(0, 9))
        step = draw(st.sampled_from([1, 1, 1, 1, 1, 1, 0, -1, 3]))
        msgs: tuple[object, ...] = ()
        if kind <= 5:
            shape = draw(_shapes)
            msgs = tuple(shape(draw(_payload)) for _ in range(draw(st.sampled_from([1, 1, 1, 2]))))
        elif kind <= 7:
            msgs = (draw(cs.network_messages),)
        extra = draw(cs.non_fragment_transport) if kind == 9 or draw(st.integers(0, 15)) == 0 else None
        cut = draw(st.floats(0.0, 1.0)) if draw(st.integers(0, 20)) == 0 else None
        out.append(
            (
                step,
                draw(st.sampled_from([True, True, True, False])),
                draw(st.sampled_from([5, 5, 5, 2])),
                msgs,
                extra,
                cut,
            )
        )
    return out


def build(stream: list[Spec], sn: int, mask: int) -> list[bytes]:
    """The batches of ``stream``, its first FRAME's SN ``sn`` (the expected one) + step - 1."""
    out: list[bytes] = []
    sn -= 1
    for step, reliable, priority, msgs, extra, cut in stream:
        sn = (sn + step) & mask
        parts = [Frame(reliable, sn, msgs, priority)] if msgs else []  # type: ignore[arg-type]
        parts += [extra] if extra is not None else [] if parts else [KeepAlive()]
        batch = encode_batch(parts)  # type: ignore[arg-type]
        if cut is not None:
            batch = batch[: max(1, int(len(batch) * cut))]
        out.append(batch)
    return out


@pytest.mark.slow
@ROUNDTRIP
@given(streams(), st.booleans(), st.sampled_from([0x00, 0x0A, 0x0B]))
def test_joining_means_what_the_batches_mean(stream: list[Spec], qos: bool, resolution: int) -> None:
    link, sn = router_side(resolution=resolution, qos=qos)
    batches = build(stream, sn, link.s.mask)
    whole, one = whole_and_one_by_one(batches, resolution=resolution, qos=qos)
    assert flat(whole) == flat(one)


@pytest.mark.slow
@ROUNDTRIP
@given(streams(), st.booleans(), st.sampled_from([0x00, 0x0A, 0x0B]))
def test_lone_pushes_mean_what_decoded_frames_mean(stream: list[Spec], qos: bool, resolution: int) -> None:
    """A batch holding one FRAME of one PUSH skips building the FRAME (receive.scan_lone),
    and with ``lone_pushes`` is handed on undecoded: read batch by batch, the same events,
    SN state and CLOSE as without that lane."""
    link, sn = router_side(resolution=resolution, qos=qos)
    batches = build(stream, sn, link.s.mask)
    _, with_lane = whole_and_one_by_one(batches, resolution=resolution, qos=qos)
    _, undecoded = whole_and_one_by_one(batches, resolution=resolution, qos=qos, lone_pushes=True)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(receive, "scan_lone", lambda payload: None)
        _, without = whole_and_one_by_one(batches, resolution=resolution, qos=qos)
    assert flat(with_lane) == flat(undecoded) == flat(without)


@pytest.mark.slow
@FUZZ
@given(st.integers(MIN_JOIN, 40), st.data())
def test_joining_survives_mutations(count: int, data: st.DataObject) -> None:
    _, sn = router_side()
    batches = [
        bytearray(encode_batch([Frame(True, sn + i, (put(i, data.draw(st.integers(0, 9))),))])) for i in range(count)
    ]
    for _ in range(data.draw(st.integers(1, 3))):
        b = batches[data.draw(st.integers(0, count - 1))]
        b[data.draw(st.integers(0, len(b) - 1))] = data.draw(st.integers(0, 255))
    whole, one = whole_and_one_by_one([bytes(b) for b in batches])
    assert flat(whole) == flat(one)


def test_a_group_that_cannot_be_joined_is_decoded_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A long group whose last batch spoils the join (a trailing KEEPALIVE) is tried as a
    whole once, then read batch by batch: never re-joined from each of its batches."""
    link, sn = router_side()
    batches = [encode_batch([Frame(True, (sn + i) & link.s.mask, (put(i),))]) for i in range(200)]
    batches[-1] = encode_batch([Frame(True, (sn + 199) & link.s.mask, (put(199),)), KeepAlive()])
    calls: list[int] = []
    real = receive.Receiver._on_joined

    def counting(self: receive.Receiver, joined: Joined, events: list[Event]) -> bool:
        calls.append(1)
        return real(self, joined, events)

    monkeypatch.setattr(receive.Receiver, "_on_joined", counting)
    events = link.receive_data(b"".join(frame_batch(p) for p in batches), 1.0)
    assert len(calls) == 1
    assert sum(e.run.count if isinstance(e, ReceivedRun) else 1 for e in events) == 200
