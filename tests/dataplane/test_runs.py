"""Runs of same-shape PUSHes stand for exactly the messages they replace.

(That routing a run gives the same bytes as routing its messages one by one is the
equivalence harness's: tests/dataplane/test_equivalence.py.)
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pyzenoh.codec import (
    Del,
    Encoding,
    Frame,
    Push,
    Put,
    Timestamp,
    WireExpr,
    ZenohId,
    encode_network_message,
)
from pyzenoh.dataplane import MIN_RUN, PushRun, decode_batch, scan_run
from pyzenoh.routing.hlc import ntp64
from tests.routing.support import CAPTURE_EPOCH, we


def frame_payload(msgs: list[Push]) -> bytes:
    out = bytearray()
    Frame(True, 7, (), 5).write_header(out)
    for m in msgs:
        out += encode_network_message(m)
    return bytes(out)


def test_scan_run_stops_at_another_shape_and_needs_min_run() -> None:
    same = [Push(we("k/a"), Put(b"12345678")) for _ in range(MIN_RUN)]
    payload = frame_payload(same + [Push(we("k/b"), Put(b"12345678"))])
    run = scan_run(payload, 2, len(payload))
    n = len(encode_network_message(same[0]))
    assert run is not None and list(run.ends) == [n * (i + 1) for i in range(MIN_RUN)]
    short = frame_payload(same[: MIN_RUN - 1] + [Push(we("k/b"), Put(b"x"))])
    assert scan_run(short, 2, len(short)) is None


def test_a_truncated_last_message_is_left_to_the_codec() -> None:
    msgs = [Push(we("k/a"), Put(bytes(10 + i))) for i in range(6)]
    payload = frame_payload(msgs)[:-3]
    run = scan_run(payload, 2, len(payload))
    assert run is not None and run.count == 5


def expand(frames: list) -> list[tuple[object, bytes]]:  # type: ignore[type-arg]
    out: list[tuple[object, bytes]] = []
    for m, raw in zip(frames[0].messages, frames[0].raw, strict=True):
        if isinstance(m, PushRun):
            out += m.messages()
        else:
            out.append((m, raw))
    return out


KEYS = st.sampled_from([we("k/a"), WireExpr(3, "", True), WireExpr(3, "/", True)])
ENCODINGS = st.sampled_from([Encoding.DEFAULT, Encoding(4), Encoding(11)])


@st.composite
def stamped_streams(draw: st.DrawFn) -> list[Push]:
    zid = ZenohId(draw(st.sampled_from([0xA1, 0xA1A2A3A4A5A6A7A8A9, 0x1234])))
    t0 = draw(st.sampled_from([ntp64(CAPTURE_EPOCH), 0x7F, 0x3FFF, 2**63 - 5]))
    out = []
    size = draw(st.integers(0, 200))
    equal = draw(st.booleans())
    for i in range(draw(st.integers(1, 30))):
        ts = Timestamp(t0 + i * draw(st.sampled_from([1, 1, 200])), zid) if draw(st.integers(0, 19)) else None
        if draw(st.integers(0, 14)) == 0:
            body: Put | Del = Del(ts)
        else:
            body = Put(b"p" * (size if equal else draw(st.integers(0, 200))), draw(ENCODINGS), ts)
        out.append(Push(draw(KEYS) if draw(st.integers(0, 9)) == 0 else WireExpr(3, "", True), body))
    return out


@given(stamped_streams(), st.booleans())
def test_runs_stand_for_exactly_the_messages_they_replace(msgs: list[Push], stamped: bool) -> None:
    payload = frame_payload(msgs)
    plain = decode_batch(payload, keep_raw=True)
    runs = decode_batch(payload, keep_raw=True, runs=True, stamped=stamped)
    assert expand(runs) == expand(plain)
    for m in runs[0].messages:  # type: ignore[attr-defined]
        if isinstance(m, PushRun):
            decoded = [p for p, _ in m.messages()]
            assert m.payloads() == [p.body.payload if isinstance(p.body, Put) else b"" for p in decoded]
            if m.stamped:
                assert m.times() == [p.body.timestamp.time for p in decoded]  # type: ignore[union-attr]
            else:
                assert all(p.body.timestamp is None for p in decoded)


def test_a_routers_stamped_stream_is_one_run() -> None:
    zid = ZenohId(0xA1A2)
    t0 = ntp64(CAPTURE_EPOCH)
    msgs = [Push(WireExpr(3, "", True), Put(b"12345678", Encoding.DEFAULT, Timestamp(t0 + i, zid))) for i in range(300)]
    payload = frame_payload(msgs)
    (frame,) = decode_batch(payload, keep_raw=True, runs=True, stamped=True)
    (run,) = frame.messages  # type: ignore[attr-defined]
    assert isinstance(run, PushRun) and run.stamped and run.stride and run.count == 300
    assert run.times() == [t0 + i for i in range(300)]
    (frame,) = decode_batch(payload, keep_raw=True, runs=True)  # a router: one by one
    assert not any(isinstance(m, PushRun) for m in frame.messages)  # type: ignore[attr-defined]


def test_a_neighbours_pushes_with_node_ids_take_the_fast_path() -> None:
    from pyzenoh.dataplane import decode_push

    for qos in (5, 0x0D):
        for node in (0, 3, 0x7F):
            push = Push(
                WireExpr(2, "/x", False),
                Put(b"v", timestamp=Timestamp(ntp64(CAPTURE_EPOCH), ZenohId(9))),
                qos,
                None,
                node,
            )
            raw = encode_network_message(push)
            assert decode_push(raw, 0, len(raw)) == (push, len(raw))


def test_a_run_of_deletes_has_an_empty_payload_each() -> None:
    # equal-length messages whose payload starts where they end (found by hypothesis)
    payload = frame_payload([Push(we("k/a"), Del()) for _ in range(6)])
    run = scan_run(payload, 2, len(payload))
    assert run is not None and run.stride and run.payloads() == [b""] * 6


def test_times_from_2_63_keep_the_ninth_byte_of_their_z64_whole() -> None:
    # A z64's ninth byte carries 8 bits: from 2**63 on it is >= 0x80 and no continuation
    # (found by hypothesis: the run read such times as 9, 10, ...).
    zid = ZenohId(0x1234)
    for sizes in ([0, 0, 0, 0], [0, 1, 2, 3]):
        msgs = [
            Push(we("k/a"), Put(b"p" * n, Encoding(11), Timestamp(2**63 + 9 + i, zid))) for i, n in enumerate(sizes)
        ]
        (frame,) = decode_batch(frame_payload(msgs), keep_raw=True, runs=True, stamped=True)
        (run,) = frame.messages  # type: ignore[attr-defined]
        assert isinstance(run, PushRun) and run.times() == [2**63 + 9 + i for i in range(len(sizes))]
