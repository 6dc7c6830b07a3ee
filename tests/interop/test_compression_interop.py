"""lz4 batch compression against real eclipse-zenoh 1.10.2 on 127.0.0.1: a client (real or
pyzenoh) reaches a router (real or ``pyzenoh router``) through a proxy that records both
directions. The client publishes and receives payloads that fragment (compressible and
random); the proxy's bytes say what was negotiated (the InitSyn/InitAck extension) and
whether batches went compressed (bytes on the wire far below the payloads)."""

from __future__ import annotations

import contextlib
import json
import os
import queue
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pyzenoh.codec import InitAck, InitSyn
from pyzenoh.codec.batch import decode_batch
from pyzenoh.localnet import free_port
from tests.fixtures.procs import opened, pyzenoh_router_process, start_router, zenoh_config
from tests.routing.test_wire_differential import RecordingProxy
from tests.waits import until

zenoh = pytest.importorskip("zenoh")
import pyzenoh.session as pz

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]

WAIT = 15.0
KEY = "transport/unicast/compression/enabled"
#: Over one 64 KiB batch: these fragment. ZIP-able 150 kB, then 100 kB that lz4 cannot shrink.
PAYLOADS = (b"compressible zenoh batch " * 6000, os.urandom(100_000), b"small")
TOTAL = sum(len(p) for p in PAYLOADS)


@contextlib.contextmanager
def a_router(kind: str, compression: bool, tmp: Path) -> Iterator[int]:
    if kind == "real":
        proc = start_router(extra={KEY: compression})
        try:
            yield int(proc.endpoint.rsplit(":", 1)[1])
        finally:
            proc.stop()
        return
    port = free_port()
    config = {
        "listen": {"endpoints": [f"tcp/127.0.0.1:{port}"]},
        "scouting": {"multicast": {"enabled": False}},
        "transport": {"unicast": {"compression": {"enabled": compression}}},
    }
    with pyzenoh_router_process(config, tmp / "router.json5", [port]):
        yield port


def a_client(kind: str, compression: bool, port: int) -> Any:
    endpoint = f"tcp/127.0.0.1:{port}"
    if kind == "real":
        c = zenoh_config(endpoint)
        c.insert_json5(KEY, json.dumps(compression))
        return zenoh.open(c)
    return pz.open(
        {
            "mode": "client",
            "connect": {"endpoints": [endpoint]},
            "scouting": {"multicast": {"enabled": False}},
            "transport": {"unicast": {"compression": {"enabled": compression}}},
        }
    )


def first_message(stream: bytes) -> Any:
    n = int.from_bytes(stream[:2], "little")
    return decode_batch(stream[2 : 2 + n])[0]


def exchange(client: Any, other: Any) -> None:
    """``client`` publishes every payload to ``other`` and receives every one from it."""
    up: queue.Queue[bytes] = queue.Queue()
    down: queue.Queue[bytes] = queue.Queue()
    other.declare_subscriber("compress/up", lambda s: up.put(s.payload.to_bytes()))
    client.declare_subscriber("compress/down", lambda s: down.put(s.payload.to_bytes()))
    # declarations are not acknowledged: probe until both routes carry a message
    assert until(lambda: (client.put("compress/up", b"probe"), not up.empty())[1], WAIT), "client -> other"
    assert until(lambda: (other.put("compress/down", b"probe"), not down.empty())[1], WAIT), "other -> client"
    # block: with the default (drop) a router may drop a fragmented 100 kB put when its
    # queue to the subscriber is full (seen once in 5 runs through zenohd, uncompressed)
    cc = pz.CongestionControl.BLOCK if isinstance(client, pz.Session) else zenoh.CongestionControl.BLOCK
    for p in PAYLOADS:
        client.put("compress/up", p, congestion_control=cc)
        other.put("compress/down", p, congestion_control=zenoh.CongestionControl.BLOCK)
    assert received(up) == list(PAYLOADS)
    assert received(down) == list(PAYLOADS)


def received(q: queue.Queue[bytes]) -> list[bytes]:
    """The payloads after the probes (more probes may arrive than were awaited)."""
    out: list[bytes] = []
    while len(out) < len(PAYLOADS):
        p = q.get(timeout=WAIT)
        if p != b"probe":
            out.append(p)
    return out


CASES = [
    # router, router compression, client, client compression
    ("real", True, "pyzenoh", True),
    ("pyzenoh", True, "real", True),
    ("pyzenoh", True, "pyzenoh", True),
    ("real", True, "pyzenoh", False),
    ("real", False, "pyzenoh", True),
    ("pyzenoh", True, "real", False),
    ("pyzenoh", False, "real", True),
]


@pytest.mark.parametrize(("router", "r_on", "client", "c_on"), CASES)
def test_compression_negotiated_and_applied(tmp_path: Path, router: str, r_on: bool, client: str, c_on: bool) -> None:
    expected = r_on and c_on
    with a_router(router, r_on, tmp_path) as port:
        proxy = RecordingProxy(port)
        try:
            other = zenoh.open(zenoh_config(f"tcp/127.0.0.1:{port}"))
            c = a_client(client, c_on, proxy.port)
            with opened(c, other):
                exchange(c, other)
                syn = first_message(bytes(proxy.sent))
                ack = first_message(bytes(proxy.received))
                assert isinstance(syn, InitSyn) and isinstance(ack, InitAck)
                assert (syn.compression, ack.compression) == (c_on, expected)
                n_sent, n_received = len(proxy.sent), len(proxy.received)
        finally:
            proxy.close()
    if expected:
        # the 150 kB of repeated text shrink to almost nothing; the random 100 kB go raw
        # (measured: about 101 kB each way for 250 kB, with zenohd and with pyzenoh)
        assert n_sent < TOTAL - 100_000 and n_received < TOTAL - 100_000, (n_sent, n_received)
    else:
        assert n_sent > TOTAL and n_received > TOTAL, (n_sent, n_received)
