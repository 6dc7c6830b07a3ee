"""Router throughput and ping latency per link kind, side by side: the real eclipse-zenoh
1.10.2 router and ``pyzenoh router`` in one run, both clients over the link kind.

Throughput: 1 publisher -> ROUTER -> 1 subscriber, 8-byte PUTs (congestion control Block),
bounded in count and time. Latency: ping/pong through ROUTER (express PUTs), median and
p99 round trip. Each row: the link kind, the router, numbers and pyzenoh/zenoh ratios.
Other link kinds add rows to KINDS.

Usage: python bench/bench_links.py [--seconds 3] [--max-messages 200000] [--round-trips 2000] [--kinds tcp,ws]
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import LATENCY_DRIVER, cpu_model, run_driver, run_throughput, start_pyzenoh_router, start_real_router, stop

from pyzenoh.localnet import free_port, wait_listening

#: The link kinds measured (each listened on beside the tcp port the start waits for).
KINDS = ("tcp", "ws")


def run_case(impl: str, kind: str, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    port, lport = free_port(), free_port()
    endpoint = f"{kind}/127.0.0.1:{lport}"
    listen = [f"tcp/127.0.0.1:{port}", endpoint]
    if impl == "zenoh":
        router = start_real_router(port, {"listen/endpoints": listen})
    else:
        router = start_pyzenoh_router(port, tmp / f"router-{port}.json5", {"listen": {"endpoints": listen}})
        wait_listening(lport, router, 30)  # the start waits for the tcp port only
    try:
        try:
            thr = run_throughput(endpoint, args.seconds, args.max_messages, 8)
        except subprocess.CalledProcessError as exc:
            return {
                "msg_per_s": float("nan"),
                "p50_us": float("nan"),
                "p99_us": float("nan"),
                "error": exc.stderr[-300:],
            }
        lat = run_driver(
            LATENCY_DRIVER, [endpoint, endpoint, str(args.round_trips), str(args.seconds), "10"], args.seconds + 60
        )
    finally:
        stop(router)
    rtts = sorted(lat.get("rtts_us", [])) or [float("nan")]
    return {
        "msg_per_s": thr["msg_per_s"],
        "p50_us": statistics.median(rtts),
        "p99_us": rtts[min(len(rtts) - 1, int(len(rtts) * 0.99))],
        "error": lat.get("error"),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--max-messages", type=int, default=200_000)
    p.add_argument("--round-trips", type=int, default=2000)
    p.add_argument("--kinds", default=",".join(KINDS))
    args = p.parse_args()
    print(
        f"machine: {os.cpu_count()} cores, {cpu_model()}, Python {platform.python_version()}, "
        f"{time.strftime('%Y-%m-%d')}; 8 B PUTs 1 -> 1, ping/pong round trips"
    )
    tmp = Path(tempfile.mkdtemp(prefix="benchlinks"))
    print(
        f"{'link':5s} {'router':8s} {'msg/s':>10s} {'x zenoh':>8s} {'rtt p50 us':>11s} {'p99 us':>9s} {'x zenoh':>8s}"
    )
    try:
        for kind in args.kinds.split(","):
            z = run_case("zenoh", kind, args, tmp)
            y = run_case("pyzenoh", kind, args, tmp)
            for name, r in (("zenoh", z), ("pyzenoh", y)):
                print(
                    f"{kind:5s} {name:8s} {r['msg_per_s']:10.0f} {r['msg_per_s'] / z['msg_per_s']:8.3f} "
                    f"{r['p50_us']:11.1f} {r['p99_us']:9.1f} {r['p50_us'] / z['p50_us']:8.3f}"
                    + (f"  ({r['error']})" if r["error"] else "")
                )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
