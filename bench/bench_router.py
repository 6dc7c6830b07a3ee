"""Router throughput, side by side: eclipse-zenoh publisher -> ROUTER -> eclipse-zenoh subscriber.

ROUTER is, in one run: the real eclipse-zenoh 1.10.2 router, ``pyzenoh router``, and
``pyzenoh router --record`` (the recording overhead). The publisher sends 8-byte PUTs with
congestion control Block (so nothing is dropped on the publisher side) for a bounded
count and time; the subscriber counts what arrives. Prints msg/s and ratios.

Usage: python bench/bench_router.py [--seconds 5] [--max-messages 300000] [--payload 8]
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

from common import cpu_model, start_pyzenoh_router, start_real_router, stop

from pyzenoh.localnet import free_port

DRIVER = textwrap.dedent(
    """
    import json, sys, threading, time, zenoh
    endpoint, seconds, max_messages, size = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    def conf():
        c = zenoh.Config()
        c.insert_json5("mode", '"client"')
        c.insert_json5("connect/endpoints", '["%s"]' % endpoint)
        c.insert_json5("scouting/multicast/enabled", "false")
        return c
    sub_s, pub_s = zenoh.open(conf()), zenoh.open(conf())
    count = [0]
    last = [0.0]
    def on_sample(_):
        count[0] += 1
        last[0] = time.perf_counter()
    sub_s.declare_subscriber("bench/x", on_sample)
    pub = pub_s.declare_publisher("bench/x", congestion_control=zenoh.CongestionControl.BLOCK)
    time.sleep(0.5)
    while not pub.matching_status.matching:
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






def start_router(kind: str, port: int, record_dir: Path | None, tmp: Path) -> subprocess.Popen[bytes]:
    if kind == "zenoh":
        return start_real_router(port)
    tree = {} if record_dir is None else {"pyzenoh": {"record": {"dir": str(record_dir)}}}
    return start_pyzenoh_router(port, tmp / f"router-{port}.json5", tree)


def run_case(kind: str, args: argparse.Namespace, tmp: Path, record_dir: Path | None = None) -> dict[str, float]:
    port = free_port()
    router = start_router(kind, port, record_dir, tmp)
    try:
        out = subprocess.run(
            [sys.executable, "-c", DRIVER, f"tcp/127.0.0.1:{port}", str(args.seconds),
             str(args.max_messages), str(args.payload)],
            capture_output=True, text=True, timeout=args.seconds + 60, check=True,
        )  # fmt: skip
    finally:
        stop(router)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["msg_per_s"] = result["received"] / result["seconds"]
    return result


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--max-messages", type=int, default=300_000)
    p.add_argument("--payload", type=int, default=8)
    args = p.parse_args()
    print(f"machine: {os.cpu_count()} cores, {cpu_model()}, Python {platform.python_version()}, "
          f"{time.strftime('%Y-%m-%d')}")  # fmt: skip
    tmp = Path(tempfile.mkdtemp(prefix="benchrec"))
    try:
        results = {
            "zenoh router (eclipse-zenoh 1.10.2)": run_case("zenoh", args, tmp),
            "pyzenoh router": run_case("pyzenoh", args, tmp),
            "pyzenoh router --record": run_case("pyzenoh", args, tmp, tmp / "rec"),
        }
        rec_bytes = sum(f.stat().st_size for f in (tmp / "rec").glob("*"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    base = results["zenoh router (eclipse-zenoh 1.10.2)"]["msg_per_s"]
    ours = results["pyzenoh router"]["msg_per_s"]
    print(f"{'router':40s} {'sent':>9s} {'received':>9s} {'msg/s':>10s} {'vs zenoh':>9s}")
    for name, r in results.items():
        print(f"{name:40s} {r['sent']:9d} {r['received']:9d} {r['msg_per_s']:10.0f} {r['msg_per_s'] / base:9.3f}")
    recorded = results["pyzenoh router --record"]["msg_per_s"]
    print(f"recording cost: {100 * (1 - recorded / ours):.1f}% of pyzenoh router throughput "
          f"({rec_bytes / 1e6:.1f} MB recorded)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
