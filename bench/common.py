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
from pathlib import Path
from typing import IO, Any

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


def run_throughput(endpoint: str, seconds: float, max_messages: int, payload: int,
                   client_conf: dict[str, Any] | None = None) -> dict[str, Any]:  # fmt: skip
    """Run :data:`THROUGHPUT_DRIVER` against ``endpoint``; its result plus ``msg_per_s``."""
    out = subprocess.run([sys.executable, "-c", THROUGHPUT_DRIVER, endpoint, json.dumps(client_conf or {}),
                          str(seconds), str(max_messages), str(payload)],
                         capture_output=True, text=True, timeout=seconds + 60, check=True)  # fmt: skip
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    result["msg_per_s"] = result["received"] / result["seconds"]
    return result


def start_real_router(port: int, conf: dict[str, Any] | None = None, log: IO[bytes] | None = None) -> subprocess.Popen[bytes]:
    """A real router listening on 127.0.0.1:``port`` (multicast scouting off), ``conf``
    keys (``"connect/endpoints"``, ...) on top; returns once it listens."""
    full: dict[str, Any] = {"mode": "router", "listen/endpoints": [f"tcp/127.0.0.1:{port}"],
                            "scouting/multicast/enabled": False}  # fmt: skip
    full.update(conf or {})
    env = dict(os.environ, RUST_LOG=os.environ.get("RUST_LOG", "warn"))
    proc = subprocess.Popen([sys.executable, "-c", REAL_ROUTER, json.dumps(full)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=log, env=env)  # fmt: skip
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], START_S)
    if not ready or not proc.stdout.readline().startswith(b"ready"):
        stop(proc)
        raise RuntimeError("the real router did not start")
    wait_listening(port, proc, START_S)
    return proc


def start_pyzenoh_router(
    port: int, config_file: Path, tree: dict[str, Any] | None = None, log: IO[bytes] | None = None,
    log_level: str = "warning",
) -> subprocess.Popen[bytes]:  # fmt: skip
    """``pyzenoh router`` listening on 127.0.0.1:``port`` (multicast scouting off), with
    ``tree`` (a JSON5 config tree) merged in and written to ``config_file``."""
    full: dict[str, Any] = {"mode": "router", "listen": {"endpoints": [f"tcp/127.0.0.1:{port}"]},
                            "scouting": {"multicast": {"enabled": False}}}  # fmt: skip
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
