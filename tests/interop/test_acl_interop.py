"""Access control against real eclipse-zenoh 1.10.2 clients on 127.0.0.1, with the same
matrix run on ``pyzenoh router`` and on a real router (zenohd's code, in this process).

One router per implementation serves everything: a TCP listener and an mTLS listener,
usrpwd required on both, and one ``access_control`` tree (default deny) whose rules are
namespaced by key, so the cases share the router and its sessions:

* the message-kind matrix: for each kind, a client ``a`` whose *ingress* of that kind
  is allowed on ``<pair>/in/<kind>/yes/**`` only, and a client ``b`` whose *egress* of
  that kind is allowed on ``<pair>/out/<kind>/yes/**`` only (everything else they need
  on those keys is allowed). Each case shows the ``yes`` traffic arriving and the ``no``
  traffic never arriving. The pair of clients is identified by usernames (usrpwd), by
  certificate common names (mTLS) and by zids.
* identities: a put allowed only to the subject of one property (username, cert common
  name, zid, interface ``lo``, an interface no link uses, link protocol tls / tcp), to
  the combinations of two (usernames x cert common names), and any allow winning over a
  deny of another subject.
* observability (pyzenoh): deny counters per rule in the admin space and metrics, one
  log line per (subject, rule).

Absence is shown without sleeping: a denied message is followed by an allowed one on the
same links (which keep their order), and the allowed one is waited for. Waits are bounded.
"""

from __future__ import annotations

import contextlib
import json
import queue
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pyzenoh.localnet import free_port
from tests.fixtures.procs import pyzenoh_router_process
from tests.security.certs import Pki
from tests.waits import expect

zenoh = pytest.importorskip("zenoh")

pytestmark = [pytest.mark.interop, pytest.mark.timeout(180)]

WAIT = 15.0  # bound for anything that should happen soon
GET_TIMEOUT = 20.0  # a get's own timeout: a denied get must end long before it
MESSAGES = [
    "put",
    "delete",
    "declare_subscriber",
    "query",
    "declare_queryable",
    "reply",
    "liveliness_token",
    "declare_liveliness_subscriber",
    "liveliness_query",
]
USERS = ["alice", "bob", "carol", "erin", "dave", "frank", "root"]
ZIDS = {"dave": "da7e0001", "frank": "f7a40002"}
#: client pairs (a, b) of the matrix, and the subject property identifying them
PAIRS = {
    "user": ("alice", "bob", "usernames"),
    "cn": ("carol", "erin", "cert_common_names"),
    "zid": ("dave", "frank", "zids"),
}
TLS_CLIENTS = ("carol", "erin")


def _rule(
    ident: str, messages: list[str], keys: list[str], flows: list[str] | None = None, permission: str = "allow"
) -> dict[str, Any]:
    out: dict[str, Any] = {"id": ident, "messages": messages, "key_exprs": keys, "permission": permission}
    if flows is not None:
        out["flows"] = flows
    return out


