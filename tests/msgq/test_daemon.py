"""Routing rules and request/reply over real Unix sockets (daemon in-process, own thread).

"Nothing was delivered" is proven by ordering, never by sleeping: the daemon handles one
client's frames in order and writes to one client in order, so a marker sent after the
message under test arrives after it if it was delivered at all. A ping round trip makes sure
a client's earlier frames (subscribe, unsubscribe) have been processed.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pyzenoh.msgq.client import Session
from pyzenoh.msgq.frame import encode_frame
from pyzenoh.msgq.protocol import encode_message
from pyzenoh.msgq.skan import Dialect, encode
from tests.msgq.support import DaemonThread, RawClient

MARK = {"marker": True}


@pytest.fixture
def sessions(daemon: DaemonThread, sock_path: str) -> Iterator[list[Session]]:
    opened = [Session(sock_path) for _ in range(4)]
    try:
        yield opened
    finally:
        for s in opened:
            s.close()


def mark(sender: Session, receiver: Session) -> None:
    sender.group_sendmsg(MARK, "marker-group", to=receiver.lname)


def next_is_marker(receiver: Session) -> None:
    msg, env = receiver.group_recvmsg(nonblock=False)
    assert msg == MARK, (msg, env)


def test_lnames(sessions: list[Session]) -> None:
    lnames = {s.lname for s in sessions}
    assert len(lnames) == 4
    assert all("@" in name for name in lnames)


def test_getlname_again(sessions: list[Session]) -> None:
    s = sessions[0]
    s.sendmsg({"type": "getlname"})
    env, msg = s.recvmsg(nonblock=False)
    assert env == {"type": "getlname"} and msg == {"lname": s.lname}


def test_subscribe_send_receive(sessions: list[Session]) -> None:
    s1, s2 = sessions[:2]
    s2.group_subscribe("g1", "i1")
    s2.ping()
    seq = s1.group_sendmsg({"hello": "a"}, "g1", "i1")
    msg, env = s2.group_recvmsg(nonblock=False)
    assert msg == {"hello": "a"}
    assert env == {"type": "send", "from": s1.lname, "to": "*", "group": "g1", "instance": "i1", "seq": seq}
    assert seq == 2  # BIND 10's first seq


def test_unsubscribe(sessions: list[Session]) -> None:
    s1, s2 = sessions[:2]
    s2.group_subscribe("g2")
    s2.group_unsubscribe("g2")
    s2.ping()  # BIND 10's own test raced here; the ping makes the order certain
    s1.group_sendmsg({"x": 1}, "g2")
    mark(s1, s2)
    next_is_marker(s2)


def test_instance_matching(sessions: list[Session]) -> None:
    sender, star, inst1, inst2 = sessions
    star.group_subscribe("g")
    inst1.group_subscribe("g", "i1")
    inst2.group_subscribe("g", "i2")
    for s in (star, inst1, inst2):
        s.ping()
    sender.group_sendmsg({"n": 1}, "g", "i1")
    sender.group_sendmsg({"n": 2}, "g")  # instance "*": wildcard subscribers only
    for s in (star, inst1, inst2):
        mark(sender, s)
    assert star.group_recvmsg(nonblock=False)[0] == {"n": 1}
    assert star.group_recvmsg(nonblock=False)[0] == {"n": 2}
    next_is_marker(star)
    assert inst1.group_recvmsg(nonblock=False)[0] == {"n": 1}
    next_is_marker(inst1)
    next_is_marker(inst2)


def test_directed_send_self_and_unknown(sessions: list[Session]) -> None:
    s1, s2 = sessions[:2]
    s1.group_subscribe("g4", "i4")
    s1.ping()
    s1.group_sendmsg({"to": "self"}, "g4", "i4")  # subscribed sender: not delivered to itself
    s1.group_sendmsg({"to": "self"}, "g4", "i4", to=s1.lname)
    s1.group_sendmsg({"to": "nobody"}, "g4", "i4", to="no-such@lname")
    seq = s1.group_sendmsg({"direct": 1}, "g4", "i4", to=s2.lname)  # s2 is not subscribed
    msg, env = s2.group_recvmsg(nonblock=False)
    assert msg == {"direct": 1}
    assert (env["from"], env["to"], env["group"], env["instance"], env["seq"]) == (s1.lname, s2.lname, "g4", "i4", seq)
    mark(s2, s1)
    next_is_marker(s1)


def test_no_subscribers_and_want_answer(sessions: list[Session]) -> None:
    s1 = sessions[0]
    s1.group_sendmsg({"x": 1}, "empty-group")  # silently dropped
    seq = s1.group_sendmsg({"x": 1}, "empty-group", want_answer=True)
    msg, env = s1.group_recvmsg(nonblock=False, seq=seq)
    assert msg == {"result": [-1, "No such recipient"]}
    assert env["from"] == "msgq" and env["reply"] == seq and env["to"] == s1.lname


def test_request_reply_bind10_style(sessions: list[Session]) -> None:
    client, server, noise = sessions[:3]
    server.group_subscribe("Boss")
    client.group_subscribe("Broadcast")
    server.ping()
    client.ping()
    seq = client.group_sendmsg({"command": ["status"]}, "Boss")
    noise.group_sendmsg({"news": 1}, "Broadcast")
    request, routing = server.group_recvmsg(nonblock=False)
    assert request == {"command": ["status"]}
    reply_seq = server.group_reply(routing, {"result": [0, "ok"]})
    answer, env = client.group_recvmsg(nonblock=False, seq=seq)
    assert answer == {"result": [0, "ok"]}
    assert env["reply"] == seq and env["seq"] == reply_seq and env["to"] == client.lname
    # The broadcast read while waiting for the reply was kept for later (its order kept).
    assert client.has_queued_msgs()
    assert client.group_recvmsg(nonblock=True) == (
        {"news": 1},
        {"type": "send", "from": noise.lname, "to": "*", "group": "Broadcast", "instance": "*", "seq": 2},
    )
    assert not client.has_queued_msgs()
    assert client.group_recvmsg(nonblock=True) == (None, None)


def test_header_re_encoded_body_untouched(daemon: DaemonThread, sock_path: str) -> None:
    receiver = RawClient(sock_path)
    sender = RawClient(sock_path)
    try:
        receiver.send(encode_message({"type": "subscribe", "group": "raw", "instance": "*"}))
        receiver.send(encode_message({"type": "getlname"}))
        lname = receiver.read_message()[1]["lname"]  # type: ignore[index]
        # Non-minimal length forms, a forged from, a non-Skan body, then a header-only copy.
        header = (
            b"Skan\x04type\x08\x00\x00\x00\x04send\x05group\x18\x00\x03raw"
            b"\x08instance\x28\x01*\x02to\x28\x01*\x04from\x28\x06forged"
        )
        sender.send(encode_frame(header, b"not-skan-body") + encode_frame(header))
        sender.send(encode_message({"type": "send", "group": "raw", "instance": "*", "to": lname}, b"x"))
        f1, f2, f3 = (receiver.read_frame() for _ in range(3))
        expected = encode({"type": "send", "group": "raw", "instance": "*", "to": "*", "from": "forged"})
        assert (f1.header, f1.body) == (expected, b"not-skan-body")
        assert (f2.header, f2.body) == (expected, None)
        assert f3.body == b"x"
    finally:
        sender.close()
        receiver.close()


def test_stats_and_ping(sessions: list[Session]) -> None:
    s1, s2 = sessions[:2]
    s2.group_subscribe("st")
    s2.ping()
    s1.group_sendmsg({}, "st")
    stats = s1.stats()
    assert stats["clients"] == 4
    assert stats["subscriptions"] == 1
    assert stats["sends"] == 1 and stats["deliveries"] == 1
    assert s1.ping({"echo": [1, 2]}) == {"echo": [1, 2]}
    assert s1.ping() is None


def test_subtypes_over_sockets(sessions: list[Session]) -> None:
    sender, promisc, meonly, target = sessions
    promisc.group_subscribe("dbg", subtype="promisc")
    meonly.group_subscribe("dbg", subtype="meonly")
    promisc.ping()
    meonly.ping()
    sender.group_sendmsg({"n": 1}, "dbg", to=target.lname)
    sender.group_sendmsg({"n": 2}, "dbg")
    assert target.group_recvmsg(nonblock=False)[0] == {"n": 1}
    assert promisc.group_recvmsg(nonblock=False)[0] == {"n": 1}
    assert promisc.group_recvmsg(nonblock=False)[0] == {"n": 2}
    mark(sender, meonly)
    next_is_marker(meonly)


def test_unknown_command_ignored(sessions: list[Session]) -> None:
    s = sessions[0]
    s.sendmsg({"type": "members"})
    s.sendmsg({"type": "stop"})
    assert s.ping({"alive": True}) == {"alive": True}


def test_seed_dialect_client(daemon: DaemonThread, sock_path: str) -> None:
    with Session(sock_path, dialect=Dialect.SEED) as seed, Session(sock_path) as typed:
        assert isinstance(seed.lname, str) and seed.lname != typed.lname
        seed.group_subscribe("mixed")
        seed.ping()
        typed.group_sendmsg({"n": 1}, "mixed")
        msg, env = seed.group_recvmsg(nonblock=False)
        assert msg == {"n": 1} and env["seq"] == 2 and env["from"] == typed.lname
        typed.group_subscribe("back")
        typed.ping()
        seq = seed.group_sendmsg({"n": 1}, "back")
        msg, env = typed.group_recvmsg(nonblock=False)
        assert env["seq"] == seq and env["from"] == seed.lname
        assert msg == {"n": b"1"}  # the body is opaque to msgq: still seed-encoded
        reply_seq = typed.group_reply(env, {"ok": True})
        msg, env = seed.group_recvmsg(nonblock=False, seq=seq)
        assert env["seq"] == reply_seq and msg == {"ok": True}


def test_tcp_listener(sock_dir: str) -> None:
    with DaemonThread(None, ("tcp/127.0.0.1:0",), unix=False) as running:
        host, port = running.daemon.tcp_addresses[0]
        with Session(f"tcp/{host}:{port}") as a, Session(f"tcp/{host}:{port}") as b:
            b.group_subscribe("t")
            b.ping()
            a.group_sendmsg({"over": "tcp"}, "t")
            assert b.group_recvmsg(nonblock=False)[0] == {"over": "tcp"}


def test_inject_and_observer_on_the_daemon(daemon: DaemonThread, sock_path: str) -> None:
    seen: list[tuple[str, bytes | None, str]] = []

    class Observer:
        def on_send(self, header: dict[str, object], body: bytes | None, sender_lname: str) -> bool:
            seen.append((str(header["group"]), body, sender_lname))
            return False

    daemon.call(lambda: daemon.daemon.set_observer(Observer()))
    with Session(sock_path) as a, Session(sock_path) as b:
        b.group_subscribe("bridge")
        b.ping()
        a.group_sendmsg({"k": 1}, "bridge")
        assert b.group_recvmsg(nonblock=False)[0] == {"k": 1}
        header = {"from": "remote@zenoh", "to": "*", "group": "bridge", "instance": "*", "seq": 77}
        assert daemon.call(lambda: daemon.daemon.inject(header, encode({"from": "outside"}))) == 1
        msg, env = b.group_recvmsg(nonblock=False)
        assert msg == {"from": "outside"} and env["from"] == "remote@zenoh" and env["seq"] == 77
        # From a foreign thread (this one), as a Zenoh callback would.
        daemon.daemon.inject_threadsafe({**header, "seq": 78, "to": b.lname}, None)
        msg, env = b.group_recvmsg(nonblock=False)
        assert msg is None and env["seq"] == 78 and env["to"] == b.lname
    assert seen == [("bridge", encode({"k": 1}), a.lname)]


def test_many_clients_fan_out(daemon: DaemonThread, sock_path: str) -> None:
    receivers = [Session(sock_path) for _ in range(20)]
    try:
        for r in receivers:
            r.group_subscribe("fan")
            r.ping()
        with Session(sock_path) as sender:
            for i in range(10):
                sender.group_sendmsg({"i": i}, "fan")
        for r in receivers:
            assert [r.group_recvmsg(nonblock=False)[0] for _ in range(10)] == [{"i": i} for i in range(10)]
    finally:
        for r in receivers:
            r.close()


def test_raw_bind10_getlname_frame(daemon: DaemonThread, sock_path: str) -> None:
    """The exact bytes a BIND 10 Session sends get BIND 10's answer shape."""
    raw = RawClient(sock_path)
    try:
        raw.send(bytes.fromhex("000000150013536b616e047479706528086765746c6e616d65"))
        header, body = raw.read_message()
        assert header == {"type": "getlname"}
        assert body is not None and isinstance(body["lname"], str)
    finally:
        raw.close()
