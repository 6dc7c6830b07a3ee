"""Soak test, side by side: the same mixed load on the real eclipse-zenoh 1.10.2 router and on ``pyzenoh router``.

What: for --minutes M (default 10) per router, one router on 127.0.0.1 carries at once
  * pub/sub: --publishers publishers (one client session each, congestion control Block,
    reliable) put --rate samples/s each (sequence numbers in the payloads) on
    ``soak/ps/p<i>``; three subscribers (one session each) on ``soak/ps/p0`` (exact),
    ``soak/ps/*`` and ``soak/**`` (wildcards) record every (publisher, seq) they get:
    delivered vs expected, duplicates, out-of-order, the first missing sequence numbers;
  * queries: a queryable on ``soak/q/**`` answers every query with its key; a getter
    issues --get-rate gets/s on ``soak/q/<n>`` (a new n for every get, or n cycling over
    --get-keys keys), each bounded by a timeout; a get is ok when exactly one reply with
    the expected payload arrives;
  * liveliness token churn: a process keeps --tokens-alive tokens on ``soak/tok/<n % 1000>``,
    replacing the oldest one --token-rate times a second (undeclare, declare); a liveliness
    subscriber counts PUTs and DELETEs, which must balance once everything is undeclared;
  * reconnecting sessions: every --reconnect-every seconds a new client session opens,
    declares a subscriber on ``soak/ps/*``, waits (bounded) for one sample and closes.
How: the real router is a ``python -c`` process of the eclipse-zenoh pip package in mode
"router" (RUST_LOG=warn), pyzenoh is ``python -m pyzenoh router -c FILE`` (--log-level
info); both with multicast scouting off, logs in a temporary directory. Every load role is
a separate driver process of eclipse-zenoh *client* sessions. Every --sample-every seconds
the router process's VmRSS (/proc/PID/status) and CPU time (utime+stime of /proc/PID/stat)
are sampled; for the real router that is its Python process (interpreter + zenoh runtime).
Reported per router: delivered/expected, duplicates, gets ok/issued, token PUT/DELETE
balance, reconnects ok/attempted, RSS at start (idle), at the beginning and end of the load,
at the end (idle, after every client left) and peak, CPU seconds during the load and CPU per
delivered sample; then ratios pyzenoh/real. Router and driver logs are scanned for
Traceback / ERROR / WARN lines. Lost, duplicated or out-of-order samples, failed gets or
reconnects, unbalanced tokens, a Traceback or ERROR in a log, and an RSS still growing by more
than 300 KB/min over the second half of a load of at least 4 minutes (a possible leak) are
listed as anomalies; the log directory is then kept. The machine is shared: the load
average is printed at the start and end of each run. Everything is bounded in count and time; every process is
stopped by PID. The last line printed is one JSON object with every number.

Usage: python bench/bench_soak.py [--minutes 10] [--only real|pyzenoh] [--publishers 3]
       [--rate 400] [--payload 64] [--get-rate 50] [--get-keys 0] [--token-rate 20] [--tokens-alive 5]
       [--reconnect-every 3] [--sample-every 5] [--keep-logs]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from common import (
    DRIVER_PRELUDE,
    START_S,
    cpu_model,
    start_pyzenoh_router,
    start_real_router,
    stop,
)

from pyzenoh.localnet import free_port

#: Longest wait for routes to come up (START_S, STOP_S: see common.py).
CONVERGE_S = 20.0
#: Longest wait, after the load, for late samples / token events / driver results.
DRAIN_S = 20.0

#: An RSS slope over the second half of the load above this is reported as a possible leak;
#: only for loads of at least LEAK_MIN_LOAD_S (shorter ones are mostly warm-up).
LEAK_KB_PER_MIN = 300.0
LEAK_MIN_LOAD_S = 240.0

REAL = "real"
PYZENOH = "pyzenoh"
LABELS = {REAL: "real (eclipse-zenoh 1.10.2)", PYZENOH: "pyzenoh"}
CLK_TCK = os.sysconf("SC_CLK_TCK")

# Shared by the driver scripts: client sessions, a bounded wait, pacing, the result line.
PRELUDE = DRIVER_PRELUDE + textwrap.dedent(
    """
    from collections import deque
    def pace(t0, i, rate):
        delay = t0 + i / rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    def pct(values, q):
        values = sorted(values)
        return round(values[min(len(values) - 1, int(q * len(values)))] * 1e3, 3) if values else None
    def done(result, *sessions):
        print(json.dumps(result), flush=True)
        for s in sessions:
            try:
                s.close()
            except Exception:
                pass
        sys.exit(0)
    def wait_stop():
        line = sys.stdin.readline().split(None, 1)
        return json.loads(line[1]) if len(line) == 2 and line[0] == "stop" else None
    """
)

# argv: endpoint, subscribers JSON [[name, key, [publishers it matches]], ...], publishers, max_seq, drain.
# Prints "ready"; on "stop [sent per publisher]" waits (bounded) for the rest, prints the result.
SUB_DRIVER = PRELUDE + textwrap.dedent(
    """
    endpoint, specs = sys.argv[1], json.loads(sys.argv[2])
    n_pubs, max_seq, drain = int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
    class Counter:
        def __init__(self):
            self.lock = threading.Lock()
            self.seen = [bytearray(max_seq) for _ in range(n_pubs)]
            self.unique = [0] * n_pubs
            self.last = [-1] * n_pubs
            self.received = self.dups = self.ooo = self.bad = 0
        def __call__(self, sample):
            data = sample.payload.to_bytes()
            with self.lock:
                self.received += 1
                try:
                    p, seq = (int(x) for x in data.split(b" ", 2)[:2])
                    seen = self.seen[p]
                    c = seen[seq]
                except (ValueError, IndexError):
                    self.bad += 1
                    return
                if c:
                    self.dups += 1
                else:
                    self.unique[p] += 1
                seen[seq] = min(c + 1, 255)
                if seq < self.last[p]:
                    self.ooo += 1
                self.last[p] = seq
    sessions, counters = [], {}
    for name, key, _ in specs:
        s = client(endpoint)
        counters[name] = Counter()
        s.declare_subscriber(key, counters[name])
        sessions.append(s)
    print("ready", flush=True)
    sent = wait_stop()
    if sent is None:
        done({"error": "parent gone"}, *sessions)
    def complete():
        return all(counters[name].unique[p] >= sent[p] for name, _, pubs in specs for p in pubs)
    until(complete, drain, 0.05)
    result = {}
    for name, _, pubs in specs:
        c = counters[name]
        with c.lock:
            missing_first = []
            for p in pubs:
                if c.unique[p] < sent[p]:
                    missing_first += [[p, s] for s in range(min(sent[p], max_seq)) if not c.seen[p][s]][:10]
            result[name] = {"received": c.received, "unique": c.unique, "dups": c.dups, "ooo": c.ooo,
                            "bad": c.bad, "missing_first": missing_first}
    done(result, *sessions)
    """
)

# argv: endpoint, publishers, rate, seconds, payload size, converge.
PUB_DRIVER = PRELUDE + textwrap.dedent(
    """
    endpoint, n_pubs, rate = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    seconds, size, converge = float(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6])
    sessions = [client(endpoint) for _ in range(n_pubs)]
    pubs = [s.declare_publisher("soak/ps/p%d" % i, congestion_control=BLOCK,
                                reliability=zenoh.Reliability.RELIABLE) for i, s in enumerate(sessions)]
    if not until(lambda: all(p.matching_status.matching for p in pubs), converge, 0.05):
        done({"error": "publishers never matched a subscriber within %.0f s" % converge}, *sessions)
    max_seq = int(rate * seconds)
    sent = [0] * n_pubs
    errors = []
    lag = [0.0] * n_pubs
    t0 = time.monotonic()
    def publish(i):
        pub = pubs[i]
        pad = b"x" * size
        for seq in range(max_seq):
            pace(t0, seq, rate)
            now = time.monotonic()
            if now > t0 + seconds + 5:
                break  # far behind schedule: stop at the time bound, count what went out
            lag[i] = max(lag[i], now - (t0 + seq / rate))
            try:
                pub.put((b"%d %d " % (i, seq) + pad)[:max(size, 16)])
            except Exception as exc:
                errors.append(repr(exc)[:300])
                break
            sent[i] = seq + 1
    threads = [threading.Thread(target=publish, args=(i,), daemon=True) for i in range(n_pubs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 60)
    elapsed = time.monotonic() - t0
    done({"sent": sent, "seconds": round(elapsed, 3), "max_lag_s": round(max(lag), 3),
          "errors": errors[:5]}, *sessions)
    """
)

# argv: endpoint. Prints "ready"; on "stop" prints the number of queries answered.
QUERYABLE_DRIVER = PRELUDE + textwrap.dedent(
    """
    session = client(sys.argv[1])
    answered = [0]
    errors = []
    def on_query(query):
        try:
            query.reply(query.key_expr, str(query.key_expr).encode())
            answered[0] += 1
        except Exception as exc:
            if len(errors) < 5:
                errors.append(repr(exc)[:300])
    session.declare_queryable("soak/q/**", on_query)
    print("ready", flush=True)
    wait_stop()
    done({"answered": answered[0], "errors": errors}, session)
    """
)

# argv: endpoint, rate, seconds, per-get timeout, distinct keys (0: a new key for every get).
GETTER_DRIVER = PRELUDE + textwrap.dedent(
    """
    endpoint, rate, seconds, timeout = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
    keys = int(sys.argv[5])
    session = client(endpoint)
    issued = ok = no_reply = wrong = err_replies = 0
    failures, latencies = [], []
    t0 = time.monotonic()
    for i in range(int(rate * seconds)):
        pace(t0, i, rate)
        if time.monotonic() > t0 + seconds + 5:
            break
        key = "soak/q/%d" % (i % keys if keys else i)
        issued += 1
        t = time.monotonic()
        try:
            replies = list(session.get(key, timeout=timeout))
        except Exception as exc:
            replies = []
            failures.append("get %d raised %r" % (i, exc))
        dt = time.monotonic() - t
        good = [r for r in replies if r.ok is not None and r.ok.payload.to_bytes() == key.encode()]
        err_replies += sum(1 for r in replies if r.ok is None)
        if len(replies) == 1 and len(good) == 1:
            ok += 1
            latencies.append(dt)
        elif not replies:
            no_reply += 1
            if len(failures) < 10:
                failures.append("get %d: no reply after %.2f s" % (i, dt))
        else:
            wrong += 1
            if len(failures) < 10:
                failures.append("get %d: %d replies, %d good" % (i, len(replies), len(good)))
    done({"issued": issued, "ok": ok, "no_reply": no_reply, "wrong": wrong, "err_replies": err_replies,
          "median_ms": pct(latencies, 0.5), "p99_ms": pct(latencies, 0.99), "max_ms": pct(latencies, 1.0),
          "failures": failures[:10]}, session)
    """
)

# argv: endpoint, cycles per second, seconds, tokens alive at once.
TOKEN_DRIVER = PRELUDE + textwrap.dedent(
    """
    endpoint, rate, seconds, alive = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
    session = client(endpoint)
    tokens = deque()
    declared = undeclared = 0
    errors = []
    t0 = time.monotonic()
    for n in range(int(rate * seconds)):
        pace(t0, n, rate)
        if time.monotonic() > t0 + seconds + 5:
            break
        try:
            if len(tokens) >= alive:
                tokens.popleft().undeclare()
                undeclared += 1
            tokens.append(session.liveliness().declare_token("soak/tok/%d" % (n % 1000)))
            declared += 1
        except Exception as exc:
            errors.append(repr(exc)[:300])
            break
    while tokens:
        tokens.popleft().undeclare()
        undeclared += 1
    time.sleep(0.5)  # let the last UNDECLAREs leave before the session closes
    done({"declared": declared, "undeclared": undeclared, "errors": errors[:5]}, session)
    """
)

# argv: endpoint, drain. Prints "ready"; on "stop N" waits (bounded) for N PUTs and N DELETEs.
LIVSUB_DRIVER = PRELUDE + textwrap.dedent(
    """
    endpoint, drain = sys.argv[1], float(sys.argv[2])
    session = client(endpoint)
    lock = threading.Lock()
    st = {"puts": 0, "deletes": 0, "dup_put": 0, "orphan_delete": 0}
    alive = set()
    def on_event(sample):
        key = str(sample.key_expr)
        with lock:
            if sample.kind == zenoh.SampleKind.PUT:
                st["puts"] += 1
                if key in alive:
                    st["dup_put"] += 1
                alive.add(key)
            else:
                st["deletes"] += 1
                if key not in alive:
                    st["orphan_delete"] += 1
                alive.discard(key)
    session.liveliness().declare_subscriber("soak/tok/**", on_event)
    print("ready", flush=True)
    declared = wait_stop()
    if declared is None:
        done({"error": "parent gone"}, session)
    until(lambda: st["puts"] >= declared and st["deletes"] >= declared and not alive, drain, 0.05)
    with lock:
        done(dict(st, alive_at_end=len(alive), alive_first=sorted(alive)[:5]), session)
    """
)

# argv: endpoint, period, seconds, wait for the first sample.
RECONNECT_DRIVER = PRELUDE + textwrap.dedent(
    """
    endpoint, period, seconds, wait = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
    attempted = ok = 0
    failures, firsts = [], []
    t0 = time.monotonic()
    for n in range(1, int(seconds / period) + 1):
        pace(t0, n, 1.0 / period)
        if time.monotonic() > t0 + seconds - wait - 1:
            break
        attempted += 1
        t = time.monotonic()
        got = threading.Event()
        s = None
        try:
            s = client(endpoint)
            s.declare_subscriber("soak/ps/*", lambda _: got.set())
            if got.wait(wait):
                ok += 1
                firsts.append(time.monotonic() - t)
            elif len(failures) < 10:
                failures.append("attempt %d: no sample within %.1f s" % (n, wait))
        except Exception as exc:
            if len(failures) < 10:
                failures.append("attempt %d: %r" % (n, exc))
        finally:
            if s is not None:
                try:
                    s.close()
                except Exception as exc:
                    failures.append("attempt %d: close raised %r" % (n, exc))
    done({"attempted": attempted, "ok": ok, "first_sample_median_ms": pct(firsts, 0.5),
          "first_sample_max_ms": pct(firsts, 1.0), "failures": failures[:10]})
    """
)


def subscriber_specs(publishers: int) -> list[tuple[str, str, list[int]]]:
    """(name, key expression, publishers it matches) of the pub/sub subscribers."""
    every = list(range(publishers))
    return [("exact p0", "soak/ps/p0", [0]), ("soak/ps/*", "soak/ps/*", every), ("soak/**", "soak/**", every)]


def read_rss_kb(pid: int) -> int | None:
    """VmRSS of ``pid`` in kB, None once it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def read_cpu_s(pid: int) -> float | None:
    """utime + stime of ``pid`` (all its threads) in seconds, None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK  # fields 14 and 15 of stat(5)
    except (OSError, ValueError, IndexError):
        return None


@dataclass
class Sampler:
    """Samples the RSS and CPU time of one process every ``every`` seconds, in a thread."""

    pid: int
    every: float
    samples: list[tuple[float, int, float]] = field(default_factory=list)  # (monotonic, rss kB, cpu s)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def sample(self) -> tuple[float, int, float] | None:
        rss, cpu = read_rss_kb(self.pid), read_cpu_s(self.pid)
        if rss is None or cpu is None:
            return None
        s = (time.monotonic(), rss, cpu)
        self.samples.append(s)
        return s

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.sample()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.every + 5)

    def between(self, t0: float, t1: float) -> list[tuple[float, int, float]]:
        return [s for s in self.samples if t0 <= s[0] <= t1]


@dataclass
class Run:
    """The processes of one soak run; :meth:`close` stops them all by PID."""

    tmp: Path
    kind: str
    procs: dict[str, subprocess.Popen[Any]] = field(default_factory=dict)
    logs: dict[str, Path] = field(default_factory=dict)

    def log_path(self, name: str) -> Path:
        path = self.tmp / f"{self.kind}-{name}.log"
        self.logs[name] = path
        return path

    def start_router(self, port: int) -> subprocess.Popen[bytes]:
        with self.log_path("router").open("ab") as log:
            if self.kind == REAL:
                proc = start_real_router(port, {"timestamping/enabled": {"router": True}}, log)
            else:
                proc = start_pyzenoh_router(port, self.tmp / f"{self.kind}-router.json5", None, log, "info")
        self.procs["router"] = proc
        return proc

    def spawn(self, name: str, script: str, args: list[str]) -> subprocess.Popen[str]:
        with self.log_path(name).open("ab") as log:
            proc = subprocess.Popen(
                [sys.executable, "-c", script, *args],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
            )
        self.procs[name] = proc
        return proc

    def close(self) -> None:
        for name in reversed(list(self.procs)):  # drivers first, the router last
            stop(self.procs[name])


def wait_ready(name: str, proc: subprocess.Popen[str], timeout: float = START_S) -> None:
    out: TextIO | None = proc.stdout
    assert out is not None
    ready, _, _ = select.select([out], [], [], timeout)
    line = out.readline() if ready else ""
    if line.strip() != "ready":
        raise RuntimeError(f"driver {name} did not get ready: {line.strip()[:500]!r}")


def finish(name: str, proc: subprocess.Popen[str], timeout: float, stop_line: str | None = None) -> dict[str, Any]:
    """Send ``stop_line`` (if any), wait (bounded) for the driver's JSON result line."""
    try:
        out, _ = proc.communicate(input=stop_line, timeout=timeout)
    except subprocess.TimeoutExpired:
        stop(proc)
        return {"error": f"driver {name} timed out after {timeout:.0f} s"}
    except (BrokenPipeError, ValueError) as exc:
        stop(proc)
        return {"error": f"driver {name}: {exc!r}"}
    lines = [ln for ln in out.strip().splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        return {"error": f"driver {name} exited with {proc.returncode}; see its log"}
    result: dict[str, Any] = json.loads(lines[-1])
    return result


LOG_PATTERNS = {
    "traceback": re.compile(r"Traceback"),
    "error": re.compile(r"\bERROR\b|\bCRITICAL\b|\bpanicked\b"),
    "warn": re.compile(r"\bWARN(ING)?\b"),
}


def scan_logs(logs: dict[str, Path]) -> dict[str, Any]:
    """Count Traceback / ERROR / WARN lines per log and keep a few distinct examples."""
    found: dict[str, Any] = {}
    for name, path in logs.items():
        try:
            lines = path.read_text(errors="replace").splitlines()
        except OSError:
            continue
        counts = {k: 0 for k in LOG_PATTERNS}
        examples: list[str] = []
        seen: set[str] = set()
        for i, line in enumerate(lines):
            for k, pattern in LOG_PATTERNS.items():
                if pattern.search(line):
                    counts[k] += 1
                    if k == "traceback":
                        text = " | ".join(x.strip() for x in lines[i : i + 12])
                    else:  # strip the timestamp so repeats of one message collapse
                        text = re.sub(r"^\S+ \S+ |^\S+Z ", "", line.strip())
                    key = re.sub(r"\d+", "N", text)[:120]
                    if key not in seen and len(examples) < 6:
                        seen.add(key)
                        examples.append(text[:400])
                    break
        if any(counts.values()):
            found[name] = {"lines": len(lines), **counts, "examples": examples}
    return found


def soak(kind: str, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    """One router of ``kind`` under the mixed load for args.minutes."""
    seconds = args.minutes * 60
    specs = subscriber_specs(args.publishers)
    max_seq = int(args.rate * seconds) + 1
    load_start = os.getloadavg()
    run = Run(tmp, kind)
    res: dict[str, Any] = {"loadavg_start": [round(x, 2) for x in load_start]}
    sampler: Sampler | None = None
    try:
        port = free_port()
        endpoint = f"tcp/127.0.0.1:{port}"
        router = run.start_router(port)
        time.sleep(1.0)
        sampler = Sampler(router.pid, args.sample_every)
        first = sampler.sample()
        if first is None:
            raise RuntimeError("router process gone right after start")
        sampler.start()

        subs = run.spawn(
            "subscribers", SUB_DRIVER, [endpoint, json.dumps(specs), str(args.publishers), str(max_seq), str(DRAIN_S)]
        )
        livsub = run.spawn("livsub", LIVSUB_DRIVER, [endpoint, str(DRAIN_S)])
        queryable = run.spawn("queryable", QUERYABLE_DRIVER, [endpoint])
        for name, proc in (("subscribers", subs), ("livsub", livsub), ("queryable", queryable)):
            wait_ready(name, proc)
        time.sleep(1.0)  # the declarations settle in the router before any load

        loaded = sampler.sample()
        assert loaded is not None
        t_load0, cpu_load0 = loaded[0], loaded[2]
        print(f"  [{kind}] load for {seconds:.0f} s from {time.strftime('%H:%M:%S')}", flush=True)
        pub = run.spawn(
            "publishers",
            PUB_DRIVER,
            [endpoint, str(args.publishers), str(args.rate), str(seconds), str(args.payload), str(CONVERGE_S)],
        )
        getter = run.spawn(
            "getter",
            GETTER_DRIVER,
            [endpoint, str(args.get_rate), str(seconds), str(args.get_timeout), str(args.get_keys)],
        )
        tokens = run.spawn(
            "tokens", TOKEN_DRIVER, [endpoint, str(args.token_rate), str(seconds), str(args.tokens_alive)]
        )
        reconnect = run.spawn(
            "reconnect", RECONNECT_DRIVER, [endpoint, str(args.reconnect_every), str(seconds), str(args.reconnect_wait)]
        )
        budget = seconds + CONVERGE_S + 60
        res["publishers"] = finish("publishers", pub, budget)
        res["getter"] = finish("getter", getter, budget)
        res["tokens"] = finish("tokens", tokens, budget)
        res["reconnect"] = finish("reconnect", reconnect, budget)
        sent = res["publishers"].get("sent", [0] * args.publishers)
        declared = res["tokens"].get("declared", 0)
        res["subscribers"] = finish("subscribers", subs, DRAIN_S + 30, f"stop {json.dumps(sent)}\n")
        res["livsub"] = finish("livsub", livsub, DRAIN_S + 30, f"stop {declared}\n")
        res["queryable"] = finish("queryable", queryable, 30, "stop null\n")
        end_of_load = sampler.sample()
        if end_of_load is None:
            raise RuntimeError("router process died during the load")
        t_load1, cpu_load1 = end_of_load[0], end_of_load[2]
        time.sleep(3.0)  # every client has left: the router should be back to idle
        idle_end = sampler.sample()
        res["router_alive_at_end"] = router.poll() is None
    except Exception as exc:  # noqa: BLE001 - reported; the other router still runs
        res["error"] = repr(exc)
        idle_end = end_of_load = None
    finally:
        if sampler is not None:
            sampler.stop()
        run.close()
    res["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    res["logs"] = scan_logs(run.logs)
    if sampler is None or end_of_load is None or idle_end is None:
        return res

    # pub/sub: expected per subscriber = what the publishers it matches sent.
    ps: dict[str, Any] = {}
    delivered = expected_total = dups_total = 0
    sub_res = res["subscribers"]
    for name, key, matched in specs:
        r = sub_res.get(name, {})
        expected = sum(sent[p] for p in matched)
        unique = sum(r.get("unique", [0])[p] for p in matched) if "unique" in r else 0
        ps[name] = {
            "key": key,
            "expected": expected,
            "delivered": unique,
            "missing": expected - unique,
            "dups": r.get("dups"),
            "ooo": r.get("ooo"),
            "bad": r.get("bad"),
            "missing_first": r.get("missing_first", []),
        }
        delivered += r.get("received", 0)
        expected_total += expected
        dups_total += r.get("dups", 0) or 0
    res["pubsub"] = ps
    res["delivered_total"] = delivered
    res["expected_total"] = expected_total
    res["dups_total"] = dups_total

    load = sampler.between(t_load0, t_load1)
    rss_load = [s[1] for s in load]
    res["rss_kb"] = {
        "start_idle": first[1],
        "load_begin": loaded[1],
        "load_end": end_of_load[1],
        "end_idle": idle_end[1],
        "peak": max(s[1] for s in sampler.samples),
        # the first quarter of the load is warm-up (buffers, tables); growth after it smells of a leak
        "after_warmup": rss_load[len(rss_load) // 4] if rss_load else loaded[1],
    }
    res["rss_growth_after_warmup_kb"] = end_of_load[1] - res["rss_kb"]["after_warmup"]
    second_half = load[len(load) // 2 :]
    res["rss_slope_kb_per_min"] = round(slope([(t * 1.0, float(r)) for t, r, _ in second_half]) * 60, 1)
    res["rss_series_kb"] = downsample([s[1] for s in sampler.samples], 60)
    res["cpu_s_load"] = round(cpu_load1 - cpu_load0, 2)
    res["cpu_s_total"] = round(idle_end[2], 2)
    res["load_s"] = round(t_load1 - t_load0, 1)
    res["cpu_util_load"] = round(res["cpu_s_load"] / res["load_s"], 3) if res["load_s"] > 0 else None
    res["cpu_us_per_delivered"] = round(res["cpu_s_load"] / delivered * 1e6, 2) if delivered else None
    return res


def slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of y over x (0 with fewer than 3 points)."""
    if len(points) < 3:
        return 0.0
    mx = statistics.fmean(p[0] for p in points)
    my = statistics.fmean(p[1] for p in points)
    den = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / den if den else 0.0


def downsample(values: list[int], n: int) -> list[int]:
    if len(values) <= n:
        return values
    step = len(values) / n
    return [values[int(i * step)] for i in range(n)] + [values[-1]]


def anomalies_of(kind: str, r: dict[str, Any]) -> list[str]:
    out: list[str] = []
    tag = LABELS[kind]
    if "error" in r:
        out.append(f"{tag}: run failed: {r['error']}")
    for role in ("publishers", "getter", "tokens", "reconnect", "subscribers", "livsub", "queryable"):
        sub = r.get(role, {})
        if isinstance(sub, dict) and "error" in sub:
            out.append(f"{tag}: {role}: {sub['error']}")
        if isinstance(sub, dict) and sub.get("errors"):
            out.append(f"{tag}: {role} errors: {sub['errors']}")
    if r.get("router_alive_at_end") is False:
        out.append(f"{tag}: router process died")
    for name, p in r.get("pubsub", {}).items():
        if p["missing"] or p["dups"] or p["ooo"] or p["bad"]:
            out.append(
                f"{tag}: subscriber {name}: missing {p['missing']} of {p['expected']}, dups {p['dups']}, "
                f"out-of-order {p['ooo']}, bad {p['bad']}, first missing [pub, seq] {p['missing_first']}"
            )
    g = r.get("getter", {})
    if "issued" in g and g["ok"] != g["issued"]:
        out.append(f"{tag}: gets ok {g['ok']} of {g['issued']}: {g['failures']}")
    t, ls = r.get("tokens", {}), r.get("livsub", {})
    if (
        "declared" in t
        and "puts" in ls
        and not (ls["puts"] == ls["deletes"] == t["declared"] and not ls["alive_at_end"])
    ):
        out.append(
            f"{tag}: liveliness: declared {t['declared']}, PUT {ls['puts']}, DELETE {ls['deletes']}, "
            f"alive at end {ls['alive_at_end']} {ls['alive_first']}, dup PUT {ls['dup_put']}, "
            f"orphan DELETE {ls['orphan_delete']}"
        )
    rc = r.get("reconnect", {})
    if "attempted" in rc and rc["ok"] != rc["attempted"]:
        out.append(f"{tag}: reconnects ok {rc['ok']} of {rc['attempted']}: {rc['failures']}")
    slope_kb = r.get("rss_slope_kb_per_min")
    if slope_kb is not None and r.get("load_s", 0) >= LEAK_MIN_LOAD_S and slope_kb > LEAK_KB_PER_MIN:
        rss = r["rss_kb"]
        out.append(
            f"{tag}: RSS still growing in the second half of the load, {slope_kb:.0f} KB/min "
            f"(start {rss['start_idle'] // 1024} MB, end of load {rss['load_end'] // 1024} MB, "
            f"idle end {rss['end_idle'] // 1024} MB): a leak?"
        )
    for name, found in r.get("logs", {}).items():
        if found["traceback"] or found["error"]:
            out.append(
                f"{tag}: log {name}: {found['traceback']} Traceback, {found['error']} ERROR lines: "
                f"{found['examples'][:3]}"
            )
    return out


def ratio(ours: float | None, base: float | None) -> float | None:
    if ours is None or base is None or base == 0 or math.isnan(ours) or math.isnan(base):
        return None
    return round(ours / base, 3)


def fmt(v: Any, spec: str = "") -> str:
    return "n/a" if v is None else format(v, spec)


def report(results: dict[str, dict[str, Any]], args: argparse.Namespace) -> dict[str, Any]:
    kinds = list(results)
    w = 28
    print(f"\n== pub/sub: {args.publishers} publishers x {args.rate:g} msg/s, {args.payload} B, Block, reliable ==")
    print(
        f"{'router':{w}s} {'subscriber':12s} {'delivered':>10s} {'expected':>10s} {'missing':>8s} {'dups':>6s} "
        f"{'ooo':>5s}"
    )
    for kind in kinds:
        for name, p in results[kind].get("pubsub", {}).items():
            print(
                f"{LABELS[kind]:{w}s} {name:12s} {p['delivered']:10d} {p['expected']:10d} {p['missing']:8d} "
                f"{fmt(p['dups']):>6s} {fmt(p['ooo']):>5s}"
            )
        pub = results[kind].get("publishers", {})
        if "sent" in pub:
            print(f"{'':{w}s} sent {pub['sent']} in {pub['seconds']:.0f} s, max publisher lag {pub['max_lag_s']} s")

    keys = f"{args.get_keys} keys" if args.get_keys else "a new key for every get"
    print(f"\n== queries: {args.get_rate:g} gets/s, timeout {args.get_timeout:g} s, {keys} ==")
    print(
        f"{'router':{w}s} {'ok':>8s} {'issued':>8s} {'no reply':>8s} {'wrong':>6s} {'median ms':>10s} "
        f"{'p99 ms':>8s} {'max ms':>8s}"
    )
    for kind in kinds:
        g = results[kind].get("getter", {})
        if "issued" in g:
            print(
                f"{LABELS[kind]:{w}s} {g['ok']:8d} {g['issued']:8d} {g['no_reply']:8d} {g['wrong']:6d} "
                f"{fmt(g['median_ms'], '.2f'):>10s} {fmt(g['p99_ms'], '.2f'):>8s} {fmt(g['max_ms'], '.1f'):>8s}"
            )

    print(f"\n== liveliness token churn: {args.token_rate:g} replacements/s, {args.tokens_alive} alive ==")
    print(
        f"{'router':{w}s} {'declared':>9s} {'PUT':>8s} {'DELETE':>8s} {'balance':>8s} {'alive end':>9s} "
        f"{'dup PUT':>8s} {'orphan DEL':>10s}"
    )
    for kind in kinds:
        t, ls = results[kind].get("tokens", {}), results[kind].get("livsub", {})
        if "declared" in t and "puts" in ls:
            print(
                f"{LABELS[kind]:{w}s} {t['declared']:9d} {ls['puts']:8d} {ls['deletes']:8d} "
                f"{ls['puts'] - ls['deletes']:8d} {ls['alive_at_end']:9d} {ls['dup_put']:8d} "
                f"{ls['orphan_delete']:10d}"
            )

    print(
        f"\n== reconnecting sessions: one every {args.reconnect_every:g} s, first sample within "
        f"{args.reconnect_wait:g} s =="
    )
    print(f"{'router':{w}s} {'ok':>6s} {'attempted':>9s} {'first sample median ms':>23s} {'max ms':>8s}")
    for kind in kinds:
        rc = results[kind].get("reconnect", {})
        if "attempted" in rc:
            print(
                f"{LABELS[kind]:{w}s} {rc['ok']:6d} {rc['attempted']:9d} "
                f"{fmt(rc['first_sample_median_ms'], '.1f'):>23s} {fmt(rc['first_sample_max_ms'], '.1f'):>8s}"
            )

    print(f"\n== router process: RSS (MB) and CPU, sampled every {args.sample_every:g} s ==")
    print(
        f"{'router':{w}s} {'start':>6s} {'load0':>6s} {'load1':>6s} {'end':>6s} {'peak':>6s} {'grow':>6s} "
        f"{'KB/min':>7s} {'CPU s':>7s} {'util':>5s} {'us/msg':>7s} {'delivered':>10s}"
    )
    for kind in kinds:
        r = results[kind]
        if "rss_kb" not in r:
            continue
        m = {k: v / 1024 for k, v in r["rss_kb"].items()}
        print(
            f"{LABELS[kind]:{w}s} {m['start_idle']:6.1f} {m['load_begin']:6.1f} {m['load_end']:6.1f} "
            f"{m['end_idle']:6.1f} {m['peak']:6.1f} {r['rss_growth_after_warmup_kb'] / 1024:6.1f} "
            f"{r['rss_slope_kb_per_min']:7.0f} {r['cpu_s_load']:7.1f} {fmt(r['cpu_util_load'], '.2f'):>5s} "
            f"{fmt(r['cpu_us_per_delivered'], '.1f'):>7s} {r['delivered_total']:10d}"
        )
    print("  start = idle after start, load0/load1 = beginning/end of the load, end = idle after every client left;")
    print("  grow = load1 - RSS a quarter into the load; KB/min = RSS slope over the second half of the load;")
    print(
        "  util = router CPU s per wall s during the load; us/msg = router CPU per sample delivered to the subscribers"
    )

    for kind in kinds:
        r = results[kind]
        print(f"\n{LABELS[kind]}: load average start {r['loadavg_start']}, end {r['loadavg_end']}")
        for name, found in r.get("logs", {}).items():
            print(
                f"  log {name}: {found['lines']} lines, {found['traceback']} Traceback, {found['error']} ERROR, "
                f"{found['warn']} WARN"
            )
            for ex in found["examples"]:
                print(f"    {ex[:300]}")

    ratios: dict[str, float | None] = {}
    if REAL in results and PYZENOH in results:
        real, ours = results[REAL], results[PYZENOH]

        def get(r: dict[str, Any], *path: str) -> float | None:
            cur: Any = r
            for p in path:
                if not isinstance(cur, dict) or p not in cur:
                    return None
                cur = cur[p]
            return float(cur) if isinstance(cur, (int, float)) else None

        for name, path in {
            "delivered": ("delivered_total",),
            "gets_ok": ("getter", "ok"),
            "get_median_ms": ("getter", "median_ms"),
            "get_p99_ms": ("getter", "p99_ms"),
            "reconnects_ok": ("reconnect", "ok"),
            "first_sample_median_ms": ("reconnect", "first_sample_median_ms"),
            "rss_start": ("rss_kb", "start_idle"),
            "rss_peak": ("rss_kb", "peak"),
            "rss_end": ("rss_kb", "end_idle"),
            "cpu_s_load": ("cpu_s_load",),
            "cpu_us_per_delivered": ("cpu_us_per_delivered",),
        }.items():
            ratios[name] = ratio(get(ours, *path), get(real, *path))
        print("\n== ratios pyzenoh / real ==")
        for name, v in ratios.items():
            print(f"  {name:24s} {fmt(v, '.3f')}")
    return ratios


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--minutes", type=float, default=10.0, help="load duration per router")
    p.add_argument("--only", choices=[REAL, PYZENOH], help="run one router only")
    p.add_argument("--publishers", type=int, default=3)
    p.add_argument("--rate", type=float, default=400.0, help="samples/s per publisher")
    p.add_argument("--payload", type=int, default=64, help="sample size in bytes (>= 16)")
    p.add_argument("--get-rate", type=float, default=50.0, help="gets/s")
    p.add_argument("--get-timeout", type=float, default=5.0, help="timeout of one get (s)")
    p.add_argument(
        "--get-keys",
        type=int,
        default=0,
        help="gets cycle over this many keys soak/q/<n> (default 0: a new key for every get)",
    )
    p.add_argument("--token-rate", type=float, default=20.0, help="token replacements/s")
    p.add_argument("--tokens-alive", type=int, default=5)
    p.add_argument("--reconnect-every", type=float, default=3.0, help="seconds between reconnecting sessions")
    p.add_argument("--reconnect-wait", type=float, default=5.0, help="bound on the wait for the first sample (s)")
    p.add_argument("--sample-every", type=float, default=5.0, help="RSS/CPU sampling period (s)")
    p.add_argument("--keep-logs", action="store_true", help="keep the log directory")
    args = p.parse_args()
    kinds = [args.only] if args.only else [REAL, PYZENOH]
    t_start = time.monotonic()
    load0 = os.getloadavg()
    print(
        f"machine: {os.cpu_count()} cores, {cpu_model()}, Python {platform.python_version()}, "
        f"{time.strftime('%Y-%m-%d %H:%M:%S')}, load average {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f}",
        flush=True,
    )
    print(f"soak: {args.minutes:g} min per router ({', '.join(LABELS[k] for k in kinds)})", flush=True)
    tmp = Path(tempfile.mkdtemp(prefix="benchsoak"))
    results: dict[str, dict[str, Any]] = {}
    anomalies: list[str] = []
    try:
        for kind in kinds:
            results[kind] = soak(kind, args, tmp)
            anomalies += anomalies_of(kind, results[kind])
            print(f"  [{kind}] done, load average {results[kind]['loadavg_end']}", flush=True)
    finally:
        keep = args.keep_logs or bool(anomalies)
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)
    ratios = report(results, args)
    runtime = time.monotonic() - t_start
    load1 = os.getloadavg()
    print(
        f"\nruntime {runtime:.0f} s; load average at start {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f}, "
        f"at end {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}"
    )
    if anomalies:
        print("ANOMALIES:")
        for a in anomalies:
            print("  " + a[:1500])
    else:
        print(
            "no anomalies: nothing lost or duplicated, every get and reconnect ok, tokens balanced, clean logs,"
            " no steady RSS growth"
        )
    if keep:
        print(f"logs kept in {tmp}")
    summary = {
        "minutes": args.minutes,
        "params": {k: v for k, v in vars(args).items() if k not in ("only", "keep_logs")},
        "results": results,
        "ratios_pyzenoh_real": ratios,
        "anomalies": anomalies,
        "runtime_s": round(runtime, 1),
        "loadavg_start": [round(x, 2) for x in load0],
        "loadavg_end": [round(x, 2) for x in load1],
        "machine": {
            "cores": os.cpu_count(),
            "cpu": cpu_model(),
            "python": platform.python_version(),
            "date": time.strftime("%Y-%m-%d"),
        },
    }
    print(json.dumps(summary))
    return 1 if any("error" in r for r in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
