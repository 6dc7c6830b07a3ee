"""WsCarrier: what TcpLink writes leaves as one binary message per batch (no prefix), each
binary message arrives as prefix + batch, a text frame ends the link, flow control works
through the carrier's queue. Real aiohttp server and client on 127.0.0.1."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import pytest

from pyzenoh.localnet import free_port
from pyzenoh.transport.endpoint import Endpoint
from pyzenoh.transport.ws import WsCarrier, ws_listen

pytestmark = pytest.mark.timeout(30)


class Recorder:
    def __init__(self) -> None:
        self.protocol = ""
        self.carrier: WsCarrier | None = None
        self.data: list[bytes] = []
        self.lost: asyncio.Future[Exception | None] = asyncio.get_running_loop().create_future()
        self.paused = 0
        self.resumed = 0
        self.made = asyncio.Event()

    def connection_made(self, transport: Any) -> None:
        self.carrier = transport
        self.made.set()

    def data_received(self, data: bytes) -> None:
        self.data.append(bytes(data))

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.lost.done():
            self.lost.set_result(exc)

    def pause_writing(self) -> None:
        self.paused += 1

    def resume_writing(self) -> None:
        self.resumed += 1


async def _served() -> tuple[Any, list[Recorder], str]:
    port = free_port()
    made: list[Recorder] = []

    def factory() -> Recorder:
        r = Recorder()
        made.append(r)
        return r

    listener = await ws_listen(Endpoint("127.0.0.1", port, "ws"), factory, set(), 5.0)
    return listener, made, f"ws://127.0.0.1:{port}/"


def _run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 20))


def test_batches_both_ways_and_partial_writes() -> None:
    async def main() -> None:
        listener, made, url = await _served()
        try:
            async with aiohttp.ClientSession() as s, s.ws_connect(url) as ws:
                await ws.send_bytes(b"abc")
                await asyncio.wait_for(made[0].made.wait(), 5)
                r = made[0]
                assert r.protocol == "ws"
                while not r.data:
                    await asyncio.sleep(0.01)
                assert r.data == [b"\x03\x00abc"]
                carrier = r.carrier
                assert carrier is not None
                carrier.write(b"\x02\x00xy\x04\x00")  # one whole batch, the next one's prefix
                assert (await ws.receive_bytes()) == b"xy"
                carrier.write(b"12")
                carrier.write(b"34")
                assert (await ws.receive_bytes()) == b"1234"
                assert carrier.get_write_buffer_size() == 0
        finally:
            await listener.close(close_links=False)

    _run(main())


def test_text_frame_ends_the_link() -> None:
    async def main() -> None:
        listener, made, url = await _served()
        try:
            async with aiohttp.ClientSession() as s, s.ws_connect(url) as ws:
                await ws.send_str("hello")
                msg = await ws.receive()
                assert msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)
                exc = await asyncio.wait_for(made[0].lost, 5)
                assert isinstance(exc, ConnectionError)
        finally:
            await listener.close(close_links=False)

    _run(main())


def test_plain_get_refused() -> None:
    async def main() -> None:
        listener, made, url = await _served()
        try:
            async with aiohttp.ClientSession() as s, s.get(url.replace("ws", "http", 1)) as resp:
                assert resp.status == 400
            assert made == []
        finally:
            await listener.close(close_links=False)

    _run(main())


def test_flow_control_pauses_and_resumes() -> None:
    async def main() -> None:
        listener, made, url = await _served()
        try:
            async with aiohttp.ClientSession() as s, s.ws_connect(url) as ws:
                await ws.send_bytes(b"x")
                await asyncio.wait_for(made[0].made.wait(), 5)
                r = made[0]
                carrier = r.carrier
                assert carrier is not None
                carrier.set_write_buffer_limits(high=1000)
                batch = (900).to_bytes(2, "little") + bytes(900)
                for _ in range(4):
                    carrier.write(batch)
                assert r.paused == 1
                for _ in range(4):
                    assert len(await ws.receive_bytes()) == 900
                while not r.resumed:
                    await asyncio.sleep(0.01)
                assert carrier.get_write_buffer_size() == 0
        finally:
            await listener.close(close_links=False)

    _run(main())


def test_unfinished_upgrade_dropped_after_the_handshake_timeout() -> None:
    async def main() -> None:
        port = free_port()
        listener = await ws_listen(Endpoint("127.0.0.1", port, "ws"), Recorder, set(), 0.5)
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"GET / HTTP/1.1\r\nHost: x\r\n")  # the headers never end
            assert await asyncio.wait_for(reader.read(), 10) == b""
            writer.close()
        finally:
            await listener.close(close_links=False)

    _run(main())
