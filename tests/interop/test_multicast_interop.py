"""A pyzenoh multicast member and a real 1.10.2 peer in multicast mode on lo: they meet and exchange."""

from __future__ import annotations

import asyncio
import json

import pytest
import zenoh

from pyzenoh.codec.batch import decode_batch
from pyzenoh.codec.network import Push
from pyzenoh.codec.primitives import ZenohId
from pyzenoh.codec.transport import Frame
from pyzenoh.localnet import free_port
from pyzenoh.transport.multicast import Delivered, MulticastConfig, MulticastTransport, PeerJoined
from pyzenoh.transport.multicast.io import MulticastGroup
from tests.transport.test_multicast import REAL_FRAME

pytestmark = pytest.mark.interop

GROUP = "224.0.0.224"


def _real_peer(port: int) -> zenoh.Session:
    c = zenoh.Config()
    c.insert_json5("mode", '"peer"')
    c.insert_json5("listen/endpoints", json.dumps([f"udp/{GROUP}:{port}#iface=lo"]))
    c.insert_json5("scouting/multicast/enabled", "false")
    c.insert_json5("transport/multicast/join_interval", "200")
    return zenoh.open(c)


async def _await(cond: object, limit: float = 10.0) -> bool:
    loop = asyncio.get_running_loop()
    end = loop.time() + limit
    while loop.time() < end:
        if callable(cond) and cond():
            return True
        await asyncio.sleep(0.02)
    return False


def test_a_pyzenoh_member_and_a_real_peer_meet_and_exchange_on_the_group() -> None:
    port = free_port()  # a group port of this test's own: parallel workers never meet
    real = _real_peer(port)
    got: list[bytes] = []
    sub = real.declare_subscriber("demo/**", lambda s: got.append(s.payload.to_bytes()))
    real_zid = ZenohId.from_str(str(real.info.zid()))
    events: list[object] = []

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        transport = MulticastTransport(MulticastConfig(ZenohId(0xC0FFEE), join_interval_s=0.2), loop.time())
        group = MulticastGroup(transport, GROUP, port, "lo", events.append)
        await group.start()
        try:
            joined = await _await(lambda: any(isinstance(e, PeerJoined) and e.zid == real_zid for e in events))
            assert joined, (events, transport.counters, real_zid)
            real.put("demo/from-real", b"hello")
            assert await _await(
                lambda: any(isinstance(e, Delivered) and any(isinstance(m, Push) for m in e.messages) for e in events)
            )
            [frame] = decode_batch(REAL_FRAME)
            assert isinstance(frame, Frame)
            # The real peer takes our frames only once it has our JOIN: send until it hears one.
            for _ in range(100):
                group.send(frame.messages)
                if await _await(lambda: b"hi" in got, 0.1):
                    break
            assert b"hi" in got  # the real peer's own put reached its subscriber too
        finally:
            await group.close()

    try:
        asyncio.run(scenario())
    finally:
        sub.undeclare()
        real.close()
