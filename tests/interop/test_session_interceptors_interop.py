"""zenoh's interceptors in a session: the same configuration in a real eclipse-zenoh 1.10.2
client and in a pyzenoh one, each beside a real router and a real client: egress
downsampling (one rule's rate shared by every key it matches, as zenoh's: two keys put
alternately get one rate between them), egress low-pass, ingress low-pass on a
subscriber's session, and a ``qos/network`` overwrite visible at the subscriber."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
import zenoh

import pyzenoh
from tests.fixtures.procs import Proc
from tests.waits import expect

pytestmark = pytest.mark.interop

FREQ = 10.0
PUTS = 200  # over 1 s: one shared rate (~12 here) and a rate per key (~24) stay apart
GAP_S = 0.005


def client(lib: Any, router: Proc, extra: dict[str, Any] | None = None) -> Any:
    c = lib.Config()
    c.insert_json5("mode", '"client"')
    c.insert_json5("connect/endpoints", json.dumps([router.endpoint]))
    c.insert_json5("scouting/multicast/enabled", "false")
    for key, value in (extra or {}).items():
        c.insert_json5(key, json.dumps(value))
    return lib.open(c)


@pytest.fixture(params=["zenoh", "pyzenoh"])
def lib(request: pytest.FixtureRequest) -> Iterator[Any]:
    yield zenoh if request.param == "zenoh" else pyzenoh


class Keys:
    def __init__(self) -> None:
        self.got: list[tuple[str, int, Any]] = []

    def __call__(self, sample: Any) -> None:
        self.got.append((str(sample.key_expr), len(sample.payload.to_bytes()), sample.priority))

    def count(self, key: str) -> int:
        return sum(k == key for k, _, _ in self.got)

    def has(self, key: str) -> bool:
        return self.count(key) > 0


def test_egress_downsampling_and_low_pass(lib: Any, zenohd: Proc) -> None:
    pub = client(
        lib,
        zenohd,
        {
            "downsampling": [
                {"flows": ["egress"], "messages": ["put"], "rules": [{"key_expr": "ids/**", "freq": FREQ}]}
            ],
            "low_pass_filter": [{"flows": ["egress"], "messages": ["put"], "key_exprs": ["ilp/**"], "size_limit": 100}],
        },
    )
    sub = client(zenoh, zenohd)
    try:
        seen = Keys()
        sub.declare_subscriber("ids/**", seen)
        sub.declare_subscriber("ilp/**", seen)
        # through the router once both subscribers are there (a put outside the rules)
        probe = pub.declare_publisher("ilp/probe")
        expect(lambda: probe.put(b"p") or seen.has("ilp/probe"), "the subscriber's declarations reaching the router")
        start = time.monotonic()
        for _ in range(PUTS):
            pub.put("ids/a", b"x")
            pub.put("ids/b", b"y")  # the same rule: one rate for both keys
            time.sleep(GAP_S)
        elapsed = time.monotonic() - start
        pub.put("ilp/small", b"s" * 100)  # size_limit is inclusive
        pub.put("ilp/big", b"b" * 101)
        pub.put("ilp/end", b"e")
        expect(lambda: seen.has("ilp/end"), "the last put")
        passed = seen.count("ids/a") + seen.count("ids/b")
        assert 1 <= passed <= elapsed * FREQ + 2, (passed, elapsed)
        assert seen.has("ilp/small") and not seen.has("ilp/big")
    finally:
        pub.close()
        sub.close()


def test_ingress_low_pass_on_a_subscribers_session(lib: Any, zenohd: Proc) -> None:
    sub = client(
        lib,
        zenohd,
        {"low_pass_filter": [{"flows": ["ingress"], "messages": ["put"], "key_exprs": ["iin/**"], "size_limit": 10}]},
    )
    pub = client(zenoh, zenohd)
    try:
        seen = Keys()
        sub.declare_subscriber("iin/**", seen)
        expect(lambda: pub.put("iin/probe", b"p") or seen.has("iin/probe"), "the subscriber's declaration")
        pub.put("iin/big", b"b" * 11)
        pub.put("iin/small", b"s" * 10)
        expect(lambda: seen.has("iin/small"), "the small put")
        assert not seen.has("iin/big")
    finally:
        pub.close()
        sub.close()


def test_qos_overwrite_is_seen_by_the_subscriber(lib: Any, zenohd: Proc) -> None:
    overwrite = {"priority": "real_time"}
    pub = client(
        lib,
        zenohd,
        {"qos": {"network": [{"id": "q", "messages": ["put"], "key_exprs": ["iq/**"], "overwrite": overwrite}]}},
    )
    sub = client(zenoh, zenohd)
    try:
        seen = Keys()
        sub.declare_subscriber("iq/**", seen)
        sub.declare_subscriber("inq/**", seen)
        expect(lambda: pub.put("inq/probe", b"p") or seen.has("inq/probe"), "the subscriber's declarations")
        pub.put("iq/k", b"x", priority=lib.Priority.DATA_LOW)
        pub.put("inq/k", b"x", priority=lib.Priority.DATA_LOW)
        expect(lambda: seen.has("iq/k") and seen.has("inq/k"), "both puts")
        priorities = {k: p for k, _, p in seen.got}
        assert priorities["iq/k"] == zenoh.Priority.REAL_TIME
        assert priorities["inq/k"] == zenoh.Priority.DATA_LOW
    finally:
        pub.close()
        sub.close()
