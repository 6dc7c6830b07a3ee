"""Meshes of real eclipse-zenoh 1.10.2 routers and ``pyzenoh router`` processes on 127.0.0.1.

A :class:`Mesh` starts routers by name, each either ``"zenoh"`` (a real router in its own
process) or ``"pyzenoh"``, connected along the links the test names; clients are
in-process eclipse-zenoh sessions. Everything is stopped by PID when the mesh closes.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyzenoh.localnet import free_port, wait_listening
from tests.fixtures.procs import Proc, start_router

#: Longest wait for a route to come up across the mesh (trees, declarations).
CONVERGE_S = 20.0
#: How long to keep listening for stray duplicates after the expected samples arrived.
SETTLE_S = 0.5


@dataclass
class Router:
    name: str
    kind: str  # "zenoh" or "pyzenoh"
    zid: str
    port: int
    connect: list[str]
    proc: Proc | subprocess.Popen[bytes] | None = None
    log: Path | None = None

    @property
    def endpoint(self) -> str:
        return f"tcp/127.0.0.1:{self.port}"

    def alive(self) -> bool:
        if isinstance(self.proc, Proc):
            return self.proc.popen.poll() is None
        return self.proc is not None and self.proc.poll() is None


@dataclass
class Mesh:
    tmp: Path
    routers: dict[str, Router] = field(default_factory=dict)
    sessions: list[Any] = field(default_factory=list)

    def add(
        self,
        name: str,
        kind: str,
        connect: tuple[str, ...] = (),
        zid: str | None = None,
        extra: dict[str, Any] | None = None,
    ) -> Router:
        """Start router ``name`` connecting to the routers named in ``connect``."""
        zid = zid or f"{len(self.routers) + 1:x}{name.encode().hex()}"[:32]
        r = Router(name, kind, zid, free_port(), [self.routers[c].endpoint for c in connect])
        self.routers[name] = r
        self.start(name, extra)
        return r

    def start(self, name: str, extra: dict[str, Any] | None = None) -> None:
        r = self.routers[name]
        if r.kind == "zenoh":
            conf: dict[str, Any] = {
                "id": r.zid,
                "connect/endpoints": r.connect,
                "timestamping/enabled": {"router": True},
            }
            conf.update(extra or {})
            r.proc = start_router(r.port, conf)
            return
        r.log = self.tmp / f"{name}-{r.port}.log"
        cfg = self.tmp / f"{name}.json5"
        tree: dict[str, Any] = {"id": r.zid, "listen": {"endpoints": [r.endpoint]}, "connect": {"endpoints": r.connect}}
        tree.update(extra or {})
        cfg.write_text(json.dumps(tree))
        cmd = [sys.executable, "-m", "pyzenoh", "--log-level", "info", "router", "-c", str(cfg)]
        with r.log.open("ab") as out:
            r.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        wait_listening(r.port, r.proc, 20.0)

    def kill(self, name: str) -> None:
        """SIGKILL router ``name`` (its links just drop)."""
        r = self.routers[name]
        if isinstance(r.proc, Proc):
            r.proc.kill()
        elif r.proc is not None and r.proc.poll() is None:
            os.kill(r.proc.pid, signal.SIGKILL)
            r.proc.wait(5)

    def stop(self, name: str) -> None:
        r = self.routers[name]
        if isinstance(r.proc, Proc):
            r.proc.stop()
        elif r.proc is not None and r.proc.poll() is None:
            r.proc.send_signal(signal.SIGTERM)
            try:
                r.proc.wait(10)
            except subprocess.TimeoutExpired:
                r.proc.kill()
                r.proc.wait(5)

    def client(self, name: str) -> Any:
        """An in-process eclipse-zenoh client session of router ``name``."""
        import zenoh

        c = zenoh.Config()
        c.insert_json5("mode", '"client"')
        c.insert_json5("connect/endpoints", json.dumps([self.routers[name].endpoint]))
        c.insert_json5("scouting/multicast/enabled", "false")
        # retried for 10 s, not once: a router of a just-built mesh may be slow to take its
        # first client on a starved machine (seen once beside a CPU burner)
        c.insert_json5("connect/timeout_ms", "10000")
        s = zenoh.open(c)
        self.sessions.append(s)
        return s

    def close(self) -> None:
        for s in self.sessions:
            with contextlib.suppress(Exception):
                s.close()
        for name in self.routers:
            self.stop(name)

    def logs(self) -> str:
        out = []
        for r in self.routers.values():
            if r.log is not None and r.log.exists():
                out.append(f"--- {r.name}\n" + r.log.read_text()[-4000:])
        return "\n".join(out)


@contextlib.contextmanager
def mesh(tmp: Path) -> Iterator[Mesh]:
    m = Mesh(tmp)
    try:
        yield m
    finally:
        m.close()


class Collector:
    """Counts samples per payload from a subscriber callback (thread-safe)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.samples: list[tuple[str, str, str]] = []  # (key, payload, kind)

    def __call__(self, sample: Any) -> None:
        with self.lock:
            self.samples.append((str(sample.key_expr), sample.payload.to_string(), str(sample.kind)))

    def payloads(self) -> list[str]:
        with self.lock:
            return [p for _, p, _ in self.samples]

    def wait_for(self, pred: Callable[[list[str]], bool], timeout: float = CONVERGE_S) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if pred(self.payloads()):
                return True
            time.sleep(0.02)
        return pred(self.payloads())


def wait_route(pub: Any, key: str, col: Collector, timeout: float = CONVERGE_S) -> None:
    """Put probes on ``key`` until ``col`` sees one: the route across the mesh is up."""
    deadline = time.monotonic() + timeout
    n = 0
    while time.monotonic() < deadline:
        pub.put(key, f"probe-{n}")
        n += 1
        if col.wait_for(lambda ps: any(p.startswith("probe") for p in ps), 0.1):
            return
    raise AssertionError(f"no route to {key} within {timeout} s")


def send_and_count(pub: Any, key: str, col: Collector, n: int, tag: str) -> list[str]:
    """Put ``n`` tagged samples; return what arrived (after a short settle for duplicates)."""
    for i in range(n):
        pub.put(key, f"{tag}-{i}")
    col.wait_for(lambda ps: sum(p.startswith(tag) for p in ps) >= n, 10.0)
    time.sleep(SETTLE_S)  # an absence: no duplicate comes late
    return [p for p in col.payloads() if p.startswith(tag)]


def get_all(session: Any, selector: str, timeout: float = 5.0, **kw: Any) -> tuple[list[str], list[str]]:
    """(ok payloads, err payloads) of one get; returning at all means the get ended."""
    oks, errs = [], []
    for reply in session.get(selector, timeout=timeout, **kw):
        if reply.ok is not None:
            oks.append(reply.ok.payload.to_string())
        else:
            errs.append(reply.err.payload.to_string())
    return sorted(oks), errs
