"""A router's stream of samples on one key, delivered to a pyzenoh subscriber as batches
(:mod:`pyzenoh.session.samples`), gives the subscriber exactly what an eclipse-zenoh
subscriber sees: every sample, in order, with its payload, kind, encoding, QoS and the
router's timestamp."""

from __future__ import annotations

import threading
from typing import Any

import pytest

import pyzenoh.session as pz
from pyzenoh.session.samples import RunSample
from tests.fixtures.procs import Proc, pyzenoh_config, zenoh_config

zenoh = pytest.importorskip("zenoh")

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]

WAIT = 20.0
N = 3000


def view(s: Any) -> tuple[Any, ...]:
    ts = s.timestamp
    return (
        str(s.key_expr),
        s.payload.to_bytes(),
        str(s.kind).rsplit(".", 1)[-1],
        str(s.encoding),
        None if ts is None else str(ts),
        str(s.priority).rsplit(".", 1)[-1],
        s.express,
    )


class Collector:
    def __init__(self, n: int) -> None:
        self.items: list[Any] = []
        self.n = n
        self.done = threading.Event()

    def __call__(self, s: Any) -> None:
        self.items.append(s)
        if len(self.items) >= self.n:
            self.done.set()


@pytest.mark.parametrize("equal", [True, False], ids=["equal-sizes", "varying-sizes"])
def test_a_stream_arrives_as_an_eclipse_zenoh_subscriber_sees_it(zenohd: Proc, equal: bool) -> None:
    key = f"runs/{'eq' if equal else 'var'}"
    ps = pz.open(pyzenoh_config(zenohd.endpoint))
    zs = zenoh.open(zenoh_config(zenohd.endpoint))
    zp = zenoh.open(zenoh_config(zenohd.endpoint))  # not zs: its own subscriber would hear it locally
    try:
        ours, theirs = Collector(N), Collector(N)
        ps.declare_subscriber(key, ours)
        zs.declare_subscriber(key, theirs)
        pub = zp.declare_publisher(
            key, congestion_control=zenoh.CongestionControl.BLOCK, encoding=zenoh.Encoding.TEXT_PLAIN
        )
        pause = threading.Event()
        for _ in range(400):  # until both subscribers are reached (probes are left out below)
            if ours.items and theirs.items:
                break
            pub.put(b"probe")
            pause.wait(0.05)
        ours.n += len(ours.items)
        theirs.n += len(theirs.items)
        for i in range(N):
            if i % 500 == 499:
                pub.delete()
            else:
                pub.put(b"%08d" % i if equal else b"p" * (i % 97))
        assert ours.done.wait(WAIT) and theirs.done.wait(WAIT)
        assert ours.items and theirs.items
        got = [view(s) for s in ours.items if s.payload.to_bytes() != b"probe"]
        assert got == [view(s) for s in theirs.items if s.payload.to_bytes() != b"probe"]
        assert len(got) == N
        # the batch path ran (a burst through a router arrives in FRAMEs of many)
        assert any(isinstance(s, RunSample) for s in ours.items)
    finally:
        ps.close()
        zs.close()
        zp.close()


def test_a_run_sample_is_a_sample() -> None:
    from pyzenoh.codec import (
        Frame,
        Push,
        Put,
        Timestamp,
        WireExpr,
        ZenohId,
        encode_network_message,
    )
    from pyzenoh.dataplane import decode_batch
    from pyzenoh.session import types as t
    from pyzenoh.session.core import _PRIORITIES
    from pyzenoh.session.samples import run_samples

    out = bytearray()
    Frame(True, 1, (), 5).write_header(out)
    for i in range(8):
        out += encode_network_message(
            Push(WireExpr(0, "a/b", True), Put(b"x%d" % i, timestamp=Timestamp(1000 + i, ZenohId(7))))
        )
    (frame,) = decode_batch(bytes(out), keep_raw=True, runs=True, stamped=True)
    samples = run_samples(t.KeyExpr("a/b"), frame.messages[0], _PRIORITIES)  # type: ignore[attr-defined]
    s = samples[3]
    assert isinstance(s, t.Sample) and s.payload.to_bytes() == b"x3" and s.kind == t.SampleKind.PUT
    assert s.timestamp is not None and s.timestamp.wire.time == 1003 and str(s.key_expr) == "a/b"
    plain = t.Sample(t.KeyExpr("a/b"), t.ZBytes(b"x3"), t.SampleKind.PUT, s.encoding, s.timestamp)
    assert s == plain and plain == s and "x3" in repr(s)
    assert hash(s) == hash(plain) and samples[2] != s
