"""A BIND 10-style msgq client and a real eclipse-zenoh client meet in ``pyzenoh router --msgq``."""

from __future__ import annotations

import queue
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pyzenoh.msgq import Session, decode, encode
from pyzenoh.msgq.bridge import msgq_key, parse_msgq_key
from tests.fixtures.pyzenoh_router import RouterProc, run_router, subscribed, zenoh, zenoh_config

pytestmark = pytest.mark.interop


@pytest.fixture(scope="module")
def bridged() -> Iterator[tuple[RouterProc, str]]:
    # Unix socket paths must stay short: use a short temporary directory.
    with tempfile.TemporaryDirectory(prefix="mqb") as tmp:
        sock = str(Path(tmp) / "msgq.sock")
        with run_router(Path(tmp), "--msgq", sock) as router:
            deadline = time.monotonic() + 10
            while not Path(sock).exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            yield router, sock


def test_key_space_round_trip() -> None:
    for group, instance in [("Boss", "*"), ("a/b", "@x"), ("", ""), ("é%", "$*")]:
        assert parse_msgq_key(msgq_key(group, instance)) == (group, instance)
    assert msgq_key("Boss", "*") == "@msgq/Boss/%2A"


def test_msgq_send_reaches_zenoh_subscriber(bridged) -> None:  # type: ignore[no-untyped-def]
    router, sock = bridged
    z = zenoh.open(zenoh_config(router.endpoint))
    got: queue.Queue[Any] = queue.Queue()
    try:
        z.declare_subscriber("@msgq/**", got.put)
        subscribed(router.endpoint, "@msgq/Boss/%2A")
        with Session(sock) as cc:
            seq = cc.group_sendmsg({"command": ["ping"]}, "Boss")
            sample = got.get(timeout=10)
            assert str(sample.key_expr) == "@msgq/Boss/%2A"
            assert decode(sample.payload.to_bytes()) == {"command": ["ping"]}
            header = decode(sample.attachment.to_bytes())
            assert header["from"] == cc.lname and header["seq"] == seq and header["group"] == "Boss"
            assert str(sample.encoding) == "application/x-bind10-skan"
    finally:
        z.close()


def test_zenoh_put_reaches_msgq_subscriber_and_replies_work(bridged) -> None:  # type: ignore[no-untyped-def]
    router, sock = bridged
    z = zenoh.open(zenoh_config(router.endpoint))
    try:
        # A Zenoh "service" answering msgq requests on group Resolver.
        def answer(sample: Any) -> None:
            req = decode(sample.attachment.to_bytes())
            reply_header = {"to": req["from"], "reply": req["seq"], "from": "zenoh-resolver"}
            z.put(str(sample.key_expr), encode({"result": [0, "pong"]}), attachment=encode(reply_header))

        z.declare_subscriber("@msgq/Resolver/**", answer)
        subscribed(router.endpoint, "@msgq/Resolver/%2A")
        with Session(sock) as cc, Session(sock) as listener:
            listener.group_subscribe("Events")
            listener.ping()  # the subscription is in place once ping returns
            z.put(msgq_key("Events", "*"), encode({"event": "zone-loaded"}))
            msg, env = listener.group_recvmsg(nonblock=False, timeout=10)
            assert msg == {"event": "zone-loaded"} and env["group"] == "Events"
            # Plain (non-Skan) Zenoh payloads arrive wrapped, never undecodable.
            z.put(msgq_key("Events", "*"), b"raw bytes")
            msg, _ = listener.group_recvmsg(nonblock=False, timeout=10)
            assert msg == {"zenoh_payload": b"raw bytes"}
            # BIND 10-style request/reply across the bridge.
            seq = cc.group_sendmsg({"command": ["ping"]}, "Resolver")
            answer_msg, answer_env = cc.group_recvmsg(nonblock=False, seq=seq, timeout=10)
            assert answer_msg == {"result": [0, "pong"]} and answer_env["reply"] == seq
    finally:
        z.close()
