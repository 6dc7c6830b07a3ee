"""Access control scenarios beyond the message-kind matrix of ``test_acl_interop``, each run
unchanged on ``pyzenoh router`` and on a real router (zenohd's code, in this process).

Every test starts its router(s) with a small ``access_control`` tree of its own; clients
are real eclipse-zenoh 1.10.2 sessions on plain TCP, identified by zid. What is compared
is what clients observe: samples, replies and errors, how soon a get ends, matching
status, liveliness tokens. Each expectation was measured on the real router first:

* queries: targets when the chosen queryable may not receive the query, reply and ERR
  replies denied in and out (an ERR is judged on the key it carries, the query's),
  replies on other keys (``accept_replies`` ANY), querier matching status.
* liveliness: a denied token never appears, nor disappears, for subscribers (with and
  without history) and gets.
* pub/sub: rules *include* keys, so a wildcard subscription is not denied by a narrower
  rule; publisher matching with the subscriber declared before and after the publisher;
  a put on a wildcard key (judged on its own key, as zenohd does).
* subjects: combinations of properties (cartesian), identical combinations of two
  subjects, a subject no policy names (default ``allow``: any allow wins).
* a neighbour router as a subject (by zid), on the links between routers.
* start-up: which trees each router refuses.
"""

from __future__ import annotations

import contextlib
import json
import socket
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pyzenoh.errors import UsageError
from pyzenoh.localnet import free_port
from pyzenoh.router.config import load_config
from tests.fixtures.procs import pyzenoh_router_process
from tests.interop.test_acl_interop import WAIT, Inbox, _marked, _marks, declared
from tests.waits import expect

zenoh = pytest.importorskip("zenoh")

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]

GET_TIMEOUT = 20.0  # a get's own timeout: one that must end at once ends long before it
#: client name -> zid (and, by default, subject id)
ZIDS = {name: zid for name, zid in zip("abcdefghij", ["a1", "b1", "c1", "d1", "e1", "f1", "a2", "b2", "c2", "d2"])}
ROUTER_ZID = "ac1"
NEIGHBOUR_ZID = "f7"


def rule(
    ident: str, messages: list[str], keys: list[str], flows: list[str] | None = None, permission: str = "deny"
) -> dict[str, Any]:
    out: dict[str, Any] = {"id": ident, "messages": messages, "key_exprs": keys, "permission": permission}
    if flows is not None:
        out["flows"] = flows
    return out


def tree(
    rules: list[dict[str, Any]],
    policies: list[tuple[list[str], list[str]]],
    subjects: list[dict[str, Any]] | None = None,
    default: str = "allow",
) -> dict[str, Any]:
    """An access_control tree; ``policies``: (rule ids, subject ids); a subject per client
    (``{"id": "a", "zids": ["a1"]}``) unless ``subjects`` are given."""
    subjects = subjects if subjects is not None else [{"id": n, "zids": [z]} for n, z in ZIDS.items()]
    return {
        "enabled": True,
        "default_permission": default,
        "rules": rules,
        "subjects": subjects,
        "policies": [{"rules": r, "subjects": s} for r, s in policies],
    }


# --- routers and sessions ------------------------------------------------------------------------


@dataclass
class Site:
    """A router (``impl``) and the client sessions opened on it, by name."""

    impl: str
    endpoint: str
    sessions: dict[str, Any] = field(default_factory=dict)

    def __getitem__(self, name: str) -> Any:
        s = self.sessions.get(name)
        if s is None:
            c = zenoh.Config()
            c.insert_json5("mode", '"client"')
            c.insert_json5("scouting/multicast/enabled", "false")
            c.insert_json5("connect/endpoints", json.dumps([self.endpoint]))
            c.insert_json5("id", json.dumps(ZIDS[name]))
            s = self.sessions[name] = zenoh.open(c)
        return s

    def close(self) -> None:
        for s in self.sessions.values():
            with contextlib.suppress(Exception):
                s.close()


