"""Throughput and latency per link kind, side by side: eclipse-zenoh clients through ROUTER
over ``tcp/`` and over ``udp/`` (one batch per datagram, best effort).

ROUTER is, in turn, the real eclipse-zenoh 1.10.2 router and ``pyzenoh router``, each
listening on tcp/127.0.0.1:P and udp/127.0.0.1:U. Throughput: a publisher client -> a
subscriber client, PUTs with congestion control Block, bounded in count and time (over
udp what is lost stays lost: ``received`` < ``sent`` is the loss). Latency: ping-pong
round trips between two clients (express PUTs), bounded in count and time.

Usage: python bench/bench_udp.py [--seconds 5] [--max-messages 200000] [--payload 8]
       [--round-trips 2000]
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import (
    LATENCY_DRIVER,
    PAIR_THROUGHPUT_DRIVER,
    cpu_model,
    run_driver,
    start_pyzenoh_router,
    start_real_router,
    stop,
)

from pyzenoh.localnet import free_port

CONVERGE_S = 15.0


def run_router(kind: str, args: argparse.Namespace, tmp: Path) -> dict[str, dict[str, Any]]:
    """Every link kind's throughput and latency through one router of ``kind``."""
    tcp_port, udp_port = free_port(), free_port()
    listen = [f"tcp/127.0.0.1:{tcp_port}", f"udp/127.0.0.1:{udp_port}"]
    if kind == "zenoh":
        router = start_real_router(tcp_port, {"listen/endpoints": listen})
    else:
        router = start_pyzenoh_router(tcp_port, tmp / f"router-{tcp_port}.json5", {"listen": {"endpoints": listen}})
    out: dict[str, dict[str, Any]] = {}
    try:
        for ep in listen:
            link = ep.split("/", 1)[0]
            tput = run_driver(
                PAIR_THROUGHPUT_DRIVER,
                [ep, ep, str(args.seconds), str(args.max_messages), str(args.payload), str(CONVERGE_S), "3"],
                args.seconds + CONVERGE_S + 60,
            )
            lat = run_driver(LATENCY_DRIVER, [ep, ep, str(args.round_trips), str(args.seconds), str(CONVERGE_S)], 120)
            out[link] = {"throughput": tput, "latency": lat}
    finally:
        stop(router)
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--max-messages", type=int, default=200_000)
    p.add_argument("--payload", type=int, default=8)
    p.add_argument("--round-trips", type=int, default=2000)
    args = p.parse_args()
    print(
        f"machine: {os.cpu_count()} cores, {cpu_model()}, Python {platform.python_version()}, "
        f"{time.strftime('%Y-%m-%d')}; {args.payload} B PUTs, 1 publisher -> 1 subscriber; ping-pong"
    )
    tmp = Path(tempfile.mkdtemp(prefix="benchudp"))
    try:
        results = {kind: run_router(kind, args, tmp) for kind in ("zenoh", "pyzenoh")}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(
        f"{'router':8s} {'link':4s} {'sent':>8s} {'received':>9s} {'msg/s':>9s} {'lost %':>7s}"
        f" {'rtt p50 us':>10s} {'rtt p99 us':>10s} {'rt lost':>7s}"
    )
    for kind, links in results.items():
        for link, r in links.items():
            t, lat = r["throughput"], r["latency"]
            if "error" in t:
                row = f"{t['error'][:40]:>44s}"
            else:
                rate = t["received"] / t["seconds"]
                lost = 100 * (1 - t["received"] / t["sent"]) if t["sent"] else 0.0
                row = f"{t['sent']:8d} {t['received']:9d} {rate:9.0f} {lost:7.2f}"
            if "error" in lat:
                row += f" {lat['error'][:30]}"
            else:
                rtts = sorted(lat["rtts_us"])
                p99 = rtts[min(len(rtts) - 1, int(len(rtts) * 0.99))] if rtts else float("nan")
                p50 = statistics.median(rtts) if rtts else float("nan")
                row += f" {p50:10.0f} {p99:10.0f} {lat['lost']:7d}"
            print(f"{kind:8s} {link:4s} {row}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