def acl_tree() -> dict[str, Any]:
    rules: list[dict[str, Any]] = []
    subjects: list[dict[str, Any]] = []
    policies: list[dict[str, Any]] = []
    for pair, (a, b, prop) in PAIRS.items():
        ra, rb = [], []
        for kind in MESSAGES:
            others = [m for m in MESSAGES if m != kind]
            ra += [
                _rule(f"{pair}-a-in-{kind}", [kind], [f"{pair}/in/{kind}/yes/**"], ["ingress"]),
                _rule(f"{pair}-a-in-{kind}-rest", others, [f"{pair}/in/{kind}/**"], ["ingress"]),
            ]
            rb += [
                _rule(f"{pair}-b-out-{kind}", [kind], [f"{pair}/out/{kind}/yes/**"], ["egress"]),
                _rule(f"{pair}-b-out-{kind}-rest", others, [f"{pair}/out/{kind}/**"], ["egress"]),
            ]
        ra += [
            _rule(f"{pair}-a-egress", MESSAGES, [f"{pair}/in/**"], ["egress"]),
            _rule(f"{pair}-a-out", MESSAGES, [f"{pair}/out/**"]),
        ]
        rb += [
            _rule(f"{pair}-b-in", MESSAGES, [f"{pair}/in/**"]),
            _rule(f"{pair}-b-ingress", MESSAGES, [f"{pair}/out/**"], ["ingress"]),
        ]
        rules += ra + rb
        value = (lambda name: ZIDS[name]) if prop == "zids" else (lambda name: name)
        subjects += [{"id": f"{pair}-a", prop: [value(a)]}, {"id": f"{pair}-b", prop: [value(b)]}]
        policies += [
            {"id": f"{pair}-a", "rules": [r["id"] for r in ra], "subjects": [f"{pair}-a"]},
            {"id": f"{pair}-b", "rules": [r["id"] for r in rb], "subjects": [f"{pair}-b"]},
        ]
    # identities: a put on id/<what>/** is allowed to the subject of one property only
    subjects += [
        {"id": "alice", "usernames": ["alice"]},
        {"id": "carol", "cert_common_names": ["carol"]},
        {"id": "dave", "zids": [ZIDS["dave"]]},
        {"id": "lo", "interfaces": ["lo"]},
        {"id": "nowhere", "interfaces": ["nope0"]},
        {"id": "tls", "link_protocols": ["tls"]},
        {"id": "tcp", "link_protocols": ["tcp"]},
        {"id": "root", "usernames": ["root"]},
        # the combinations of one value of each: (carol, carol) is carol's; erin's
        # username and bob's missing certificate match none
        {"id": "cart", "usernames": ["carol", "bob"], "cert_common_names": ["carol", "erin"]},
    ]
    for what in ("alice", "carol", "dave", "lo", "nowhere", "tls", "tcp", "cart"):
        rules.append(_rule(f"id-{what}", ["put"], [f"id/{what}/**"], ["ingress"]))
        policies.append({"rules": [f"id-{what}"], "subjects": [what]})
    # any allow wins: alice's own subject denies id/any/**, the "lo" subject allows it
    rules += [
        _rule("id-any-deny", ["put"], ["id/any/**"], ["ingress"], "deny"),
        _rule("id-any-allow", ["put"], ["id/any/**"], ["ingress"]),
        _rule("id-denied", ["put"], ["id/denied/**"], ["ingress"], "deny"),
        _rule("root-all", MESSAGES, ["**", "@/**"]),
    ]
    policies += [
        {"rules": ["id-any-deny", "id-denied"], "subjects": ["alice"]},
        {"rules": ["id-any-allow"], "subjects": ["lo"]},
        {"rules": ["root-all"], "subjects": ["root"]},
    ]
    return {"enabled": True, "default_permission": "deny", "rules": rules, "subjects": subjects, "policies": policies}


# --- routers and sessions ------------------------------------------------------------------------


@dataclass
class Net:
    impl: str
    tcp: str
    tls: str
    pki: Pki
    users: dict[str, str]
    zid: str = ""
    log: Path | None = None
    sessions: dict[str, Any] = field(default_factory=dict)

    def open(self, name: str) -> Any:
        c = zenoh.Config()
        c.insert_json5("mode", '"client"')
        c.insert_json5("scouting/multicast/enabled", "false")
        c.insert_json5("transport/auth/usrpwd", json.dumps({"user": name, "password": self.users[name]}))
        if name in ZIDS:
            c.insert_json5("id", json.dumps(ZIDS[name]))
        if name in TLS_CLIENTS:
            c.insert_json5("connect/endpoints", json.dumps([self.tls]))
            c.insert_json5("transport/link/tls", json.dumps(self.pki.connect_config(self.pki_clients[name])))
        else:
            c.insert_json5("connect/endpoints", json.dumps([self.tcp]))
        return zenoh.open(c)

    pki_clients: dict[str, Any] = field(default_factory=dict)

    def __getitem__(self, name: str) -> Any:
        s = self.sessions.get(name)
        if s is None:
            s = self.sessions[name] = self.open(name)
        return s


