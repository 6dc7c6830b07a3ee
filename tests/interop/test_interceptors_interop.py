"""zenohd's interceptors (downsampling, low_pass_filter, qos/network) with the same
configuration on a real 1.10.2 router and on ``pyzenoh router``, real eclipse-zenoh
clients on 127.0.0.1: what reaches the subscriber must be the same.

Absence is shown without sleeping: after the messages under test, the publisher sends a
sentinel on a key no interceptor touches, over the same links (which keep their order),
and the subscriber waits for it. Downsampling rules run at 0.1 Hz, so a burst (sent in
well under the 10 s period, even on a loaded machine) lets exactly its first message
through, and the count does not depend on timing.
"""

from __future__ import annotations

import json
import queue
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pyzenoh.localnet import free_port
from tests.fixtures.procs import pyzenoh_router_process, start_router, zenoh_config
from tests.waits import WAIT

zenoh = pytest.importorskip("zenoh")

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]

FREQ = 0.1  # one message per 10 s: a burst gives exactly one
CONFIG: dict[str, Any] = {
    "downsampling": [
        {"id": "ds_e", "flows": ["egress"], "messages": ["put"], "rules": [{"key_expr": "ds/e/k/**", "freq": FREQ}]},
        {"id": "ds_i", "flows": ["ingress"], "messages": ["put"], "rules": [{"key_expr": "ds/i/k/**", "freq": FREQ}]},
        {"id": "ds_d", "flows": ["egress"], "messages": ["delete"], "rules": [{"key_expr": "ds/d/k/**", "freq": FREQ}]},
        {"id": "ds_q", "flows": ["ingress"], "messages": ["query"], "rules": [{"key_expr": "qq/i/**", "freq": FREQ}]},
        {"id": "ds_r", "flows": ["egress"], "messages": ["reply"], "rules": [{"key_expr": "qq/r/**", "freq": FREQ}]},
    ],
    "low_pass_filter": [
        {"id": "lp", "flows": ["egress"], "messages": ["put"], "key_exprs": ["lp/k/**"], "size_limit": 100},
        {"id": "lp_q", "flows": ["ingress"], "messages": ["query"], "key_exprs": ["qq/l/**"], "size_limit": 3},
    ],
    "qos": {
        "network": [
            {
                "id": "q",
                "flows": ["egress"],
                "messages": ["put"],
                "key_exprs": ["q/k/**"],
                "overwrite": {"priority": "real_time", "congestion_control": "block", "express": True},
            }
        ]
    },
}


