"""Scale, side by side with the real router: many devices, many subscribers, many routers
(issue #27's figures).

1. ``sessions``: N client sessions (1,000 and 10,000 by default; raw-batch clients from
   ``loadgen.py``, handshaken by pyzenoh's sans-IO link) each send one small PUT per
   period, one batch each, on keys of their own, for --seconds; one real subscriber on
   ``scale/**`` counts them. Meanwhile two real clients measure the one-way latency of a
   probe sample through the router. Reported: delivered / sent, latency p50/p99, router
   CPU (% of one core) and resident memory.
2. ``subscribers``: S subscribers (100,000 and 1,000,000 by default) declared by 100 raw
   sessions, many declarations per batch. Reported: how long the router takes to have
   them all (a marker subscriber declared last on each session is reached), its memory,
   then the one-way latency of a probe PUT on one of the declared keys.
3. ``mesh``: 20 routers, each connected to the two before it (a ladder: every router but
   the first two has two paths back). Reported: how long until a subscriber on the last
   router gets a publisher's samples from the first (declarations crossing 19 hops), the
   one-way latency p50/p99 along it, and the routers' memory together.

Every process is stopped by PID at the end of its part. Run:
``python bench/bench_scale.py [--parts sessions,subscribers,mesh] [--seconds 10] [--workers N]``
(``--workers N``: pyzenoh's router as ``pyzenoh router --workers N``, CPU and memory summed
over its processes).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from common import (
    DRIVER_PRELUDE,
    cpu_model,
    cpu_seconds,
    rss_mb,
    start_pyzenoh_router,
    start_real_router,
    stop,
    tree_cpu_seconds,
    tree_rss_mb,
    wait_listening,
)
from loadgen import RawClient

from pyzenoh.codec import Declare, DeclareSubscriber, WireExpr
from pyzenoh.localnet import free_port

REAL, PYZENOH = "zenohd 1.10.2", "pyzenoh router"

#: Two real clients of ENDPOINT (argv 1): one puts a probe sample with its send time
#: (monotonic ns: one clock for the whole machine) on KEY (argv 2) every PERIOD (argv 3) s,
#: the other subscribes and keeps the one-way latencies; a line on stdin asks for
#: {"latencies_us": [...]} (and resets them); EOF ends it.
PROBE = DRIVER_PRELUDE + textwrap.dedent(
    """
    endpoint, key, period = sys.argv[1], sys.argv[2], float(sys.argv[3])
    extra = json.loads(sys.argv[4]) if len(sys.argv) > 4 else None
    sub_endpoint = extra or endpoint
    pub_s, sub_s = client(endpoint), client(sub_endpoint)
    lat = []
    lock = threading.Lock()
    def on_sample(s):
        sent = int(s.payload.to_bytes()[:20])
        with lock:
            lat.append((time.monotonic_ns() - sent) / 1000)
    sub_s.declare_subscriber(key, on_sample)
    pub = pub_s.declare_publisher(key, express=True)
    stop = threading.Event()
    def run():
        while not stop.is_set():
            pub.put(b"%020d" % time.monotonic_ns())
            time.sleep(period)
    threading.Thread(target=run, daemon=True).start()
    print("ready", flush=True)
    for _ in sys.stdin:
        with lock:
            out, lat[:] = list(lat), []
        print(json.dumps({"latencies_us": out}), flush=True)
    stop.set(); pub_s.close(); sub_s.close()
    """
)

#: A real client counting what arrives on KEY (argv 2); a stdin line asks for the count.
COUNTER = DRIVER_PRELUDE + textwrap.dedent(
    """
    endpoint, key = sys.argv[1], sys.argv[2]
    s = client(endpoint)
    count = [0]
    def on_sample(_):
        count[0] += 1
    s.declare_subscriber(key, on_sample)
    print("ready", flush=True)
    for _ in sys.stdin:
        print(count[0], flush=True)
    s.close()
    """
)


class Driver:
    """A driver script in a process of its own, asked over stdin, answering a line."""

    def __init__(self, script: str, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", script, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self.proc.stdout is not None
        if self.proc.stdout.readline().strip() != "ready":
            raise RuntimeError("a driver did not start")

    def ask(self) -> str:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline()

    def close(self) -> None:
        stop(self.proc)  # type: ignore[arg-type]


def percentiles(values: list[float]) -> tuple[float, float]:
    if not values:
        return float("nan"), float("nan")
    values = sorted(values)
    return values[len(values) // 2], values[min(len(values) - 1, int(len(values) * 0.99))]


#: ``--workers``: pyzenoh router processes behind the endpoint (router/workers.py).
WORKERS = [1]

#: Both routers refuse sessions past their defaults (zenohd: 1,000 sessions; pyzenoh: 1,000
#: links per address): raised for the benchmark, with the same value on both.
MAX_SESSIONS = 20_000
MAX_DECLARATIONS = 10_000_000


@contextlib.contextmanager
def router(kind: str, tmp: Path, conf: dict[str, Any] | None = None, port: int | None = None) -> Iterator[Any]:
    port = port or free_port()
    if kind == REAL:
        proc = start_real_router(port, {"transport/unicast/max_sessions": MAX_SESSIONS, **(conf or {})})
    else:
        tree: dict[str, Any] = {
            "transport": {"unicast": {"max_sessions": MAX_SESSIONS}},
            # and its declaration caps (zenohd has none) above the subscribers part's counts
            "pyzenoh": {
                "limits": {
                    "max_links_per_address": MAX_SESSIONS,
                    "max_declarations_per_face": MAX_DECLARATIONS,
                    "max_declarations_total": MAX_DECLARATIONS,
                }
            },
        }
        if conf and "connect/endpoints" in conf:
            tree["connect"] = {"endpoints": conf["connect/endpoints"]}
        if WORKERS[0] > 1:  # pyzenoh router --workers N: one mesh of N processes
            tree |= {"mode": "router", "listen": {"endpoints": [f"tcp/127.0.0.1:{port}"]}}
            tree["scouting"] = {"multicast": {"enabled": False}}
            (tmp / f"r{port}.json5").write_text(json.dumps(tree))
            argv = [sys.executable, "-m", "pyzenoh", "--log-level", "warning", "router"]
            proc = subprocess.Popen(argv + ["--workers", str(WORKERS[0]), "-c", str(tmp / f"r{port}.json5")])
            wait_listening(port, proc, 30)
            time.sleep(1.0)  # every worker listens (the first one listening is not all of them)
        else:
            proc = start_pyzenoh_router(port, tmp / f"r{port}.json5", tree)
    proc.endpoint = f"tcp/127.0.0.1:{port}"
    try:
        yield proc
    finally:
        stop(proc)


# --- 1. sessions -----------------------------------------------------------------------------


def sessions_part(kind: str, n: int, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    with router(kind, tmp) as proc:
        host, port = "127.0.0.1", int(proc.endpoint.rsplit(":", 1)[1])
        counter = Driver(COUNTER, proc.endpoint, "scale/s/**")
        probe = Driver(PROBE, proc.endpoint, "scale/probe", "0.01")
        clients: list[RawClient] = []
        try:
            t0 = time.perf_counter()
            for i in range(n):
                clients.append(RawClient(host, port, 0x5CA1E000 + i))
            connect_s = time.perf_counter() - t0
            periods = max(1, int(args.seconds * args.rate))
            payload = b"x" * args.payload
            batches = [
                [c.one_message_batches(f"scale/s/{i}", payload, 1) for _ in range(periods)]
                for i, c in enumerate(clients)
            ]
            probe.ask()  # latencies so far: dropped
            base = int(counter.ask())
            cpu0, t0 = tree_cpu_seconds(proc.pid), time.perf_counter()
            for k in range(periods):  # one PUT per session per period, spread over the period
                start = t0 + k / args.rate
                for i, c in enumerate(clients):
                    due = start + i / (n * args.rate)
                    delay = due - time.perf_counter()
                    if delay > 0.001:
                        time.sleep(delay)
                    c.sock.sendall(batches[i][k])
            send_s = time.perf_counter() - t0
            sent = n * periods
            deadline = time.monotonic() + 10
            while int(counter.ask()) - base < sent and time.monotonic() < deadline:
                time.sleep(0.1)
            delivered = int(counter.ask()) - base
            cpu = tree_cpu_seconds(proc.pid) - cpu0
            lat = json.loads(probe.ask())["latencies_us"]
            rss = tree_rss_mb(proc.pid)
        finally:
            for c in clients:
                c.close()
            counter.close()
            probe.close()
    p50, p99 = percentiles(lat)
    return {
        "sessions": n,
        "connect_s": connect_s,
        "offered_per_s": sent / send_s,
        "sent": sent,
        "delivered": delivered,
        "latency_p50_us": p50,
        "latency_p99_us": p99,
        "cpu_pct": 100 * cpu / send_s,
        "rss_mb": rss,
    }


# --- 2. subscribers -----------------------------------------------------------------------


def subscribers_part(kind: str, total: int, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    sessions = args.declaring_sessions
    per = total // sessions
    with router(kind, tmp) as proc:
        host, port = "127.0.0.1", int(proc.endpoint.rsplit(":", 1)[1])
        clients = [RawClient(host, port, 0x5B000000 + i) for i in range(sessions)]
        try:
            payloads = []
            for i, c in enumerate(clients):
                for j in range(per):
                    c.link.send(Declare(DeclareSubscriber(j + 1, WireExpr(0, f"scale/sub/{i}/{j}", True))))
                c.link.send(Declare(DeclareSubscriber(per + 1, WireExpr(0, f"scale/marker/{i}", True))))
                payloads.append(c.link.data_to_send())
            rss0 = rss_mb(proc.pid)
            cpu0, t0 = cpu_seconds(proc.pid), time.perf_counter()
            for c in clients:
                c.sock.settimeout(None)  # a router may take minutes over a million declarations
            threads = [
                threading.Thread(target=c.sock.sendall, args=(p,)) for c, p in zip(clients, payloads, strict=True)
            ]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            # Every session's marker subscriber comes after its declarations: once the
            # router routes a PUT to each of them, it has handled all of them.
            reached: set[int] = set()
            pub = RawClient(host, port, 0x5B0FFFFF, timeout=args.declare_timeout)  # the router may be busy
            deadline = time.monotonic() + args.declare_timeout
            for c in clients:
                c.sock.setblocking(False)
            while len(reached) < sessions and time.monotonic() < deadline:
                for i, c in enumerate(clients):
                    if i not in reached:
                        pub.sock.sendall(pub.one_message_batches(f"scale/marker/{i}", b"m", 1))
                time.sleep(0.05)
                for i, c in enumerate(clients):
                    with contextlib.suppress(BlockingIOError):
                        data = c.sock.recv(1 << 20)
                        if b"scale/marker/" in data:  # the router sends the key in full
                            reached.add(i)
            declared_s = time.perf_counter() - t0
            cpu = cpu_seconds(proc.pid) - cpu0
            rss = rss_mb(proc.pid)
            pub.close()
        finally:
            for c in clients:
                c.close()
    return {
        "subscribers": per * sessions,
        "declared_all": len(reached) == sessions,
        "declare_s": declared_s,
        "declare_cpu_s": cpu,
        "rss_mb": rss,
        "rss_growth_mb": rss - rss0,
    }


# --- 3. mesh ---------------------------------------------------------------------------------


def mesh_part(kind: str, count: int, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    ports = [free_port() for _ in range(count)]
    with contextlib.ExitStack() as stack:
        procs = []
        for i in range(count):
            before = [f"tcp/127.0.0.1:{ports[j]}" for j in (i - 1, i - 2) if j >= 0]
            conf = {"connect/endpoints": before} if before else None
            procs.append(stack.enter_context(router(kind, tmp, conf, ports[i])))
        first, last = procs[0].endpoint, procs[-1].endpoint
        t0 = time.perf_counter()
        probe = Driver(PROBE, first, "scale/mesh", "0.005", json.dumps(last))
        stack.callback(probe.close)
        deadline = time.monotonic() + args.declare_timeout
        while not json.loads(probe.ask())["latencies_us"] and time.monotonic() < deadline:
            time.sleep(0.05)
        converge_s = time.perf_counter() - t0
        time.sleep(args.seconds)
        lat = json.loads(probe.ask())["latencies_us"]
        rss = sum(rss_mb(p.pid) for p in procs)
    p50, p99 = percentiles(lat)
    return {
        "routers": count,
        "converge_s": converge_s,
        "samples": len(lat),
        "latency_p50_us": p50,
        "latency_p99_us": p99,
        "rss_mb_total": rss,
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--parts", default="sessions,subscribers,mesh")
    p.add_argument("--sessions", default="1000,10000", help="session counts")
    p.add_argument("--rate", type=float, default=2.0, help="PUTs per second per session")
    p.add_argument("--payload", type=int, default=64)
    p.add_argument("--seconds", type=float, default=10.0, help="how long each load runs")
    p.add_argument("--subscribers", default="100000,1000000", help="declared subscriber counts")
    p.add_argument("--declaring-sessions", type=int, default=100)
    p.add_argument("--declare-timeout", type=float, default=300.0)
    p.add_argument("--routers", type=int, default=20)
    p.add_argument("--only", choices=[REAL, PYZENOH])
    p.add_argument("--json", type=Path)
    p.add_argument("--workers", type=int, default=1, help="pyzenoh router --workers N")
    args = p.parse_args()
    WORKERS[0] = args.workers
    print(
        f"machine: {os.cpu_count()} cores, {cpu_model()}, Python {platform.python_version()}, "
        f"{time.strftime('%Y-%m-%d')}, load {os.getloadavg()[0]:.2f} at start",
        flush=True,
    )
    kinds = [args.only] if args.only else [REAL, PYZENOH]
    parts = args.parts.split(",")
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="benchscale") as tmpdir:
        tmp = Path(tmpdir)
        for part in parts:
            sizes = {
                "sessions": args.sessions,
                "subscribers": args.subscribers,
                "mesh": str(args.routers),
            }[part]
            for size in (int(s) for s in sizes.split(",")):
                for kind in kinds:
                    run = {"sessions": sessions_part, "subscribers": subscribers_part, "mesh": mesh_part}[part]
                    try:
                        r = run(kind, size, args, tmp)
                    except Exception as exc:  # noqa: BLE001 (a router that cannot take it is a result too)
                        r = {"error": f"{type(exc).__name__}: {exc}"}
                    r.update(part=part, size=size, kind=kind)
                    results.append(r)
                    shown = {k: round(v, 1) if isinstance(v, float) else v for k, v in r.items()}
                    print(f"  {part:11s} {size:>8} {kind:15s} {shown}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
