"""The msgq daemon under abuse: what a real client sees while others misbehave.

Each scenario starts a fresh ``python -m pyzenoh msgq`` process on a Unix socket in a temporary
directory (its own process, so it shares no GIL with the abusers) and prints one line:

* ``idle-lockout``: N connections that never speak fill ``--max-clients N``; time for a new
  client to connect, get its lname and do a ping round trip (it evicts the oldest silent one).
* ``idle-reap``: N silent connections with ``--handshake-timeout 0.5``; time until the daemon
  has closed them all.
* ``big-frames``: 10 MB and 16 MiB messages through the daemon to a reading receiver (MB/s).
* ``stuck-reader``: an 8 MiB burst at a client that reads nothing, while a third client does
  ping round trips (p50/p99/max latency), then the stall disconnect (``--slow-reader-timeout 1``).
* ``malformed``: many connections sending bad frames (random bytes, lying lengths, deep
  nesting, huge declared lengths), in batches, while a healthy client does ping round trips.

    python bench/bench_msgq_abuse.py [--connections 1000] [--malformed 2000]
"""

from __future__ import annotations

import argparse
import os
import random
import selectors
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Self

from pyzenoh.msgq.client import Session
from pyzenoh.msgq.frame import DEFAULT_MAX_FRAME_SIZE, encode_frame
from pyzenoh.msgq.protocol import encode_message
from pyzenoh.msgq.skan import encode

START_TIMEOUT_S = 20.0
WAIT_TIMEOUT_S = 60.0  # upper bound on any wait
GETLNAME = encode_message({"type": "getlname"})


@contextmanager
def daemon(*options: str) -> Iterator[str]:
    with tempfile.TemporaryDirectory(prefix="mqb") as tmp:
        path = os.path.join(tmp, "msgq_socket")
        proc = subprocess.Popen(
            [sys.executable, "-m", "pyzenoh", "msgq", "--socket-file", path, *options],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + START_TIMEOUT_S
            while not os.path.exists(path):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("msgq daemon did not start")
                time.sleep(0.02)
            yield path
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)


def raw(path: str) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(WAIT_TIMEOUT_S)
    sock.connect(path)
    return sock


def wait_closed(socks: list[socket.socket]) -> int:
    selector = selectors.DefaultSelector()
    for sock in socks:
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ)
    remaining = len(socks)
    deadline = time.monotonic() + WAIT_TIMEOUT_S
    try:
        while remaining and time.monotonic() < deadline:
            for key, _ in selector.select(timeout=0.2):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                try:
                    data = sock.recv(65536)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                if not data:
                    selector.unregister(sock)
                    remaining -= 1
    finally:
        selector.close()
    return len(socks) - remaining


def latencies(samples: list[float]) -> str:
    if not samples:
        return "no samples"
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return (
        f"ping p50 {statistics.median(ordered) * 1e3:.2f} ms, p99 {p99 * 1e3:.2f} ms, "
        f"max {ordered[-1] * 1e3:.2f} ms over {len(ordered)}"
    )


class Pinger:
    """A healthy client doing ping round trips on a thread until stopped (bounded)."""

    def __init__(self, path: str) -> None:
        self.session = Session(path, timeout=WAIT_TIMEOUT_S)
        self.samples: list[float] = []
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run)

    def _run(self) -> None:
        try:
            for _ in range(1_000_000):
                if self._stop.is_set():
                    break
                start = time.perf_counter()
                self.session.ping({"x": 1})
                self.samples.append(time.perf_counter() - start)
                time.sleep(0.001)
        except BaseException as exc:  # noqa: BLE001  (reported by report())
            self.error = exc

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(WAIT_TIMEOUT_S)
        self.session.close()

    def report(self) -> str:
        return f"{latencies(self.samples)}" + (f", ERROR {self.error!r}" if self.error else "")


def idle_lockout(n: int) -> None:
    with daemon("--max-clients", str(n), "--handshake-timeout", "0") as path:
        socks = [raw(path) for _ in range(n)]
        try:
            time.sleep(0.5)  # let the daemon accept them all
            start = time.perf_counter()
            with Session(path, timeout=WAIT_TIMEOUT_S) as s:
                s.ping()
                elapsed = time.perf_counter() - start
                evicted = s.stats()["evicted_clients"]
            print(
                f"idle-lockout: {n} silent connections at the cap; new client in and pinged in "
                f"{elapsed * 1e3:.1f} ms (evicted_clients={evicted})"
            )
        finally:
            for sock in socks:
                sock.close()


