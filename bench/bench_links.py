"""Router throughput and ping latency per link kind, side by side: the real eclipse-zenoh
1.10.2 router and ``pyzenoh router`` in one run, real eclipse-zenoh clients over each of
tcp/, tls/, quic/, ws/, udp/ and unixsock-stream/.

Each router listens on every kind at once (tls/ and quic/ with a throwaway CA from
``trustme``, which the clients name in the endpoint). Throughput: one publisher client ->
the router -> one subscriber client, 8-byte PUTs with congestion control Block, bounded
in count and time; over udp/ what is lost stays lost (``lost %``). Latency: ping-pong
round trips between two clients (express PUTs), bounded in count and time; median and
p99. Ratios are pyzenoh / zenohd, per kind, from the same run.

Usage: python bench/bench_links.py [--seconds 3] [--max-messages 200000]
       [--round-trips 2000] [--kinds tcp,tls,quic,ws,udp,unixsock-stream]
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
    PAIR_THROUGHPUT_DRIVER,
    cpu_model,
    run_driver,
    start_pyzenoh_router,
    start_real_router,
    stop,
)

from pyzenoh.localnet import free_port

KINDS = ("tcp", "tls", "quic", "ws", "udp", "unixsock-stream")
#: Longest wait for a route through the router before a kind's case is given up.
CONVERGE_S = 15.0
SECURE = ("tls", "quic")


def endpoints(kinds: list[str], tmp: Path, router_name: str) -> dict[str, str]:
    """One listen endpoint per kind (tcp/ always: the start waits on its port)."""
    out = {"tcp": f"tcp/127.0.0.1:{free_port()}"}
    for kind in kinds:
        if kind == "unixsock-stream":
            out[kind] = f"unixsock-stream/{tmp / f'{router_name}.sock'}"
        elif kind != "tcp":
            out[kind] = f"{kind}/127.0.0.1:{free_port()}"
    return out


def run_router(name: str, kinds: list[str], args: argparse.Namespace, tmp: Path) -> dict[str, dict[str, Any]]:
    """Every kind's throughput and latency through one router ``name`` (zenoh or pyzenoh)."""
    listen = endpoints(kinds, tmp, name)
    port = int(listen["tcp"].rsplit(":", 1)[1])
    router_tls, client_tls = make_certs(tmp)
    if name == "zenoh":
        router = start_real_router(port, {"listen/endpoints": list(listen.values()), "transport/link/tls": router_tls})
    else:
        tree = {"listen": {"endpoints": list(listen.values())}, "transport": {"link": {"tls": router_tls}}}
        router = start_pyzenoh_router(port, tmp / f"router-{port}.json5", tree)
    out: dict[str, dict[str, Any]] = {}
    try:
        for kind in kinds:
            ep = listen[kind]
            if kind in SECURE:
                ep += f"#root_ca_certificate_file={client_tls['root_ca_certificate']}"
            tput = run_driver(
                PAIR_THROUGHPUT_DRIVER,
                [ep, ep, str(args.seconds), str(args.max_messages), "8", str(CONVERGE_S), "3"],
                args.seconds + CONVERGE_S + 60,
            )
            lat = run_driver(LATENCY_DRIVER, [ep, ep, str(args.round_trips), str(args.seconds), str(CONVERGE_S)], 120)
            out[kind] = summary(tput, lat)
    finally:
        stop(router)
    return out


def summary(tput: dict[str, Any], lat: dict[str, Any]) -> dict[str, Any]:
    nan = float("nan")
    row: dict[str, Any] = {"error": tput.get("error") or lat.get("error")}
    if "error" in tput:
        row.update(msg_per_s=nan, lost_pct=nan)
    else:
        row["msg_per_s"] = tput["received"] / tput["seconds"]
        row["lost_pct"] = 100 * (1 - tput["received"] / tput["sent"]) if tput["sent"] else 0.0
    rtts = sorted(lat.get("rtts_us", [])) or [nan]
    row["p50_us"] = statistics.median(rtts)
    row["p99_us"] = rtts[min(len(rtts) - 1, int(len(rtts) * 0.99))]
    return row


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--max-messages", type=int, default=200_000)
    p.add_argument("--round-trips", type=int, default=2000)
    p.add_argument("--kinds", default=",".join(KINDS))
    args = p.parse_args()
    kinds = args.kinds.split(",")
    unknown = set(kinds) - set(KINDS)
    if unknown:
        p.error(f"unknown kinds {sorted(unknown)}; known: {','.join(KINDS)}")
    print(
        f"machine: {os.cpu_count()} cores, {cpu_model()}, Python {platform.python_version()}, "
        f"{time.strftime('%Y-%m-%d')}; 8 B PUTs 1 -> 1, ping/pong round trips"
    )
    tmp = Path(tempfile.mkdtemp(prefix="benchlinks"))
    try:
        results = {name: run_router(name, kinds, args, tmp) for name in ("zenoh", "pyzenoh")}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(
        f"{'link':15s} {'router':8s} {'msg/s':>10s} {'x zenoh':>8s} {'lost %':>7s}"
        f" {'rtt p50 us':>11s} {'p99 us':>9s} {'x zenoh':>8s}"
    )
    for kind in kinds:
        z = results["zenoh"][kind]
        for name in ("zenoh", "pyzenoh"):
            r = results[name][kind]
            print(
                f"{kind:15s} {name:8s} {r['msg_per_s']:10.0f} {r['msg_per_s'] / z['msg_per_s']:8.3f}"
                f" {r['lost_pct']:7.2f} {r['p50_us']:11.1f} {r['p99_us']:9.1f} {r['p50_us'] / z['p50_us']:8.3f}"
                + (f"  ({r['error'][:60]})" if r["error"] else "")
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
