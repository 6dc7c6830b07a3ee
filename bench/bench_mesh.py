"""Router meshes, side by side: real eclipse-zenoh 1.10.2 routers vs ``pyzenoh router``.

Every measurement builds a fresh mesh of routers of one kind on 127.0.0.1 (real routers are
``python -c`` processes of the eclipse-zenoh pip package in mode "router", pyzenoh routers
are ``python -m pyzenoh router -c FILE``; all with multicast scouting off) and drives it
with eclipse-zenoh *client* sessions in a separate driver process. Kinds alternate within
each round, so real and pyzenoh see the same machine load; the machine is noisy, so read
the ratios rather than the absolute numbers.

1. Throughput through a line R1 <- R2 (R2 connects to R1): a publisher client on R1 puts
   PAYLOAD-byte samples with congestion control Block, a subscriber client on R2 counts
   them; bounded by --max-messages and --seconds. Kinds: real, pyzenoh, and "mixed"
   (real R1, pyzenoh R2).
2. Ping-pong latency through the same line: a pinger client on R1 puts on ``bench/ping``
   (express, Block), a ponger client on R2 answers on ``bench/pong``; --round-trips round
   trips (bounded in time too); median and p99 RTT in microseconds.
3. Reconvergence after losing a router: a diamond R1-R2, R1-R3, R2-R4, R3-R4 (R2 and R3
   connect to R1, R4 connects to R2 and R3). A publisher client on R1 puts a sequence
   number every 1 ms (Block), a subscriber client on R4 records arrival times. Once
   delivery is steady, R2 is SIGKILLed; publishing goes on for --after seconds. Reported:
   the longest gap between arrivals after the kill (and the longest before it, as the
   noise floor), and the sequence numbers lost. Then again in a fresh diamond killing R3.
   The data takes only one of the two middle routers, so one of the two kills is the one
   that matters: the table shows both and their max.

Router logs (pyzenoh at --log-level info, real routers at RUST_LOG=warn) go to files in a
temporary directory, which is kept and named at the end when something looked wrong
(samples lost with Block, a route that never came back, a driver error), or with --keep-logs.
The last line printed is one JSON object with every number.

Usage: python bench/bench_mesh.py [--rounds 1] [--seconds 5] [--max-messages 200000]
       [--payload 8 --payload 1024] [--round-trips 2000] [--after 5] [--no-mixed] [--keep-logs]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from common import (
    DONE_PRELUDE,
    LATENCY_DRIVER,
    cpu_model,
    run_driver,
    start_pyzenoh_router,
    start_real_router,
    stop,
)
from common import PAIR_THROUGHPUT_DRIVER as THROUGHPUT_DRIVER

from pyzenoh.localnet import free_port

#: Longest wait for a router to start, and for a route to come up across a mesh.
START_S = 30.0
CONVERGE_S = 20.0
#: Graceful stop budget for a process before it is SIGKILLed.
STOP_S = 10.0

REAL = "real"
PYZENOH = "pyzenoh"
MIXED = "mixed"
LABELS = {
    REAL: "real (eclipse-zenoh 1.10.2)",
    PYZENOH: "pyzenoh",
    MIXED: "mixed (real R1, pyzenoh R2)",
}
#: Router kinds of a line (R1, R2) per case.
LINE_KINDS = {REAL: (REAL, REAL), PYZENOH: (PYZENOH, PYZENOH), MIXED: (REAL, PYZENOH)}

# Prints "steady" once the route is up and has carried --steady seconds of samples, then
# waits for "kill <monotonic time>" on stdin, goes on for `after` seconds, prints the result.
DIAMOND_DRIVER = DONE_PRELUDE + textwrap.dedent(
    """
    pub_ep, sub_ep = sys.argv[1], sys.argv[2]
    steady, after, period, converge = (float(a) for a in sys.argv[3:7])
    pub_s, sub_s = client(pub_ep), client(sub_ep)
    arrivals = []  # (seq, time.monotonic()), appended by the subscriber callback
    probe = [0]
    def on_sample(s):
        data = s.payload.to_bytes()
        if data.startswith(b"probe"):
            probe[0] += 1
        else:
            arrivals.append((int(data), time.monotonic()))
    sub_s.declare_subscriber("bench/seq", on_sample)
    pub = pub_s.declare_publisher("bench/seq", congestion_control=BLOCK)
    t_route = time.monotonic()
    if not until(lambda: (pub.put(b"probe"), probe[0] > 0)[1], converge, 0.05):
        done({"error": "no route from R1 to R4 within %.0f s" % converge}, pub_s, sub_s)
    route_s = time.monotonic() - t_route
    stop = threading.Event()
    sent = [0]
    max_seq = int((steady + after + 2 * converge + 60) / period)
    def publish():
        t0 = time.monotonic()
        for seq in range(max_seq):
            if stop.is_set():
                break
            delay = t0 + seq * period - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            pub.put(b"%d" % seq)
            sent[0] = seq + 1
    publisher = threading.Thread(target=publish, daemon=True)
    publisher.start()
    time.sleep(steady)
    print("steady", flush=True)
    line = sys.stdin.readline().split()
    if len(line) != 2 or line[0] != "kill":
        stop.set()
        done({"error": "parent gone"}, pub_s, sub_s)
    t_kill = float(line[1])
    time.sleep(max(0.0, t_kill + after - time.monotonic()))
    stop.set()
    publisher.join(5.0)
    t_stop = time.monotonic()
    until(lambda: len({s for s, _ in arrivals}) >= sent[0], 1.0)  # drain
    got = list(arrivals)
    seqs = [s for s, _ in got]
    times = [t for _, t in got]
    before = [t for t in times if t <= t_kill]
    after_kill = [t for t in times if t > t_kill]
    pre_gap = max((b - a for a, b in zip(before, before[1:])), default=0.0)
    if after_kill:
        prev = before[-1] if before else t_kill
        post = [after_kill[0] - prev] + [b - a for a, b in zip(after_kill, after_kill[1:])]
        gap = max(post)
        recovered = after_kill[-1] > t_kill + 0.5 * after
    else:
        gap = t_stop - (before[-1] if before else t_kill)
        recovered = False
    lost = sorted(set(range(sent[0])) - set(seqs))
    done({"sent": sent[0], "received": len(seqs), "unique": len(set(seqs)), "lost": len(lost),
          "lost_first": lost[:5], "gap_ms": gap * 1e3, "pre_gap_ms": pre_gap * 1e3,
          "recovered": recovered, "route_s": route_s,
          "after_kill_received": len(after_kill)}, pub_s, sub_s)
    """
)


@dataclass
class Router:
    name: str
    kind: str
    port: int
    log: Path
    proc: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"tcp/127.0.0.1:{self.port}"


@dataclass
class Mesh:
    """Routers started in ``tmp`` (logs, config files); :meth:`close` stops them all by PID."""

    tmp: Path
    tag: str
    routers: dict[str, Router] = field(default_factory=dict)

    def add(self, name: str, kind: str, connect: tuple[str, ...] = ()) -> Router:
        r = Router(name, kind, free_port(), self.tmp / f"{self.tag}-{name}-{kind}.log")
        self.routers[name] = r
        endpoints = [self.routers[c].endpoint for c in connect]
        with r.log.open("ab") as log:
            if kind == REAL:
                r.proc = start_real_router(
                    r.port, {"connect/endpoints": endpoints, "timestamping/enabled": {"router": True}}, log
                )
            else:
                r.proc = start_pyzenoh_router(
                    r.port, self.tmp / f"{self.tag}-{name}.json5", {"connect": {"endpoints": endpoints}}, log, "info"
                )
        return r

    def kill(self, name: str) -> None:
        """SIGKILL router ``name``: no CLOSE, the kernel just drops its sockets."""
        proc = self.routers[name].proc
        if proc is not None and proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(STOP_S)

    def close(self) -> None:
        for r in self.routers.values():
            if r.proc is not None:
                stop(r.proc)


@contextmanager
def mesh(tmp: Path, tag: str) -> Iterator[Mesh]:
    m = Mesh(tmp, tag)
    try:
        yield m
    finally:
        m.close()


def line_case(kind: str, tmp: Path, tag: str, script: str, extra: list[str], timeout: float) -> dict[str, Any]:
    """Start R1 and R2 (R2 connects to R1), run ``script`` with R1's and R2's endpoints."""
    k1, k2 = LINE_KINDS[kind]
    with mesh(tmp, tag) as m:
        r1 = m.add("R1", k1)
        r2 = m.add("R2", k2, connect=("R1",))
        return run_driver(script, [r1.endpoint, r2.endpoint, *extra], timeout)


def throughput(kind: str, args: argparse.Namespace, tmp: Path, tag: str, payload: int) -> dict[str, Any]:
    extra = [str(args.seconds), str(args.max_messages), str(payload), str(CONVERGE_S)]
    r = line_case(kind, tmp, tag, THROUGHPUT_DRIVER, extra, args.seconds + 2 * CONVERGE_S + 30)
    if "error" not in r:
        r["msg_per_s"] = r["received"] / r["seconds"]
    return r


def latency(kind: str, args: argparse.Namespace, tmp: Path, tag: str) -> dict[str, Any]:
    extra = [str(args.round_trips), str(args.latency_seconds), str(CONVERGE_S)]
    r = line_case(kind, tmp, tag, LATENCY_DRIVER, extra, args.latency_seconds + 2 * CONVERGE_S + 30)
    if "error" not in r:
        rtts = sorted(r.pop("rtts_us"))
        r["count"] = len(rtts)
        r["median_us"] = statistics.median(rtts) if rtts else float("nan")
        r["p99_us"] = rtts[min(len(rtts) - 1, int(0.99 * len(rtts)))] if rtts else float("nan")
    return r


def reconvergence(kind: str, args: argparse.Namespace, tmp: Path, tag: str, victim: str) -> dict[str, Any]:
    """Diamond of ``kind`` routers; SIGKILL ``victim`` once delivery R1 -> R4 is steady."""
    with mesh(tmp, tag) as m:
        r1 = m.add("R1", kind)
        m.add("R2", kind, connect=("R1",))
        m.add("R3", kind, connect=("R1",))
        r4 = m.add("R4", kind, connect=("R2", "R3"))
        cmd = [
            sys.executable,
            "-c",
            DIAMOND_DRIVER,
            r1.endpoint,
            r4.endpoint,
            str(args.steady),
            str(args.after),
            "0.001",
            str(CONVERGE_S),
        ]
        driver = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert driver.stdin is not None and driver.stdout is not None
            ready, _, _ = select.select([driver.stdout], [], [], CONVERGE_S + args.steady + 20)
            first = driver.stdout.readline() if ready else ""
            if first.strip() != "steady":
                stop(driver)
                return json.loads(first) if first.startswith("{") else {"error": f"driver: {first!r}"}
            t_kill = time.monotonic()
            m.kill(victim)
            driver.stdin.write(f"kill {t_kill}\n")
            driver.stdin.flush()
            out, err = driver.communicate(timeout=args.after + 30)
        except subprocess.TimeoutExpired:
            return {"error": "diamond driver timed out"}
        finally:
            stop(driver)
        lines = out.strip().splitlines()
        if not lines:
            return {"error": f"driver exited with {driver.returncode}: {err.strip()[-800:]}"}
        result: dict[str, Any] = json.loads(lines[-1])
        return result


def med(results: list[dict[str, Any]], key: str) -> float:
    values = [r[key] for r in results if key in r]
    return float(statistics.median(values)) if values else float("nan")


def ratio(ours: float, base: float) -> str:
    return f"{ours / base:.3f}" if base > 0 and not math.isnan(ours) else "n/a"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=1, help="alternating real/pyzenoh runs per measurement")
    p.add_argument("--seconds", type=float, default=5.0, help="throughput: publishing time bound")
    p.add_argument("--max-messages", type=int, default=200_000, help="throughput: message count bound")
    p.add_argument("--payload", type=int, action="append", help="throughput payload size(s) (default 8 and 1024)")
    p.add_argument("--round-trips", type=int, default=2000, help="latency: round trips")
    p.add_argument("--latency-seconds", type=float, default=10.0, help="latency: time bound")
    p.add_argument("--steady", type=float, default=2.0, help="reconvergence: steady delivery before the kill (s)")
    p.add_argument("--after", type=float, default=5.0, help="reconvergence: publishing after the kill (s)")
    p.add_argument("--no-mixed", action="store_true", help="skip the real R1 -> pyzenoh R2 line")
    p.add_argument("--keep-logs", action="store_true", help="keep the router logs directory")
    args = p.parse_args()
    payloads: list[int] = args.payload or [8, 1024]
    line_kinds = [REAL, PYZENOH] + ([] if args.no_mixed else [MIXED])
    t_start = time.monotonic()
    print(
        f"machine: {os.cpu_count()} cores, {cpu_model()}, Python {platform.python_version()}, "
        f"load {os.getloadavg()[0]:.2f}, {time.strftime('%Y-%m-%d')}",
        flush=True,
    )
    tmp = Path(tempfile.mkdtemp(prefix="benchmesh"))
    anomalies: list[str] = []
    tput: dict[int, dict[str, list[dict[str, Any]]]] = {n: {k: [] for k in line_kinds} for n in payloads}
    lat: dict[str, list[dict[str, Any]]] = {k: [] for k in line_kinds}
    reconv: dict[str, dict[str, list[dict[str, Any]]]] = {k: {"R2": [], "R3": []} for k in (REAL, PYZENOH)}
    try:
        for rnd in range(args.rounds):
            for n in payloads:
                for kind in line_kinds:
                    r = throughput(kind, args, tmp, f"tput{n}-{kind}-{rnd}", n)
                    tput[n][kind].append(r)
                    if "error" in r or r["received"] < r["sent"]:
                        anomalies.append(f"throughput {n} B {kind} round {rnd}: {r}")
            for kind in line_kinds:
                r = latency(kind, args, tmp, f"lat-{kind}-{rnd}")
                lat[kind].append(r)
                if "error" in r or r["lost"]:
                    anomalies.append(f"latency {kind} round {rnd}: {r}")
            for victim in ("R2", "R3"):
                for kind in (REAL, PYZENOH):
                    r = reconvergence(kind, args, tmp, f"diamond-{kind}-kill{victim}-{rnd}", victim)
                    reconv[kind][victim].append(r)
                    if "error" in r or not r["recovered"]:
                        anomalies.append(f"reconvergence {kind} kill {victim} round {rnd}: {r}")
    finally:
        keep = args.keep_logs or bool(anomalies)
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)

    summary: dict[str, Any] = {"rounds": args.rounds, "throughput": {}, "latency": {}, "reconvergence": {}}
    for n in payloads:
        print(
            f"\n== throughput, line R1 <- R2, {n}-byte PUTs (Block), <= {args.max_messages} msgs / "
            f"{args.seconds:g} s, median of {args.rounds} =="
        )
        print(f"{'routers':32s} {'sent':>9s} {'received':>9s} {'msg/s':>10s} {'vs real':>8s}")
        base = med(tput[n][REAL], "msg_per_s")
        summary["throughput"][str(n)] = {}
        for kind in line_kinds:
            rs = tput[n][kind]
            mps = med(rs, "msg_per_s")
            print(
                f"{LABELS[kind]:32s} {med(rs, 'sent'):9.0f} {med(rs, 'received'):9.0f} {mps:10.0f} "
                f"{ratio(mps, base):>8s}"
            )
            summary["throughput"][str(n)][kind] = {"msg_per_s": round(mps), "runs": rs}
        summary["throughput"][str(n)]["pyzenoh/real"] = (
            round(med(tput[n][PYZENOH], "msg_per_s") / base, 3) if base else None
        )

    print(
        f"\n== ping-pong latency, line R1 <- R2, 8-byte express PUTs, {args.round_trips} round trips, "
        f"median of {args.rounds} =="
    )
    print(
        f"{'routers':32s} {'count':>6s} {'lost':>5s} {'median us':>10s} {'p99 us':>9s} {'med vs real':>12s} "
        f"{'p99 vs real':>12s}"
    )
    base_med, base_p99 = med(lat[REAL], "median_us"), med(lat[REAL], "p99_us")
    for kind in line_kinds:
        rs = lat[kind]
        m50, m99 = med(rs, "median_us"), med(rs, "p99_us")
        print(
            f"{LABELS[kind]:32s} {med(rs, 'count'):6.0f} {med(rs, 'lost'):5.0f} {m50:10.0f} {m99:9.0f} "
            f"{ratio(m50, base_med):>12s} {ratio(m99, base_p99):>12s}"
        )
        summary["latency"][kind] = {"median_us": round(m50, 1), "p99_us": round(m99, 1), "runs": rs}

    print(
        f"\n== reconvergence, diamond R1-R2/R1-R3/R2-R4/R3-R4, 1 sample/ms R1 -> R4 (Block), "
        f"SIGKILL a middle router, {args.after:g} s after, median of {args.rounds} =="
    )
    print(f"{'routers':32s} {'killed':>6s} {'gap ms':>8s} {'pre-kill':>9s} {'lost':>6s} {'dups':>5s} {'recovered':>9s}")
    worst: dict[str, dict[str, float]] = {}
    for kind in (REAL, PYZENOH):
        summary["reconvergence"][kind] = {}
        for victim in ("R2", "R3"):
            rs = reconv[kind][victim]
            dups = [r["received"] - r["unique"] for r in rs if "received" in r]
            rec = all(r.get("recovered", False) for r in rs)
            print(
                f"{LABELS[kind]:32s} {victim:>6s} {med(rs, 'gap_ms'):8.1f} {med(rs, 'pre_gap_ms'):9.1f} "
                f"{med(rs, 'lost'):6.0f} {max(dups, default=0):5d} {'yes' if rec else 'NO':>9s}"
            )
            summary["reconvergence"][kind][victim] = {
                "gap_ms": round(med(rs, "gap_ms"), 1),
                "lost": med(rs, "lost"),
                "runs": rs,
            }
        worst[kind] = {key: max(med(reconv[kind][v], key) for v in ("R2", "R3")) for key in ("gap_ms", "lost")}
        summary["reconvergence"][kind]["max"] = {k: round(v, 1) for k, v in worst[kind].items()}
    for key, unit in (("gap_ms", "ms"), ("lost", "samples")):
        print(
            f"max over both kills, {key:6s}: real {worst[REAL][key]:8.1f} {unit}, pyzenoh "
            f"{worst[PYZENOH][key]:8.1f} {unit}, pyzenoh/real {ratio(worst[PYZENOH][key], worst[REAL][key])}"
        )

    runtime = time.monotonic() - t_start
    print(f"\nruntime {runtime:.0f} s")
    if anomalies:
        print("ANOMALIES:")
        for a in anomalies:
            print("  " + a[:1500])
    if keep:
        print(f"router logs kept in {tmp}")
    summary.update(
        anomalies=anomalies,
        runtime_s=round(runtime, 1),
        machine={
            "cores": os.cpu_count(),
            "cpu": cpu_model(),
            "python": platform.python_version(),
            "date": time.strftime("%Y-%m-%d"),
        },
    )
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
