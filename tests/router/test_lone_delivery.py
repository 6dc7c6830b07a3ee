"""The router's lone-PUSH lane (forwarding.Forwarding.lone) delivers what the full path does.

A RouterDaemon in process, with stand-in links driven through its event entry point: the
same lone PUSHes arrive once as decoded :class:`Received` events (the full path) and once
as undecoded :class:`ReceivedPush` events (the lane). Links must get the same bytes, a
local face the same messages, and the counters, drops, slow-face closes and recording
must agree.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

from pyzenoh.codec import (
    Declare,
    DeclareKeyExpr,
    DeclareSubscriber,
    Frame,
    Push,
    Put,
    WhatAmI,
    WireExpr,
    ZenohId,
    encode_batch,
    encode_network_message,
)
from pyzenoh.codec.network import QOS_BLOCK, QOS_EXPRESS
from pyzenoh.dataplane import scan_lone
from pyzenoh.recording import NetRecord, Recorder, read_records
from pyzenoh.router import forwarding
from pyzenoh.router.config import RouterConfig
from pyzenoh.router.daemon import RouterDaemon
from pyzenoh.routing import Send
from pyzenoh.transport.link import Established, LinkClosed, Received, ReceivedPush

EXPRESS_BLOCK = 5 | QOS_EXPRESS | QOS_BLOCK
DROP = 5


@dataclass(eq=False)
class StandInLink:
    """A TcpLink's face to the daemon: keeps what is sent, can refuse (a full queue)."""

    daemon: RouterDaemon
    port: int
    sent: list[tuple[bytes, dict[str, object]]] = field(default_factory=list)
    queued_bytes: int = 0
    dropped: int = 0
    closed: bool = False
    is_full: bool = False
    protocol: str = "tcp"
    cert_common_name: str | None = None
    local_address: tuple[str, int] = ("127.0.0.1", 7447)

    @property
    def remote_address(self) -> tuple[str, int]:
        return ("127.0.0.1", self.port)

    def send(self, data: bytes, **flags: object) -> bool:
        self.sent.append((bytes(data), flags))
        return True

    def close(self, reason: int = 0) -> None:
        if not self.closed:
            self.closed = True
            self.daemon._on_event(self, LinkClosed(reason, False, "test"))  # type: ignore[arg-type]


class Clock:
    """The wall clock both paths stamp with (forwarding._time): 1 ms a call, from the start
    of each router, so two routers given the same traffic issue the same timestamps."""

    def __init__(self) -> None:
        self.ticks = 0

    def __call__(self) -> float:
        self.ticks += 1
        return 1_795_264_773.0 + self.ticks / 1000


@pytest.fixture(autouse=True)
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(forwarding, "_time", clock)
    return clock


class Router:
    def __init__(self, lane: bool, recorder: Recorder | None = None, **cfg: object) -> None:
        forwarding._time.ticks = 0  # type: ignore[attr-defined]  # (the Clock fixture)
        self.lane = lane
        # (a Drop message's wait for room pauses the link it came from: stand-ins cannot pause)
        cfg.setdefault("drop_wait_before_drop_us", 0)
        config = replace(RouterConfig(), id="a1a2a3a4a5a6a7a8", **cfg)  # type: ignore[arg-type]
        self.daemon = RouterDaemon(config, recorder=recorder)
        self.links: dict[int, StandInLink] = {}
        self.local: list[Send] = []

    def connect(self, n: int) -> StandInLink:
        link = StandInLink(self.daemon, 4000 + n)
        ev = Established(ZenohId(n), WhatAmI.CLIENT, 10_000, 65535, 0, True, 1, 0, 0)
        self.daemon._on_event(link, ev)  # type: ignore[arg-type]
        self.links[n] = link
        return link

    def control(self, n: int, msg: object) -> None:
        raw = encode_network_message(msg)  # type: ignore[arg-type]
        self.daemon._on_event(self.links[n], Received(msg, raw, True, 5))  # type: ignore[arg-type]

    def local_face(self, key: str) -> None:
        face = self.daemon.add_local_face(ZenohId(0x99), self.local.append, WhatAmI.CLIENT, name="test")
        self.daemon.local_input(face, Declare(DeclareSubscriber(1, WireExpr(0, key, True))))

    def push(self, n: int, push: Push) -> None:
        batch = encode_batch([Frame(True, 1, (push,), push.qos & 0x07)])
        found = scan_lone(batch)
        assert found is not None
        fields, _, priority, at = found
        ev = ReceivedPush(batch, at, fields, True, priority)
        self.daemon._on_event(self.links[n], ev if self.lane else ev.received())  # type: ignore[arg-type]

    def seen(self) -> tuple[object, ...]:
        stats = self.daemon.stats
        return (
            {n: link.sent for n, link in self.links.items()},
            {n: link.closed for n, link in self.links.items()},
            [(s.face, s.message, s.raw, s.priority, s.reliable, s.express, s.block) for s in self.local],
            (stats.messages_in, stats.messages_out, stats.dropped, stats.faces_closed_slow),
            self.daemon.core.stats.pushes_routed,
        )


