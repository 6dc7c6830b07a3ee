"""A misbehaving client affects only itself: never the daemon, never the other clients.

Each test ends by checking that an innocent client is still served and that a new client
can still connect (``assert_daemon_healthy``).
"""

from __future__ import annotations

import socket
import struct
import time

import pytest

from pyzenoh.msgq.client import Session
from pyzenoh.msgq.frame import encode_frame
from pyzenoh.msgq.protocol import encode_message
from pyzenoh.msgq.skan import encode
from tests.msgq.support import DaemonThread, RawClient

GETLNAME = encode_message({"type": "getlname"})
SUBSCRIBE_FLOOD = encode_message({"type": "subscribe", "group": "flood", "instance": "*"})
BIG = {"blob": b"\xaa" * 65536}
MAX_FLOOD_SENDS = 400  # hard bound on every flooding loop (25 MiB at most)
SMALL_FRAMES = 100_000  # max_frame_size for a 256 KiB queue (it must hold two maximal frames)


def assert_daemon_healthy(sock_path: str, *others: Session) -> None:
    for other in others:
        assert other.ping({"still": "here"}) == {"still": "here"}
    with Session(sock_path) as fresh, Session(sock_path) as peer:
        peer.group_subscribe("health")
        peer.ping()
        fresh.group_sendmsg({"ok": 1}, "health")
        assert peer.group_recvmsg(nonblock=False)[0] == {"ok": 1}


def stat(session: Session, name: str) -> int:
    value = session.stats()[name]
    assert isinstance(value, int)
    return value


def settled_clients(session: Session, expected: int) -> int:
    """The daemon's client count once closes it has not yet seen have landed (bounded poll)."""
    count = stat(session, "clients")
    for _ in range(500):
        if count == expected:
            break
        time.sleep(0.01)
        count = stat(session, "clients")
    return count


@pytest.mark.parametrize(
    "header",
    [
        b"Skab\x01a\x04",  # bad magic
        b"Sk",  # shorter than the magic
        b"Skan\x01a\x28\x05ab",  # truncated item
        b"Skan\x01a\x38\x01x",  # undefined length form (BIND 10: UnboundLocalError)
        b"Skan\x01a\x28\x01\xff",  # invalid UTF-8 (BIND 10: UnicodeDecodeError)
        b"Skan\x04type\x26\x03abc",  # bad INT text (BIND 10: ValueError)
    ],
)
def test_undecodable_header(daemon: DaemonThread, sock_path: str, header: bytes) -> None:
    with Session(sock_path) as innocent:
        bad = RawClient(sock_path)
        try:
            bad.send(encode_frame(header, b"body"))
            bad.expect_closed()
        finally:
            bad.close()
        assert stat(innocent, "undecodable_headers") == 1
        assert_daemon_healthy(sock_path, innocent)


@pytest.mark.parametrize(
    "prefix",
    [
        struct.pack(">IH", 1, 0),  # total < 2
        struct.pack(">IH", 10, 0),  # header length 0
        struct.pack(">IH", 5, 9),  # header longer than the frame
        struct.pack(">IH", 2**31, 10),  # over max_frame_size: refused before buffering
    ],
)
def test_bad_frame_prefix(daemon: DaemonThread, sock_path: str, prefix: bytes) -> None:
    with Session(sock_path) as innocent:
        bad = RawClient(sock_path)
        try:
            bad.send(prefix)
            bad.expect_closed()
        finally:
            bad.close()
        assert stat(innocent, "bad_frames") == 1
        assert_daemon_healthy(sock_path, innocent)


def test_missing_fields_are_ignored_and_client_kept(daemon: DaemonThread, sock_path: str) -> None:
    with Session(sock_path) as innocent:
        bad = RawClient(sock_path)
        try:
            for header in (
                {"no": "type"},
                {"type": "send", "group": "g", "instance": "*"},  # no "to"
                {"type": "send", "to": "*", "instance": "*"},  # no "group"
                {"type": "subscribe", "group": "g"},  # no "instance"
                {"type": "send", "group": None, "instance": "*", "to": "*"},  # explicit NULL
            ):
                bad.send(encode_message(header, {"x": 1}))
            bad.send(encode_frame(b"Skan"))  # the empty header BIND 10's sendmsg({}) produced
            bad.send(GETLNAME)
            header, body = bad.read_message()
            assert header == {"type": "getlname"} and body is not None
        finally:
            bad.close()
        assert stat(innocent, "invalid_headers") == 6
        assert_daemon_healthy(sock_path, innocent)


