"""The live daemon under abuse, over real Unix sockets: idle connections at the client cap,
maximal frames, bursts at slow and stopped readers, malformed input at volume.

Every loop is bounded in count and in time; nothing asserts on how long something took (the
waits only have generous upper bounds).
"""

from __future__ import annotations

import logging
import random
import resource
import selectors
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from pyzenoh.msgq.client import Session
from pyzenoh.msgq.frame import DEFAULT_MAX_FRAME_SIZE, FrameReader, encode_frame
from pyzenoh.msgq.protocol import encode_message
from pyzenoh.msgq.skan import decode, encode
from tests.msgq.support import STEP_TIMEOUT, DaemonThread, RawClient

IDLE_CONNECTIONS = 1000
BURST = 2000  # messages of ~4 KiB: ~8 MiB, twice the 4 MiB that used to cut a reader off
PAD = b"\x5a" * 4096
MALFORMED_CONNECTIONS = 400
MALFORMED_BATCH = 100  # connections open at once
IGNORED_PER_CONNECTION = 5  # ignorable bad frames before the fatal (or never finished) one
SHORT_DEADLINE = 0.5  # handshake_timeout where a test wants the reaping to happen
MAX_POLLS = 1000  # bounded polls: at most MAX_POLLS * POLL_SLEEP seconds
POLL_SLEEP = 0.01

GETLNAME = encode_message({"type": "getlname"})


# -- helpers -----------------------------------------------------------------------------------


