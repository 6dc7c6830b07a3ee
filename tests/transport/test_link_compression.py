"""The sans-IO link with lz4 batch compression: negotiation, both roles, fragments, the
express path, and a peer's batches that do not decompress."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyzenoh.codec import BatchReader, WhatAmI, encode_network_message
from pyzenoh.codec.compression import BATCH_HEADER_COMPRESSION, compress_batch
from pyzenoh.errors import CloseReason
from pyzenoh.transport.link import Established, Event, Link, LinkClosed, Role
from tests.transport.test_link import ZA, cfg, pump, push, received


def linked(opener_on: bool, acceptor_on: bool) -> tuple[Link, Link, Established, Established]:
    a = Link(cfg(compression=opener_on), Role.OPENER, 0.0)
    b = Link(cfg(ZA, WhatAmI.ROUTER, compression=acceptor_on), Role.ACCEPTOR, 0.0)
    ea, eb = pump(a, b)
    pa = next(e for e in ea if isinstance(e, Established))
    pb = next(e for e in eb if isinstance(e, Established))
    return a, b, pa, pb


@pytest.mark.parametrize(("opener_on", "acceptor_on"), [(True, True), (True, False), (False, True), (False, False)])
def test_on_only_when_both_ask(opener_on: bool, acceptor_on: bool) -> None:
    _, _, pa, pb = linked(opener_on, acceptor_on)
    assert pa.compression is pb.compression is (opener_on and acceptor_on)


def test_batches_after_open_carry_the_header_and_shrink() -> None:
    a, b, _, _ = linked(True, True)
    payload = b"zenoh " * 40_000  # fragments: 240 kB over 64 KiB batches
    a.send(push("k/big", payload))
    a.send(push("k/small", b"x"))
    wire = a.data_to_send()
    assert len(wire) < len(payload) // 10
    for batch in BatchReader().feed(wire):
        assert batch[0] in (0, BATCH_HEADER_COMPRESSION)
    got = received(b.receive_data(wire, 1.0))
    assert [bytes(r.message.body.payload) for r in got] == [payload, b"x"]  # type: ignore[union-attr]


def test_the_express_path_compresses_too() -> None:
    a, b, _, _ = linked(True, True)
    raw = bytes(1000)
    data = a.batch_now(encode_network_message(push("k/e", raw)), reliable=True, priority=5)
    assert data is not None and data[2] == BATCH_HEADER_COMPRESSION and len(data) < 200
    got = received(b.receive_data(data, 1.0))
    assert bytes(got[0].message.body.payload) == raw  # type: ignore[union-attr]


@given(st.lists(st.binary(max_size=70_000) | st.integers(1, 150_000).map(bytes), min_size=1, max_size=4))
@settings(max_examples=25, deadline=None)
def test_any_payloads_cross_a_compressed_link(payloads: list[bytes]) -> None:
    a, b, _, _ = linked(True, True)
    for p in payloads:
        b.send(push("k/h", p))
    got = received(a.receive_data(b.data_to_send(), 1.0))
    assert [bytes(r.message.body.payload) for r in got] == payloads  # type: ignore[union-attr]


def _closed(events: list[Event]) -> LinkClosed:
    return next(e for e in events if isinstance(e, LinkClosed))


@pytest.mark.parametrize(
    "body",
    [
        b"\x01\xff\xff\xff\xff\xff",  # not an lz4 block
        compress_batch(bytes(70_000)),  # grows past the batch size
    ],
)
def test_a_batch_that_does_not_decompress_ends_that_link(body: bytes) -> None:
    _, b, _, _ = linked(True, True)
    a2, b2, _, _ = linked(True, True)
    events = b.receive_data(len(body).to_bytes(2, "little") + body, 1.0)
    closed = _closed(events)
    assert closed.reason == CloseReason.INVALID and not closed.by_peer
    assert "decompress" in closed.detail or "batch" in closed.detail
    assert b.is_closed
    # the other link goes on
    a2.send(push("k/ok", b"still"))
    got = received(b2.receive_data(a2.data_to_send(), 1.0))
    assert [bytes(r.message.body.payload) for r in got] == [b"still"]  # type: ignore[union-attr]
