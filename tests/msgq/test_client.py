"""The blocking Session: connection, queueing and seq matching, timeouts, errors."""

from __future__ import annotations

import os
import socket
import threading

import pytest

from pyzenoh.errors import UsageError
from pyzenoh.msgq.client import ProtocolError, Session, SessionError, SessionTimeout
from pyzenoh.msgq.protocol import encode_message
from pyzenoh.msgq.server import SOCKET_FILE_ENV
from pyzenoh.msgq.skan import SkanError, encode
from tests.msgq.support import DaemonThread, RawClient


def test_connect_failure(sock_dir: str) -> None:
    with pytest.raises(SessionError, match="cannot connect"):
        Session(os.path.join(sock_dir, "nothing-here"))
    with pytest.raises(SessionError):
        Session("tcp/127.0.0.1:1")


def test_env_var(daemon: DaemonThread, sock_path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SOCKET_FILE_ENV, sock_path)
    with Session() as s:
        assert s.target == sock_path and s.lname


def test_daemon_that_never_answers(sock_dir: str) -> None:
    """BIND 10's constructor hung forever here; ours times out."""
    path = os.path.join(sock_dir, "mute")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(path)
        listener.listen(1)  # connect succeeds through the backlog; nobody ever answers
        with pytest.raises(SessionTimeout):
            Session(path, timeout=0.2)
    finally:
        listener.close()


def test_daemon_answers_without_lname(sock_dir: str) -> None:
    path = os.path.join(sock_dir, "odd")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    errors: list[OSError] = []

    def serve() -> None:
        try:
            conn, _ = listener.accept()
            with conn:
                conn.recv(1024)
                conn.sendall(encode_message({"type": "getlname"}, {"name": "wrong"}))
                conn.recv(1024)  # wait for the client to give up
        except OSError as exc:  # pragma: no cover - reported below
            errors.append(exc)

    try:
        listener.bind(path)
        listener.listen(1)
        thread = threading.Thread(target=serve)
        thread.start()
        with pytest.raises(ProtocolError, match="local name"):
            Session(path, timeout=5.0)
        thread.join(10)
        assert not errors
    finally:
        listener.close()


def test_closed_session(daemon: DaemonThread, sock_path: str) -> None:
    s = Session(sock_path)
    s.close()
    s.close()
    assert s.closed
    with pytest.raises(SessionError, match="closed"):
        s.group_sendmsg({}, "g")
    with pytest.raises(SessionError, match="closed"):
        s.group_recvmsg()


def test_recv_timeout_and_nonblock(daemon: DaemonThread, sock_path: str) -> None:
    with Session(sock_path, timeout=5.0) as s:
        assert s.group_recvmsg(nonblock=True) == (None, None)
        with pytest.raises(SessionTimeout):
            s.group_recvmsg(nonblock=False, seq=12345, timeout=0.1)
        with pytest.raises(SessionTimeout):
            s.recvmsg(nonblock=False, timeout=0.0)
        assert s.ping() is None  # still usable after a timeout


def test_end_of_stream_raises(sock_path: str) -> None:
    running = DaemonThread(sock_path).start()
    try:
        s = Session(sock_path)
    finally:
        running.stop()
    with pytest.raises(SessionError, match="closed the connection"):
        s.group_recvmsg(nonblock=False, timeout=10.0)
    assert s.closed


def test_queueing_and_seq_matching(daemon: DaemonThread, sock_path: str) -> None:
    """The isc.cc.Session queue rules: seq=None wants a non-reply, seq=N wants reply N."""
    with Session(sock_path) as me, Session(sock_path) as peer:

        def send(body: dict[str, object], **extra: object) -> None:
            header = {
                "type": "send",
                "from": peer.lname,
                "to": me.lname,
                "group": "q",
                "instance": "*",
                "seq": 99,
                **extra,
            }
            peer.sendmsg(header, body)

        send({"n": "A"})
        send({"n": "B"}, reply=5)
        send({"n": "C"})
        send({"n": "D"}, reply=6)
        peer.sendmsg({"type": "send", "from": peer.lname, "to": me.lname, "group": "q", "instance": "*", "reply": 7})
        assert me.group_recvmsg(nonblock=False, seq=6)[0] == {"n": "D"}
        assert me.has_queued_msgs()
        assert me.group_recvmsg(nonblock=False)[0] == {"n": "A"}
        assert me.group_recvmsg(nonblock=False, seq=5)[0] == {"n": "B"}
        assert me.group_recvmsg(nonblock=False)[0] == {"n": "C"}
        # Header-only messages obey the same filter (BIND 10 returned them regardless).
        assert me.group_recvmsg(nonblock=True) == (None, None)
        msg, env = me.group_recvmsg(nonblock=False, seq=7)
        assert msg is None and env["reply"] == 7
        assert not me.has_queued_msgs()