def _router_config(tcp: str, tls: str, pki: Pki, server: Any, dictionary: Path) -> dict[str, Any]:
    return {
        "mode": "router",
        "listen": {"endpoints": [tcp, tls]},
        "scouting": {"multicast": {"enabled": False}},
        "transport": {
            "auth": {"usrpwd": {"dictionary_file": str(dictionary)}},
            "link": {"tls": pki.listen_config(server, mtls=True)},
        },
        "access_control": acl_tree(),
    }


@contextlib.contextmanager
def _pyzenoh_router(tmp: Path, config: dict[str, Any], ports: tuple[int, int]) -> Iterator[tuple[str, Path]]:
    zid = f"{ports[0]:x}ac1"
    with pyzenoh_router_process({**config, "id": zid}, tmp / "router.json5", ports) as (proc, log):
        yield zid, log
        assert proc.poll() is None, log.read_text()


@contextlib.contextmanager
def _zenohd(config: dict[str, Any]) -> Iterator[Any]:
    c = zenoh.Config()
    for key, value in config.items():
        c.insert_json5(key, json.dumps(value))
    router = zenoh.open(c)
    try:
        yield router
    finally:
        router.close()


@pytest.fixture(scope="module", params=["pyzenoh", "zenohd"])
def net(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Net]:
    tmp = tmp_path_factory.mktemp(f"acl-{request.param}")
    pki = Pki(tmp / "pki")
    server = pki.server()
    users = {u: f"pw-{u}" for u in USERS}
    dictionary = tmp / "users.txt"
    dictionary.write_text("".join(f"{u}:{p}\n" for u, p in users.items()))
    ports = (free_port(), free_port())
    tcp, tls = f"tcp/127.0.0.1:{ports[0]}", f"tls/127.0.0.1:{ports[1]}"
    config = _router_config(tcp, tls, pki, server, dictionary)
    n = Net(request.param, tcp, tls, pki, users, pki_clients={c: pki.client(c) for c in TLS_CLIENTS})
    with contextlib.ExitStack() as stack:
        if request.param == "pyzenoh":
            n.zid, n.log = stack.enter_context(_pyzenoh_router(tmp, config, ports))
        else:
            stack.enter_context(_zenohd(config))
        try:
            yield n
        finally:
            for s in n.sessions.values():
                with contextlib.suppress(Exception):
                    s.close()


# --- helpers ---------------------------------------------------------------------------------------


