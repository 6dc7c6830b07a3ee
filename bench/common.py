"""What the side-by-side benchmarks share: starting a real or a pyzenoh router on
127.0.0.1, stopping any process by PID, and reading the machine and a process's memory.

Imported by the ``bench_*.py`` scripts (run as ``python bench/bench_x.py``, so this
folder is on ``sys.path``).
"""

from __future__ import annotations

import json
import os
import platform
import select
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, Self

from pyzenoh.localnet import wait_listening

#: Longest wait for a router to start listening.
START_S = 30.0
#: Graceful stop budget for a process before it is SIGKILLed.
STOP_S = 10.0

#: A real eclipse-zenoh 1.10.2 router: argv[1] is a JSON object of config key -> value.
REAL_ROUTER = textwrap.dedent(
    """
    import json, sys, zenoh
    zenoh.init_log_from_env_or("warn")
    conf = zenoh.Config()
    for key, value in json.loads(sys.argv[1]).items():
        conf.insert_json5(key, json.dumps(value))
    session = zenoh.open(conf)
    print("ready", flush=True)
    sys.stdin.read()  # until the parent closes our stdin (or dies)
    session.close()
    """
)


#: The start of every driver script (eclipse-zenoh clients in a process of their own):
#: ``client(endpoint)`` opens a client session, ``until(pred, timeout)`` waits bounded.
DRIVER_PRELUDE = textwrap.dedent(
    """
    import json, sys, threading, time, zenoh
    BLOCK = zenoh.CongestionControl.BLOCK
    def client(endpoint, extra=None):  # extra: config key -> value, e.g. transport/link/tls
        c = zenoh.Config()
        c.insert_json5("mode", '"client"')
        c.insert_json5("connect/endpoints", json.dumps([endpoint]))
        c.insert_json5("scouting/multicast/enabled", "false")
        for key, value in (extra or {}).items():
            c.insert_json5(key, json.dumps(value))
        return zenoh.open(c)
    def until(pred, timeout, step=0.01):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if pred():
                return True
            time.sleep(step)
        return pred()
    """
)


#: 1 -> 1 throughput through one router: argv endpoint, client config (JSON key -> value),
#: seconds, max messages, payload size. 8-byte PUTs by default, congestion control Block,
#: warm-up first; prints {"sent", "received", "seconds"} as JSON.
THROUGHPUT_DRIVER = DRIVER_PRELUDE + textwrap.dedent(
    """
    endpoint, extra, seconds, max_messages, size = (sys.argv[1], json.loads(sys.argv[2]), float(sys.argv[3]),
                                                    int(sys.argv[4]), int(sys.argv[5]))
    sub_s, pub_s = client(endpoint, extra), client(endpoint, extra)
    count = [0]
    last = [0.0]
    def on_sample(_):
        count[0] += 1
        last[0] = time.perf_counter()
    sub_s.declare_subscriber("bench/x", on_sample)
    pub = pub_s.declare_publisher("bench/x", congestion_control=BLOCK)
    if not until(lambda: pub.matching_status.matching, 10):
        sys.exit("the subscriber never matched (an access control denying the benchmark?)")
    payload = b"x" * size
    for _ in range(200):  # warm-up: the route is cached from here on
        pub.put(payload)
    until(lambda: count[0] >= 200, 10)
    start_count = count[0]
    t0 = time.perf_counter()
    sent = 0
    deadline = t0 + seconds
    while sent < max_messages and time.perf_counter() < deadline:
        for _ in range(100):
            pub.put(payload)
        sent += 100
    send_time = time.perf_counter() - t0
    until(lambda: count[0] - start_count >= sent, 10)
    received = count[0] - start_count
    elapsed = max(last[0] - t0, send_time)
    print(json.dumps({"sent": sent, "received": received, "seconds": elapsed}), flush=True)
    pub_s.close(); sub_s.close()
    """
)