@pytest.mark.parametrize("hard_reset", [False, True])
def test_client_resets_with_unread_data(daemon: DaemonThread, sock_path: str, hard_reset: bool) -> None:
    with Session(sock_path) as sender:
        victim = RawClient(sock_path)
        victim.send(SUBSCRIBE_FLOOD + GETLNAME)
        victim.read_frame()
        for _ in range(8):
            sender.group_sendmsg(BIG, "flood")
        sender.ping()  # the daemon has written (or queued) everything for the victim
        if hard_reset:
            victim.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        victim.close()  # unread data: Linux answers with a reset (BIND 10 crashed here)
        for _ in range(4):
            sender.group_sendmsg(BIG, "flood")  # writes to a dead peer: EPIPE/ECONNRESET
        assert_daemon_healthy(sock_path, sender)
        assert settled_clients(sender, 1) == 1


def test_half_sent_frame_does_not_stall_others(daemon: DaemonThread, sock_path: str) -> None:
    with Session(sock_path) as a, Session(sock_path) as b:
        slow = RawClient(sock_path)
        try:
            slow.send(GETLNAME[:3])  # 3 of the 6 prefix bytes (BIND 10 stalled here)
            b.group_subscribe("busy")
            b.ping()
            a.group_sendmsg({"n": 1}, "busy")
            assert b.group_recvmsg(nonblock=False)[0] == {"n": 1}
            assert_daemon_healthy(sock_path, a, b)
            slow.send(GETLNAME[3:10])
            assert_daemon_healthy(sock_path, a)
            slow.send(GETLNAME[10:])
            header, _ = slow.read_message()  # the completed frame is served
            assert header == {"type": "getlname"}
        finally:
            slow.close()


def test_half_sent_frame_then_close(daemon: DaemonThread, sock_path: str) -> None:
    with Session(sock_path) as innocent:
        for cut in (3, 6, 10):
            quitter = RawClient(sock_path)
            quitter.send(GETLNAME[:cut])
            quitter.close()
        assert_daemon_healthy(sock_path, innocent)
        assert settled_clients(innocent, 1) == 1


def test_connect_and_leave_at_once(daemon: DaemonThread, sock_path: str) -> None:
    for _ in range(20):
        RawClient(sock_path).close()
    assert_daemon_healthy(sock_path)


def test_slow_reader_is_disconnected(sock_path: str) -> None:
    with (
        DaemonThread(sock_path, max_queue_bytes=256 * 1024, max_frame_size=SMALL_FRAMES) as _,
        Session(sock_path) as sender,
    ):
        slow = RawClient(sock_path)
        try:
            slow.send(SUBSCRIBE_FLOOD + GETLNAME)
            slow.read_frame()
            for i in range(MAX_FLOOD_SENDS):
                sender.group_sendmsg(BIG, "flood")
                if i % 8 == 7 and stat(sender, "slow_disconnects"):
                    break
            assert stat(sender, "slow_disconnects") == 1
            assert settled_clients(sender, 1) == 1
            slow.expect_closed()
        finally:
            slow.close()
        assert_daemon_healthy(sock_path, sender)


def test_slow_reader_drop_policy(sock_path: str) -> None:
    with (
        DaemonThread(sock_path, max_queue_bytes=256 * 1024, max_frame_size=SMALL_FRAMES, slow_reader="drop") as _,
        Session(sock_path) as sender,
    ):
        slow = RawClient(sock_path)
        try:
            slow.send(SUBSCRIBE_FLOOD + GETLNAME)
            slow.read_frame()
            sent = 0
            for sent in range(1, MAX_FLOOD_SENDS + 1):
                sender.group_sendmsg(BIG, "flood")
                if sent % 8 == 0 and stat(sender, "queue_drops"):
                    break
            drops = stat(sender, "queue_drops")
            assert drops >= 1
            assert settled_clients(sender, 2) == 2  # still connected
            assert_daemon_healthy(sock_path, sender)
            # The slow client drains what was kept, then is served normally again.
            slow.send(GETLNAME)
            received = 0
            for _ in range(MAX_FLOOD_SENDS + 1):
                header, _ = slow.read_message()
                if header == {"type": "getlname"}:
                    break
                received += 1
            assert received + drops == sent
        finally:
            slow.close()


def test_client_limit(sock_path: str) -> None:
    with DaemonThread(sock_path, max_clients=2) as _, Session(sock_path) as a, Session(sock_path) as b:
        refused = RawClient(sock_path)
        try:
            refused.expect_closed()
        finally:
            refused.close()
        assert a.ping() is None and b.ping() is None


def test_oversized_frame_is_refused(sock_path: str) -> None:
    with DaemonThread(sock_path, max_frame_size=4096) as _, Session(sock_path) as innocent:
        big = RawClient(sock_path)
        try:
            big.send(encode_message({"type": "ping"}, encode({"x": "y" * 5000})))
            big.expect_closed()
        finally:
            big.close()
        assert innocent.ping({"small": 1}) == {"small": 1}