class Inbox:
    """What callbacks received: (key, payload or kind) items, in order."""

    def __init__(self) -> None:
        self.q: queue.Queue[tuple[str, str]] = queue.Queue()
        self.seen: list[tuple[str, str]] = []

    @property
    def sample(self) -> Any:
        """A subscriber callback run in zenoh's own receiving thread: the default runs each
        subscriber's callback in a thread of its own, so samples of two subscribers of one
        session could be seen out of the order they came in (measured: a put on s/ seen
        after a later put on t/, under load)."""
        return zenoh.handlers.Callback(self._on_sample, indirect=False)

    def _on_sample(self, sample: Any) -> None:
        payload = sample.payload.to_bytes().decode() if sample.kind == zenoh.SampleKind.PUT else "DELETE"
        self.q.put((str(sample.key_expr), payload))

    def wait(self, pred: Callable[[tuple[str, str]], bool], timeout: float = 0.5) -> bool:
        """Take items until one satisfies ``pred`` (True) or ``timeout`` passes (False)."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            try:
                item = self.q.get(timeout=left)
            except queue.Empty:
                return False
            self.seen.append(item)
            if pred(item):
                return True


_marks = iter(range(1 << 30))


def _marked(mark: str) -> Callable[[tuple[str, str]], bool]:
    """An item carrying ``mark``: as its payload, or as the last chunk of its key."""
    return lambda item: item[1] == mark or item[0].endswith("/" + mark)


def allowed_then_denied(allowed: Callable[[str], None], denied: Callable[[str], None], inbox: Inbox) -> None:
    """Send the allowed message until it arrives (the route stands); then one denied and
    one allowed message, in this order on the same links: once the second allowed one is
    in, the denied one would be too. Nothing denied (a ``/no/`` key) may have arrived.
    Each message carries a fresh mark (payload or last key chunk)."""
    deadline = time.monotonic() + WAIT
    while True:
        mark = f"m{next(_marks)}"
        allowed(mark)
        if inbox.wait(_marked(mark)):
            break
        assert time.monotonic() < deadline, f"allowed traffic never arrived: {inbox.seen}"
    mark = f"m{next(_marks)}"
    denied(mark)
    allowed(mark + "f")
    assert inbox.wait(_marked(mark + "f"), WAIT), inbox.seen
    assert not [item for item in inbox.seen if "/no/" in item[0]], inbox.seen


def get_keys(session: Any, key: str, *, liveliness: bool = False) -> tuple[list[str], list[str], float]:
    """(reply keys, error payloads, seconds taken) of one get."""
    start = time.monotonic()
    replies = (
        session.liveliness().get(key, timeout=GET_TIMEOUT) if liveliness else session.get(key, timeout=GET_TIMEOUT)
    )
    ok, err = [], []
    for r in replies:
        if r.ok is not None:
            ok.append(str(r.ok.key_expr))
        else:
            err.append(r.err.payload.to_bytes().decode(errors="replace"))
    return sorted(ok), err, time.monotonic() - start


def assert_denied_get(session: Any, key: str, *, liveliness: bool = False) -> None:
    """A denied get ends at once: no reply, no error, long before its own timeout."""
    ok, err, took = get_keys(session, key, liveliness=liveliness)
    assert ok == [] and err == [], (ok, err)
    assert took < GET_TIMEOUT / 2, f"the denied get took {took:.1f} s: it timed out instead of ending"


@contextlib.contextmanager
def declared(*entities: Any) -> Iterator[None]:
    try:
        yield
    finally:
        for e in entities:
            with contextlib.suppress(Exception):
                e.undeclare()


def replier(keys: Callable[[Any], list[str]]) -> Callable[[Any], None]:
    def handler(query: Any) -> None:
        for k in keys(query):
            query.reply(k, b"r")

    return handler


# --- the message-kind matrix -----------------------------------------------------------------------


def check_ingress(kind: str, a: Any, b: Any, p: str) -> None:
    """``a``'s ingress of ``kind`` is allowed on p/yes/** only; ``b`` may do anything there."""
    yes, no = f"{p}/yes", f"{p}/no"
    inbox = Inbox()
    if kind in ("put", "delete"):
        with declared(b.declare_subscriber(f"{p}/**", inbox.sample)):
            if kind == "put":
                allowed_then_denied(lambda m: a.put(f"{yes}/k", m), lambda m: a.put(f"{no}/k", m), inbox)
            else:
                allowed_then_denied(lambda m: a.delete(f"{yes}/{m}"), lambda m: a.delete(f"{no}/{m}"), inbox)
    elif kind == "declare_subscriber":
        with declared(a.declare_subscriber(f"{no}/k", inbox.sample), a.declare_subscriber(f"{yes}/k", inbox.sample)):
            allowed_then_denied(lambda m: b.put(f"{yes}/k", m), lambda m: b.put(f"{no}/k", m), inbox)
    elif kind == "query":
        with declared(b.declare_queryable(f"{p}/**", replier(lambda q: [str(q.key_expr)]))):
            expect(lambda: get_keys(a, f"{yes}/k")[0] == [f"{yes}/k"], "allowed get never answered")
            assert_denied_get(a, f"{no}/k")
    elif kind == "declare_queryable":
        handler = replier(lambda q: [str(q.key_expr)])
        with declared(a.declare_queryable(f"{no}/k", handler), a.declare_queryable(f"{yes}/k", handler)):
            expect(lambda: get_keys(b, f"{yes}/k")[0] == [f"{yes}/k"], "allowed queryable never answered")
            ok, err, _ = get_keys(b, f"{no}/k")
            assert ok == [] and err == []
    elif kind == "reply":
        with declared(a.declare_queryable(f"{p}/**", replier(lambda q: [f"{no}/k", f"{yes}/k"]))):
            expect(lambda: get_keys(b, f"{p}/**")[0] != [], "no reply at all")
            assert get_keys(b, f"{p}/**")[:2] == ([f"{yes}/k"], [])
    elif kind == "liveliness_token":
        lv = a.liveliness()
        with declared(lv.declare_token(f"{no}/t"), lv.declare_token(f"{yes}/t")):
            expect(lambda: get_keys(b, f"{p}/**", liveliness=True)[0] != [], "no token at all")
            assert get_keys(b, f"{p}/**", liveliness=True)[:2] == ([f"{yes}/t"], [])
    elif kind == "declare_liveliness_subscriber":
        lv = a.liveliness()
        with declared(
            lv.declare_subscriber(f"{no}/**", inbox.sample, history=True),
            lv.declare_subscriber(f"{yes}/**", inbox.sample, history=True),
        ):
            tokens: list[Any] = []
            try:
                allowed_then_denied(
                    lambda m: tokens.append(b.liveliness().declare_token(f"{yes}/{m}")),
                    lambda m: tokens.append(b.liveliness().declare_token(f"{no}/{m}")),
                    inbox,
                )
            finally:
                for t in tokens:
                    t.undeclare()
    else:
        assert kind == "liveliness_query"
        with declared(b.liveliness().declare_token(f"{yes}/t"), b.liveliness().declare_token(f"{no}/t")):
            expect(lambda: get_keys(a, f"{yes}/**", liveliness=True)[0] == [f"{yes}/t"], "no token at all")
            assert_denied_get(a, f"{no}/**", liveliness=True)


