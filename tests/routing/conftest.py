"""Routers for the differential interop tests, started once per test session.

Every scenario closes all the sessions it opened, which leaves a router with no state of
them (faces, declarations, queries), so the routers can be shared.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from pyzenoh.localnet import free_port

STARTUP_TIMEOUT = 20.0


@pytest.fixture(scope="session")
def zenoh_router_port() -> Iterator[int]:
    """A real eclipse-zenoh 1.10.2 router: a zenoh session in router mode, in this process."""
    zenoh: Any = pytest.importorskip("zenoh")
    port = free_port()
    conf = zenoh.Config()
    conf.insert_json5("mode", '"router"')
    conf.insert_json5("listen/endpoints", f'["tcp/127.0.0.1:{port}"]')
    conf.insert_json5("scouting/multicast/enabled", "false")
    router = zenoh.open(conf)
    try:
        yield port
    finally:
        router.close()


@pytest.fixture(scope="session")
def pyzenoh_router_port() -> Iterator[int]:
    """``pyzenoh router`` in a subprocess, stopped (by its pid) at the end."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "pyzenoh", "router", "-l", f"tcp/127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=os.environ.copy(),
    )
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while True:
            assert proc.poll() is None, "pyzenoh router exited"
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                assert time.monotonic() < deadline, "pyzenoh router did not start"
                time.sleep(0.05)
        yield port
        assert proc.poll() is None, "pyzenoh router died during the tests"
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
