"""Differential check: real eclipse-zenoh 1.10.2 sessions observe the same things through a
real zenoh router (a zenoh session in router mode) and through ``pyzenoh router``.

Each scenario returns what the sessions' API reported (samples, replies, matching status);
the two lists must be equal. Only scenarios whose outcome does not depend on which
queryable a router picks first are used.
"""

from __future__ import annotations

import contextlib
import itertools
import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.waits import WAIT, expect, passed_on, until, value_of

zenoh = pytest.importorskip("zenoh")

pytestmark = pytest.mark.interop

#: How long an absence is given to show (a status that must stay false); everything that
#: should happen is awaited instead, bounded, and recorded as it then is.
ABSENCE = 0.2
STARTUP_TIMEOUT = 20.0


def session_config(endpoint: str, mode: str) -> Any:
    conf = zenoh.Config()
    conf.insert_json5("mode", f'"{mode}"')
    conf.insert_json5("connect/endpoints", f'["{endpoint}"]')
    conf.insert_json5("scouting/multicast/enabled", "false")
    if mode == "peer":
        conf.insert_json5("listen/endpoints", '["tcp/127.0.0.1:0"]')
        conf.insert_json5("scouting/gossip/enabled", "false")
    return conf


class Sessions:
    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self.opened: list[Any] = []

    def open(self, mode: str = "client") -> Any:
        s = zenoh.open(session_config(self.endpoint, mode))
        self.opened.append(s)
        return s

    def close_all(self) -> None:
        for s in self.opened:
            with contextlib.suppress(Exception):  # some were closed by the scenario
                s.close()


def liveliness(z: Sessions, mode: str) -> list[Any]:
    """Each step waits for what a's subscriber (or a get) can observe of it, not a time:
    under load a fixed settling time was once too short (CI with parallel workers)."""
    a, b = z.open(mode), z.open()
    tb = b.liveliness().declare_token("lv/b")
    ta = a.liveliness().declare_token("lv/a")
    expect(lambda: "lv/b" in tokens(a), "a never saw b's token")
    with_history: list[tuple[str, str]] = []
    without: list[tuple[str, str]] = []
    a.liveliness().declare_subscriber(
        "lv/**", lambda s: with_history.append((str(s.key_expr), str(s.kind))), history=True
    )
    a.liveliness().declare_subscriber("lv/**", lambda s: without.append((str(s.key_expr), str(s.kind))), history=False)
    # The subscribers stand once they see a probe token of b's come and go. A probe
    # declared before a's (future-only) subscriber reached the router is never reported:
    # a new probe until one is seen.
    deadline = time.monotonic() + WAIT
    for n in itertools.count():
        probe_key = f"lv/probe/{n}"
        probe = b.liveliness().declare_token(probe_key)
        seen = until(lambda k=probe_key: (k, "SampleKind.PUT") in without, 1.0)  # type: ignore[misc]
        probe.undeclare()
        if seen:
            expect(lambda k=probe_key: (k, "SampleKind.DELETE") in without, "a's subscriber never saw the probe go")  # type: ignore[misc]
            break
        assert time.monotonic() < deadline, "a's subscriber never saw a probe of b's"
    tc = b.liveliness().declare_token("lv/c")
    expect(lambda: ("lv/c", "SampleKind.PUT") in without, "a's subscriber never saw lv/c")
    # (a get can come back empty under load, through the real router too: the first
    # answer that names tokens is the one compared)
    got = value_of(lambda: tokens(a))
    for token in (tb, tc, ta):
        token.undeclare()
    expect(
        lambda: {("lv/b", "SampleKind.DELETE"), ("lv/c", "SampleKind.DELETE")} <= set(without),
        "a's subscriber never saw b's tokens go",
    )
    d = z.open()
    d.liveliness().declare_token("lv/d")
    expect(lambda: ("lv/d", "SampleKind.PUT") in without, "a's subscriber never saw lv/d")
    d.close()  # its token goes with the session
    expect(lambda: ("lv/d", "SampleKind.DELETE") in without, "a's subscriber never saw lv/d go")

    # Once in a while the session sees its own token twice through the real router (its
    # local PUT and the router's answer to the history interest): duplicates are not
    # what is compared.
    def seen(items: list[tuple[str, str]]) -> list[tuple[str, str]]:
        return sorted({i for i in items if not i[0].startswith("lv/probe/")})

    return [seen(with_history), seen(without), got]