def idle_reap(n: int) -> None:
    with daemon("--handshake-timeout", "0.5", "--max-clients", str(n + 16)) as path:
        start = time.perf_counter()
        socks = [raw(path) for _ in range(n)]
        try:
            closed = wait_closed(socks)
            elapsed = time.perf_counter() - start
            with Session(path) as s:
                reaped = s.stats()["handshake_timeouts"]
            print(
                f"idle-reap: {closed}/{n} silent connections closed {elapsed:.2f} s after the "
                f"first connect (deadline 0.5 s; handshake_timeouts={reaped})"
            )
        finally:
            for sock in socks:
                sock.close()


def big_frames() -> None:
    with daemon() as path, Session(path, timeout=WAIT_TIMEOUT_S) as tx, Session(path, timeout=WAIT_TIMEOUT_S) as rx:
        rx.group_subscribe("big")
        rx.ping()
        for size in (10_000_000, DEFAULT_MAX_FRAME_SIZE - 1024):  # the header fits in the rest
            body = encode({"blob": b"\x01" * size})
            start = time.perf_counter()
            rounds = 5
            for _ in range(rounds):
                tx.group_sendmsg(body, "big")
                msg, _ = rx.group_recvmsg(nonblock=False)
                assert msg is not None
            elapsed = time.perf_counter() - start
            print(
                f"big-frames: {size / 1e6:.1f} MB x {rounds}: {rounds * size / elapsed / 1e6:.0f} MB/s "
                f"end to end ({elapsed / rounds * 1e3:.0f} ms each)"
            )


def stuck_reader() -> None:
    with daemon("--slow-reader-timeout", "1") as path, Session(path, timeout=WAIT_TIMEOUT_S) as tx:
        stuck = raw(path)
        try:
            stuck.sendall(encode_message({"type": "subscribe", "group": "burst", "instance": "*"}) + GETLNAME)
            with Pinger(path) as pinger:
                start = time.perf_counter()
                pad = b"\x5a" * 4096
                for n in range(2048):
                    tx.group_sendmsg({"n": n, "pad": pad}, "burst")
                tx.ping()
                burst_s = time.perf_counter() - start
                for _ in range(int(WAIT_TIMEOUT_S / 0.05)):
                    if tx.stats()["stalled_disconnects"]:
                        break
                    time.sleep(0.05)
                stall_s = time.perf_counter() - start
            peak = tx.stats()["queue_peak_bytes"]
            assert isinstance(peak, int)
            print(
                f"stuck-reader: 8 MiB burst routed in {burst_s * 1e3:.0f} ms; stuck client "
                f"disconnected after {stall_s:.2f} s (timeout 1 s, peak {peak >> 20} MiB "
                f"pending); third client {pinger.report()}"
            )
        finally:
            stuck.close()


def malformed_payload(rng: random.Random) -> bytes:
    kind = rng.randrange(5)
    if kind == 0:
        return rng.randbytes(rng.randint(1, 512))
    if kind == 1:
        total = rng.randint(0, 64)
        return struct.pack(">IH", total, total + 1)
    if kind == 2:
        item = b"\x04"
        for _ in range(rng.randint(100, 9000)):
            item = b"\x03" + struct.pack(">I", len(item)) + item
        return encode_frame(b"Skan\x01a" + item)
    if kind == 3:
        return struct.pack(">IH", 0xFFFF_FFFF, 10)
    return encode_frame(b"Skan\x04type\x08" + struct.pack(">I", 1 << 30) + b"send")


def malformed(count: int, batch: int = 100) -> None:
    rng = random.Random(1)
    with daemon("--handshake-timeout", "0.5") as path, Pinger(path) as pinger:
        start = time.perf_counter()
        done = 0
        for _ in range(count // batch):
            socks = [raw(path) for _ in range(batch)]
            try:
                for sock in socks:
                    try:
                        sock.sendall(malformed_payload(rng))
                    except OSError:
                        pass
                done += wait_closed(socks)
            finally:
                for sock in socks:
                    sock.close()
        elapsed = time.perf_counter() - start
    print(
        f"malformed: {done} bad connections closed in {elapsed:.2f} s "
        f"({done / elapsed:.0f}/s); healthy client {pinger.report()}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--connections", type=int, default=1000)
    parser.add_argument("--malformed", type=int, default=2000)
    args = parser.parse_args()
    idle_lockout(args.connections)
    idle_reap(args.connections)
    big_frames()
    stuck_reader()
    malformed(args.malformed)


if __name__ == "__main__":
    main()