@contextlib.contextmanager
def acl_router(
    impl: str, zid: str, acl: dict[str, Any] | None = None, connect: str | None = None, host: str = "127.0.0.1"
) -> Iterator[str]:
    """A router listening on ``host`` and a fresh port (its endpoint on 127.0.0.1 yielded),
    with ``acl`` if given."""
    port = free_port()
    endpoint = f"tcp/127.0.0.1:{port}"
    config: dict[str, Any] = {
        "mode": "router",
        "id": zid,
        "listen": {"endpoints": [f"tcp/{host}:{port}"]},
        "scouting": {"multicast": {"enabled": False}, "gossip": {"enabled": False}},
    }
    if acl is not None:
        config["access_control"] = acl
    if connect is not None:
        config["connect"] = {"endpoints": [connect]}
    if impl == "pyzenoh":
        with (
            tempfile.TemporaryDirectory() as tmp,
            pyzenoh_router_process(config, Path(tmp) / "router.json5", [port]) as (proc, log),
        ):
            yield endpoint
            assert proc.poll() is None, log.read_text()
    else:
        c = zenoh.Config()
        for key, value in config.items():
            c.insert_json5(key, json.dumps(value))
        r = zenoh.open(c)
        try:
            yield endpoint
        finally:
            r.close()


@pytest.fixture(params=["pyzenoh", "zenohd"])
def impl(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def start(impl: str) -> Iterator[Callable[[dict[str, Any]], Site]]:
    """``start(acl)``: the router of this implementation with ``acl``, and its clients."""
    with contextlib.ExitStack() as stack:

        def _start(acl: dict[str, Any]) -> Site:
            site = Site(impl, stack.enter_context(acl_router(impl, ROUTER_ZID, acl)))
            stack.callback(site.close)
            return site

        yield _start


# --- helpers ---------------------------------------------------------------------------------------


def answers(session: Any, key: str, **options: Any) -> tuple[list[str], list[str]]:
    """(reply keys, error payloads) of one get, which must end long before its timeout."""
    start = time.monotonic()
    ok, err = [], []
    for r in session.get(key, timeout=GET_TIMEOUT, **options):
        if r.ok is not None:
            ok.append(str(r.ok.key_expr))
        else:
            err.append(r.err.payload.to_bytes().decode(errors="replace"))
    took = time.monotonic() - start
    assert took < GET_TIMEOUT / 2, f"the get on {key} took {took:.1f} s: it timed out instead of ending"
    return sorted(ok), err


def tokens(session: Any, key: str) -> list[str]:
    """The keys of the tokens a liveliness get sees (it must end long before its timeout)."""
    start = time.monotonic()
    keys = sorted(str(r.ok.key_expr) for r in session.liveliness().get(key, timeout=GET_TIMEOUT) if r.ok is not None)
    assert time.monotonic() - start < GET_TIMEOUT / 2, "the liveliness get timed out instead of ending"
    return keys


def replying(*keys: str) -> Callable[[Any], None]:
    """A queryable handler replying on ``keys`` (the query's own key for "")."""

    def handler(query: Any) -> None:
        for k in keys:
            query.reply(k or str(query.key_expr), b"r")

    return handler


def delivered_in_order(send: Callable[[str], None], sentinel: Callable[[str], None], inbox: Inbox) -> list[str]:
    """``send`` then ``sentinel`` on the same links, once the sentinel's route stands;
    returns the keys received up to the sentinel (what ``send`` got through)."""
    deadline = time.monotonic() + WAIT
    while True:
        mark = f"m{next(_marks)}"
        sentinel(mark)
        if inbox.wait(_marked(mark)):
            break
        assert time.monotonic() < deadline, f"the sentinel never arrived: {inbox.seen}"
    inbox.seen.clear()
    mark = f"m{next(_marks)}"
    send(mark)
    sentinel(mark + "f")
    assert inbox.wait(_marked(mark + "f"), WAIT), inbox.seen
    return [k for k, payload in inbox.seen[:-1] if payload == mark or k.endswith("/" + mark)]


# --- queries ----------------------------------------------------------------------------------------


def test_targets_when_the_chosen_queryable_may_not_receive_the_query(start: Callable[..., Site]) -> None:
    """Egress control comes after the choice of destinations: BEST_MATCHING chooses b (the
    complete one), which may not receive the query, so the get ends with nothing although
    c could have answered; ALL gets c's reply, ALL_COMPLETE c's where c is complete."""
    site = start(tree([rule("no-query", ["query"], ["t/**"], ["egress"])], [(["no-query"], ["b"])]))
    a, b, c = site["a"], site["b"], site["c"]
    target = zenoh.QueryTarget
    probe = site["d"].declare_querier("t/one/k", target=target.ALL_COMPLETE)
    with declared(
        probe,
        b.declare_queryable("t/two/**", replying("t/two/b"), complete=True),
        b.declare_queryable("t/one/**", replying("t/one/b"), complete=True),
        c.declare_queryable("t/one/**", replying("t/one/c"), complete=False),
        c.declare_queryable("t/two/**", replying("t/two/c"), complete=True),
    ):
        # b's queryables stand once d's querier matches (only b's on t/one/** is complete)
        expect(lambda: probe.matching_status.matching, "b's queryables never matched")
        expect(lambda: answers(a, "t/*/*")[0] == ["t/one/c", "t/two/c"], "c's queryables never answered")
        assert answers(a, "t/one/*", target=target.ALL) == (["t/one/c"], [])
        assert answers(a, "t/one/*", target=target.BEST_MATCHING) == ([], [])
        assert answers(a, "t/one/*", target=target.ALL_COMPLETE) == ([], [])
        assert answers(a, "t/two/*", target=target.ALL_COMPLETE) == (["t/two/c"], [])
        assert answers(a, "t/two/*", target=target.ALL) == (["t/two/c"], [])


def test_replies_and_errors_denied_in_and_out(start: Callable[..., Site]) -> None:
    """b's replies on r/in/** may not enter, a may not be sent replies on r/out/**. An ERR
    reply carries the query's key and is judged on it: a get on r/** (not included in
    either rule) gets its ERR, a get on r/in/k does not."""
    site = start(
        tree(
            [rule("in", ["reply"], ["r/in/**"], ["ingress"]), rule("out", ["reply"], ["r/out/**"], ["egress"])],
            [(["in"], ["b"]), (["out"], ["a"])],
        )
    )
    a, b, c = site["a"], site["b"], site["c"]

    def handler(query: Any) -> None:
        key = str(query.key_expr)
        if "*" not in key:
            query.reply(key, b"r")
        query.reply_err("boom")

    with declared(b.declare_queryable("r/**", handler)):
        expect(lambda: answers(a, "r/yes/k") == (["r/yes/k"], ["boom"]), "b never answered")
        assert answers(a, "r/in/k") == ([], [])
        assert answers(a, "r/out/k") == ([], [])
        assert answers(c, "r/out/k") == (["r/out/k"], ["boom"])
        assert answers(a, "r/**") == ([], ["boom"])


def test_replies_on_other_keys_are_judged_on_their_own_key(start: Callable[..., Site]) -> None:
    site = start(tree([rule("in", ["reply"], ["x/no/**"], ["ingress"])], [(["in"], ["b"])]))
    a, b = site["a"], site["b"]
    with declared(b.declare_queryable("x/q", replying("x/no/k", "x/yes/k", ""))):
        any_key = zenoh.ReplyKeyExpr.ANY
        expect(lambda: answers(a, "x/q", accept_replies=any_key)[0] != [], "b never answered")
        assert answers(a, "x/q", accept_replies=any_key) == (["x/q", "x/yes/k"], [])


def test_querier_matching_status(start: Callable[..., Site]) -> None:
    """A queryable hidden from a (egress declare_queryable) or refused from b (ingress)
    never matches a's querier, declared before or after it; one that may not receive
    queries (egress query) matches, and a's get there ends at once with nothing."""
    site = start(
        tree(
            [
                rule("hide", ["declare_queryable"], ["m/hidden/**"], ["egress"]),
                rule("quiet", ["query"], ["m/quiet/**"], ["egress"]),
                rule("refuse", ["declare_queryable"], ["m/refused/**"], ["ingress"]),
            ],
            [(["hide"], ["a"]), (["quiet", "refuse"], ["b"])],
        )
    )
    a, b = site["a"], site["b"]
    complete = zenoh.QueryTarget.ALL_COMPLETE
    early = a.declare_querier("m/hidden/k", target=complete)
    qabls = [
        b.declare_queryable(f"m/{k}/k", replying(""), complete=True) for k in ("hidden", "quiet", "refused", "open")
    ]
    with declared(early, *qabls):
        queriers = {k: a.declare_querier(f"m/{k}/k", target=complete) for k in ("hidden", "quiet", "refused", "open")}
        with declared(*queriers.values()):
            expect(
                lambda: queriers["open"].matching_status.matching and queriers["quiet"].matching_status.matching,
                "the open queryables never matched",
            )
            assert not queriers["hidden"].matching_status.matching and not early.matching_status.matching
            assert not queriers["refused"].matching_status.matching
            assert answers(a, "m/quiet/k") == ([], [])
            assert answers(a, "m/open/k") == (["m/open/k"], [])


# --- liveliness ------------------------------------------------------------------------------------


def test_denied_tokens_never_appear_nor_disappear(start: Callable[..., Site]) -> None:
    """b's tokens on l/in/no/** may not enter; a may not be told of those on l/out/no/**
    (c may). Liveliness subscribers, declared before the tokens and after them with
    history, see the allowed ones come and go, nothing of the denied ones."""
    site = start(
        tree(
            [
                rule("in", ["liveliness_token"], ["l/in/no/**"], ["ingress"]),
                rule("out", ["liveliness_token"], ["l/out/no/**"], ["egress"]),
            ],
            [(["in"], ["b"]), (["out"], ["a"])],
        )
    )
    a, b, c = site["a"], site["b"], site["c"]
    early, late = Inbox(), Inbox()
    with declared(a.liveliness().declare_subscriber("l/**", early.sample)):
        deadline = time.monotonic() + WAIT
        while True:  # until a's subscriber stands: it sees a token of c's
            probe = f"l/probe/{next(_marks)}"
            with declared(c.liveliness().declare_token(probe)):
                if early.wait(lambda item, probe=probe: item[0] == probe):  # type: ignore[misc]
                    break
            assert time.monotonic() < deadline, "a's liveliness subscriber never saw a token"
        denied = [b.liveliness().declare_token(k) for k in ("l/in/no/t", "l/out/no/t")]
        allowed = [b.liveliness().declare_token(k) for k in ("l/in/yes/t", "l/out/yes/t")]
        assert early.wait(lambda item: item[0] == "l/out/yes/t", WAIT)
        expect(lambda: tokens(c, "l/*/*/t") == ["l/in/yes/t", "l/out/no/t", "l/out/yes/t"], "c never saw b's tokens")
        # (a get through zenohd once came back empty right after a's subscriber saw the
        # tokens: what a sees in the end is the property, not one get)
        expect(lambda: tokens(a, "l/*/*/t") == ["l/in/yes/t", "l/out/yes/t"], "a never saw exactly b's allowed tokens")
        with declared(a.liveliness().declare_subscriber("l/**", late.sample, history=True)):
            assert late.wait(lambda item: item[0] == "l/out/yes/t", WAIT)
            for t in denied + allowed:
                t.undeclare()
            for inbox in (early, late):
                assert inbox.wait(lambda item: item == ("l/out/yes/t", "DELETE"), WAIT)
                assert sorted({i for i in inbox.seen if not i[0].startswith("l/probe/")}) == [
                    ("l/in/yes/t", ""),
                    ("l/in/yes/t", "DELETE"),
                    ("l/out/yes/t", ""),
                    ("l/out/yes/t", "DELETE"),
                ]
        assert tokens(a, "l/*/*/t") == tokens(c, "l/*/*/t") == []


# --- pub/sub -----------------------------------------------------------------------------------------


def test_rules_include_keys_wildcard_subscriptions_are_not_denied_by_narrower_ones(start: Callable[..., Site]) -> None:
    """Puts on w/x/** may not be sent to b, whose subscriber on w/** gets the rest. A
    subscriber on w/d/k may not be declared (b, d), one on w/** or w/d/* may (the rule
    w/d/k does not include them): a's put on w/d/k reaches b, and d once it subscribes
    to w/d/*."""
    site = start(
        tree(
            [
                rule("no-put", ["put"], ["w/x/**"], ["egress"]),
                rule("no-sub", ["declare_subscriber"], ["w/d/k"], ["ingress"]),
            ],
            [(["no-put", "no-sub"], ["b"]), (["no-sub"], ["d"])],
        )
    )
    a, b, d = site["a"], site["b"], site["d"]
    inbox_b, inbox_d = Inbox(), Inbox()
    with declared(
        b.declare_subscriber("w/**", inbox_b.sample),
        d.declare_subscriber("w/d/k", inbox_d.sample),
        d.declare_subscriber("w/s/d", inbox_d.sample),
    ):
        assert delivered_in_order(lambda m: a.put("w/x/1", m), lambda m: a.put("w/y/1", m), inbox_b) == []
        assert delivered_in_order(lambda m: a.put("w/d/k", m), lambda m: a.put("w/y/1", m), inbox_b) == ["w/d/k"]
        assert delivered_in_order(lambda m: a.put("w/d/k", m), lambda m: a.put("w/s/d", m), inbox_d) == []
        with declared(d.declare_subscriber("w/d/*", inbox_d.sample)):
            expect(
                lambda: delivered_in_order(lambda m: a.put("w/d/k", m), lambda m: a.put("w/s/d", m), inbox_d) != [],
                "d's subscriber on w/d/* never got a's put on w/d/k",
            )


def test_a_put_on_a_wildcard_key(start: Callable[..., Site], impl: str) -> None:
    """a may not put on p/b. zenohd lets a put on p/* through to b's subscriber on p/b (the
    rule does not include p/*): a narrow deny rule is bypassed by a wildcard put. pyzenoh
    routes a put on a wildcard key as zenohd does, access control included."""
    site = start(tree([rule("no-put", ["put"], ["p/b"], ["ingress"])], [(["no-put"], ["a"])]))
    a, b = site["a"], site["b"]
    inbox = Inbox()
    with declared(b.declare_subscriber("p/**", inbox.sample)):
        assert delivered_in_order(lambda m: a.put("p/b", m), lambda m: a.put("p/s", m), inbox) == []
        got = delivered_in_order(lambda m: a.put("p/*", m), lambda m: a.put("p/s", m), inbox)
        assert got == ["p/*"]


def test_publisher_matching_with_the_subscriber_declared_before_and_after(start: Callable[..., Site]) -> None:
    """Subscribers on pm/no/** are hidden from a: its publisher there never matches (and
    its session drops its puts), whether b subscribed before a connected or after a
    declared the publisher."""
    site = start(tree([rule("hide", ["declare_subscriber"], ["pm/no/**"], ["egress"])], [(["hide"], ["a"])]))
    b, c = site["b"], site["c"]
    inbox = Inbox()

    def check(pubs: dict[str, Any]) -> None:
        expect(lambda: pubs["yes"].matching_status.matching, "the allowed subscriber never matched")
        assert not pubs["no"].matching_status.matching
        assert delivered_in_order(pubs["no"].put, pubs["yes"].put, inbox) == []

    with declared(b.declare_subscriber("pm/no/1", inbox.sample), b.declare_subscriber("pm/yes/1", inbox.sample)):
        probe = c.declare_publisher("pm/no/1")
        with declared(probe):
            expect(lambda: probe.matching_status.matching, "the router never had b's subscribers")
        a = site["a"]  # connects after b's subscribers stand
        pubs = {w: a.declare_publisher(f"pm/{w}/1") for w in ("no", "yes")}
        with declared(*pubs.values()):
            check(pubs)
        pubs = {w: a.declare_publisher(f"pm/{w}/2") for w in ("no", "yes")}
        with declared(
            *pubs.values(),
            b.declare_subscriber("pm/no/2", inbox.sample),
            b.declare_subscriber("pm/yes/2", inbox.sample),
        ):
            check(pubs)


# --- subjects ----------------------------------------------------------------------------------------


def test_subject_combinations(start: Callable[..., Site]) -> None:
    """Default allow; each client's puts on s/** are denied by the subjects it matches:

    * e: denied by subject "e", but it also matches "e-tcp" (another combination), which
      no policy names: the default (allow) applies there, and any allow wins;
    * f: denied by "f", and "f-too" is the same combination (zid f1), not another one:
      their rules are merged and the deny stands;
    * g, h: subject zids [g1, h1] x interfaces [lo] stands for both;
    * i: zids [i1] x interfaces [nope0], and x link_protocols [tls]: neither matches i;
    * j: zids [j1] x link_protocols [tcp, tls]: the tcp combination matches.
    """
    subjects = [
        {"id": "e", "zids": [ZIDS["e"]]},
        {"id": "e-tcp", "zids": [ZIDS["e"]], "link_protocols": ["tcp"]},
        {"id": "f", "zids": [ZIDS["f"]]},
        {"id": "f-too", "zids": [ZIDS["f"]]},
        {"id": "gh", "zids": [ZIDS["g"], ZIDS["h"]], "interfaces": ["lo"]},
        {"id": "i-nope", "zids": [ZIDS["i"]], "interfaces": ["nope0"]},
        {"id": "i-tls", "zids": [ZIDS["i"]], "link_protocols": ["tls"]},
        {"id": "j", "zids": [ZIDS["j"]], "link_protocols": ["tcp", "tls"]},
    ]
    rules = [rule("no-put", ["put"], ["s/**"]), rule("other", ["query"], ["elsewhere"])]
    site = start(
        tree(rules, [(["no-put"], ["e", "f", "gh", "i-nope", "i-tls", "j"]), (["other"], ["f-too"])], subjects)
    )
    observer = site["d"]
    inbox = Inbox()
    allowed = {"e", "i"}
    with declared(observer.declare_subscriber("s/**", inbox.sample), observer.declare_subscriber("t/**", inbox.sample)):
        for name in "efghij":
            s = site[name]
            # Tried up to three times (an allowed put must get through once, a denied one
            # never): a failure seen once per router in full runs was the observer's two
            # subscriber callbacks running in threads of their own (fixed in Inbox); the
            # retries stay for a first put that could go before the client heard of s/**.
            tries = []
            for _ in range(3):
                tries.append(
                    delivered_in_order(
                        lambda m, s=s: s.put(f"s/{m}", m),  # type: ignore[misc]
                        lambda m, s=s: s.put(f"t/{m}", m),
                        inbox,
                    )
                )  # type: ignore[misc]
                if tries[-1]:
                    break
            assert any(tries) == (name in allowed), f"{name}'s puts: {tries}"


def _dual_stack() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
    except OSError:
        return False
    return socket.has_dualstack_ipv6()


@pytest.mark.skipif(not _dual_stack(), reason="no dual-stack IPv6")
def test_interfaces_of_links_to_a_listener_on_the_ipv6_wildcard(impl: str) -> None:
    """A router listening on [::] takes IPv4 clients too; a client on 127.0.0.1 and one on
    [::1] both arrive on interface lo (puts on i/** are denied to subject lo)."""
    acl = tree(
        [rule("no-put", ["put"], ["i/**"], ["ingress"])], [(["no-put"], ["lo"])], [{"id": "lo", "interfaces": ["lo"]}]
    )
    with acl_router(impl, ROUTER_ZID, acl, host="[::]") as endpoint:
        port = endpoint.rsplit(":", 1)[1]
        v4, v6 = Site(impl, endpoint), Site(impl, f"tcp/[::1]:{port}")
        try:
            inbox = Inbox()
            with declared(v4["b"].declare_subscriber("**", inbox.sample)):
                for s in (v4["a"], v6["c"]):
                    got = delivered_in_order(
                        lambda m, s=s: s.put(f"i/{m}", m), lambda m, s=s: s.put(f"j/{m}", m), inbox
                    )  # type: ignore[misc]
                    assert got == []
        finally:
            v4.close()
            v6.close()


# --- router to router ----------------------------------------------------------------------------------


def test_a_neighbour_router_is_a_subject_by_zid(impl: str) -> None:
    """A real router (zid f7, no access control) connects to the router under test, whose
    rules for subject f7 apply on that router link: a is a client of the neighbour, b of
    the router under test."""
    acl = tree(
        [
            rule("put-in", ["put"], ["n/put/no/**"], ["ingress"]),
            rule("put-out", ["put"], ["n/eput/no/**"], ["egress"]),
            rule("sub-in", ["declare_subscriber"], ["n/sub/no/**"], ["ingress"]),
            rule("token-out", ["liveliness_token"], ["n/tok/no/**"], ["egress"]),
            rule("query-in", ["query"], ["n/q/no/**"], ["ingress"]),
            rule("reply-out", ["reply"], ["n/r/no/**"], ["egress"]),
        ],
        [(["put-in", "put-out", "sub-in", "token-out", "query-in", "reply-out"], ["nb"])],
        [{"id": "nb", "zids": [NEIGHBOUR_ZID]}],
    )
    with acl_router(impl, ROUTER_ZID, acl) as tested, acl_router("zenohd", NEIGHBOUR_ZID, connect=tested) as neighbour:
        there, here = Site("zenohd", neighbour), Site(impl, tested)
        try:
            a, b = there["a"], here["b"]
            inbox_a, inbox_b = Inbox(), Inbox()
            with declared(
                b.declare_subscriber("n/put/**", inbox_b.sample),
                a.declare_subscriber("n/eput/**", inbox_a.sample),
                a.declare_subscriber("n/sub/no/k", inbox_a.sample),
                a.declare_subscriber("n/sub/yes/k", inbox_a.sample),
                b.liveliness().declare_token("n/tok/no/t"),
                b.liveliness().declare_token("n/tok/yes/t"),
                b.declare_queryable("n/q/**", replying("")),
                b.declare_queryable("n/r/**", replying("n/r/no/k", "n/r/yes/k")),
            ):
                assert (
                    delivered_in_order(lambda m: a.put("n/put/no/k", m), lambda m: a.put("n/put/yes/k", m), inbox_b)
                    == []
                )
                assert (
                    delivered_in_order(lambda m: b.put("n/eput/no/k", m), lambda m: b.put("n/eput/yes/k", m), inbox_a)
                    == []
                )
                pubs = {w: b.declare_publisher(f"n/sub/{w}/k") for w in ("no", "yes")}
                with declared(*pubs.values()):
                    expect(lambda: pubs["yes"].matching_status.matching, "a's allowed subscriber never matched")
                    assert not pubs["no"].matching_status.matching
                expect(lambda: tokens(a, "n/tok/**") != [], "a never saw b's tokens")
                assert tokens(a, "n/tok/**") == ["n/tok/yes/t"]
                expect(lambda: answers(a, "n/q/yes/k")[0] == ["n/q/yes/k"], "b's queryable never answered a")
                assert answers(a, "n/q/no/k") == ([], [])
                assert answers(a, "n/r/**") == (["n/r/yes/k"], [])
        finally:
            here.close()
            there.close()


# --- start-up ------------------------------------------------------------------------------------------


GOOD_RULE = {"id": "r", "messages": ["put"], "key_exprs": ["a/**"], "permission": "allow", "flows": ["ingress"]}
GOOD = {
    "enabled": True,
    "rules": [GOOD_RULE],
    "subjects": [{"id": "s", "usernames": ["u"]}],
    "policies": [{"rules": ["r"], "subjects": ["s"]}],
}


def _with(rule_: dict[str, Any] | None = None, **top: Any) -> dict[str, Any]:
    """GOOD with the rule's fields in ``rule_`` and the top fields in ``top`` replaced (or
    removed, where None)."""
    out = {**GOOD, **top}
    if rule_ is not None:
        out["rules"] = [{k: v for k, v in {**GOOD_RULE, **rule_}.items() if v is not None}]
    return {k: v for k, v in out.items() if v is not None}


#: name -> (tree, None when both routers start, else what pyzenoh's refusal names)
START_UP: dict[str, tuple[dict[str, Any], str | None]] = {
    "disabled, a policy naming no rule": (_with(enabled=False, policies=[{"rules": ["x"], "subjects": ["s"]}]), None),
    "disabled, an unknown message": (
        _with({"messages": ["publish"]}, enabled=False),
        "access_control/rules/0/messages",
    ),
    "a rule without flows": (_with({"flows": None}), None),
    "empty rules list": (_with(rules=[]), None),
    "empty key_exprs": (_with({"key_exprs": []}), "access_control/rules/0/key_exprs"),
    "key expression not canon": (_with({"key_exprs": ["a/**/*"]}), "access_control/rules/0/key_exprs/0"),
    "unknown flow": (_with({"flows": ["inbound"]}), "access_control/rules/0/flows"),
    "zid in uppercase": (_with(subjects=[{"id": "s", "zids": ["A1"]}]), "access_control/subjects/0/zids/0"),
    "lists missing": (
        _with(rules=None, subjects=None, policies=None),
        "All ACL rules/subjects/policies config lists must be provided",
    ),
    "a policy naming no rule": (
        _with(policies=[{"rules": ["x"], "subjects": ["s"]}]),
        "Rule 'x' in policy #0 does not exist in rules list",
    ),
    "a blank username": (
        _with(subjects=[{"id": "s", "usernames": [" "]}]),
        "Found empty username value in subject 's'",
    ),
    "a repeated rule id": (_with(rules=[GOOD_RULE, GOOD_RULE]), "Rule id must be unique"),
}


@pytest.mark.parametrize("case", list(START_UP))
def test_which_trees_a_router_refuses_at_start_up(impl: str, case: str, tmp_path: Path) -> None:
    """zenohd refuses what it cannot deserialise, enabled or not, and makes its start-up
    checks (ids, empty values) only when enabled; pyzenoh refuses the same, naming the key
    or zenohd's reason (``pyzenoh router -c`` then exits 2 with that message)."""
    acl, refusal = START_UP[case]
    config = {
        "mode": "router",
        "listen": {"endpoints": [f"tcp/127.0.0.1:{free_port()}"]},
        "scouting": {"multicast": {"enabled": False}},
        "access_control": acl,
    }
    error: str | None = None
    if impl == "pyzenoh":
        path = tmp_path / "router.json5"
        path.write_text(json.dumps(config))
        try:
            load_config(path)
        except UsageError as exc:
            error = str(exc)
    else:
        c = zenoh.Config()
        try:
            for key, value in config.items():
                c.insert_json5(key, json.dumps(value))
            zenoh.open(c).close()
        except zenoh.ZError as exc:
            error = str(exc)
    if refusal is None:
        assert error is None, error
    else:
        assert error is not None, "the router started"
        if impl == "pyzenoh":
            assert refusal in error, error
