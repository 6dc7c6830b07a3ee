"""One router, side by side: the real eclipse-zenoh 1.10.2 router vs ``pyzenoh router``.

Each measurement starts a fresh router on 127.0.0.1 in a process of its own (the real one
is a ``python -c`` process of the eclipse-zenoh pip package in mode "router", ``pyzenoh
router`` is ``python -m pyzenoh router -c FILE``; both with multicast scouting off) and
drives it with eclipse-zenoh *client* sessions in driver processes separate from the
router. The two kinds alternate inside every round (real first in even rounds, pyzenoh
first in odd ones), so both see the same machine load; the table shows the median over
--rounds and every round's value. The machine is noisy: read the ratios.

Cases (every load loop is bounded in message count and in time):

1. 1 -> 1 throughput, 8-byte PUTs, congestion control Block: a publisher and a
   subscriber session (one driver process) on ``bench/x``; msg/s = messages received /
   (last arrival - start of the burst), waiting up to 30 s for the last ones.
2. The same with 1 KiB PUTs.
3. Fan-out 1 -> 4: one publisher (a driver process) and four subscriber sessions on the
   same key (another driver process), 8-byte PUTs, Block; delivered msg/s summed over the
   four subscribers, and a check that every subscriber received every message.
4. Ping-pong latency through the router: a pinger puts on ``bench/ping`` (express, Block),
   a ponger answers on ``bench/pong``; median and p99 round trip in microseconds.
5. During cases 1-3 the router's RSS is sampled every 100 ms (peak reported), and its CPU
   time (utime + stime from /proc/<pid>/stat, 10 ms ticks) is read when the measured
   burst starts and once everything has arrived: router CPU microseconds per delivered
   message (for the fan-out, per delivery to one subscriber).
6. 1 -> 1 throughput as zenoh's z_pub_thr/z_sub_thr run it: an eclipse-zenoh publisher
   and subscriber in two processes of their own (not sharing a GIL, unlike case 1's
   driver), 8-byte PUTs, Block, publishing for --seconds (at most 5M messages); the
   subscriber's rate between its first and last sample (bench_pubsub.py's roles).
7. ``pyzenoh router`` with recording (``pyzenoh.record.dir``) on case 1 in every round:
   its throughput and its cost in % of ``pyzenoh router`` without recording. The recorder
   process it starts is counted apart ("+ recorder" CPU), the RSS is the router's alone.

The table gives, per case, the real router's value, pyzenoh's, and pyzenoh/real (also for
latency, RSS and CPU, where lower is better). The last line printed is the machine line;
``--json PATH`` writes every number (medians and per-round runs).

Usage: python bench/bench_router.py [--rounds 3] [--seconds 5] [--max-messages 300000]
       [--fanout-messages 200000] [--round-trips 2000] [--no-record] [--json PATH] [--quick]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from common import (
    DONE_PRELUDE,
    LATENCY_DRIVER,
    PAIR_THROUGHPUT_DRIVER,
    STOP_S,
    RssSampler,
    cpu_model,
    cpu_seconds,
    rss_mb,
    run_driver,
    start_pyzenoh_router,
    start_real_router,
    stop,
)

from pyzenoh.localnet import free_port

#: Longest wait for a route (subscriber matched and a probe delivered).
CONVERGE_S = 20.0
#: Longest wait for the last messages once the publisher is done (a router may queue what
#: it cannot forward yet: ``pyzenoh router`` with recording does), and for a stalled drain.
DRAIN_S, STALL_S = 30.0, 3.0
#: Fan-out width.
FANOUT = 4

REAL, PYZENOH, RECORD = "real", "pyzenoh", "pyzenoh-record"
LABELS = {REAL: "real (eclipse-zenoh 1.10.2)", PYZENOH: "pyzenoh router", RECORD: "pyzenoh router, recording"}

# The fan-out's subscriber process: FANOUT client sessions, each with a subscriber on
# bench/fan. Lines out: "declared", "ready" (every subscriber got a probe), "marked"
# (counts snapshot taken), then the result JSON. Lines in: "mark", "expect <n>".
FANOUT_SUB_DRIVER = DONE_PRELUDE + textwrap.dedent(
    """
    import select
    endpoint, n_subs, wait_s, drain_s, stall_s = (sys.argv[1], int(sys.argv[2]), float(sys.argv[3]),
                                                  float(sys.argv[4]), float(sys.argv[5]))
    sessions = [client(endpoint) for _ in range(n_subs)]
    counts, last = [0] * n_subs, [0.0] * n_subs
    def counter(i):
        def on_sample(_):
            counts[i] += 1
            last[i] = time.monotonic()
        return on_sample
    for i, s in enumerate(sessions):
        s.declare_subscriber("bench/fan", counter(i))
    print("declared", flush=True)
    def command(timeout):
        ready, _, _ = select.select([sys.stdin], [], [], timeout)
        return sys.stdin.readline().split() if ready else []
    if not until(lambda: all(c > 0 for c in counts), wait_s):
        done({"error": "probes reached %d of %d subscribers" % (sum(c > 0 for c in counts), n_subs)}, *sessions)
    print("ready", flush=True)
    if command(wait_s) != ["mark"]:
        done({"error": "no mark from the parent"}, *sessions)
    base = list(counts)
    print("marked", flush=True)
    cmd = command(wait_s + 120)
    if len(cmd) != 2 or cmd[0] != "expect":
        done({"error": "no expect from the parent"}, *sessions)
    expected = int(cmd[1])
    deadline = time.monotonic() + drain_s
    seen, seen_t = -1, time.monotonic()
    while time.monotonic() < deadline:  # until everything arrived, bounded, stall-aware
        if all(c - b >= expected for c, b in zip(counts, base)):
            break
        total = sum(counts)
        if total != seen:
            seen, seen_t = total, time.monotonic()
        elif time.monotonic() - seen_t > stall_s:
            break
        time.sleep(0.02)
    done({"received": [c - b for c, b in zip(counts, base)], "last": max(last)}, *sessions)
    """
)

# The fan-out's publisher process: puts probes on bench/fan until "go", then 200 warm-up
# PUTs and "warm"; on "run" the measured burst (bounded in count and time), then the
# result JSON {"sent", "t0", "send_time"} (time.monotonic, comparable across processes);
# closes its session on "close" (or after a bounded wait).
FANOUT_PUB_DRIVER = DONE_PRELUDE + textwrap.dedent(
    """
    import select
    endpoint, seconds, max_messages, size, wait_s = (sys.argv[1], float(sys.argv[2]), int(sys.argv[3]),
                                                     int(sys.argv[4]), float(sys.argv[5]))
    pub_s = client(endpoint)
    pub = pub_s.declare_publisher("bench/fan", congestion_control=BLOCK)
    def command(timeout):
        ready, _, _ = select.select([sys.stdin], [], [], timeout)
        return sys.stdin.readline().split() if ready else None
    if not until(lambda: pub.matching_status.matching, wait_s):
        done({"error": "the subscribers never matched"}, pub_s)
    payload = b"x" * size
    deadline = time.monotonic() + wait_s
    cmd = None
    while cmd is None and time.monotonic() < deadline:  # probes until every subscriber got one
        pub.put(payload)
        cmd = command(0.05)
    if cmd != ["go"]:
        done({"error": "no go from the parent"}, pub_s)
    for _ in range(200):  # warm-up
        pub.put(payload)
    time.sleep(0.5)
    print("warm", flush=True)
    if command(wait_s) != ["run"]:
        done({"error": "no run from the parent"}, pub_s)
    t0 = time.monotonic()
    sent = 0
    deadline = t0 + seconds
    while sent < max_messages and time.monotonic() < deadline:
        for _ in range(100):
            pub.put(payload)
        sent += 100
    send_time = time.monotonic() - t0
    print(json.dumps({"sent": sent, "t0": t0, "send_time": send_time}), flush=True)
    command(wait_s + 60)  # "close", once the subscribers have everything
    pub_s.close()
    """
)


class DriverError(RuntimeError):
    pass


class LineProc:
    """A driver process spoken to line by line: ``send`` a command, ``expect`` a line (bounded)."""

    def __init__(self, name: str, script: str, args: list[str]) -> None:
        self.name = name
        self.proc = subprocess.Popen(
            [sys.executable, "-c", script, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.err: list[str] = []
        self.threads = [
            threading.Thread(target=self._pump, daemon=True),
            threading.Thread(target=self._pump_err, daemon=True),
        ]
        for t in self.threads:
            t.start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.strip())
        self.lines.put(None)

    def _pump_err(self) -> None:
        assert self.proc.stderr is not None
        self.err.append(self.proc.stderr.read())

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        except OSError as e:
            raise DriverError(f"{self.name} driver: cannot send {line!r}: {e}") from e

    def expect(self, want: str | None, timeout: float) -> Any:
        """The next line, which must be ``want`` (None: a JSON result, returned decoded)."""
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise DriverError(f"{self.name} driver: nothing within {timeout:.0f} s (waiting for {want})") from None
        if line is None:
            self.proc.wait(STOP_S)
            raise DriverError(
                f"{self.name} driver exited with {self.proc.returncode}: {''.join(self.err).strip()[-800:]}"
            )
        if line.startswith("{"):
            result = json.loads(line)
            if "error" in result or want is not None:
                raise DriverError(f"{self.name} driver: {result.get('error', result)}")
            return result
        if want is None or line != want:
            raise DriverError(f"{self.name} driver: {line!r} instead of {want}")
        return line

    def close(self) -> None:
        stop(self.proc)
        for t in self.threads:
            t.join(STOP_S)


def descendants(pid: int) -> list[int]:
    """Child processes of ``pid``, recursively (``/proc/<pid>/task/*/children``)."""
    out: list[int] = []
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                kids = [int(k) for k in Path(f"/proc/{p}/task/{tid}/children").read_text().split()]
            except OSError:
                continue
            out += kids
            todo += kids
    return out


class Window:
    """Router CPU time at the start and the end of a measured window (plus its child
    processes', e.g. the recorder of ``pyzenoh router`` with recording)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.start: tuple[float, float] | None = None
        self.end: tuple[float, float] | None = None

    def _now(self) -> tuple[float, float]:
        kids = sum(cpu_seconds(k) for k in descendants(self.pid))
        return cpu_seconds(self.pid), kids

    def open(self) -> None:
        self.start = self._now()

    def close(self) -> None:
        self.end = self._now()

    def result(self, delivered: int) -> dict[str, float]:
        if self.start is None or self.end is None or delivered <= 0:
            return {}
        cpu, kids = self.end[0] - self.start[0], self.end[1] - self.start[1]
        out = {"router_cpu_s": round(cpu, 3), "cpu_us_per_msg": cpu / delivered * 1e6}
        if kids:
            out["children_cpu_us_per_msg"] = kids / delivered * 1e6
        return out


@contextmanager
def router(kind: str, tmp: Path, tag: str) -> Iterator[tuple[subprocess.Popen[bytes], str, Path | None]]:
    """A fresh router of ``kind``: (process, endpoint, recording directory or None)."""
    port = free_port()
    log = (tmp / f"{tag}.log").open("ab")
    record_dir = tmp / f"{tag}-rec" if kind == RECORD else None
    try:
        if kind == REAL:
            proc = start_real_router(port, log=log)
        else:
            tree = {} if record_dir is None else {"pyzenoh": {"record": {"dir": str(record_dir)}}}
            proc = start_pyzenoh_router(port, tmp / f"{tag}.json5", tree, log)
        try:
            yield proc, f"tcp/127.0.0.1:{port}", record_dir
        finally:
            stop(proc)
    finally:
        log.close()


def throughput(kind: str, args: argparse.Namespace, tmp: Path, tag: str, payload: int) -> dict[str, Any]:
    """1 -> 1 through one router (cases 1, 2 and 7), router RSS and CPU per message."""
    with router(kind, tmp, tag) as (proc, endpoint, record_dir):
        window = Window(proc.pid)

        def on_line(line: str) -> None:
            if line == "measuring":
                window.open()
            elif line.startswith("{"):
                window.close()

        rss_start = rss_mb(proc.pid)
        extra = [str(args.seconds), str(args.max_messages), str(payload), str(CONVERGE_S), str(DRAIN_S)]
        bound = args.seconds + 2 * CONVERGE_S + DRAIN_S + 30
        with RssSampler(proc.pid, 0.1, bound + 30) as rss:
            r = run_driver(PAIR_THROUGHPUT_DRIVER, [endpoint, endpoint, *extra], bound, on_line)
        if "error" in r:
            return r
        r["msg_per_s"] = r["received"] / r["seconds"]
        r.update(
            window.result(r["received"]),
            rss_start_mb=round(rss_start, 1),
            rss_peak_mb=round(rss.peak_mb, 1),
            rss_samples=rss.samples,
        )
        if record_dir is not None:
            stop(proc)  # the recording is complete once the router has stopped
            r["recorded_mb"] = round(sum(f.stat().st_size for f in record_dir.rglob("*") if f.is_file()) / 1e6, 2)
            shutil.rmtree(record_dir, ignore_errors=True)
        return r


def separate(kind: str, args: argparse.Namespace, tmp: Path, tag: str) -> dict[str, Any]:
    """1 -> 1 with the publisher and the subscriber in processes of their own (case 6)."""
    import bench_pubsub  # (bench/ is on the path: this file runs as a script)

    with router(kind, tmp, tag) as (_, endpoint, _):
        try:
            r = bench_pubsub.run_pair("zenoh", endpoint, args.seconds, 8)
        except RuntimeError as e:
            return {"error": str(e)}
    sub, pub = r["sub"], r["pub"]
    return {"msg_per_s": sub["rate"], "received": sub["count"], "sent": pub["sent"], "pub_msg_per_s": pub["rate"]}


def fanout(kind: str, args: argparse.Namespace, tmp: Path, tag: str) -> dict[str, Any]:
    """One publisher process, FANOUT subscriber sessions in another (case 3)."""
    with router(kind, tmp, tag) as (proc, endpoint, _):
        window = Window(proc.pid)
        rss_start = rss_mb(proc.pid)
        wait = CONVERGE_S
        subs = pub = None
        try:
            with RssSampler(proc.pid, 0.1, args.seconds + 4 * wait + DRAIN_S + 60) as rss:
                subs = LineProc(
                    "fan-out subscribers",
                    FANOUT_SUB_DRIVER,
                    [endpoint, str(FANOUT), str(wait), str(DRAIN_S), str(STALL_S)],
                )
                subs.expect("declared", wait + 10)
                pub = LineProc(
                    "fan-out publisher",
                    FANOUT_PUB_DRIVER,
                    [endpoint, str(args.seconds), str(args.fanout_messages), "8", str(wait)],
                )
                subs.expect("ready", wait + 10)
                pub.send("go")
                pub.expect("warm", wait + 10)
                subs.send("mark")
                subs.expect("marked", 10)
                window.open()
                pub.send("run")
                sent_r = pub.expect(None, args.seconds + wait + 30)
                subs.send(f"expect {sent_r['sent']}")
                got = subs.expect(None, DRAIN_S + 30)
                window.close()
                pub.send("close")
        except DriverError as e:
            return {"error": str(e)}
        finally:
            for d in (pub, subs):
                if d is not None:
                    d.close()
    sent, received = sent_r["sent"], got["received"]
    seconds = max(got["last"] - sent_r["t0"], sent_r["send_time"])
    delivered = sum(received)
    r = {
        "sent": sent,
        "received": received,
        "seconds": seconds,
        "complete": all(n >= sent for n in received),
        "msg_per_s": delivered / seconds,
        "rss_start_mb": round(rss_start, 1),
        "rss_peak_mb": round(rss.peak_mb, 1),
        "rss_samples": rss.samples,
    }
    r.update(window.result(delivered))
    return r


def latency(kind: str, args: argparse.Namespace, tmp: Path, tag: str) -> dict[str, Any]:
    """Ping-pong through one router (case 4)."""
    with router(kind, tmp, tag) as (_, endpoint, _):
        extra = [str(args.round_trips), str(args.latency_seconds), str(CONVERGE_S)]
        r = run_driver(LATENCY_DRIVER, [endpoint, endpoint, *extra], args.latency_seconds + 2 * CONVERGE_S + 30)
    if "error" not in r:
        rtts = sorted(r.pop("rtts_us"))
        r["count"] = len(rtts)
        r["median_us"] = statistics.median(rtts) if rtts else float("nan")
        r["p99_us"] = rtts[min(len(rtts) - 1, int(0.99 * len(rtts)))] if rtts else float("nan")
    return r


def med(runs: list[dict[str, Any]], key: str) -> float:
    values = [r[key] for r in runs if key in r and not math.isnan(r[key])]
    return float(statistics.median(values)) if values else float("nan")


def fmt(value: float, unit: str) -> str:
    if math.isnan(value):
        return "n/a"
    return f"{value:,.0f}" if unit == "msg/s" else f"{value:.1f}" if value < 1000 else f"{value:,.0f}"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3, help="rounds; each runs every case on both routers")
    p.add_argument("--seconds", type=float, default=5.0, help="throughput: publishing time bound")
    p.add_argument("--max-messages", type=int, default=300_000, help="1 -> 1 throughput: message count bound")
    p.add_argument("--fanout-messages", type=int, default=200_000, help="fan-out: PUTs by the publisher")
    p.add_argument("--round-trips", type=int, default=2000, help="latency: round trips")
    p.add_argument("--latency-seconds", type=float, default=10.0, help="latency: time bound")
    p.add_argument("--no-record", action="store_true", help="skip pyzenoh router with recording")
    p.add_argument("--json", type=Path, metavar="PATH", help="write every result to PATH")
    p.add_argument("--keep-logs", action="store_true", help="keep the router logs directory")
    p.add_argument("--quick", action="store_true", help="smoke run: 1 round, 2 s, fewer messages and round trips")
    args = p.parse_args()
    if args.quick:
        args.rounds, args.seconds, args.max_messages = 1, 2.0, min(args.max_messages, 50_000)
        args.fanout_messages, args.round_trips = min(args.fanout_messages, 20_000), min(args.round_trips, 300)
    t_start = time.monotonic()
    machine = (
        f"machine: {os.cpu_count()} cores, {cpu_model()}, Python {platform.python_version()}, "
        f"{time.strftime('%Y-%m-%d')}"
    )
    print(machine + f", load {os.getloadavg()[0]:.2f} at start", flush=True)

    cases: dict[str, Callable[[str, argparse.Namespace, Path, str], dict[str, Any]]] = {
        "tput8": lambda k, a, t, tag: throughput(k, a, t, tag, 8),
        "tput1k": lambda k, a, t, tag: throughput(k, a, t, tag, 1024),
        "fanout": fanout,
        "latency": latency,
        "tput8sep": separate,
    }
    results: dict[str, dict[str, list[dict[str, Any]]]] = {c: {REAL: [], PYZENOH: []} for c in cases}
    if not args.no_record:
        results["tput8"][RECORD] = []
    anomalies: list[str] = []
    tmp = Path(tempfile.mkdtemp(prefix="benchrouter"))
    try:
        for rnd in range(args.rounds):
            order = [REAL, PYZENOH] if rnd % 2 == 0 else [PYZENOH, REAL]
            for case, run in cases.items():
                for kind in order + ([RECORD] if case == "tput8" and not args.no_record else []):
                    r = run(kind, args, tmp, f"{case}-{kind}-{rnd}")
                    results[case][kind].append(r)
                    brief = {k: v for k, v in r.items() if k != "received" or not isinstance(v, list)}
                    print(
                        f"  round {rnd + 1}/{args.rounds} {case:8s} {kind:15s} "
                        + (
                            f"{r['msg_per_s']:10,.0f} msg/s"
                            if "msg_per_s" in r
                            else f"median {r['median_us']:.0f} us, p99 {r['p99_us']:.0f} us"
                            if "median_us" in r
                            else str(brief)[:300]
                        ),
                        flush=True,
                    )
                    if "error" in r:
                        anomalies.append(f"{case} {kind} round {rnd + 1}: {r['error']}")
                    elif case == "fanout" and not r["complete"]:
                        anomalies.append(f"fanout {kind} round {rnd + 1}: sent {r['sent']}, received {r['received']}")
                    elif case.startswith("tput") and r["received"] < r["sent"]:
                        anomalies.append(
                            f"{case} {kind} round {rnd + 1}: sent {r['sent']}, received {r['received']} "
                            f"within {DRAIN_S:g} s after publishing ended"
                        )
                    elif case == "latency" and r["lost"]:
                        anomalies.append(f"latency {kind} round {rnd + 1}: {r['lost']} round trips lost")
    finally:
        keep = args.keep_logs or bool(anomalies)
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)

    rows: list[tuple[str, str, str, str, str]] = [  # label, case, key, pyzenoh kind, unit
        ("1->1 8 B, msg/s", "tput8", "msg_per_s", PYZENOH, "msg/s"),
        ("1->1 1 KiB, msg/s", "tput1k", "msg_per_s", PYZENOH, "msg/s"),
        (f"1->{FANOUT} 8 B, delivered msg/s", "fanout", "msg_per_s", PYZENOH, "msg/s"),
        ("1->1 8 B, pub and sub apart, msg/s", "tput8sep", "msg_per_s", PYZENOH, "msg/s"),
        ("ping-pong median, us", "latency", "median_us", PYZENOH, "us"),
        ("ping-pong p99, us", "latency", "p99_us", PYZENOH, "us"),
        ("peak RSS 1->1 8 B, MiB", "tput8", "rss_peak_mb", PYZENOH, "MiB"),
        ("peak RSS 1->1 1 KiB, MiB", "tput1k", "rss_peak_mb", PYZENOH, "MiB"),
        (f"peak RSS 1->{FANOUT}, MiB", "fanout", "rss_peak_mb", PYZENOH, "MiB"),
        ("router CPU/msg 1->1 8 B, us", "tput8", "cpu_us_per_msg", PYZENOH, "us"),
        ("router CPU/msg 1->1 1 KiB, us", "tput1k", "cpu_us_per_msg", PYZENOH, "us"),
        (f"router CPU/delivery 1->{FANOUT}, us", "fanout", "cpu_us_per_msg", PYZENOH, "us"),
    ]
    if not args.no_record:
        rows += [
            ("1->1 8 B recording, msg/s", "tput8", "msg_per_s", RECORD, "msg/s"),
            ("router CPU/msg recording, us", "tput8", "cpu_us_per_msg", RECORD, "us"),
        ]
    summary: dict[str, Any] = {
        "rounds": args.rounds,
        "args": {k: str(v) for k, v in vars(args).items()},
        "table": [],
        "runs": results,
    }
    width = max(len(r[0]) for r in rows)
    print(
        f"\n== one router, eclipse-zenoh clients in their own processes; median of {args.rounds} round(s); "
        f"throughput <= {args.max_messages:,} msgs (fan-out {args.fanout_messages:,}) / {args.seconds:g} s, "
        f"{args.round_trips} round trips =="
    )
    print(f"{'case':{width}s} {'real':>10s} {'pyzenoh':>10s} {'pyz/real':>8s}   per round: real | pyzenoh")
    for label, case, key, pkind, unit in rows:
        real_runs, pyz_runs = results[case][REAL], results[case][pkind]
        real, pyz = med(real_runs, key), med(pyz_runs, key)
        ratio = pyz / real if real > 0 and not math.isnan(pyz) else float("nan")
        per = " | ".join(" ".join(fmt(r.get(key, float("nan")), unit) for r in rs) for rs in (real_runs, pyz_runs))
        print(
            f"{label:{width}s} {fmt(real, unit):>10s} {fmt(pyz, unit):>10s} "
            f"{'n/a' if math.isnan(ratio) else f'{ratio:.3f}':>8s}   {per}"
        )
        summary["table"].append(
            {
                "case": label,
                "real": real,
                "pyzenoh": pyz,
                "pyzenoh/real": ratio,
                "real_rounds": [r.get(key) for r in real_runs],
                "pyzenoh_rounds": [r.get(key) for r in pyz_runs],
            }
        )
    fan = results["fanout"]
    complete = {k: bool(fan[k]) and all(r.get("complete", False) for r in fan[k]) for k in (REAL, PYZENOH)}
    print(
        f"fan-out: every subscriber received every message in every round: real "
        f"{'yes' if complete[REAL] else 'NO'}, pyzenoh {'yes' if complete[PYZENOH] else 'NO'}"
    )
    summary["fanout_complete"] = complete
    if not args.no_record:
        ours, rec = med(results["tput8"][PYZENOH], "msg_per_s"), med(results["tput8"][RECORD], "msg_per_s")
        rec_mb = med(results["tput8"][RECORD], "recorded_mb")
        kids = med(results["tput8"][RECORD], "children_cpu_us_per_msg")
        cost = 100 * (1 - rec / ours) if ours > 0 else float("nan")
        print(
            f"recording cost: {cost:.1f}% of pyzenoh router throughput (median {rec_mb:.1f} MB recorded per run; "
            f"recorder process CPU {fmt(kids, 'us')} us/msg on top)"
        )
        summary["recording_cost_pct"] = round(cost, 1)
    runtime = time.monotonic() - t_start
    print(f"runtime {runtime:.0f} s, load {os.getloadavg()[0]:.2f} at end")
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
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1, default=str))
        print(f"results written to {args.json}")
    print(machine)
    return 0


if __name__ == "__main__":
    sys.exit(main())
