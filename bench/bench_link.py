"""The sans-IO link's own cost per PUSH (no sockets, no router): receiving batches and
sending messages through :class:`pyzenoh.transport.link.Link`, in ns per PUSH (median of
--repeat runs). For before/after comparisons of changes to ``transport/link/``; run both on
one machine, one after the other.

Cases: ``rx-lone`` (every batch one FRAME of one PUSH, read one batch per call, as a router
reads a ping), ``rx-joined`` (the same batches read 256 per call: joined into runs),
``rx-frame`` (64 PUSHes per FRAME), ``tx-send`` (send + data_to_send every 64 messages),
``tx-one`` (send + data_to_send per message: one batch each), ``tx-express`` (batch_now).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable

from pyzenoh.codec import Push, Put, WhatAmI, WireExpr, ZenohId, encode_network_message
from pyzenoh.transport.link import Link, LinkConfig, Role


def pair(batch_size: int = 65535) -> tuple[Link, Link]:
    """An opener (client) and an acceptor (router, reading with runs and lone PUSHes), established."""
    a = Link(LinkConfig(ZenohId(0xA1), WhatAmI.CLIENT, batch_size=batch_size), Role.OPENER, 0.0)
    cfg = LinkConfig(ZenohId(0xB2), WhatAmI.ROUTER, batch_size=batch_size, push_runs=True, lone_pushes=True)
    b = Link(cfg, Role.ACCEPTOR, 0.0)
    for _ in range(4):
        b.receive_data(a.data_to_send(), 0.0)
        a.receive_data(b.data_to_send(), 0.0)
    assert a.is_established and b.is_established
    return a, b


RAW = encode_network_message(Push(WireExpr(0, "bench/link"), Put(b"x" * 8)))


def rx_case(per_batch: int, per_read: int, n: int) -> Callable[[], float]:
    def run() -> float:
        a, b = pair()
        chunks = []
        for _ in range(n // (per_batch * per_read)):
            data = bytearray()
            for _ in range(per_read):
                for _ in range(per_batch):
                    a.send(RAW)
                data += a.data_to_send()
            chunks.append(bytes(data))
        t0 = time.perf_counter_ns()
        for c in chunks:
            b.receive_data(c, 1.0)
        return (time.perf_counter_ns() - t0) / (len(chunks) * per_batch * per_read)

    return run


def tx_case(every: int, n: int, express: bool = False) -> Callable[[], float]:
    def run() -> float:
        a, _ = pair()
        t0 = time.perf_counter_ns()
        if express:
            for _ in range(n):
                a.batch_now(RAW, reliable=True, priority=5)
        else:
            for i in range(n):
                a.send(RAW)
                if i % every == every - 1:
                    a.data_to_send()
        return (time.perf_counter_ns() - t0) / n

    return run


def callgrind(case: str, n: int) -> float:
    """Instructions per PUSH of ``case``: two runs under callgrind, N and 2N messages."""
    import re
    import subprocess
    import tempfile

    totals = []
    for count in (n, 2 * n):
        with tempfile.NamedTemporaryFile(suffix=".cg") as out:
            cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out.name}", sys.executable, __file__]
            cmd += ["--only", case, "--repeat", "1", "--messages", str(count)]
            done = subprocess.run(cmd, capture_output=True, text=True, check=True)
            m = re.search(r"Collected : (\d+)", done.stderr)
            assert m is not None, done.stderr[-500:]
            totals.append(int(m.group(1)))
    return (totals[1] - totals[0]) / n


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--messages", type=int, default=200_000)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--callgrind", action="store_true", help="instructions per PUSH per case (valgrind)")
    p.add_argument("--only", help="one case (for callgrind: run it at N and 2N messages, subtract)")
    args = p.parse_args()
    n = args.messages
    cases = {
        "rx-lone": rx_case(1, 1, n),
        "rx-joined": rx_case(1, 256, n),
        "rx-frame": rx_case(64, 1, n),
        "tx-send": tx_case(64, n),
        "tx-one": tx_case(1, n),
        "tx-express": tx_case(1, n, express=True),
    }
    if args.callgrind:
        for name in cases:
            if not args.only or name == args.only:
                print(f"{name:12s} {callgrind(name, n):10,.0f} instructions/PUSH", flush=True)
        return 0
    for name, run in cases.items():
        if args.only and name != args.only:
            continue
        runs = [run() for _ in range(args.repeat)]
        print(f"{name:12s} {statistics.median(runs):8.0f} ns/PUSH  (runs: {', '.join(f'{r:.0f}' for r in runs)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
