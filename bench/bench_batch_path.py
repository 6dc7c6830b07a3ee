"""The router's CPU per small batch, in process: from the read to the write, nothing else
(issue #27). A real :class:`RouterDaemon` and real :class:`TcpLink` objects, whose
transports are stand-ins that keep nothing (no sockets, no kernel, no other process):
what is left is the Python a batch costs, the figure the small-batch benchmark's "router
CPU per batch" holds together with the kernel's share.

A publisher and a subscriber, both with zenoh-pico's batch size (2 KiB) by default, go
through the real handshake; then the publisher's batches, each one FRAME of one PUT
(zenoh-pico's shape), are handed to the router ``--per-read`` at a time, as the socket
would. Printed: microseconds of process time per batch (median of ``--repeat``), and
what the subscriber was sent. For before/after comparisons: run both on one machine.

Run: ``python bench/bench_batch_path.py [--payload 1024] [--per-read 8 64] [--batches 20000]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Any

from pyzenoh import loop
from pyzenoh.codec import Declare, DeclareSubscriber, Push, Put, WhatAmI, WireExpr, ZenohId
from pyzenoh.router.config import RouterConfig
from pyzenoh.router.daemon import RouterDaemon
from pyzenoh.transport.link import Link, LinkConfig, Role
from pyzenoh.transport.tcp import TcpLink

#: zenoh-pico's Z_BATCH_UNICAST_SIZE.
PICO_BATCH_SIZE = 2048
KEY = "bench/small"


class NullTransport:
    """What a TcpLink writes to: counts the bytes, or hands them to ``sink``."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.written = 0
        self.sink: Any = None

    def write(self, data: bytes) -> None:
        self.written += len(data)
        if self.sink is not None:
            self.sink(bytes(data))

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": ("127.0.0.1", 7447), "peername": ("127.0.0.1", self.port)}.get(name, default)

    def get_write_buffer_size(self) -> int:
        return 0

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        pass

    def is_closing(self) -> bool:
        return False

    def is_reading(self) -> bool:
        return True

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def close(self) -> None:
        pass

    def abort(self) -> None:
        pass


class Client:
    """A sans-IO client link on one side, the router's TcpLink on the other."""

    def __init__(self, daemon: RouterDaemon, zid: int, batch_size: int) -> None:
        self.link = Link(LinkConfig(ZenohId(zid), WhatAmI.CLIENT, batch_size=batch_size), Role.OPENER, 0.0)
        self.router_side = TcpLink(daemon.link_config, Role.ACCEPTOR, daemon._on_event)
        self.transport = NullTransport(40_000 + zid)
        self.transport.sink = lambda data: self.link.receive_data(data, 0.0)
        self.router_side.connection_made(self.transport)  # type: ignore[arg-type]
        for _ in range(4):
            self.to_router(self.link.data_to_send())
        assert self.link.is_established, "the handshake did not finish"

    def to_router(self, data: bytes) -> None:
        if data:
            self.router_side.data_received(memoryview(data))

    def stop_reading(self) -> None:
        """From now on what the router writes is only counted."""
        self.transport.sink = None


def one_run(payload: int, per_read: int, batches: int, batch_size: int) -> tuple[float, int]:
    async def run() -> tuple[float, int]:
        config = RouterConfig(id="a1a2a3a4a5a6a7a8", listen=[], gc_freeze_interval_ms=0)
        daemon = RouterDaemon(config)
        sub = Client(daemon, 0x51, batch_size)
        sub.link.send(Declare(DeclareSubscriber(1, WireExpr(0, KEY, True))))
        sub.to_router(sub.link.data_to_send())
        sub.stop_reading()
        pub = Client(daemon, 0x50, batch_size)
        push = Push(WireExpr(0, KEY, True), Put(b"x" * payload))
        reads = []
        for _ in range(batches // per_read):
            data = bytearray()
            for _ in range(per_read):
                pub.link.send(push)
                data += pub.link.data_to_send()
            reads.append(memoryview(bytes(data)))
        for view in reads[:10]:  # warm: the route is cached
            pub.router_side.data_received(view)
        before = sub.transport.written
        t0 = time.process_time()
        for view in reads[10:]:
            pub.router_side.data_received(view)
        spent = time.process_time() - t0
        return spent / ((len(reads) - 10) * per_read) * 1e6, sub.transport.written - before

    return loop.run(run())  # uvloop when installed, as the router runs


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--payload", type=int, default=1024, help="bytes per PUT")
    p.add_argument("--per-read", type=int, nargs="+", default=[1, 8, 64], help="batches per read")
    p.add_argument("--batches", type=int, default=20_000, help="batches per run")
    p.add_argument("--batch-size", type=int, default=PICO_BATCH_SIZE, help="both clients' batch size")
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args()
    for per_read in args.per_read:
        runs = [one_run(args.payload, per_read, args.batches, args.batch_size) for _ in range(args.repeat)]
        us = [r[0] for r in runs]
        out = runs[-1][1]
        print(
            f"{per_read:4d} batches per read: {statistics.median(us):6.2f} us per batch "
            f"(runs: {', '.join(f'{u:.2f}' for u in us)}); {out:,} bytes to the subscriber",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