def need_fds(count: int) -> None:
    """Raise the soft descriptor limit to ``count`` if the hard limit allows; else skip."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < count:
        if hard != resource.RLIM_INFINITY and hard < count:
            pytest.skip(f"needs {count} file descriptors, the hard limit is {hard}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (count, hard))


def stat(session: Session, name: str) -> int:
    value = session.stats()[name]
    assert isinstance(value, int)
    return value


def wait_until(predicate: Callable[[], bool], what: str) -> None:
    for _ in range(MAX_POLLS):
        if predicate():
            return
        time.sleep(POLL_SLEEP)
    raise AssertionError(f"gave up waiting for {what}")


def connect_raw(path: str) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(STEP_TIMEOUT)
    try:
        sock.connect(path)
    except BaseException:
        sock.close()
        raise
    return sock


@contextmanager
def raw_sockets(path: str, count: int) -> Iterator[list[socket.socket]]:
    socks: list[socket.socket] = []
    try:
        for _ in range(count):
            socks.append(connect_raw(path))
        yield socks
    finally:
        for sock in socks:
            sock.close()


def send_quietly(sock: socket.socket, data: bytes) -> None:
    """Send what the daemon may refuse half way (it closes bad connections at once)."""
    try:
        sock.sendall(data)
    except OSError:
        pass


def wait_all_closed(socks: list[socket.socket], limit: float = 3 * STEP_TIMEOUT) -> int:
    """Read every socket until the daemon closes it (data is discarded); returns how many
    were closed before ``limit`` seconds."""
    selector = selectors.DefaultSelector()
    for sock in socks:
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ)
    remaining = len(socks)
    deadline = time.monotonic() + limit
    try:
        for _ in range(100_000):
            if not remaining or time.monotonic() > deadline:
                break
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


def exchange(sender: Session, receiver: Session, group: str, count: int) -> None:
    """``count`` messages from ``sender`` to ``receiver`` (subscribed to ``group``), each checked."""
    for k in range(count):
        sender.group_sendmsg({"k": k}, group)
        msg, _ = receiver.group_recvmsg(nonblock=False)
        assert msg == {"k": k}


def subscribed_raw(path: str, group: str) -> RawClient:
    raw = RawClient(path)
    raw.send(encode_message({"type": "subscribe", "group": group, "instance": "*"}) + GETLNAME)
    header, _ = raw.read_message()
    assert header == {"type": "getlname"}
    return raw


# -- 1. idle connections -----------------------------------------------------------------------


def test_idle_connections_do_not_lock_clients_out(sock_path: str) -> None:
    """At the cap, each newcomer evicts the oldest connection that never spoke."""
    need_fds(2 * IDLE_CONNECTIONS + 256)
    # No reaping during the test: only the eviction at the cap can let clients in.
    with (
        DaemonThread(sock_path, max_clients=IDLE_CONNECTIONS, handshake_timeout=None) as running,
        raw_sockets(sock_path, IDLE_CONNECTIONS) as idle,
    ):
        for n, sock in enumerate(idle):
            if n % 3 == 1:
                sock.sendall(GETLNAME[:3])  # part of a first frame, never finished
            elif n % 3 == 2:
                sock.sendall(encode_message({"no": "type"}))  # a frame, but no valid command
        wait_until(
            lambda: running.call(lambda: running.daemon.client_count) == IDLE_CONNECTIONS,
            "the daemon to accept every idle connection",
        )
        with Session(sock_path) as a, Session(sock_path) as b:
            b.group_subscribe("work")
            b.ping()
            exchange(a, b, "work", 10)
            stats = a.stats()
            assert stats["evicted_clients"] == 2 and stats["refused_clients"] == 0
            assert stats["clients"] == IDLE_CONNECTIONS and stats["established"] == 2
            # More newcomers evict more silent connections, never the established clients.
            with Session(sock_path) as c:
                assert c.ping({"in": True}) == {"in": True}
            exchange(a, b, "work", 3)
            assert stat(a, "evicted_clients") == 3
        assert wait_all_closed(idle[:3]) == 3  # the three oldest were the ones evicted


def test_cap_full_of_established_clients_refuses_newcomers(sock_path: str) -> None:
    with DaemonThread(sock_path, max_clients=2) as _, Session(sock_path) as a, Session(sock_path) as b:
        refused = RawClient(sock_path)
        try:
            refused.expect_closed()
        finally:
            refused.close()
        assert a.ping() is None and b.ping() is None
        assert stat(a, "refused_clients") == 1 and stat(a, "evicted_clients") == 0


def test_idle_connections_are_reaped_after_the_deadline(sock_path: str) -> None:
    need_fds(2 * IDLE_CONNECTIONS + 256)
    with (
        DaemonThread(sock_path, handshake_timeout=SHORT_DEADLINE) as _,
        Session(sock_path) as keeper,
        raw_sockets(sock_path, IDLE_CONNECTIONS) as idle,
    ):
        big_prefix = struct.pack(">IH", 1_000_000, 40)
        for n, sock in enumerate(idle):
            if n % 4 == 1:
                sock.sendall(GETLNAME[:3])
            elif n % 4 == 2:
                sock.sendall(big_prefix + b"Skan")  # a 1 MB frame that never comes
            elif n % 4 == 3:
                sock.sendall(encode_message({"type": "bogus"}))  # ignored: not a valid command
        assert wait_all_closed(idle) == IDLE_CONNECTIONS
        stats = keeper.stats()
        assert stats["handshake_timeouts"] == IDLE_CONNECTIONS
        assert stats["clients"] == 1 and stats["evicted_clients"] == 0
        # The keeper has been quiet for longer than the deadline: established clients stay.
        assert keeper.ping({"still": "here"}) == {"still": "here"}
        with Session(sock_path) as fresh:
            assert fresh.ping() is None


# -- 2. maximal frames ---------------------------------------------------------------------------


def big_send(total: int, tag: int) -> tuple[bytes, bytes, int]:
    """The header and body of a ``send`` frame whose total length field is exactly ``total``,
    its blob filled with the byte ``tag``, and the blob's length."""
    header = encode({"type": "send", "from": "big", "to": "*", "group": "big", "instance": "*", "seq": tag})
    overhead = len(encode({"blob": b"\x00" * 70_000})) - 70_000  # LENGTH_32 form
    blob_length = total - 2 - len(header) - overhead
    body = encode({"blob": bytes([tag]) * blob_length})
    assert len(encode_frame(header, body)) == 4 + total
    return header, body, blob_length


@pytest.mark.parametrize(
    "totals",
    [[10_000_000, 10_000_000], [DEFAULT_MAX_FRAME_SIZE - 1, DEFAULT_MAX_FRAME_SIZE]],
    ids=["10MB-twice", "16MiB-1-and-16MiB"],
)
def test_maximal_frames_reach_a_reading_receiver(sock_path: str, totals: list[int]) -> None:
    """Big frames back to back: the second one is routed while the first is still pending."""
    with (
        DaemonThread(sock_path) as _,
        Session(sock_path, timeout=3 * STEP_TIMEOUT) as sender,
        Session(sock_path, timeout=3 * STEP_TIMEOUT) as receiver,
    ):
        receiver.group_subscribe("big")
        receiver.ping()
        lengths = []
        for tag, total in enumerate(totals, start=1):
            header, body, blob_length = big_send(total, tag)
            sender.sendmsg(header, body)
            lengths.append(blob_length)
        sender.ping()  # both routed; the receiver has not read a byte yet
        assert stat(sender, "queue_peak_bytes") > totals[0]
        for tag, blob_length in enumerate(lengths, start=1):
            msg, env = receiver.group_recvmsg(nonblock=False)
            assert env["seq"] == tag and msg is not None
            blob = msg["blob"]
            assert isinstance(blob, bytes)
            assert len(blob) == blob_length == blob.count(tag)
        stats = receiver.stats()
        assert stats["slow_disconnects"] == 0 and stats["stalled_disconnects"] == 0
        assert stats["bad_frames"] == 0 and stats["deliveries"] == len(totals)


