"""Router throughput and ping latency per link kind, side by side: the real eclipse-zenoh
1.10.2 router and ``pyzenoh router``, each over tcp/, tls/ and quic/ in one run.

Clients are real eclipse-zenoh clients on 127.0.0.1 (a throwaway CA from ``trustme``;
the clients name the CA in the endpoint, ``#root_ca_certificate_file=...``). Throughput:
one publisher -> router -> one subscriber, 8-byte PUTs with congestion control Block,
bounded in count and time. Latency: ping-pong through the router (express PUTs), bounded
in count and time; median and p99 round trip.

Usage: python bench/bench_quic.py [--seconds 3] [--max-messages 200000] [--round-trips 2000]
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

from bench_tls import make_certs
from common import (
    LATENCY_DRIVER,
    cpu_model,
    run_driver,
    run_throughput,
    start_pyzenoh_router,
    start_real_router,
    stop,
)

from pyzenoh.localnet import free_port

KINDS = ("tcp", "tls", "quic")


def run_case(router_kind: str, args: argparse.Namespace, tmp: Path) -> dict[str, dict[str, Any]]:
    port = free_port()  # tcp/, also how the start is awaited
    ports = {"tcp": port, "tls": free_port(), "quic": free_port()}
    router_tls, client_tls = make_certs(tmp)
    listen = [f"{k}/127.0.0.1:{p}" for k, p in ports.items()]
    if router_kind == "zenoh":
        router = start_real_router(port, {"listen/endpoints": listen, "transport/link/tls": router_tls})
    else:
        tree = {"listen": {"endpoints": listen}, "transport": {"link": {"tls": router_tls}}}
        router = start_pyzenoh_router(port, tmp / f"router-{port}.json5", tree)
    out: dict[str, dict[str, Any]] = {}
    try:
        for kind in KINDS:
            endpoint = f"{kind}/127.0.0.1:{ports[kind]}"
            if kind != "tcp":
                endpoint += f"#root_ca_certificate_file={client_tls['root_ca_certificate']}"
            r = run_throughput(endpoint, args.seconds, args.max_messages, 8)
            lat = run_driver(
                LATENCY_DRIVER, [endpoint, endpoint, str(args.round_trips), str(args.seconds), "10"], args.seconds + 60
            )
            rtts = sorted(lat.get("rtts_us", []))
            r["median_us"] = statistics.median(rtts) if rtts else float("nan")
            r["p99_us"] = rtts[min(len(rtts) - 1, int(0.99 * len(rtts)))] if rtts else float("nan")
            r["latency_error"] = lat.get("error")
            out[kind] = r
    finally:
        stop(router)
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--max-messages", type=int, default=200_000)
    p.add_argument("--round-trips", type=int, default=2000)
    args = p.parse_args()
    print(
        f"machine: {os.cpu_count()} cores, {cpu_model()}, Python {platform.python_version()}, "
        f"{time.strftime('%Y-%m-%d')}; 8 B PUTs, 1 publisher -> 1 subscriber; ping-pong"
    )
    tmp = Path(tempfile.mkdtemp(prefix="benchquic"))
    try:
        results = {"zenoh 1.10.2": run_case("zenoh", args, tmp), "pyzenoh": run_case("pyzenoh", args, tmp)}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{'router':14s} {'link':5s} {'msg/s':>10s} {'vs zenoh':>9s} {'rtt median us':>14s} {'rtt p99 us':>11s}")
    for name, per_kind in results.items():
        for kind, r in per_kind.items():
            base = results["zenoh 1.10.2"][kind]["msg_per_s"]
            print(
                f"{name:14s} {kind:5s} {r['msg_per_s']:10.0f} {r['msg_per_s'] / base:9.3f} "
                f"{r['median_us']:14.0f} {r['p99_us']:11.0f}"
                + (f"  ({r['latency_error']})" if r["latency_error"] else "")
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
