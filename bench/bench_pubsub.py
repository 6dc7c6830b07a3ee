"""Pub/sub throughput: pyzenoh publisher -> real zenoh router -> pyzenoh subscriber,
beside eclipse-zenoh publisher -> the same router -> eclipse-zenoh subscriber, and the
pyzenoh subscriber alone (fed by eclipse-zenoh's publisher).

One run starts an eclipse-zenoh 1.10.2 router on 127.0.0.1, then for each implementation
a subscriber process and a publisher process (separate processes, as real deployments
are, so neither shares a GIL with the other). The publisher sends fixed-size payloads with
congestion control Block for a bounded time; the subscriber counts what arrives and
reports the rate between its first and last sample. Prints msg/s for both and the ratio.

    python bench/bench_pubsub.py [--duration 5] [--payload 8]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import select
import signal
import subprocess
import sys
import time
from typing import Any

from pyzenoh.localnet import free_port

KEY = "bench/pubsub"
#: Bound on the number of messages a publisher sends, whatever the duration.
MAX_MESSAGES = 5_000_000
START_TIMEOUT_S = 30.0
#: A subscriber stops when nothing arrived for this long after the first sample.
IDLE_STOP_S = 2.0

_ROUTER = r"""
import json, sys, zenoh
c = zenoh.Config()
c.insert_json5("mode", '"router"')
c.insert_json5("listen/endpoints", json.dumps([sys.argv[1]]))
c.insert_json5("scouting/multicast/enabled", "false")
s = zenoh.open(c)
print("ready", flush=True)
sys.stdin.read()
"""


def spawn(args: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "RUST_LOG": "error"},
    )


def wait_line(p: subprocess.Popen[str], prefix: str, timeout: float) -> str:
    assert p.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([p.stdout], [], [], 0.2)
        if ready:
            line = p.stdout.readline()
            if line.startswith(prefix):
                return line.strip()
            if not line:
                break
    raise RuntimeError(f"process did not print {prefix!r} in time (exit {p.poll()})")


def stop(p: subprocess.Popen[str]) -> None:
    if p.poll() is None:
        try:
            if p.stdin:
                p.stdin.close()
            p.wait(5)
        except (subprocess.TimeoutExpired, OSError):
            os.kill(p.pid, signal.SIGKILL)
            p.wait(5)


# --- roles (run in child processes) --------------------------------------------------------------


def role_sub(impl: str, endpoint: str, duration: float) -> None:
    count = 0
    first = last = 0.0

    def on_sample(_: Any) -> None:
        nonlocal count, first, last
        now = time.perf_counter()
        if count == 0:
            first = now
        count += 1
        last = now

    if impl == "pyzenoh":
        import pyzenoh.session as pz

        s: Any = pz.open({"mode": "client", "connect": {"endpoints": [endpoint]}})
    else:
        import zenoh

        c = zenoh.Config()
        c.insert_json5("mode", '"client"')
        c.insert_json5("connect/endpoints", json.dumps([endpoint]))
        c.insert_json5("scouting/multicast/enabled", "false")
        s = zenoh.open(c)
    s.declare_subscriber(KEY, on_sample)
    print("ready", flush=True)
    deadline = time.monotonic() + duration + 100.0
    while time.monotonic() < deadline:
        time.sleep(0.1)
        if count and time.perf_counter() - last > IDLE_STOP_S:
            break
    s.close()
    rate = (count - 1) / (last - first) if count > 1 and last > first else 0.0
    print("result " + json.dumps({"count": count, "seconds": last - first, "rate": rate}), flush=True)


def role_pub(impl: str, endpoint: str, duration: float, size: int, linger: float) -> None:
    payload = b"x" * size
    if impl == "pyzenoh":
        import pyzenoh.session as pz

        s: Any = pz.open({"mode": "client", "connect": {"endpoints": [endpoint]}})
        pub = s.declare_publisher(KEY, congestion_control=pz.CongestionControl.BLOCK)
    else:
        import zenoh

        c = zenoh.Config()
        c.insert_json5("mode", '"client"')
        c.insert_json5("connect/endpoints", json.dumps([endpoint]))
        c.insert_json5("scouting/multicast/enabled", "false")
        s = zenoh.open(c)
        pub = s.declare_publisher(KEY, congestion_control=zenoh.CongestionControl.BLOCK)
    time.sleep(0.5)  # the router answers the publisher interest with the subscriber
    sent = 0
    start = time.perf_counter()
    end = start + duration
    put = pub.put
    while sent < MAX_MESSAGES:
        for _ in range(1000):
            put(payload)
        sent += 1000
        if time.perf_counter() >= end:
            break
    elapsed = time.perf_counter() - start
    print("result " + json.dumps({"sent": sent, "seconds": elapsed, "rate": sent / elapsed}), flush=True)
    # stay open until the orchestrator closes our stdin: closing a session may discard
    # what is still queued (eclipse-zenoh does), which would look like loss downstream
    select.select([sys.stdin], [], [], linger)
    s.close()


# --- orchestration -----------------------------------------------------------------------------


def run_pair(impl: str, endpoint: str, duration: float, size: int, pub_impl: str | None = None) -> dict[str, Any]:
    me = os.path.abspath(__file__)
    pub_impl = pub_impl or impl
    sub = spawn([me, "--role", "sub", "--impl", impl, "--endpoint", endpoint, "--duration", str(duration)])
    try:
        wait_line(sub, "ready", START_TIMEOUT_S)
        time.sleep(0.3)
        pub = spawn(
            [
                me,
                "--role",
                "pub",
                "--impl",
                pub_impl,
                "--endpoint",
                endpoint,
                "--duration",
                str(duration),
                "--payload",
                str(size),
            ]
        )
        try:
            pub_res = json.loads(wait_line(pub, "result", duration + 60)[len("result ") :])
            sub_res = json.loads(wait_line(sub, "result", duration + 120)[len("result ") :])
        finally:
            stop(pub)
    finally:
        stop(sub)
    return {"pub": pub_res, "sub": sub_res}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=5.0, help="seconds of publishing per implementation")
    ap.add_argument("--payload", type=int, default=8, help="payload size in bytes (default 8)")
    ap.add_argument("--linger", type=float, default=120.0, help=argparse.SUPPRESS)
    ap.add_argument("--role", choices=["sub", "pub"], help=argparse.SUPPRESS)
    ap.add_argument("--impl", choices=["pyzenoh", "zenoh"], help=argparse.SUPPRESS)
    ap.add_argument("--endpoint", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.role == "sub":
        role_sub(args.impl, args.endpoint, args.duration)
        return 0
    if args.role == "pub":
        role_pub(args.impl, args.endpoint, args.duration, args.payload, args.linger)
        return 0

    endpoint = f"tcp/127.0.0.1:{free_port()}"
    router = spawn(["-c", _ROUTER, endpoint])
    try:
        wait_line(router, "ready", START_TIMEOUT_S)
        # (subscriber, publisher): the subscriber alone is measured with zenoh's publisher
        cases = {
            "pyzenoh": ("pyzenoh", "pyzenoh"),
            "zenoh": ("zenoh", "zenoh"),
            "pyzenoh sub, zenoh pub": ("pyzenoh", "zenoh"),
        }
        results = {
            name: run_pair(sub, endpoint, args.duration, args.payload, pub) for name, (sub, pub) in cases.items()
        }
    finally:
        stop(router)
    import zenoh

    print(
        f"machine: {platform.machine()} {platform.processor() or ''} {os.cpu_count()} CPUs, "
        f"{platform.system()} {platform.release()}, Python {platform.python_version()}, "
        f"eclipse-zenoh {getattr(zenoh, '__version__', '1.10.2')}"
    )
    print(
        f"payload {args.payload} B, {args.duration:g} s of publishing, congestion control Block, "
        "publisher -> zenoh router -> subscriber, separate processes"
    )
    for impl, r in results.items():
        print(
            f"{impl:22s}: subscriber {r['sub']['rate']:>12,.0f} msg/s ({r['sub']['count']:,} received), "
            f"publisher {r['pub']['rate']:>12,.0f} msg/s ({r['pub']['sent']:,} sent)"
        )
    py = results["pyzenoh"]["sub"]["rate"]
    z = results["zenoh"]["sub"]["rate"]
    print(f"ratio pyzenoh/zenoh (subscriber rate): {py / z:.3f}" if z else "ratio: n/a")
    alone = results["pyzenoh sub, zenoh pub"]["sub"]["rate"]
    print(
        f"ratio pyzenoh subscriber / zenoh subscriber, both fed by zenoh's publisher: {alone / z:.3f}"
        if z
        else "ratio: n/a"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