def check_egress(kind: str, a: Any, b: Any, p: str, other: Any) -> None:
    """``b``'s egress of ``kind`` is allowed on p/yes/** only; ``a`` may do anything there."""
    yes, no = f"{p}/yes", f"{p}/no"
    inbox = Inbox()
    if kind in ("put", "delete"):
        with declared(b.declare_subscriber(f"{p}/**", inbox.sample)):
            if kind == "put":
                allowed_then_denied(lambda m: a.put(f"{yes}/k", m), lambda m: a.put(f"{no}/k", m), inbox)
            else:
                allowed_then_denied(lambda m: a.delete(f"{yes}/{m}"), lambda m: a.delete(f"{no}/{m}"), inbox)
    elif kind == "declare_subscriber":
        # The declaration is hidden from b, nothing else: b's publisher sees no match and
        # drops its own puts (so does b's session), while a's subscriber still stands
        # (``other``'s puts reach it).
        with declared(a.declare_subscriber(f"{no}/k", inbox.sample), a.declare_subscriber(f"{yes}/k", inbox.sample)):
            allowed_then_denied(lambda m: b.put(f"{yes}/k", m), lambda m: None, inbox)
            pub_no, pub_yes = b.declare_publisher(f"{no}/k"), b.declare_publisher(f"{yes}/k")
            with declared(pub_no, pub_yes):
                expect(lambda: pub_yes.matching_status.matching, "the allowed subscriber never matched")
                assert not pub_no.matching_status.matching
                allowed_then_denied(lambda m: pub_yes.put(m), lambda m: pub_no.put(m), inbox)
                other.put(f"{no}/k", "other")
                assert inbox.wait(lambda item: item == (f"{no}/k", "other"), WAIT)
    elif kind == "query":
        with declared(b.declare_queryable(f"{p}/**", replier(lambda q: [str(q.key_expr)]))):
            expect(lambda: get_keys(a, f"{yes}/k")[0] == [f"{yes}/k"], "allowed get never answered")
            assert_denied_get(a, f"{no}/k")
    elif kind == "declare_queryable":
        handler = replier(lambda q: [str(q.key_expr)])
        with declared(a.declare_queryable(f"{no}/k", handler), a.declare_queryable(f"{yes}/k", handler)):
            expect(lambda: get_keys(b, f"{yes}/k")[0] == [f"{yes}/k"], "allowed queryable never answered")
            q_no, q_yes = b.declare_querier(f"{no}/k"), b.declare_querier(f"{yes}/k")
            with declared(q_no, q_yes):
                expect(lambda: q_yes.matching_status.matching, "the allowed queryable never matched")
                assert not q_no.matching_status.matching
                # only the declaration is hidden: the queryable stands (another's get reaches it)
                assert get_keys(other, f"{no}/k")[:2] == ([f"{no}/k"], [])
    elif kind == "reply":
        with declared(a.declare_queryable(f"{p}/**", replier(lambda q: [f"{no}/k", f"{yes}/k"]))):
            expect(lambda: get_keys(b, f"{p}/**")[0] != [], "no reply at all")
            assert get_keys(b, f"{p}/**")[:2] == ([f"{yes}/k"], [])
    elif kind == "liveliness_token":
        lv = a.liveliness()
        with declared(lv.declare_token(f"{no}/t"), lv.declare_token(f"{yes}/t")):
            expect(lambda: get_keys(b, f"{p}/**", liveliness=True)[0] != [], "no token at all")
            assert get_keys(b, f"{p}/**", liveliness=True)[:2] == ([f"{yes}/t"], [])
            with declared(b.liveliness().declare_subscriber(f"{p}/**", inbox.sample, history=True)):
                assert inbox.wait(lambda item: item[0] == f"{yes}/t", WAIT)
                # a new token on each key: only the allowed one arrives
                tokens = [lv.declare_token(f"{no}/t2"), lv.declare_token(f"{yes}/t2")]
                with declared(*tokens):
                    assert inbox.wait(lambda item: item[0] == f"{yes}/t2", WAIT)
                assert not [i for i in inbox.seen if "/no/" in i[0]], inbox.seen
    else:
        # A router sends no interest to a client: denying these egress changes nothing
        # on a client link (b's own liveliness subscriber and get still work).
        assert kind in ("declare_liveliness_subscriber", "liveliness_query")
        with declared(a.liveliness().declare_token(f"{no}/t")):
            expect(lambda: get_keys(b, f"{no}/**", liveliness=True)[0] == [f"{no}/t"], "liveliness get failed")
            with declared(b.liveliness().declare_subscriber(f"{no}/**", inbox.sample, history=True)):
                assert inbox.wait(lambda item: item[0] == f"{no}/t", WAIT)


