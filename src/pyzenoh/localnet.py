"""Loopback helpers for the demo, the tests and the benchmarks: pick a free port, wait
until a process listens on it. Only 127.0.0.1 is ever used."""

from __future__ import annotations

import socket
import subprocess
import time

LOOPBACK = "127.0.0.1"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def wait_listening(port: int, proc: subprocess.Popen[bytes] | None = None, timeout: float = 20.0) -> None:
    """Return once something accepts connections on 127.0.0.1:``port``.

    Raises RuntimeError when ``proc`` exits first or nothing listens within ``timeout``.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"process {proc.pid} exited with {proc.returncode} before listening")
        try:
            with socket.create_connection((LOOPBACK, port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listened on {LOOPBACK}:{port} within {timeout} s")
