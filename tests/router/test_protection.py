"""Misbehaving peers only hurt themselves: a subscriber that stops reading, declaration floods."""

from __future__ import annotations

import json
import queue
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from pyzenoh.codec import (
    Declare,
    DeclareSubscriber,
    Push,
    Put,
    WhatAmI,
    WireExpr,
    ZenohId,
)
from pyzenoh.transport.link import Link, LinkClosed, LinkConfig, Received, Role
from tests.fixtures.pyzenoh_router import RouterProc, run_router, subscribed, zenoh, zenoh_config
from tests.waits import passed_on, routed

pytestmark = pytest.mark.interop

QUEUE_BYTES = 256 * 1024
MAX_DECLARATIONS = 50


@pytest.fixture(scope="module")
def small_router(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RouterProc]:
    tmp = tmp_path_factory.mktemp("protect")
    conf = tmp / "router.json5"
    conf.write_text(
        json.dumps(
            {
                "pyzenoh": {
                    "limits": {"max_declarations_per_face": MAX_DECLARATIONS, "send_queue_max_bytes": QUEUE_BYTES}
                },
            }
        )
    )
    with run_router(tmp, "-c", str(conf)) as router:
        yield router


class RawClient:
    """A scripted Zenoh client on a blocking socket, built on the sans-IO link."""

    def __init__(self, port: int, zid: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.link = Link(LinkConfig(ZenohId(zid), WhatAmI.CLIENT), Role.OPENER, time.monotonic())
        self.sock.sendall(self.link.data_to_send())
        while not self.link.is_established:
            for ev in self.link.receive_data(self.sock.recv(65536), time.monotonic()):
                assert not isinstance(ev, LinkClosed), ev
            self.sock.sendall(self.link.data_to_send())  # OpenSyn after InitAck

    def send(self, *messages: Any) -> None:
        for m in messages:
            self.link.send(m)
        self.sock.sendall(self.link.data_to_send())

    def drain_pushes(self, quiet: float = 1.0) -> int:
        """Read until nothing arrives for ``quiet`` seconds; count the PUSHes received."""
        self.sock.settimeout(quiet)
        pushes = 0
        while True:
            try:
                data = self.sock.recv(1 << 20)
            except TimeoutError:
                return pushes
            assert data, "the router closed a Drop subscriber"
            for ev in self.link.receive_data(data, time.monotonic()):
                assert not isinstance(ev, LinkClosed), ev
                pushes += isinstance(ev, Received) and isinstance(ev.message, Push)

    def closed_by_router(self, timeout: float = 20.0) -> bool:
        """Drain the socket until EOF (True) or ``timeout`` (False)."""
        deadline = time.monotonic() + timeout
        self.sock.settimeout(0.5)
        while time.monotonic() < deadline:
            try:
                data = self.sock.recv(1 << 20)
            except TimeoutError:
                continue
            except OSError:
                return True
            if not data:
                return True
            for ev in self.link.receive_data(data, time.monotonic()):
                if isinstance(ev, LinkClosed):
                    return True
        return False

    def close(self) -> None:
        self.sock.close()


def _subscribe(client: RawClient, key: str) -> None:
    client.send(Declare(DeclareSubscriber(1, WireExpr(0, key, True))))


def _run_publisher(router: RouterProc, key: str, count: int, size: int, block: bool) -> queue.Queue[Any]:
    pub_s = zenoh.open(zenoh_config(router.endpoint))
    sub_s = zenoh.open(zenoh_config(router.endpoint))
    got: queue.Queue[Any] = queue.Queue()
    try:
        sub_s.declare_subscriber(key, lambda s: got.put(len(s.payload.to_bytes())))
        passed_on(sub_s, pub_s)  # another subscriber may match already: routed() cannot tell
        cc = zenoh.CongestionControl.BLOCK if block else zenoh.CongestionControl.DROP
        pub = pub_s.declare_publisher(key, congestion_control=cc)
        payload = b"x" * size
        for _ in range(count):
            pub.put(payload)
        deadline = time.monotonic() + 30
        while got.qsize() < count and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        pub_s.close()
        sub_s.close()
    return got


def test_slow_subscriber_with_drop_does_not_slow_others(pyzenoh_router: RouterProc) -> None:
    # The publisher is scripted on a blocking socket: TCP back-pressure paces it, so
    # nothing is dropped before the router (a zenoh Drop publisher drops on its side when
    # the router reads slower than it writes). Default 8 MiB queues: the reading
    # subscriber never falls that far behind, while the stalled one (kernel buffers +
    # queue, far less than the 25 MiB sent) must drop.
    slow = RawClient(pyzenoh_router.port, 0x51)
    publisher = RawClient(pyzenoh_router.port, 0x54)
    reader = zenoh.open(zenoh_config(pyzenoh_router.endpoint))
    observer = zenoh.open(zenoh_config(pyzenoh_router.endpoint))
    try:
        got: queue.Queue[Any] = queue.Queue()
        _subscribe(slow, "flood/**")
        subscribed(pyzenoh_router.endpoint, "flood/a")  # the router has the stalled one
        reader.declare_subscriber("flood/**", lambda s: got.put(len(s.payload.to_bytes())))
        passed_on(reader, observer)  # and the reader
        payload = b"x" * (64 * 1024)
        deadline = time.monotonic() + 60
        # Bursts of 1.25 MiB, each once the reader has the last: the reader is never far
        # behind (however loaded the machine), the stalled subscriber falls ever further.
        for burst in range(20):
            for _ in range(20):
                publisher.send(Push(WireExpr(0, "flood/a", True), Put(payload)))
            while got.qsize() < 20 * (burst + 1) and time.monotonic() < deadline:
                time.sleep(0.01)
        assert got.qsize() == 400  # the reading subscriber got everything
        # The stalled one had Drop messages dropped for it, and is still connected.
        pushes = slow.drain_pushes()
        assert 0 < pushes < 400
    finally:
        reader.close()
        observer.close()
        publisher.close()
        slow.close()
    assert pyzenoh_router.proc.poll() is None


def test_slow_subscriber_with_block_is_disconnected(small_router: RouterProc) -> None:
    slow = RawClient(small_router.port, 0x52)
    try:
        _subscribe(slow, "blk/**")
        subscribed(small_router.endpoint, "blk/a")
        got = _run_publisher(small_router, "blk/a", count=400, size=32 * 1024, block=True)
        assert got.qsize() == 400
        assert slow.closed_by_router()  # over its hard cap: closed, the router lives on
    finally:
        slow.close()
    assert small_router.proc.poll() is None


def test_declarations_over_the_cap_are_refused_alone(small_router: RouterProc) -> None:
    flooder = RawClient(small_router.port, 0x53)
    s = zenoh.open(zenoh_config(small_router.endpoint))
    try:
        flooder.send(
            *[Declare(DeclareSubscriber(i, WireExpr(0, f"fl/{i}", True))) for i in range(1, MAX_DECLARATIONS + 10)]
        )
        routed(s, f"fl/{MAX_DECLARATIONS}")  # the router has handled the flood up to the cap
        # The session lives on: its first declarations route, those over the cap do not.
        s.put("fl/1", b"kept")
        s.put(f"fl/{MAX_DECLARATIONS + 5}", b"refused")
        assert flooder.drain_pushes(quiet=1.0) == 1
        got: queue.Queue[Any] = queue.Queue()
        s.declare_subscriber("fl/ok", got.put)
        s.put("fl/ok", b"fine")
        assert got.get(timeout=10).payload.to_bytes() == b"fine"
    finally:
        s.close()
        flooder.close()


def test_a_drop_message_waits_for_room_before_it_is_dropped(tmp_path: Any) -> None:
    # zenohd's congestion_control/drop/wait_before_drop: a Drop message that finds its
    # queue full waits for room, and its publisher's face pauses meanwhile, so a subscriber
    # that reads, however slowly, loses nothing (a wait long enough for a loaded machine:
    # zenohd's default 1 ms is the router's default). With 256 KiB queues, 400 x 64 KiB
    # messages fill the slow reader's many times over.
    conf = tmp_path / "router.json5"
    tree = {
        "pyzenoh": {"limits": {"send_queue_max_bytes": QUEUE_BYTES}},
        "transport": {"link": {"tx": {"queue": {"congestion_control": {"drop": {"wait_before_drop": 5_000_000}}}}}},
    }
    conf.write_text(json.dumps(tree))
    with run_router(tmp_path, "-c", str(conf)) as router:
        slow = RawClient(router.port, 0x55)
        publisher = RawClient(router.port, 0x56)
        try:
            _subscribe(slow, "paced/**")
            subscribed(router.endpoint, "paced/a")
            payload = b"x" * (64 * 1024)

            def publish() -> None:  # a blocking socket: paced by TCP while the router pauses it
                for _ in range(400):
                    publisher.send(Push(WireExpr(0, "paced/a", True), Put(payload)))

            sender = threading.Thread(target=publish, daemon=True)
            sender.start()
            got = 0
            slow.sock.settimeout(10.0)
            while got < 400:
                data = slow.sock.recv(16 * 1024)  # a slow reader: small reads
                assert data, "the router closed the slow subscriber"
                for ev in slow.link.receive_data(data, time.monotonic()):
                    got += isinstance(ev, Received) and isinstance(ev.message, Push)
            sender.join(30)
        finally:
            publisher.close()
            slow.close()
        assert got == 400
        assert router.proc.poll() is None
