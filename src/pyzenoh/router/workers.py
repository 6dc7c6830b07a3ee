"""``pyzenoh router --workers N``: N router processes behind the same endpoints, one Zenoh
mesh.

A Python router uses one core. With ``--workers N`` the command becomes a supervisor of
N ``pyzenoh router`` processes (the workers) that listen on the configured tcp/, tls/ and
ws/ endpoints with SO_REUSEPORT, so the kernel spreads incoming sessions over them (the
other listeners are worker 0's: :data:`SHARED_KINDS`), and that are routers of
one mesh: each also listens on a Unix socket of its own, and dials every worker before it
there. Declarations, data, queries and liveliness cross workers as they cross any Zenoh
router mesh; nothing else connects the workers (no inter-process bus of our own).

What the outside sees is a documented mesh, not one router: each worker has its own zid
(worker 0 keeps a configured ``id``), the admin space lists the workers as routers of the
mesh (``@/*/router``), and access control and recording apply per worker (a recording
directory gets one subdirectory per worker). What must happen once happens on worker 0
only: plugins (the REST port, storages), the msgq daemon, answering scouting, and the
configured ``connect/endpoints`` (the other workers reach those routers through it).

The supervisor restarts a worker that exits unexpectedly (after :data:`RESTART_DELAY_S`)
and stops them all, by PID, on SIGINT/SIGTERM.
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pyzenoh.config.paths import insert_at
from pyzenoh.errors import UsageError
from pyzenoh.router.config import config_from_dict
from pyzenoh.transport.endpoint import Endpoint

log = logging.getLogger(__name__)

#: Listener kinds every worker serves, with SO_REUSEPORT (the kernel spreads connections
#: over the workers). Any other listener is worker 0's alone: a socket file has one owner,
#: and a udp/ or quic/ peer's datagrams must all reach the one worker that holds its link.
SHARED_KINDS = frozenset({"tcp", "tls", "ws"})

#: Most workers one supervisor runs.
MAX_WORKERS = 64
#: How long a worker that exited unexpectedly waits before it is started again.
RESTART_DELAY_S = 1.0
#: How long the workers have to stop after SIGTERM before they are killed.
STOP_TIMEOUT_S = 10.0


def mesh_socket(mesh_dir: str, index: int) -> str:
    """The endpoint worker ``index`` listens on for the other workers."""
    return f"unixsock-stream/{mesh_dir}/worker-{index}.sock"


def worker_tree(tree: dict[str, Any], index: int, count: int, mesh_dir: str) -> dict[str, Any]:
    """The config tree of worker ``index`` of ``count``, from the user's ``tree``."""
    if not 0 <= index < count:
        raise UsageError(f"worker {index} of {count}")
    config = config_from_dict(copy.deepcopy(tree))  # the user's tree, checked once here
    out = copy.deepcopy(tree)
    out = insert_at(out, "mode", "router")
    listen = list(config.listen) if index == 0 else shared_listeners(config.listen)
    out = insert_at(out, "listen/endpoints", [*listen, mesh_socket(mesh_dir, index)])
    own_connect = list(config.connect) if index == 0 else []
    out = insert_at(out, "connect/endpoints", [*own_connect, *(mesh_socket(mesh_dir, j) for j in range(index))])
    out = insert_at(out, "pyzenoh/listen/reuse_port", True)
    if config.record.dir:
        out = insert_at(out, "pyzenoh/record/dir", str(Path(config.record.dir) / f"worker-{index}"))
    if index > 0:
        for key in ("id", "plugins"):
            out.pop(key, None)
        own = out.get("pyzenoh")
        if isinstance(own, dict):
            own.pop("msgq", None)
        out = insert_at(out, "scouting/multicast/listen", False)
        out = insert_at(out, "scouting/multicast/autoconnect", {"router": []})
    return out


def shared_listeners(listen: Sequence[str]) -> list[str]:
    """The listeners of ``listen`` that every worker serves (see :data:`SHARED_KINDS`)."""
    return [e for e in listen if Endpoint.parse(e).protocol in SHARED_KINDS]


def parse_workers(value: str) -> int:
    """``--workers``: a count, or ``auto`` (one per core, at most :data:`MAX_WORKERS`)."""
    if value == "auto":
        return max(1, min(os.cpu_count() or 1, MAX_WORKERS))
    try:
        n = int(value)
    except ValueError:
        raise UsageError(f"--workers: {value!r} is not a number or 'auto'") from None
    if not 1 <= n <= MAX_WORKERS:
        raise UsageError(f"--workers: {n} is not in 1..{MAX_WORKERS}")
    return n


class Supervisor:
    """Runs the workers until SIGINT/SIGTERM; restarts one that exits on its own."""

    def __init__(self, tree: dict[str, Any], count: int, log_level: str = "info") -> None:
        self.tree = tree
        self.count = count
        self.log_level = log_level
        self.mesh_dir = tempfile.mkdtemp(prefix="pyzenoh-workers-")
        self.trees = [worker_tree(tree, i, count, self.mesh_dir) for i in range(count)]
        self.procs: list[subprocess.Popen[bytes] | None] = [None] * count
        self.restarts = 0
        self._stopping = False

    def _start(self, index: int) -> subprocess.Popen[bytes]:
        argv = [
            sys.executable,
            "-m",
            "pyzenoh",
            "--log-level",
            self.log_level,
            "router",
            "--cfg",
            ":" + json.dumps(self.trees[index]),
        ]
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL)
        log.info("worker %d started (pid %d)", index, proc.pid)
        return proc

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        try:
            for i in range(self.count):
                self.procs[i] = self._start(i)
            while not stop.is_set():
                try:
                    await asyncio.wait_for(stop.wait(), 0.2)
                except TimeoutError:
                    pass
                if not stop.is_set():
                    await self._restart_exited()
        finally:
            self._stopping = True
            await loop.run_in_executor(None, self.stop_all)
            shutil.rmtree(self.mesh_dir, ignore_errors=True)
        return 0

    async def _restart_exited(self) -> None:
        for i, proc in enumerate(self.procs):
            if proc is not None and proc.poll() is not None:
                log.warning("worker %d (pid %d) exited with %s; restarting it", i, proc.pid, proc.returncode)
                self.procs[i] = None
                await asyncio.sleep(RESTART_DELAY_S)
                if self._stopping:
                    return
                self.procs[i] = self._start(i)
                self.restarts += 1

    def stop_all(self) -> None:
        """SIGTERM every worker, then SIGKILL the ones still there after the timeout."""
        live = [p for p in self.procs if p is not None and p.poll() is None]
        for p in live:
            p.send_signal(signal.SIGTERM)
        for p in live:
            try:
                p.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                log.warning("worker pid %d did not stop; killing it", p.pid)
                p.kill()
                p.wait(STOP_TIMEOUT_S)
