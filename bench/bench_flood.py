"""Declaration flood, side by side: what a flood does to a healthy client and to memory.

In one run, against the real eclipse-zenoh 1.10.2 router and then ``pyzenoh router``:
``--links`` scripted clients (pyzenoh's sans-IO link on blocking sockets) each declare
``--declarations`` subscribers on distinct keys as fast as they can, while a healthy
eclipse-zenoh session pings a queryable of its own through the router every 50 ms. The
flooders then disconnect. Printed per router: time for the flood to be taken in, router
RSS at start, after the flood and some seconds after the flooders left, and the healthy
client's pings (count, lost = no reply, median and max round trip).

Usage: python bench/bench_flood.py [--links 100] [--declarations 1000] [--settle 10]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import zenoh
from common import rss_mb, start_pyzenoh_router, start_real_router, stop

from pyzenoh.codec import Declare, DeclareSubscriber, WhatAmI, WireExpr, ZenohId
from pyzenoh.localnet import free_port
from pyzenoh.transport.link import Link, LinkClosed, LinkConfig, Role

#: Bound on each phase (seconds): nothing here waits longer.
PHASE_TIMEOUT = 120.0
PING_PERIOD = 0.05


def start_router(kind: str, port: int, tmp: Path) -> subprocess.Popen[bytes]:
    if kind == "zenoh":
        return start_real_router(port)
    return start_pyzenoh_router(port, tmp / "router.json5", log_level="error")


class Flooder:
    """One scripted client: handshake, then its declarations in one go."""

    def __init__(self, port: int, zid: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=PHASE_TIMEOUT)
        self.link = Link(LinkConfig(ZenohId(zid), WhatAmI.CLIENT), Role.OPENER, time.monotonic())
        self.sock.sendall(self.link.data_to_send())
        while not self.link.is_established:
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("router closed the flooder during its handshake")
            for ev in self.link.receive_data(data, time.monotonic()):
                if isinstance(ev, LinkClosed):
                    raise ConnectionError(f"handshake refused: {ev.detail}")
            self.sock.sendall(self.link.data_to_send())

    def declare(self, prefix: str, n: int) -> None:
        for i in range(1, n + 1):
            self.link.send(Declare(DeclareSubscriber(i, WireExpr(0, f"{prefix}/{i}", True))))
        self.sock.sendall(self.link.data_to_send())

    def close(self) -> None:
        self.sock.close()


def session(port: int) -> zenoh.Session:
    c = zenoh.Config()
    c.insert_json5("mode", '"client"')
    c.insert_json5("connect/endpoints", f'["tcp/127.0.0.1:{port}"]')
    c.insert_json5("scouting/multicast/enabled", "false")
    return zenoh.open(c)


def run_case(kind: str, args: argparse.Namespace) -> dict[str, float]:
    port = free_port()
    tmp = Path(tempfile.mkdtemp(prefix="benchflood"))
    router = start_router(kind, port, tmp)
    pings: list[tuple[float, int]] = []
    stop_pinging = threading.Event()
    healthy = session(port)
    try:
        healthy.declare_queryable("bench/ping", lambda q: q.reply("bench/ping", b"p"))
        marker = session(port)  # the flood is taken in once its last key is visible here
        time.sleep(1.0)
        start_rss = rss_mb(router.pid)

        def pinger() -> None:
            while not stop_pinging.is_set():
                t = time.perf_counter()
                replies = list(healthy.get("bench/ping", timeout=10))
                pings.append((time.perf_counter() - t, len(replies)))
                stop_pinging.wait(PING_PERIOD)

        thread = threading.Thread(target=pinger, daemon=True)
        thread.start()
        t0 = time.perf_counter()
        flooders = []
        for i in range(args.links):
            f = Flooder(port, 0x10000 + i)
            f.declare(f"flood/{i}", args.declarations)
            flooders.append(f)
        # Taken in: the last flooder's last subscriber matches a publisher elsewhere.
        pub = marker.declare_publisher(f"flood/{args.links - 1}/{args.declarations}")
        deadline = time.monotonic() + PHASE_TIMEOUT
        while not pub.matching_status.matching and time.monotonic() < deadline:
            time.sleep(0.05)
        flood_s = time.perf_counter() - t0
        flooded_rss = rss_mb(router.pid)
        for f in flooders:
            f.close()
        time.sleep(args.settle)
        after_rss = rss_mb(router.pid)
        stop_pinging.set()
        thread.join(timeout=15)
        marker.close()
    finally:
        stop_pinging.set()
        healthy.close()
        stop(router)
    rtts = [t * 1000 for t, n in pings if n]
    return {
        "flood_s": flood_s,
        "rss_start_mb": start_rss,
        "rss_flooded_mb": flooded_rss,
        "rss_after_mb": after_rss,
        "pings": len(pings),
        "pings_lost": sum(1 for _, n in pings if not n),
        "ping_median_ms": statistics.median(rtts) if rtts else float("nan"),
        "ping_max_ms": max(rtts) if rtts else float("nan"),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--links", type=int, default=100)
    p.add_argument("--declarations", type=int, default=1000)
    p.add_argument("--settle", type=float, default=10.0, help="seconds after the flooders left")
    args = p.parse_args()
    print(
        f"machine: {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"load {os.getloadavg()[0]:.2f}, {time.strftime('%Y-%m-%d')}"
    )
    print(f"{args.links} links x {args.declarations} declarations")
    results = {"real (eclipse-zenoh 1.10.2)": run_case("zenoh", args), "pyzenoh": run_case("pyzenoh", args)}
    cols = (
        "flood_s",
        "rss_start_mb",
        "rss_flooded_mb",
        "rss_after_mb",
        "pings",
        "pings_lost",
        "ping_median_ms",
        "ping_max_ms",
    )
    print(f"{'router':28s}" + "".join(f"{c:>16s}" for c in cols))
    for name, r in results.items():
        print(f"{name:28s}" + "".join(f"{r[c]:16.1f}" for c in cols))
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