def run_throughput(
    endpoint: str, seconds: float, max_messages: int, payload: int, client_conf: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Run :data:`THROUGHPUT_DRIVER` against ``endpoint``; its result plus ``msg_per_s``."""
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            THROUGHPUT_DRIVER,
            endpoint,
            json.dumps(client_conf or {}),
            str(seconds),
            str(max_messages),
            str(payload),
        ],
        capture_output=True,
        text=True,
        timeout=seconds + 60,
        check=True,
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    result["msg_per_s"] = result["received"] / result["seconds"]
    return result


#: :data:`DRIVER_PRELUDE` plus ``done(result, *sessions)``: print the result line (JSON),
#: close the sessions, exit 0. The start of the two-endpoint drivers below.
DONE_PRELUDE = DRIVER_PRELUDE + textwrap.dedent(
    """
    def done(result, *sessions):
        print(json.dumps(result), flush=True)
        for s in sessions:
            s.close()
        sys.exit(0)
    """
)

#: Throughput from a publisher client on argv[1] to a subscriber client on argv[2] (the
#: same endpoint for 1 -> 1 through one router); then seconds, max messages, payload size,
#: seconds to wait for the route, and optionally the longest wait for the last messages
#: once publishing is over (default 10 s). PUTs with congestion control Block on
#: ``bench/x``, route probed (puts until one arrives), 200 warm-up PUTs, then the measured
#: burst bounded in count and time. Prints ``measuring`` as the burst starts, then one JSON
#: line {"sent", "received", "seconds", "route_s"} or {"error"}.
PAIR_THROUGHPUT_DRIVER = DONE_PRELUDE + textwrap.dedent(
    """
    pub_ep, sub_ep = sys.argv[1], sys.argv[2]
    seconds, max_messages, size = float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    converge = float(sys.argv[6])
    drain = float(sys.argv[7]) if len(sys.argv) > 7 else 10.0
    sub_s, pub_s = client(sub_ep), client(pub_ep)
    count = [0]
    last = [0.0]
    def on_sample(_):
        count[0] += 1
        last[0] = time.perf_counter()
    sub_s.declare_subscriber("bench/x", on_sample)
    pub = pub_s.declare_publisher("bench/x", congestion_control=BLOCK)
    payload = b"x" * size
    t_route = time.perf_counter()
    if not (until(lambda: pub.matching_status.matching, converge)
            and until(lambda: (pub.put(payload), count[0] > 0)[1], converge, 0.05)):
        done({"error": "no route from R1 to R2 within %.0f s" % converge}, pub_s, sub_s)
    route_s = time.perf_counter() - t_route
    for _ in range(200):  # warm-up
        pub.put(payload)
    time.sleep(0.5)
    start_count = count[0]
    print("measuring", flush=True)
    t0 = time.perf_counter()
    sent = 0
    deadline = t0 + seconds
    while sent < max_messages and time.perf_counter() < deadline:
        for _ in range(100):
            pub.put(payload)
        sent += 100
    send_time = time.perf_counter() - t0
    until(lambda: count[0] - start_count >= sent, drain)
    received = count[0] - start_count
    elapsed = max(last[0] - t0, send_time)
    done({"sent": sent, "received": received, "seconds": elapsed, "route_s": route_s}, pub_s, sub_s)
    """
)

#: Ping-pong latency: a pinger client on argv[1] puts on ``bench/ping`` (express, Block), a
#: ponger client on argv[2] answers on ``bench/pong``; then round trips, seconds (time
#: bound), seconds to wait for the route. 100 warm-up round trips, each round trip waits at
#: most 1 s. Prints {"rtts_us", "lost", "route_s"} or {"error"}.
LATENCY_DRIVER = DONE_PRELUDE + textwrap.dedent(
    """
    ping_ep, pong_ep = sys.argv[1], sys.argv[2]
    round_trips, seconds, converge = int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
    ping_s, pong_s = client(ping_ep), client(pong_ep)
    pong_pub = pong_s.declare_publisher("bench/pong", congestion_control=BLOCK, express=True)
    pong_s.declare_subscriber("bench/ping", lambda s: pong_pub.put(s.payload))
    box = [b""]
    got = threading.Event()
    def on_pong(s):
        box[0] = s.payload.to_bytes()
        got.set()
    ping_s.declare_subscriber("bench/pong", on_pong)
    ping_pub = ping_s.declare_publisher("bench/ping", congestion_control=BLOCK, express=True)
    def round_trip(msg, timeout):
        got.clear()
        t = time.perf_counter()
        ping_pub.put(msg)
        end = t + timeout
        while got.wait(max(0.0, end - time.perf_counter())):
            if box[0] == msg:
                return time.perf_counter() - t
            got.clear()
        return None
    t_route = time.perf_counter()
    probes = iter(range(10**9))
    if not until(lambda: round_trip(b"p%07d" % next(probes), 0.1) is not None, converge, 0):
        done({"error": "no ping-pong route within %.0f s" % converge}, ping_s, pong_s)
    route_s = time.perf_counter() - t_route
    for i in range(100):  # warm-up
        round_trip(b"w%07d" % i, 1.0)
    rtts, lost = [], 0
    deadline = time.perf_counter() + seconds
    for i in range(round_trips):
        if time.perf_counter() > deadline:
            break
        rtt = round_trip(b"%08d" % i, 1.0)
        if rtt is None:
            lost += 1
        else:
            rtts.append(rtt)
    done({"rtts_us": [round(r * 1e6, 1) for r in rtts], "lost": lost, "route_s": route_s}, ping_s, pong_s)
    """
)


def run_driver(
    script: str, args: list[str], timeout: float, on_line: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """Run a driver script to completion (bounded by ``timeout``); its last stdout line is JSON.

    ``on_line`` is called with every stdout line as it arrives (from a reader thread), e.g.
    to sample the router at the driver's ``measuring`` mark and at its result line."""
    proc = subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    lines: list[str] = []
    err: list[str] = []

    def pump_out() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            if on_line is not None:
                on_line(lines[-1])

    def pump_err() -> None:
        assert proc.stderr is not None
        err.append(proc.stderr.read())

    readers = [threading.Thread(target=f, daemon=True) for f in (pump_out, pump_err)]
    for t in readers:
        t.start()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"driver timed out after {timeout:.0f} s"}
    finally:
        stop(proc)
        for t in readers:
            t.join(STOP_S)
    lines = [line for line in lines if line.strip()]
    if proc.returncode != 0 or not lines:
        return {"error": f"driver exited with {proc.returncode}: {''.join(err).strip()[-800:]}"}
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def start_real_router(
    port: int, conf: dict[str, Any] | None = None, log: IO[bytes] | None = None
) -> subprocess.Popen[bytes]:
    """A real router listening on 127.0.0.1:``port`` (multicast scouting off), ``conf``
    keys (``"connect/endpoints"``, ...) on top; returns once it listens."""
    full: dict[str, Any] = {
        "mode": "router",
        "listen/endpoints": [f"tcp/127.0.0.1:{port}"],
        "scouting/multicast/enabled": False,
    }
    full.update(conf or {})
    env = dict(os.environ, RUST_LOG=os.environ.get("RUST_LOG", "warn"))
    proc = subprocess.Popen(
        [sys.executable, "-c", REAL_ROUTER, json.dumps(full)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=log,
        env=env,
    )
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], START_S)
    if not ready or not proc.stdout.readline().startswith(b"ready"):
        stop(proc)
        raise RuntimeError("the real router did not start")
    wait_listening(port, proc, START_S)
    return proc


