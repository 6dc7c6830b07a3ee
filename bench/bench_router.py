"""Router throughput, side by side: eclipse-zenoh publisher -> ROUTER -> eclipse-zenoh subscriber.

ROUTER is, in one run: the real eclipse-zenoh 1.10.2 router, ``pyzenoh router``, and
``pyzenoh router --record`` (the recording overhead). The publisher sends 8-byte PUTs with
congestion control Block (so nothing is dropped on the publisher side) for a bounded
count and time; the subscriber counts what arrives. Prints msg/s and ratios.

Usage: python bench/bench_router.py [--seconds 5] [--max-messages 300000] [--payload 8]
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import (
    cpu_model,
    run_throughput,
    start_pyzenoh_router,
    start_real_router,
    stop,
)

from pyzenoh.localnet import free_port


def start_router(kind: str, port: int, record_dir: Path | None, tmp: Path) -> subprocess.Popen[bytes]:
    if kind == "zenoh":
        return start_real_router(port)
    tree = {} if record_dir is None else {"pyzenoh": {"record": {"dir": str(record_dir)}}}
    return start_pyzenoh_router(port, tmp / f"router-{port}.json5", tree)


def run_case(kind: str, args: argparse.Namespace, tmp: Path, record_dir: Path | None = None) -> dict[str, float]:
    port = free_port()
    router = start_router(kind, port, record_dir, tmp)
    try:
        return run_throughput(f"tcp/127.0.0.1:{port}", args.seconds, args.max_messages, args.payload)
    finally:
        stop(router)


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