def tokens(session: Any) -> list[str]:
    return sorted(str(r.ok.key_expr) for r in session.liveliness().get("lv/**", timeout=2) if r.ok)


def matching(z: Sessions, mode: str) -> list[Any]:
    a, b, c = z.open(mode), z.open(), z.open()
    pub = a.declare_publisher("mt/x")
    querier = a.declare_querier("mq/x")
    time.sleep(ABSENCE)  # an absence: no router may report a match yet
    out: list[Any] = [pub.matching_status.matching, querier.matching_status.matching]
    own = a.declare_subscriber("mt/**", lambda s: None)
    until(lambda: pub.matching_status.matching)  # a's own subscriber
    out.append(pub.matching_status.matching)
    received: list[bytes] = []
    s1 = b.declare_subscriber("mt/x", lambda s: received.append(s.payload.to_bytes()))
    s2 = c.declare_subscriber("mt/x", lambda s: None)
    qb = b.declare_queryable("mq/**", lambda q: q.reply("mq/x", b"r"))
    passed_on(b, a)  # a knows s1 and qb
    passed_on(c, a)  # and s2
    out += [pub.matching_status.matching, querier.matching_status.matching]
    pub.put(b"1")
    a.put("mt/x", b"2")
    until(lambda: len(received) >= 2)  # b drops samples that arrive after its own undeclare
    s1.undeclare()
    out += [pub.matching_status.matching, received]
    c.close()
    # (a's own subscriber still matches: nothing to await for c's departure here)
    out.append(pub.matching_status.matching)
    out.append([r.ok.payload.to_bytes() for r in querier.get() if r.ok])
    qb.undeclare()
    own.undeclare()
    s2.undeclare()
    until(lambda: not querier.matching_status.matching)
    out.append(querier.matching_status.matching)
    return out


def queries(z: Sessions, mode: str) -> list[Any]:
    a, b, c = z.open(mode), z.open(), z.open("peer")
    b.declare_queryable("qq/**", lambda q: q.reply(str(q.key_expr), b"B"), complete=True)
    c.declare_queryable("qq/a", lambda q: q.reply("qq/a", b"C"), complete=True)
    c.declare_queryable("qq/*", lambda q: q.reply("qq/a", b"C2"))
    held: list[Any] = []
    b.declare_queryable("hold/**", held.append)
    a.declare_queryable("own/q", lambda q: q.reply("own/q", b"A"))
    passed_on(b, a)
    passed_on(c, a)
    out: list[Any] = []
    none = zenoh.ConsolidationMode.NONE
    for target in (zenoh.QueryTarget.BEST_MATCHING, zenoh.QueryTarget.ALL, zenoh.QueryTarget.ALL_COMPLETE):
        replies = a.get("qq/a", target=target, consolidation=none, timeout=2)
        out.append(sorted(r.ok.payload.to_bytes() for r in replies if r.ok))
    # the querier's own timer and the router's ERR "Timeout" race (a loaded querier can see
    # both, from either router: CI run 61 did): which answers came, not how many
    out.append(
        sorted({r.err.payload.to_bytes() if r.err else r.ok.payload.to_bytes() for r in a.get("hold/x", timeout=1)})
    )
    held.clear()
    out.append([r.ok.payload.to_bytes() for r in a.get("own/q", timeout=1) if r.ok])
    out.append([r.ok.payload.to_bytes() for r in a.get("nobody/**", timeout=1) if r.ok])
    return out


Scenario = Callable[[Sessions, str], list[Any]]
CASES = [(liveliness, "client"), (liveliness, "peer"), (matching, "client"), (matching, "peer"), (queries, "client")]


def observe(router_port: int, scenario: Scenario, mode: str) -> list[Any]:
    z = Sessions(f"tcp/127.0.0.1:{router_port}")
    try:
        return scenario(z, mode)
    finally:
        z.close_all()


@pytest.mark.parametrize("scenario,mode", CASES, ids=[f"{s.__name__}-{m}" for s, m in CASES])
def test_same_observations_as_a_real_router(
    scenario: Scenario, mode: str, zenoh_router_port: int, pyzenoh_router_port: int
) -> None:
    real = observe(zenoh_router_port, scenario, mode)
    ours = observe(pyzenoh_router_port, scenario, mode)
    assert ours == real