@pytest.fixture(scope="module", params=["zenohd", "pyzenoh"])
def router(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A router with :data:`CONFIG`: its endpoint."""
    if request.param == "zenohd":
        proc = start_router(extra=CONFIG)
        try:
            yield proc.endpoint
        finally:
            proc.stop()
        return
    port = free_port()
    config = {
        "mode": "router",
        "listen": {"endpoints": [f"tcp/127.0.0.1:{port}"]},
        "scouting": {"multicast": {"enabled": False}},
        "adminspace": {"enabled": False},
        **CONFIG,
    }
    with pyzenoh_router_process(config, tmp_path_factory.mktemp("icpt") / "router.json5", [port]):
        yield f"tcp/127.0.0.1:{port}"


class Spy:
    """A real client subscribing to ``prefix/**``; samples in a queue."""

    def __init__(self, session: Any, prefix: str) -> None:
        self.samples: queue.Queue[Any] = queue.Queue()
        self.prefix = prefix
        self.sub = session.declare_subscriber(f"{prefix}/**", self.samples.put)

    def until_sentinel(self, n: int) -> list[Any]:
        """Everything received before sentinel ``n`` (``prefix/end/n``)."""
        got = []
        while True:
            s = self.samples.get(timeout=WAIT)
            if str(s.key_expr) == f"{self.prefix}/end/{n}":
                return got
            got.append(s)


@pytest.fixture(scope="module")
def clients(router: str) -> Iterator[tuple[Any, Any]]:
    pub = zenoh.open(zenoh_config(router))
    sub = zenoh.open(zenoh_config(router))
    try:
        yield pub, sub
    finally:
        pub.close()
        sub.close()


def _ready(pub: Any, spy: Spy) -> None:
    """Sentinels flow end to end (the subscription has reached the router)."""
    for n in range(200):
        pub.put(f"{spy.prefix}/end/ready{n}", b"")
        try:
            s = spy.samples.get(timeout=0.1)
        except queue.Empty:
            continue
        while str(s.key_expr) != f"{spy.prefix}/end/ready{n}":
            s = spy.samples.get(timeout=WAIT)
        return
    raise AssertionError(f"{spy.prefix}: no sentinel came through")


def test_egress_downsampling_shares_one_state_per_rule_across_keys(clients: tuple[Any, Any]) -> None:
    pub, sub = clients
    spy = Spy(sub, "ds/e")
    _ready(pub, spy)
    for i in range(30):
        pub.put(f"ds/e/k/{'xy'[i % 2]}", str(i))
    for i in range(5):
        pub.put("ds/e/other", str(i))  # not under the rule's key: all pass
    pub.put("ds/e/end/1", b"")
    got = spy.until_sentinel(1)
    assert [(str(s.key_expr), s.payload.to_string()) for s in got] == [("ds/e/k/x", "0")] + [
        ("ds/e/other", str(i)) for i in range(5)
    ]
    spy.sub.undeclare()


def test_ingress_downsampling(clients: tuple[Any, Any]) -> None:
    pub, sub = clients
    spy = Spy(sub, "ds/i")
    _ready(pub, spy)
    for i in range(20):
        pub.put("ds/i/k/a", str(i))
    pub.put("ds/i/end/1", b"")
    assert [s.payload.to_string() for s in spy.until_sentinel(1)] == ["0"]
    spy.sub.undeclare()


def test_downsampling_counts_only_the_kinds_it_lists(clients: tuple[Any, Any]) -> None:
    pub, sub = clients
    spy = Spy(sub, "ds/d")
    _ready(pub, spy)
    for i in range(5):
        pub.put("ds/d/k/a", str(i))  # puts: not listed, all pass
        pub.delete("ds/d/k/a")  # deletes: listed, one passes
    pub.put("ds/d/end/1", b"")
    got = spy.until_sentinel(1)
    kinds = [str(s.kind) for s in got]
    assert kinds.count(str(zenoh.SampleKind.PUT)) == 5
    assert kinds.count(str(zenoh.SampleKind.DELETE)) == 1
    spy.sub.undeclare()


def test_low_pass_filter_compares_payload_plus_attachment(clients: tuple[Any, Any]) -> None:
    pub, sub = clients
    spy = Spy(sub, "lp")
    _ready(pub, spy)
    sizes = [(99, 0), (100, 0), (50, 50), (60, 40), (0, 100), (101, 0), (50, 51), (0, 101)]
    for n, (payload, attachment) in enumerate(sizes):
        pub.put(f"lp/k/{n}", b"p" * payload, attachment=b"a" * attachment if attachment else None)
    pub.delete("lp/k/del")  # a kind the item does not list passes
    pub.put("lp/end/1", b"")
    got = [str(s.key_expr) for s in spy.until_sentinel(1)]
    assert got == ["lp/k/0", "lp/k/1", "lp/k/2", "lp/k/3", "lp/k/4", "lp/k/del"]
    spy.sub.undeclare()


def test_qos_overwrite_is_seen_by_the_subscriber(clients: tuple[Any, Any]) -> None:
    pub, sub = clients
    spy = Spy(sub, "q")
    _ready(pub, spy)
    low = {"priority": zenoh.Priority.DATA_LOW, "congestion_control": zenoh.CongestionControl.DROP, "express": False}
    pub.put("q/k/a", b"1", **low)
    pub.put("q/k/b", b"2", **low)
    pub.put("q/end/1", b"", **low)  # a lower priority may be overtaken: the sentinel has the same
    got = spy.until_sentinel(1)
    assert [str(s.key_expr) for s in got] == ["q/k/a", "q/k/b"]
    for s in got:
        assert (s.priority, s.congestion_control, s.express) == (
            zenoh.Priority.REAL_TIME,
            zenoh.CongestionControl.BLOCK,
            True,
        )
    spy.sub.undeclare()


def test_qos_of_keys_no_item_matches_is_untouched(clients: tuple[Any, Any]) -> None:
    pub, sub = clients
    spy = Spy(sub, "nq")
    _ready(pub, spy)
    pub.put("nq/k", b"1", priority=zenoh.Priority.DATA_LOW, congestion_control=zenoh.CongestionControl.DROP)
    pub.put("nq/end/1", b"", priority=zenoh.Priority.DATA_LOW)
    (s,) = spy.until_sentinel(1)
    assert (s.priority, s.congestion_control, s.express) == (
        zenoh.Priority.DATA_LOW,
        zenoh.CongestionControl.DROP,
        False,
    )
    spy.sub.undeclare()


@pytest.fixture(scope="module")
def queryable(clients: tuple[Any, Any]) -> Iterator[None]:
    """A queryable on ``qq/**`` (on the publishing client) answering on the query's key,
    twice under ``qq/r``; the other client's gets reach it."""
    pub, sub = clients

    def answer(q: Any) -> None:
        for n in range(2 if str(q.key_expr).startswith("qq/r/") else 1):
            q.reply(q.key_expr, f"r{n}")

    qabl = pub.declare_queryable("qq/**", answer)
    for _ in range(100):
        if list(sub.get("qq/ready", timeout=1.0)):
            break
    else:
        raise AssertionError("the queryable never answered")
    yield
    qabl.undeclare()


GET_TIMEOUT = 30.0  # a get's own timeout: an intercepted query must end long before it


def _get(session: Any, key: str, payload: bytes | None = None) -> list[str]:
    """The replies' payloads; the query must end by its final, not by its timeout."""
    t0 = time.monotonic()
    replies = session.get(key, payload=payload, timeout=GET_TIMEOUT, consolidation=zenoh.ConsolidationMode.NONE)
    out = [r.ok.payload.to_string() for r in replies]
    assert time.monotonic() - t0 < GET_TIMEOUT / 2, "the query ended by its timeout, not by a final"
    return out


def test_ingress_query_downsampling_ends_the_dropped_queries_at_once(clients: tuple[Any, Any], queryable: None) -> None:
    _, sub = clients
    assert [_get(sub, "qq/i/a") for _ in range(3)] == [["r0"], [], []]


def test_egress_reply_downsampling_drops_replies_not_the_final(clients: tuple[Any, Any], queryable: None) -> None:
    _, sub = clients
    assert [_get(sub, "qq/r/a") for _ in range(2)] == [["r0"], []]


def test_low_pass_filter_on_query_payloads(clients: tuple[Any, Any], queryable: None) -> None:
    _, sub = clients
    assert _get(sub, "qq/l/a", b"12345") == []
    assert _get(sub, "qq/l/a", b"123") == ["r0"]


def test_the_config_round_trips_as_json(tmp_path: Path) -> None:
    """The configuration above is one zenohd accepts (the zenohd run proves it) and
    pyzenoh reads the same way."""
    from pyzenoh.router.config import config_from_dict

    cfg = config_from_dict({"mode": "router", **json.loads(json.dumps(CONFIG))})
    assert cfg.interceptors is not None
    assert [it.id for it in cfg.interceptors.downsampling] == ["ds_e", "ds_i", "ds_d", "ds_q", "ds_r"]