@pytest.mark.parametrize("kind", MESSAGES)
@pytest.mark.parametrize("flow", ["ingress", "egress"])
@pytest.mark.parametrize("pair", list(PAIRS))
def test_each_message_kind_allowed_and_denied(net: Net, pair: str, flow: str, kind: str) -> None:
    a_name, b_name, _ = PAIRS[pair]
    a, b = net[a_name], net[b_name]
    if flow == "ingress":
        check_ingress(kind, a, b, f"{pair}/in/{kind}")
    else:
        check_egress(kind, a, b, f"{pair}/out/{kind}", net["root"])


# --- identities ---------------------------------------------------------------------------------------


#: put key -> clients allowed to put there (every other client is denied; root, whose
#: subject allows it everything, always may)
IDENTITY_CASES = {
    "id/alice": {"alice"},  # username
    "id/carol": {"carol"},  # certificate common name (mTLS)
    "id/dave": {"dave"},  # zid
    "id/lo": set(USERS),  # the interface of 127.0.0.1
    "id/nowhere": set(),  # an interface no link arrives on
    "id/tls": {"carol", "erin"},
    "id/tcp": set(USERS) - {"carol", "erin"},
    "id/cart": {"carol"},  # usernames [carol, bob] x cert common names [carol, erin]
    "id/any": set(USERS),  # alice's own subject denies, "lo" allows: any allow wins
    "id/denied": set(),  # alice's subject denies, nothing allows the others
}