def test_recvmsg_order_is_env_msg(daemon: DaemonThread, sock_path: str) -> None:
    with Session(sock_path) as a, Session(sock_path) as b:
        b.group_subscribe("o")
        b.ping()
        a.group_sendmsg({"k": "v"}, "o")
        env, msg = b.recvmsg(nonblock=False)
        assert env is not None and env["group"] == "o" and msg == {"k": "v"}


def test_pre_encoded_and_raw_bodies(daemon: DaemonThread, sock_path: str) -> None:
    with Session(sock_path) as a, Session(sock_path) as b:
        b.group_subscribe("pre")
        b.ping()
        a.sendmsg(encode({"type": "send", "group": "pre", "instance": "*", "to": "*"}), encode({"pre": 1}))
        a.group_sendmsg(encode({"raw": 2}), "pre")
        assert b.group_recvmsg(nonblock=False)[0] == {"pre": 1}
        assert b.group_recvmsg(nonblock=False)[0] == {"raw": 2}


def test_group_reply_needs_routing_fields(daemon: DaemonThread, sock_path: str) -> None:
    with Session(sock_path) as s, pytest.raises(UsageError, match="seq"):
        s.group_reply({"from": "x", "group": "g", "instance": "*"}, {})


def test_sequence_numbers(daemon: DaemonThread, sock_path: str) -> None:
    with Session(sock_path) as s:
        assert [s.group_sendmsg({}, "nobody") for _ in range(3)] == [2, 3, 4]
        assert s.group_reply({"from": "x", "group": "g", "instance": "*", "seq": 1}, {}) == 5


def test_concurrent_senders_do_not_interleave(daemon: DaemonThread, sock_path: str) -> None:
    with Session(sock_path) as shared, Session(sock_path) as receiver:
        receiver.group_subscribe("mt")
        receiver.ping()

        def worker(tag: int) -> None:
            for i in range(50):
                shared.group_sendmsg({"tag": tag, "i": i, "pad": "x" * 3000}, "mt")

        threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        got = [receiver.group_recvmsg(nonblock=False)[0] for _ in range(200)]
        for tag in range(4):
            assert [m["i"] for m in got if m and m["tag"] == tag] == list(range(50))


def test_undecodable_frame_from_the_daemon_side(sock_dir: str) -> None:
    """A frame that does not decode raises SkanError from the receive that would have read
    it; the frames around it and the session itself stay usable."""
    path = os.path.join(sock_dir, "fake")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(1)
    errors: list[OSError] = []

    def serve() -> None:
        try:
            conn, _ = listener.accept()
            conn.settimeout(10)
            with conn:
                conn.recv(1024)  # getlname
                conn.sendall(encode_message({"type": "getlname"}, {"lname": "me@fake"}))
                conn.recv(1024)  # first ping
                conn.sendall(encode_message({"type": "send"}, b"Skan\x01a\x28\x05"))
                conn.recv(1024)  # second ping
                conn.sendall(encode_message({"type": "send"}, {"good": 1}))
                conn.recv(1024)  # wait for the client to close
        except OSError as exc:  # pragma: no cover - reported below
            errors.append(exc)

    thread = threading.Thread(target=serve)
    thread.start()
    try:
        with Session(path) as s:
            s.sendmsg({"type": "ping"})
            with pytest.raises(SkanError):
                s.group_recvmsg(nonblock=False, timeout=5.0)
            s.sendmsg({"type": "ping"})
            assert s.group_recvmsg(nonblock=False, timeout=5.0) == ({"good": 1}, {"type": "send"})
    finally:
        thread.join(10)
        listener.close()
    assert not errors


def test_raw_client_helper_sanity(daemon: DaemonThread, sock_path: str) -> None:
    raw = RawClient(sock_path)
    try:
        raw.send(encode_message({"type": "getlname"}))
        assert raw.read_message()[0] == {"type": "getlname"}
    finally:
        raw.close()