def start_pyzenoh_router(
    port: int,
    config_file: Path,
    tree: dict[str, Any] | None = None,
    log: IO[bytes] | None = None,
    log_level: str = "warning",
) -> subprocess.Popen[bytes]:
    """``pyzenoh router`` listening on 127.0.0.1:``port`` (multicast scouting off), with
    ``tree`` (a JSON5 config tree) merged in and written to ``config_file``."""
    full: dict[str, Any] = {
        "mode": "router",
        "listen": {"endpoints": [f"tcp/127.0.0.1:{port}"]},
        "scouting": {"multicast": {"enabled": False}},
    }
    full.update(tree or {})
    config_file.write_text(json.dumps(full))
    cmd = [sys.executable, "-m", "pyzenoh", "--log-level", log_level, "router", "-c", str(config_file)]
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT if log else None)
    wait_listening(port, proc, START_S)
    return proc


def stop(proc: subprocess.Popen[Any]) -> None:
    """Stop ``proc`` by PID: close its stdin, SIGTERM, then SIGKILL, each wait bounded."""
    if proc.stdin is not None:
        try:
            proc.stdin.close()
        except OSError:
            pass
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=STOP_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(STOP_S)


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def rss_mb(pid: int) -> float:
    """Resident memory of process ``pid`` in MiB (0 when it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` so far, in seconds (``/proc/<pid>/stat``;
    resolution one clock tick, usually 10 ms); NaN when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return float("nan")
    # fields[0] is field 3 (state): utime and stime are fields 14 and 15.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class RssSampler:
    """Samples :func:`rss_mb` of ``pid`` every ``period`` seconds in a thread, from
    ``with`` entry to exit (bounded by ``max_s``); ``peak_mb`` and ``samples`` after."""

    def __init__(self, pid: int, period: float = 0.1, max_s: float = 600.0) -> None:
        self.pid, self.period, self.max_s = pid, period, max_s
        self.peak_mb = 0.0
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        deadline = time.monotonic() + self.max_s
        while time.monotonic() < deadline:
            self.peak_mb = max(self.peak_mb, rss_mb(self.pid))
            self.samples += 1
            if self._stop.wait(self.period):
                break

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(STOP_S)
        self.peak_mb = max(self.peak_mb, rss_mb(self.pid))


def tree_pids(pid: int) -> list[int]:
    """``pid`` and its children (a ``pyzenoh router --workers N`` supervisor's workers)."""
    out = subprocess.run(["pgrep", "-P", str(pid)], check=False, capture_output=True, text=True).stdout.split()
    return [pid] + [int(p) for p in out if p.isdigit()]


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds of ``pid`` and of its children."""
    return sum(cpu_seconds(p) for p in tree_pids(pid))


def tree_rss_mb(pid: int) -> float:
    """Resident memory of ``pid`` and of its children, MiB."""
    return sum(rss_mb(p) for p in tree_pids(pid))