def scenario(router: Router) -> None:
    router.connect(1)
    for n in (2, 3):
        router.connect(n)
    router.control(2, Declare(DeclareSubscriber(1, WireExpr(0, "demo/**", True))))
    router.control(3, Declare(DeclareKeyExpr(4, WireExpr(0, "demo", True))))  # 3 knows demo by id 4
    router.control(3, Declare(DeclareSubscriber(1, WireExpr(4, "/*", True))))
    router.control(1, Declare(DeclareKeyExpr(7, WireExpr(0, "demo/a", True))))
    router.local_face("demo/*")
    for i, qos in enumerate([EXPRESS_BLOCK, DROP, EXPRESS_BLOCK | 0x02]):
        router.push(1, Push(WireExpr(7, "", True), Put(b"%d" % i), qos))
        router.push(1, Push(WireExpr(0, "demo/b", True), Put(b"b%d" % i), qos))
    router.links[3].is_full = True  # full: a Drop PUSH is dropped (no wait_before_drop here)
    router.push(1, Push(WireExpr(7, "", True), Put(b"dropped?"), DROP))
    router.links[3].is_full = False  # (a Block one would pause face 1: tests/router/test_drop_wait.py)
    router.push(1, Push(WireExpr(7, "", True), Put(b"blocked"), EXPRESS_BLOCK))
    router.links[2].queued_bytes = 10**9  # past the hard cap: closed as a slow face
    router.push(1, Push(WireExpr(7, "", True), Put(b"last"), EXPRESS_BLOCK))
    router.push(1, Push(WireExpr(0, "nobody", True), Put(b"-"), EXPRESS_BLOCK))
    router.push(1, Push(WireExpr(0, "demo/*", True), Put(b"wild"), EXPRESS_BLOCK))


def test_the_lane_delivers_what_the_full_path_delivers() -> None:
    full = Router(lane=False)
    scenario(full)
    lane = Router(lane=True)  # (restarts the clock)
    scenario(lane)
    assert lane.seen() == full.seen()
    assert lane.daemon.core.stats.lone_pushes_routed > 0 and full.daemon.core.stats.lone_pushes_routed == 0
    _, closed, local, counters, _ = lane.seen()
    assert closed == {1: False, 2: True, 3: False}
    # every publication reached the local face (the one on demo/* too, as zenohd routes
    # it); one drop
    assert len(local) == 10 and counters[2] == 1


def test_recording_routes_lone_pushes_through_the_full_path(tmp_path: Path) -> None:
    recorder = Recorder(tmp_path / "rec")
    router = Router(lane=True, recorder=recorder)
    router.connect(1)
    router.connect(2)
    router.control(2, Declare(DeclareSubscriber(1, WireExpr(0, "demo/**", True))))
    router.push(1, Push(WireExpr(0, "demo/a", True), Put(b"x"), EXPRESS_BLOCK))
    recorder.close()
    recs = [r for r in read_records(tmp_path / "rec") if isinstance(r, NetRecord) and r.key == "demo/a"]
    assert [r.direction for r in recs] == ["rx", "tx"]
    assert router.daemon.core.stats.lone_pushes_routed == 0
    assert len(router.links[2].sent) == 1