@pytest.mark.parametrize("key", list(IDENTITY_CASES))
def test_identities(net: Net, key: str) -> None:
    root = net["root"]
    inbox = Inbox()
    allowed_put = IDENTITY_CASES[key] | {"root"}
    with declared(root.declare_subscriber("id/**", inbox.sample)):
        # the subscription stands once a put of another client comes through
        expect(
            lambda: bool(net["bob"].put("id/lo/warm", "w")) or inbox.wait(lambda i: i[0] == "id/lo/warm", 0.3),
            "root's subscription never took",
        )
        for name in USERS:
            s = net[name]
            target = f"{key}/{name}"
            if name in allowed_put:
                inbox.seen.clear()
                deadline = time.monotonic() + WAIT
                while True:
                    s.put(target, "x")
                    if inbox.wait(lambda item, t=target: item[0] == t, 0.3):  # type: ignore[misc]
                        break
                    assert time.monotonic() < deadline, f"{name}'s put on {target} never arrived"
            else:
                # denied, then the allowed sentinel on id/lo/** (every client may put there)
                inbox.seen.clear()
                mark = f"id/lo/{name}/sentinel-{next(_marks)}"
                s.put(target, "x")
                s.put(mark, "s")
                assert inbox.wait(lambda item, m=mark: item[0] == m, WAIT)  # type: ignore[misc]
                assert not [i for i in inbox.seen if i[0] == target], f"{name}'s put on {target} arrived"


# --- observability (pyzenoh) ---------------------------------------------------------------------


def test_denials_are_counted_and_logged_once(net: Net) -> None:
    if net.impl != "pyzenoh":
        pytest.skip("pyzenoh's own admin space")
    alice, root = net["alice"], net["root"]

    def admin(key: str) -> bytes:
        (reply,) = list(root.get(f"@/{net.zid}/router/{key}", timeout=WAIT))
        assert reply.ok is not None
        return bytes(reply.ok.payload.to_bytes())

    for _ in range(3):
        alice.put("id/denied/x", "x")
    expect(lambda: json.loads(admin("access_control"))["denied"].get("id-denied", 0) >= 3, "denials not counted")
    info = json.loads(admin("access_control"))
    assert info["enabled"] is True and info["default_permission"] == "deny"
    assert {"rule": "id-denied", "flow": "ingress", "message": "put", "count": info["denied"]["id-denied"]} in info[
        "denials"
    ]
    sessions = {s["username"]: s for s in info["sessions"]}
    assert sessions["alice"]["interfaces"] == ["lo"] and sessions["alice"]["link_protocol"] == "tcp"
    assert set(sessions["alice"]["subjects"]) == {"alice", "lo", "tcp", "user-a"}
    assert sessions["carol"]["cert_common_name"] == "carol" and sessions["carol"]["link_protocol"] == "tls"
    assert sessions["dave"]["zid"] == ZIDS["dave"]
    # the same totals by rule in the metrics
    text = admin("metrics?compression=false")
    counts = dict(
        re.findall(
            r'^pyzenoh_router_access_control_denied_total\{reason="([^"]+)"\} (\d+)$', text.decode(), re.MULTILINE
        )
    )
    assert int(counts["id-denied"]) >= 3 and int(counts["<default_permission>"]) > 0
    # logged once per (subject, rule), with the reason
    assert net.log is not None
    expect(lambda: "rule 'id-denied'" in net.log.read_text(), "denial not logged")  # type: ignore[union-attr]
    lines = [ln for ln in net.log.read_text().splitlines() if "rule 'id-denied' (subject 'alice') denies it" in ln]
    assert len(lines) == 1 and "user 'alice'" in lines[0] and "ingress put on 'id/denied/" in lines[0], lines
