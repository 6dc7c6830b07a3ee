"""Small batches through one router, side by side with the real one: many devices, not
one fast publisher (issue #27).

A raw-batch client (``loadgen.py``: a real handshake, then batches that are each one FRAME
of one PUSH, zenoh-pico's shape at its 2 KiB batch size) writes a fixed number of
batches as fast as the router takes them, to one real eclipse-zenoh subscriber. Printed
per router: batches per second the router took, messages per second delivered, and the
router's CPU time per batch (user + system, from /proc); then pyzenoh/real ratios.
Rounds alternate which router goes first (the machines are noisy).

With ``--pico BUILD`` (a zenoh-pico cmake build with ``-DBUILD_EXAMPLES=ON``) the
publisher and subscriber are zenoh-pico's own ``z_pub_thr`` and ``z_sub_thr`` instead: the
rates they print (ten a second) over the run, medians, and the router's CPU per message.

Run: ``python bench/bench_small_batches.py [--rounds 2] [--payload 1024] [--batches 150000]
[--pico BUILD --seconds 10]``
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from common import DRIVER_PRELUDE, cpu_model, start_pyzenoh_router, start_real_router, stop, tree_cpu_seconds
from loadgen import PICO_BATCH_SIZE, RawClient

from pyzenoh.localnet import free_port, wait_listening

REAL, PYZENOH = "zenohd 1.10.2", "pyzenoh router"
KEY = "bench/small"
#: A subscriber that has seen nothing new for this long has seen all it will.
QUIET_S = 1.0
#: Bound on waiting for the delivered count to settle after the last write.
DRAIN_S = 20.0

#: A real client subscribed to KEY, counting; prints "ready", then its count for each
#: line read on stdin, and exits at EOF.
SUBSCRIBER = DRIVER_PRELUDE + textwrap.dedent(
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


#: ``--workers``: how many pyzenoh router processes (router/workers.py); 1: a plain router.
WORKERS = [1]


@contextmanager
def router(kind: str, port: int, tmp: Path) -> Iterator[subprocess.Popen[bytes]]:
    if kind == REAL:
        proc = start_real_router(port)
    elif WORKERS[0] > 1:
        cfg = {"scouting": {"multicast": {"enabled": False}}}
        argv = [sys.executable, "-m", "pyzenoh", "--log-level", "warning", "router", "--workers", str(WORKERS[0])]
        argv += ["-l", f"tcp/127.0.0.1:{port}", "--cfg", ":" + json.dumps(cfg)]
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL)
        wait_listening(port, proc, 30)
        time.sleep(1.0)  # every worker listens (the first one listening is not all of them)
    else:
        proc = start_pyzenoh_router(port, tmp / f"router-{port}.json5")
    try:
        yield proc
    finally:
        stop(proc)


def router_cpu(proc: subprocess.Popen[bytes]) -> float:
    """CPU seconds of the router process and of its workers (its children)."""
    return tree_cpu_seconds(proc.pid)


class Subscriber:
    def __init__(self, endpoint: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", SUBSCRIBER, endpoint, KEY],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        if self.proc.stdout.readline().strip() != "ready":
            raise RuntimeError("the subscriber did not start")

    def count(self) -> int:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        return int(self.proc.stdout.readline())

    def settled(self, start: float) -> tuple[int, float]:
        """The count once nothing new arrived for QUIET_S (bounded by DRAIN_S), and when
        the last sample arrived, in seconds after ``start``."""
        last, last_change = self.count(), time.perf_counter()
        deadline = last_change + DRAIN_S
        while time.perf_counter() < deadline:
            time.sleep(0.05)
            now = self.count()
            if now != last:
                last, last_change = now, time.perf_counter()
            elif time.perf_counter() - last_change >= QUIET_S:
                break
        return last, last_change - start

    def close(self) -> None:
        stop(self.proc)  # type: ignore[arg-type]


def one_run(kind: str, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    port = free_port()
    endpoint = f"tcp/127.0.0.1:{port}"
    with router(kind, port, tmp) as proc:
        sub = Subscriber(endpoint)
        pub = RawClient("127.0.0.1", port, zid=0xB0B0 + port, batch_size=args.batch_size)
        try:
            pub.declare_subscriber("bench/none")  # a declaration round trip: the link is up
            payload = b"x" * args.payload
            # Warm up until the subscriber sees samples: its declaration reached the router.
            warm = pub.one_message_batches(KEY, payload, 100)
            deadline = time.monotonic() + 10
            while sub.count() == 0 and time.monotonic() < deadline:
                pub.write(warm, 100, 5.0)
                time.sleep(0.05)
                warm = pub.one_message_batches(KEY, payload, 100)
            base = sub.count()
            data = pub.one_message_batches(KEY, payload, args.batches)
            cpu0 = router_cpu(proc)
            t0 = time.perf_counter()
            sent = pub.write(data, args.batches, args.seconds)
            delivered, last_at = sub.settled(t0)
            cpu = router_cpu(proc) - cpu0
        finally:
            pub.close()
            sub.close()
    delivered -= base
    return {
        "batches": sent.batches,
        "batches_per_s": sent.per_s,
        "delivered": delivered,
        "delivered_per_s": delivered / max(last_at, sent.seconds),
        "cpu_us_per_batch": cpu / sent.batches * 1e6 if sent.batches else float("nan"),
    }


def _rates(out: str) -> list[float]:
    rates = []
    for line in out.splitlines():
        try:
            rates.append(float(line))
        except ValueError:
            pass
    return rates


def one_pico_run(kind: str, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    """zenoh-pico's z_pub_thr and z_sub_thr through the router for ``args.seconds``."""
    port = free_port()
    endpoint = f"tcp/127.0.0.1:{port}"
    examples = args.pico / "examples"
    with router(kind, port, tmp) as proc:
        # stdbuf: the examples print with stdio, fully buffered into a pipe and lost at SIGTERM
        line = ["stdbuf", "-oL"]
        sub = subprocess.Popen([*line, examples / "z_sub_thr", "-e", endpoint], stdout=subprocess.PIPE, text=True)
        time.sleep(1.0)  # the subscriber's declaration reaches the router (no way to observe it from here)
        pub = subprocess.Popen(
            [*line, examples / "z_pub_thr", "-s", str(args.payload), "-e", endpoint], stdout=subprocess.PIPE, text=True
        )
        cpu0 = router_cpu(proc)
        time.sleep(args.seconds)
        cpu = router_cpu(proc) - cpu0
        for p in (pub, sub):
            p.terminate()
        pub_out, _ = pub.communicate(timeout=10)
        sub_out, _ = sub.communicate(timeout=10)
    pub_rates, sub_rates = _rates(pub_out)[1:], _rates(sub_out)[1:]  # the first: a partial period
    taken = statistics.median(pub_rates) if pub_rates else 0.0
    delivered = statistics.median(sub_rates) if sub_rates else 0.0
    return {
        "batches": int(taken * args.seconds),
        "batches_per_s": taken,
        "delivered": len(sub_rates),
        "delivered_per_s": delivered,
        "cpu_us_per_batch": cpu / (taken * args.seconds) * 1e6 if taken else float("nan"),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--payload", type=int, default=1024, help="bytes per PUT")
    p.add_argument("--batches", type=int, default=150_000, help="batches written per run")
    p.add_argument("--seconds", type=float, default=15.0, help="bound on the writing time per run")
    p.add_argument("--batch-size", type=int, default=PICO_BATCH_SIZE, help="the client's batch size")
    p.add_argument("--workers", type=int, default=1, help="pyzenoh router --workers N")
    p.add_argument("--pico", type=Path, metavar="BUILD", help="zenoh-pico's z_pub_thr/z_sub_thr from this build")
    p.add_argument("--json", type=Path, metavar="PATH", help="write the results to PATH")
    args = p.parse_args()
    run = one_pico_run if args.pico else one_run
    WORKERS[0] = args.workers
    print(
        f"machine: {os.cpu_count()} cores, {cpu_model()}, Python {platform.python_version()}, "
        f"{time.strftime('%Y-%m-%d')}, load {os.getloadavg()[0]:.2f} at start",
        flush=True,
    )
    if args.pico:
        print(f"zenoh-pico z_pub_thr -s {args.payload} -> z_sub_thr for {args.seconds:g} s ({args.pico})")
    else:
        print(f"{args.batches} one-message batches of a {args.payload} B PUT (batch size {args.batch_size})")
    results: dict[str, list[dict[str, Any]]] = {REAL: [], PYZENOH: []}
    with tempfile.TemporaryDirectory(prefix="benchsmall") as tmp:
        for rnd in range(args.rounds):
            for kind in (REAL, PYZENOH) if rnd % 2 == 0 else (PYZENOH, REAL):
                r = run(kind, args, Path(tmp))
                results[kind].append(r)
                print(
                    f"  round {rnd + 1}/{args.rounds} {kind:15s} {r['batches_per_s']:10,.0f} batches/s taken, "
                    f"{r['delivered_per_s']:10,.0f} msg/s delivered ({r['delivered']}/{r['batches']}), "
                    f"{r['cpu_us_per_batch']:6.1f} us CPU per batch",
                    flush=True,
                )
    print()
    print(f"{'median of ' + str(args.rounds) + ' rounds':34s} {REAL:>16s} {PYZENOH:>16s} {'ratio':>7s}")
    for label, key in (
        ("batches/s taken", "batches_per_s"),
        ("msg/s delivered", "delivered_per_s"),
        ("router CPU per batch, us", "cpu_us_per_batch"),
    ):
        real = statistics.median(r[key] for r in results[REAL])
        ours = statistics.median(r[key] for r in results[PYZENOH])
        print(f"{label:34s} {real:16,.1f} {ours:16,.1f} {ours / real if real else float('nan'):7.2f}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
