"""A raw-batch load generator: a Zenoh client that writes real batches, each one FRAME of
one PUSH, as a zenoh-pico device does (its batches are at most 2 KiB, so every 1 KiB
message is a batch of its own). It runs pyzenoh's sans-IO link for the handshake and the
sequence numbers, builds the batches before the clock starts, then writes them as fast
as the router takes them: TCP's flow control makes the write rate the router's rate.

Used by ``bench_small_batches.py``; a machine without a zenoh-pico build still runs it.
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass

from pyzenoh.codec import Declare, DeclareSubscriber, Push, Put, WhatAmI, WireExpr, ZenohId
from pyzenoh.transport.link import Link as SansIoLink
from pyzenoh.transport.link import LinkClosed, LinkConfig, Role

#: zenoh-pico's default unicast batch size (Z_BATCH_UNICAST_SIZE).
PICO_BATCH_SIZE = 2048
#: Bytes handed to one sendall(): many batches per write, as a busy device's socket has.
WRITE_CHUNK = 256 * 1024


@dataclass
class Sent:
    batches: int
    seconds: float

    @property
    def per_s(self) -> float:
        return self.batches / self.seconds if self.seconds > 0 else 0.0


class RawClient:
    """One client link on a blocking socket, after a real handshake."""

    def __init__(
        self, host: str, port: int, zid: int, batch_size: int = PICO_BATCH_SIZE, timeout: float = 30.0
    ) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        cfg = LinkConfig(ZenohId(zid), WhatAmI.CLIENT, batch_size=batch_size, lease_ms=60_000)
        self.link = SansIoLink(cfg, Role.OPENER, time.monotonic())
        self.sock.sendall(self.link.data_to_send())
        while not self.link.is_established:
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("the router closed during the handshake")
            for ev in self.link.receive_data(data, time.monotonic()):
                if isinstance(ev, LinkClosed):
                    raise ConnectionError(f"handshake refused: {ev}")
            self.sock.sendall(self.link.data_to_send())

    def declare_subscriber(self, key: str, sid: int = 1) -> None:
        self.link.send(Declare(DeclareSubscriber(sid, WireExpr(0, key, True))))
        self.sock.sendall(self.link.data_to_send())

    def one_message_batches(self, key: str, payload: bytes, count: int) -> bytes:
        """``count`` batches, each one FRAME of one PUSH, with the link's next SNs."""
        link = self.link
        push = Push(WireExpr(0, key, True), Put(payload))
        out = bytearray()
        for _ in range(count):
            link.send(push)
            out += link.data_to_send()
        return bytes(out)

    def write(self, data: bytes, batches: int, deadline_s: float) -> Sent:
        """Write ``data`` (``batches`` batches) in chunks until done or the deadline; the
        batches written are counted in proportion to the bytes."""
        view = memoryview(data)
        start = time.perf_counter()
        end = start + deadline_s
        done = 0
        while done < len(view) and time.perf_counter() < end:
            n = min(WRITE_CHUNK, len(view) - done)
            self.sock.sendall(view[done : done + n])
            done += n
        seconds = time.perf_counter() - start
        return Sent(round(batches * done / len(view)), seconds)

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
