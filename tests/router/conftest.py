"""Start ``pyzenoh router`` as a real subprocess on 127.0.0.1 and open real zenoh sessions."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from pyzenoh.localnet import free_port, wait_listening

zenoh = pytest.importorskip("zenoh")

STARTUP_TIMEOUT = 20.0


@dataclass
class RouterProc:
    proc: subprocess.Popen[bytes]
    endpoint: str
    port: int
    log: Path

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


@contextmanager
def run_router(tmp: Path, *extra: str) -> Iterator[RouterProc]:
    port = free_port()
    log = tmp / f"router-{port}.log"
    cmd = [sys.executable, "-m", "pyzenoh", "--log-level", "info", "router", "-l", f"tcp/127.0.0.1:{port}", *extra]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=os.environ.copy())
    router = RouterProc(proc, f"tcp/127.0.0.1:{port}", port, log)
    try:
        wait_listening(port, proc, STARTUP_TIMEOUT)
        yield router
    finally:
        router.stop()


@pytest.fixture(scope="module")
def router(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RouterProc]:
    with run_router(tmp_path_factory.mktemp("router")) as r:
        yield r
        assert r.proc.poll() is None, r.log.read_text()


def zenoh_config(endpoint: str, mode: str = "client", lease_ms: int | None = None) -> zenoh.Config:
    conf = zenoh.Config()
    conf.insert_json5("mode", f'"{mode}"')
    conf.insert_json5("connect/endpoints", f'["{endpoint}"]')
    conf.insert_json5("scouting/multicast/enabled", "false")
    if mode == "peer":
        conf.insert_json5("listen/endpoints", '["tcp/127.0.0.1:0"]')
        conf.insert_json5("scouting/gossip/enabled", "false")
    if lease_ms is not None:
        conf.insert_json5("transport/link/tx/lease", str(lease_ms))
    return conf


@pytest.fixture
def open_session(router: RouterProc) -> Iterator:  # type: ignore[type-arg]
    opened: list = []  # type: ignore[type-arg]

    def _open(mode: str = "client", endpoint: str | None = None) -> zenoh.Session:
        s = zenoh.open(zenoh_config(endpoint or router.endpoint, mode))
        opened.append(s)
        return s

    yield _open
    for s in opened:
        with contextlib.suppress(Exception):  # a test may have closed it already
            s.close()
