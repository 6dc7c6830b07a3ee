"""Router throughput over TLS, side by side: eclipse-zenoh publisher -> ROUTER -> subscriber.

Both clients connect to ROUTER over ``tls/127.0.0.1:PORT`` (a throwaway CA and server
certificate made with ``trustme``). ROUTER is, in one run, the real eclipse-zenoh 1.10.2
router and ``pyzenoh router``; with ``--tcp-too`` pyzenoh router over plain TCP as well
(the cost of TLS). The publisher sends 8-byte PUTs with congestion control Block for a
bounded count and time; the subscriber counts what arrives. Prints msg/s and ratios.

Usage: python bench/bench_tls.py [--seconds 5] [--max-messages 300000] [--payload 8] [--tcp-too]
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import (
    cpu_model,
    run_throughput,
    start_pyzenoh_router,
    start_real_router,
    stop,
)

from pyzenoh.localnet import free_port


def make_certs(tmp: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the router's transport/link/tls, the clients' transport/link/tls)."""
    try:
        import trustme
    except ImportError:
        sys.exit("bench_tls needs trustme (pip install -e '.[test]')")
    ca = trustme.CA()
    leaf = ca.issue_cert("localhost", "127.0.0.1")
    ca.cert_pem.write_to_path(str(tmp / "ca.pem"))
    leaf.cert_chain_pems[0].write_to_path(str(tmp / "server.pem"))
    leaf.private_key_pem.write_to_path(str(tmp / "server.key"))
    router = {"listen_certificate": str(tmp / "server.pem"), "listen_private_key": str(tmp / "server.key")}
    return router, {"root_ca_certificate": str(tmp / "ca.pem")}


def run_case(kind: str, proto: str, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    port = free_port()
    endpoint = f"{proto}/127.0.0.1:{port}"
    router_tls, client_tls = make_certs(tmp) if proto == "tls" else ({}, {})
    if kind == "zenoh":
        router = start_real_router(port, {"listen/endpoints": [endpoint], "transport/link/tls": router_tls})
    else:
        tree = {"listen": {"endpoints": [endpoint]}, "transport": {"link": {"tls": router_tls}}}
        router = start_pyzenoh_router(port, tmp / f"router-{port}.json5", tree)
    try:
        return run_throughput(
            endpoint,
            args.seconds,
            args.max_messages,
            args.payload,
            {"transport/link/tls": client_tls} if client_tls else None,
        )
    finally:
        stop(router)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--max-messages", type=int, default=300_000)
    p.add_argument("--payload", type=int, default=8)
    p.add_argument("--tcp-too", action="store_true", help="also pyzenoh router over plain TCP")
    args = p.parse_args()
    print(
        f"machine: {os.cpu_count()} cores, {cpu_model()}, Python {platform.python_version()}, "
        f"{time.strftime('%Y-%m-%d')}; {args.payload} B PUTs, 1 publisher -> 1 subscriber"
    )
    tmp = Path(tempfile.mkdtemp(prefix="benchtls"))
    try:
        results = {
            "zenoh router over TLS (eclipse-zenoh 1.10.2)": run_case("zenoh", "tls", args, tmp),
            "pyzenoh router over TLS": run_case("pyzenoh", "tls", args, tmp),
        }
        if args.tcp_too:
            results["pyzenoh router over TCP"] = run_case("pyzenoh", "tcp", args, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    base = results["zenoh router over TLS (eclipse-zenoh 1.10.2)"]["msg_per_s"]
    print(f"{'router':46s} {'sent':>9s} {'received':>9s} {'msg/s':>10s} {'vs zenoh':>9s}")
    for name, r in results.items():
        print(f"{name:46s} {r['sent']:9d} {r['received']:9d} {r['msg_per_s']:10.0f} {r['msg_per_s'] / base:9.3f}")
    if args.tcp_too:
        tls_rate = results["pyzenoh router over TLS"]["msg_per_s"]
        tcp_rate = results["pyzenoh router over TCP"]["msg_per_s"]
        print(f"TLS cost: {100 * (1 - tls_rate / tcp_rate):.1f}% of pyzenoh router's TCP throughput")
    return 0


if __name__ == "__main__":
    sys.exit(main())