def test_frame_over_the_limit_is_still_refused(daemon: DaemonThread, sock_path: str) -> None:
    with Session(sock_path) as innocent:
        big = RawClient(sock_path)
        try:
            big.send(struct.pack(">IH", DEFAULT_MAX_FRAME_SIZE + 1, 10))
            big.expect_closed()
        finally:
            big.close()
        assert stat(innocent, "bad_frames") == 1


# -- 3. bursts, slow and stopped readers ---------------------------------------------------------


def burst(sender: Session, group: str, count: int) -> None:
    for n in range(count):
        sender.group_sendmsg({"n": n, "pad": PAD}, group)
    sender.ping()  # every send has been routed: what the reader has not taken is queued


def test_slow_reader_gets_a_burst_in_order(sock_path: str) -> None:
    with (
        DaemonThread(sock_path) as _,
        Session(sock_path) as sender,
        Session(sock_path) as a,
        Session(sock_path) as b,
    ):
        slow = subscribed_raw(sock_path, "burst")
        try:
            b.group_subscribe("chat")
            b.ping()
            burst(sender, "burst", BURST)
            assert stat(sender, "queue_peak_bytes") > 4 * 1024 * 1024  # the old cut-off
            # Now read, slowly, while two other clients keep talking.
            reader = FrameReader()
            received = 0
            for reads in range(100_000):
                if received == BURST:
                    break
                data = slow.sock.recv(16 * 1024)
                assert data, "the daemon closed the slow reader"
                for frame in reader.feed(data):
                    assert decode(frame.header)["group"] == "burst" and frame.body is not None
                    assert decode(frame.body)["n"] == received  # all of them, in order
                    received += 1
                if reads % 16 == 0:
                    exchange(a, b, "chat", 1)
                time.sleep(0.001)
            assert received == BURST
            stats = sender.stats()
            assert stats["slow_disconnects"] == 0 and stats["stalled_disconnects"] == 0
            assert stats["clients"] == 4
        finally:
            slow.close()


def test_stopped_reader_is_disconnected_and_others_keep_going(sock_path: str) -> None:
    with (
        DaemonThread(sock_path) as running,
        Session(sock_path) as sender,
        Session(sock_path) as a,
        Session(sock_path) as b,
    ):
        stuck = subscribed_raw(sock_path, "burst")
        try:
            b.group_subscribe("chat")
            b.ping()
            burst(sender, "burst", BURST)
            # Megabytes are pending for a client that reads nothing; the others are served.
            exchange(a, b, "chat", 50)
            assert stat(sender, "queue_peak_bytes") > 4 * 1024 * 1024
            # Shorten the stall deadline now rather than wait the default.
            running.call(lambda: setattr(running.daemon, "slow_reader_timeout", 0.2))
            wait_until(lambda: stat(sender, "stalled_disconnects") == 1, "the stall disconnect")
            stuck.expect_closed()
            wait_until(lambda: stat(sender, "clients") == 3, "the stuck client to be gone")
            assert stat(sender, "slow_disconnects") == 0  # the byte limit was never reached
            exchange(a, b, "chat", 5)
        finally:
            stuck.close()


def test_stopped_reader_is_disconnected_at_the_message_limit(sock_path: str) -> None:
    with (
        DaemonThread(sock_path, max_queue_messages=200) as _,
        Session(sock_path) as sender,
        Session(sock_path) as a,
        Session(sock_path) as b,
    ):
        stuck = subscribed_raw(sock_path, "burst")
        try:
            b.group_subscribe("chat")
            b.ping()
            burst(sender, "burst", BURST)
            stuck.expect_closed()
            assert stat(sender, "slow_disconnects") == 1
            exchange(a, b, "chat", 5)
        finally:
            stuck.close()


# -- 4. malformed input at volume ----------------------------------------------------------------


def nested(depth: int, rng: random.Random) -> bytes:
    """A LIST/HASH chain ``depth`` levels deep, each level with a 4-byte length."""
    item = b"\x04"  # NULL
    for _ in range(depth):
        if rng.random() < 0.5:
            item = b"\x03" + struct.pack(">I", len(item)) + item  # LIST
        else:
            body = b"\x01k" + item
            item = b"\x02" + struct.pack(">I", len(body)) + body  # HASH
    return item


