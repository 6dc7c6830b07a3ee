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
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

from common import cpu_model, start_pyzenoh_router, start_real_router, stop

from pyzenoh.localnet import free_port

DRIVER = textwrap.dedent(
    """
    import json, sys, time, zenoh
    endpoint, tls, seconds, max_messages, size = (sys.argv[1], json.loads(sys.argv[2]), float(sys.argv[3]),
                                                  int(sys.argv[4]), int(sys.argv[5]))
    def conf():
        c = zenoh.Config()
        c.insert_json5("mode", '"client"')
        c.insert_json5("connect/endpoints", json.dumps([endpoint]))
        c.insert_json5("scouting/multicast/enabled", "false")
        if tls:
            c.insert_json5("transport/link/tls", json.dumps(tls))
        return c
    sub_s, pub_s = zenoh.open(conf()), zenoh.open(conf())
    count = [0]
    last = [0.0]
    def on_sample(_):
        count[0] += 1
        last[0] = time.perf_counter()
    sub_s.declare_subscriber("bench/x", on_sample)
    pub = pub_s.declare_publisher("bench/x", congestion_control=zenoh.CongestionControl.BLOCK)
    deadline = time.monotonic() + 10
    while not pub.matching_status.matching and time.monotonic() < deadline:
        time.sleep(0.05)
    payload = b"x" * size
    for _ in range(200):  # warm-up
        pub.put(payload)
    time.sleep(0.5)
    start_count = count[0]
    t0 = time.perf_counter()
    sent = 0
    deadline = t0 + seconds
    while sent < max_messages and time.perf_counter() < deadline:
        for _ in range(100):
            pub.put(payload)
        sent += 100
    send_time = time.perf_counter() - t0
    quiet_until = time.perf_counter() + 10
    while count[0] - start_count < sent and time.perf_counter() < quiet_until:
        time.sleep(0.01)
    received = count[0] - start_count
    elapsed = max(last[0] - t0, send_time)
    print(json.dumps({"sent": sent, "received": received, "seconds": elapsed}), flush=True)
    pub_s.close(); sub_s.close()
    """
)


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
        out = subprocess.run(
            [sys.executable, "-c", DRIVER, endpoint, json.dumps(client_tls), str(args.seconds),
             str(args.max_messages), str(args.payload)],
            capture_output=True, text=True, timeout=args.seconds + 60, check=True,
        )  # fmt: skip
    finally:
        stop(router)
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    result["msg_per_s"] = result["received"] / result["seconds"]
    return result


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--max-messages", type=int, default=300_000)
    p.add_argument("--payload", type=int, default=8)
    p.add_argument("--tcp-too", action="store_true", help="also pyzenoh router over plain TCP")
    args = p.parse_args()
    print(f"machine: {os.cpu_count()} cores, {cpu_model()}, Python {platform.python_version()}, "
          f"{time.strftime('%Y-%m-%d')}; {args.payload} B PUTs, 1 publisher -> 1 subscriber")  # fmt: skip
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
