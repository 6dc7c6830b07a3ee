"""Test support: a daemon on its own thread and event loop, and a raw socket client."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Self, TypeVar

from pyzenoh.msgq.frame import Frame, FrameReader
from pyzenoh.msgq.server import MsgqDaemon
from pyzenoh.msgq.skan import SkanValue, decode

T = TypeVar("T")

VECTORS_FILE = Path(__file__).resolve().parents[1] / "vectors" / "msgq-vectors.json"
STEP_TIMEOUT = 10.0  # upper bound for any single wait; never asserted on


def load_vectors() -> list[dict[str, Any]]:
    return list(json.loads(VECTORS_FILE.read_text()))


class DaemonThread:
    """A MsgqDaemon running on a private event loop in a background thread."""

    def __init__(self, socket_file: str | None, tcp: tuple[str, ...] = (), unix: bool = True, **options: Any) -> None:
        self.socket_file = socket_file
        self.tcp = tcp
        self.unix = unix
        self.options = options
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._run, name="msgq-test-daemon", daemon=True)
        self._ready = threading.Event()
        self._error: OSError | ValueError | None = None
        self.daemon: MsgqDaemon

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.daemon = MsgqDaemon(self.socket_file, self.tcp, unix=self.unix, **self.options)
            self.loop.run_until_complete(self.daemon.start())
        except (OSError, ValueError) as exc:  # reported to start()
            self._error = exc
            self._ready.set()
            self.loop.close()
            return
        self._ready.set()
        try:
            self.loop.run_until_complete(self.daemon.serve_forever())
            # Let aborted transports run their connection_lost callbacks.
            for _ in range(3):
                self.loop.run_until_complete(asyncio.sleep(0))
        finally:
            self.loop.close()

    def start(self) -> Self:
        self.thread.start()
        if not self._ready.wait(STEP_TIMEOUT):
            raise RuntimeError("daemon did not start")
        if self._error is not None:
            self.thread.join(STEP_TIMEOUT)
            raise self._error
        return self

    def call(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the daemon's loop thread and return its result."""

        async def wrapper() -> T:
            return fn()

        return asyncio.run_coroutine_threadsafe(wrapper(), self.loop).result(STEP_TIMEOUT)

    def stop(self) -> None:
        if self.thread.is_alive() and not self.loop.is_closed():
            asyncio.run_coroutine_threadsafe(self.daemon.close(), self.loop).result(STEP_TIMEOUT)
        self.thread.join(STEP_TIMEOUT)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class RawClient:
    """A bare socket speaking frames, for what Session would never send."""

    def __init__(self, path_or_addr: str | tuple[str, int]) -> None:
        if isinstance(path_or_addr, str):
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.settimeout(STEP_TIMEOUT)
            self.sock.connect(path_or_addr)
        else:
            self.sock = socket.create_connection(path_or_addr, timeout=STEP_TIMEOUT)
        self.reader = FrameReader()
        self.frames: list[Frame] = []

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_frame(self) -> Frame:
        deadline = time.monotonic() + STEP_TIMEOUT
        while not self.frames:
            if time.monotonic() > deadline:
                raise TimeoutError("no frame")
            data = self.sock.recv(65536)
            if not data:
                raise EOFError("daemon closed the connection")
            self.frames.extend(self.reader.feed(data))
        return self.frames.pop(0)

    def read_message(self) -> tuple[dict[str, SkanValue], dict[str, SkanValue] | None]:
        frame = self.read_frame()
        return decode(frame.header), (decode(frame.body) if frame.body is not None else None)

    def expect_closed(self) -> None:
        """Read until the daemon closes us (EOF or reset); frames before that are ignored."""
        deadline = time.monotonic() + STEP_TIMEOUT
        while time.monotonic() < deadline:
            try:
                data = self.sock.recv(65536)
            except ConnectionResetError:
                return
            if not data:
                return
        raise AssertionError("daemon did not close the connection")

    def close(self) -> None:
        self.sock.close()