def ignorable(rng: random.Random) -> bytes:
    """A well-framed, decodable header the daemon ignores (the client stays)."""
    header = rng.choice(
        [
            {"no": "type"},
            {"type": 5},
            {"type": "send"},
            {"type": "send", "group": "g", "instance": None, "to": "*"},
            {"type": "subscribe", "group": ["x"]},
            {"type": "bogus", "junk": rng.randbytes(rng.randint(0, 64))},
        ]
    )
    return encode_message(header, rng.randbytes(rng.randint(0, 32)) or None)


def fatal(rng: random.Random) -> bytes:
    """Input that gets the connection closed: at once, or when its first frame never ends."""
    valid = encode({"type": "send", "group": "g", "instance": "*", "to": "*"})  # "to" last
    kind = rng.randrange(9)
    if kind == 0:  # random bytes
        return rng.randbytes(rng.randint(1, 512))
    if kind == 1:  # truncated header in an honest frame
        return encode_frame(valid[: rng.randint(1, len(valid) - 1)], b"body")
    if kind == 2:  # frame length lies
        total = rng.randint(0, 64)
        return struct.pack(">IH", total, rng.choice([0, total, total + 1, 0xFFFF])) + b"Skan" * 8
    if kind == 3:  # an item that claims more bytes than the header has
        return encode_frame(b"Skan\x04type\x08" + struct.pack(">I", rng.randint(5, 1 << 31)) + b"send")
    if kind == 4:  # deep nesting (the decoder stops at MAX_DEPTH)
        return encode_frame(b"Skan\x01a" + nested(rng.randint(100, 9000), rng))
    if kind == 5:  # huge declared frame: over the limit
        return struct.pack(">IH", rng.randint(DEFAULT_MAX_FRAME_SIZE + 1, 0xFFFF_FFFF), 10)
    if kind == 6:  # huge declared frame within the limit that never arrives
        return struct.pack(">IH", DEFAULT_MAX_FRAME_SIZE, 100) + rng.randbytes(100)
    if kind == 7:  # huge item length
        return encode_frame(b"Skan\x01x\x01\xff\xff\xff\xff" + rng.randbytes(16))
    return encode_frame(b"Skan" + rng.randbytes(rng.randint(1, 2048)))  # random items


def test_malformed_input_at_volume(sock_path: str, caplog: pytest.LogCaptureFixture) -> None:
    rng = random.Random(20100602)
    stop = threading.Event()
    rounds: list[int] = [0]
    failures: list[BaseException] = []

    def healthy_traffic(a: Session, b: Session) -> None:
        try:
            for k in range(100_000):
                if stop.is_set():
                    break
                a.group_sendmsg({"k": k}, "healthy")
                msg, _ = b.group_recvmsg(nonblock=False)
                assert msg == {"k": k}
                assert b.ping({"k": k}) == {"k": k}
                rounds[0] += 1
        except BaseException as exc:  # noqa: BLE001  (reported by the main thread)
            failures.append(exc)

    with (
        caplog.at_level(logging.INFO, logger="pyzenoh.msgq"),
        DaemonThread(sock_path, handshake_timeout=SHORT_DEADLINE) as running,
        Session(sock_path) as a,
        Session(sock_path) as b,
    ):
        b.group_subscribe("healthy")
        b.ping()
        worker = threading.Thread(target=healthy_traffic, args=(a, b))
        worker.start()
        frames = 0
        try:
            for _ in range(MALFORMED_CONNECTIONS // MALFORMED_BATCH):
                with raw_sockets(sock_path, MALFORMED_BATCH) as bad:
                    for sock in bad:
                        parts = [ignorable(rng) for _ in range(IGNORED_PER_CONNECTION)]
                        send_quietly(sock, b"".join([*parts, fatal(rng)]))
                        frames += len(parts) + 1
                    assert wait_all_closed(bad) == MALFORMED_BATCH
                assert not failures
        finally:
            stop.set()
            worker.join(3 * STEP_TIMEOUT)
        assert not failures and not worker.is_alive() and rounds[0] > 0
        assert frames >= 2000
        with Session(sock_path) as fresh:
            stats = fresh.stats()
        kinds = ("bad_frames", "undecodable_headers", "handshake_timeouts", "frame_stalls")
        closed = sum(value for name in kinds if isinstance(value := stats[name], int))
        assert closed == MALFORMED_CONNECTIONS  # each bad connection closed, alone
        assert stats["clients"] == 2 + 1 and stats["established"] == 3
        assert running.thread.is_alive()
        assert a.ping({"end": 1}) == {"end": 1}
    # Thousands of events, a handful of log lines: one per kind (no summary within 60 s).
    lines = [r for r in caplog.records if r.name == "pyzenoh.msgq" and r.levelno >= logging.INFO]
    assert len(lines) <= 10, [r.getMessage()[:120] for r in lines]
