"""Real eclipse-zenoh 1.10.2 nodes (and pyzenoh sessions) in subprocesses, for interop tests.

Every process listens or connects on 127.0.0.1 only, announces readiness on stdout, exits
when its stdin closes (so a crashed test run leaves nothing behind), and is stopped by
PID with :meth:`Proc.stop`.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyzenoh.localnet import free_port, wait_listening

#: How long a subprocess may take to print its ready line.
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 5.0

_ZENOH_NODE = r"""
import json, sys, zenoh
config = zenoh.Config()
for key, value in json.loads(sys.argv[1]).items():
    config.insert_json5(key, json.dumps(value))
session = zenoh.open(config)
print("ready", session.zid(), flush=True)
sys.stdin.read()  # until the parent closes our stdin (or dies)
session.close()
"""

_PYZENOH_TOKEN = r"""
import json, sys
import pyzenoh.session as pz
session = pz.open(json.loads(sys.argv[1]))
token = session.liveliness().declare_token(sys.argv[2])
print("ready", session.zid(), flush=True)
sys.stdin.read()
session.close()
"""


@dataclass
class Proc:
    """A started subprocess; ``endpoint`` is where it listens (routers) or connects."""

    popen: subprocess.Popen[str]
    endpoint: str
    ready_line: str = ""
    stderr_tail: list[str] = field(default_factory=list)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def suspend(self) -> None:
        """SIGSTOP: the process (and its keepalives) freezes; its sockets stay open."""
        os.kill(self.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.kill(self.pid, signal.SIGCONT)

    def stop(self) -> None:
        """Stop by PID: close stdin, then SIGTERM, then SIGKILL, each with a bounded wait."""
        p = self.popen
        if p.poll() is not None:
            return
        try:
            os.kill(p.pid, signal.SIGCONT)
        except ProcessLookupError:
            return
        try:
            if p.stdin is not None:
                p.stdin.close()
        except OSError:
            pass
        try:
            p.wait(STOP_TIMEOUT_S)
            return
        except subprocess.TimeoutExpired:
            pass
        os.kill(p.pid, signal.SIGTERM)
        try:
            p.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.kill(p.pid, signal.SIGKILL)
            p.wait(STOP_TIMEOUT_S)

    def kill(self) -> None:
        """SIGKILL by PID (no CLOSE is sent; the kernel closes the socket)."""
        if self.popen.poll() is None:
            os.kill(self.pid, signal.SIGKILL)
            self.popen.wait(STOP_TIMEOUT_S)


def _start(script: str, args: list[str], endpoint: str) -> Proc:
    env = dict(os.environ)
    env.setdefault("RUST_LOG", "error")
    p = subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    proc = Proc(p, endpoint)
    assert p.stdout is not None
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        ready, _, _ = select.select([p.stdout], [], [], 0.2)
        if ready:
            line = p.stdout.readline()
            if line.startswith("ready"):
                proc.ready_line = line.strip()
                return proc
            if not line:
                break
        if p.poll() is not None:
            break
    proc.stop()
    raise RuntimeError(f"subprocess did not become ready (exit code {p.poll()})")


def start_router(port: int | None = None, extra: dict[str, Any] | None = None) -> Proc:
    """An eclipse-zenoh 1.10.2 router on ``tcp/127.0.0.1:PORT`` (default timestamping)."""
    port = port or free_port()
    endpoint = f"tcp/127.0.0.1:{port}"
    config: dict[str, Any] = {
        "mode": "router",
        "listen/endpoints": [endpoint],
        "scouting/multicast/enabled": False,
        "scouting/gossip/enabled": False,
    }
    config.update(extra or {})
    return _start(_ZENOH_NODE, [json.dumps(config)], endpoint)


def start_zenoh_session(connect: str, mode: str = "client") -> Proc:
    """An eclipse-zenoh session process that only connects (used for lease/close tests)."""
    config = {"mode": mode, "connect/endpoints": [connect], "scouting/multicast/enabled": False}
    return _start(_ZENOH_NODE, [json.dumps(config)], connect)


def start_pyzenoh_token(connect: str, key: str, lease_ms: int = 1000, mode: str = "client") -> Proc:
    """A pyzenoh session process holding one liveliness token on ``key``."""
    config = {"mode": mode, "connect": {"endpoints": [connect]}, "transport": {"link": {"tx": {"lease": lease_ms}}}}
    return _start(_PYZENOH_TOKEN, [json.dumps(config), key], connect)


@contextmanager
def router(extra: dict[str, Any] | None = None) -> Iterator[Proc]:
    proc = start_router(extra=extra)
    try:
        yield proc
    finally:
        proc.stop()


def zenoh_config(endpoint: str, mode: str = "client") -> Any:
    """An in-process eclipse-zenoh Config connecting to ``endpoint``."""
    import zenoh

    c = zenoh.Config()
    c.insert_json5("mode", json.dumps(mode))
    c.insert_json5("connect/endpoints", json.dumps([endpoint]))
    c.insert_json5("scouting/multicast/enabled", "false")
    return c


@contextmanager
def zenoh_session(endpoint: str, mode: str = "client") -> Iterator[Any]:
    """An in-process eclipse-zenoh session connecting to ``endpoint``, closed afterwards."""
    import zenoh

    session = zenoh.open(zenoh_config(endpoint, mode))
    try:
        yield session
    finally:
        session.close()


def pyzenoh_config(endpoint: str, mode: str = "client", **extra: Any) -> dict[str, Any]:
    cfg: dict[str, Any] = {"mode": mode, "connect": {"endpoints": [endpoint]}}
    cfg.update(extra)
    return cfg


@contextmanager
def pyzenoh_router_process(
    config: dict[str, Any], config_file: Path, ports: Iterable[int]
) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    """``pyzenoh router -c config_file`` (``config`` written there) logging at info to
    ``config_file`` with suffix ``.log``; yields (process, log) once every port in
    ``ports`` listens, and stops it by PID (SIGTERM, then SIGKILL) afterwards."""
    config_file.write_text(json.dumps(config))
    log = config_file.with_suffix(".log")
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pyzenoh", "--log-level", "info", "router", "-c", str(config_file)],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    try:
        for port in ports:
            wait_listening(port, proc, START_TIMEOUT_S)
        yield proc, log
    finally:
        stop_process(proc)


def stop_process(proc: subprocess.Popen[Any]) -> None:
    """SIGTERM ``proc``, SIGKILL it if it has not exited within a bounded wait."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(STOP_TIMEOUT_S)


@contextmanager
def opened(*sessions: Any) -> Iterator[None]:
    """Close every session (eclipse-zenoh or pyzenoh) at the end, whatever happens."""
    try:
        yield
    finally:
        for s in sessions:
            with suppress(Exception):
                s.close()
