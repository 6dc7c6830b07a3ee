"""Daemon lifecycle: socket file handling, configuration, serve_msgq, the CLI process."""

from __future__ import annotations

import asyncio
import errno
import os
import signal
import socket
import subprocess
import sys
import threading

import pytest

from pyzenoh.errors import UsageError
from pyzenoh.msgq.client import Session
from pyzenoh.msgq.server import (
    DEFAULT_SOCKET_FILE,
    SOCKET_FILE_ENV,
    MsgqDaemon,
    parse_tcp_endpoint,
    resolve_socket_file,
    serve_msgq,
)
from tests.msgq.support import DaemonThread
from tests.waits import until


def test_socket_file_created_and_removed(sock_path: str) -> None:
    with DaemonThread(sock_path):
        assert os.path.exists(sock_path)
    assert not os.path.exists(sock_path)


def test_parent_directories_are_created(sock_dir: str) -> None:
    path = os.path.join(sock_dir, "a", "b", "s")
    with DaemonThread(path), Session(path) as s:
        assert s.lname


def test_stale_socket_is_replaced(sock_path: str) -> None:
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(sock_path)
    dead.close()  # the file stays, nobody listens: a crashed daemon's leftover
    with DaemonThread(sock_path), Session(sock_path) as s:
        assert s.ping() is None


def test_live_daemon_is_not_replaced(daemon: DaemonThread, sock_path: str) -> None:
    with pytest.raises(OSError) as info:
        DaemonThread(sock_path).start()
    assert info.value.errno == errno.EADDRINUSE
    with Session(sock_path) as s:  # the first daemon is untouched
        assert s.ping() is None


def test_regular_file_is_left_alone(sock_path: str) -> None:
    with open(sock_path, "w") as f:
        f.write("precious")
    with pytest.raises(OSError) as info:
        DaemonThread(sock_path).start()
    assert info.value.errno == errno.EEXIST
    with open(sock_path) as f:
        assert f.read() == "precious"


def test_unbindable_path(sock_dir: str) -> None:
    with pytest.raises(OSError):
        DaemonThread(os.path.join(sock_dir, "x" * 200)).start()


def test_resolve_socket_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SOCKET_FILE_ENV, raising=False)
    assert resolve_socket_file() == DEFAULT_SOCKET_FILE == "/usr/local/var/bind10-devel/msgq_socket"
    monkeypatch.setenv(SOCKET_FILE_ENV, "/env/path")
    assert resolve_socket_file() == "/env/path"
    assert resolve_socket_file("/explicit") == "/explicit"


def test_daemon_uses_env_var(sock_path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SOCKET_FILE_ENV, sock_path)
    assert MsgqDaemon().socket_file == sock_path
    with DaemonThread(None) as running, Session(sock_path) as s:
        assert running.daemon.socket_file == sock_path
        assert s.ping() is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("tcp/127.0.0.1:9912", ("127.0.0.1", 9912)),
        ("localhost:0", ("localhost", 0)),
        ("tcp/[::1]:80", ("::1", 80)),
    ],
)
def test_parse_tcp_endpoint(text: str, expected: tuple[str, int]) -> None:
    assert parse_tcp_endpoint(text) == expected


@pytest.mark.parametrize("text", ["tcp/host", "tcp/:80", "tcp/h:x", "tcp/h:70000", "udp"])
def test_bad_tcp_endpoint(text: str) -> None:
    with pytest.raises(UsageError):
        parse_tcp_endpoint(text)


def test_bad_options() -> None:
    with pytest.raises(UsageError):
        MsgqDaemon(unix=False)
    with pytest.raises(UsageError):
        MsgqDaemon("/x", slow_reader="explode")
    with pytest.raises(UsageError):
        MsgqDaemon("/x", max_queue_bytes=0)


def test_start_twice_and_close_idempotent(sock_path: str) -> None:
    async def scenario() -> None:
        daemon = MsgqDaemon(sock_path)
        await daemon.start()
        with pytest.raises(UsageError):
            await daemon.start()
        await daemon.close()
        await daemon.close()
        assert not os.path.exists(sock_path)

    asyncio.run(scenario())


def test_serve_msgq_until_cancelled(sock_path: str) -> None:
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    holder: dict[str, asyncio.Task[None]] = {}

    def run() -> None:
        asyncio.set_event_loop(loop)
        task = loop.create_task(serve_msgq(sock_path, ("tcp/127.0.0.1:0",), ready=lambda d: ready.set()))
        holder["task"] = task
        try:
            loop.run_until_complete(task)
        except asyncio.CancelledError:
            pass
        finally:
            loop.close()

    thread = threading.Thread(target=run)
    thread.start()
    try:
        assert ready.wait(10)
        with Session(sock_path) as s:
            assert s.ping({"up": 1}) == {"up": 1}
    finally:
        loop.call_soon_threadsafe(lambda: holder["task"].cancel())
        thread.join(10)
    assert not thread.is_alive()
    assert not os.path.exists(sock_path)


def test_cli_process(sock_path: str) -> None:
    """`python -m pyzenoh msgq` serves until SIGTERM, then removes its socket."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "pyzenoh", "msgq", "--socket-file", sock_path],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        # Bounded wait for the daemon to accept: its socket file exists from bind(), a
        # moment before listen() (a connect then is refused: seen once in a CI run).
        assert until(lambda: _accepts(sock_path) or proc.poll() is not None), "the msgq daemon never listened"
        with Session(sock_path) as a, Session(sock_path) as b:
            b.group_subscribe("cli")
            b.ping()
            a.group_sendmsg({"via": "subprocess"}, "cli")
            assert b.group_recvmsg(nonblock=False)[0] == {"via": "subprocess"}
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
        assert not os.path.exists(sock_path)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        assert proc.stderr is not None
        proc.stderr.close()


def _accepts(path: str) -> bool:
    """A connection to the Unix socket ``path`` is accepted (then closed at once)."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(path)
    except OSError:
        return False
    finally:
        probe.close()
    return True
