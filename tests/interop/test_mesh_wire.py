"""Wire-level differential: what a router sends to its ROUTER neighbours.

The same scenario runs twice: once with a real eclipse-zenoh 1.10.2 router as the router
under test ("R"), once with ``pyzenoh router`` (in a subprocess). Its neighbours are real
1.10.2 routers, each connected to R through a :class:`RecordingProxy`, which records what
R sends it::

    client m -- M ==proxy==> R <==proxy== N -- client n
                            / \\
                 clients a, a2  <==proxy== L  (joins late)

Clients of R declare subscribers (shared by two clients), queryables (complete, not
complete, merged) and tokens, put and delete with non-default QoS, answer queries; the
clients of M and N do the same from the other side. So R sends: LINKSTATE (handshakes,
floods, a router joining and one dying), its own declarations (D_KEYEXPR + entity, no
NodeId), other routers' declarations with their NodeId, data entering the mesh at R, at M
and at N (NodeId, entry router's timestamp), REQUESTs to N (asked at R or at M), and
RESPONSE/RESPONSE_FINAL for N's gets (answered at R or at M). A late router L gets every
entity of every owner at once; M is killed at the end.

The network messages R sent on each link during each step must be equal in both runs,
once the values that legitimately differ from run to run are normalised (see
:func:`normalise`). Every router and client is given its zid, so
zids, entity ids, responder ids and HLC ids are compared as they are.

A router that joins is sent the entities already there kind by kind (every owner's
subscribers, then queryables, then tokens), as zenohd does: the key ids follow from it.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from pyzenoh.codec import (
    Frame,
    NetworkMessage,
    NetworkOam,
    Push,
    Timestamp,
    decode_batch,
)
from pyzenoh.codec.network import OAM_LINKSTATE
from pyzenoh.routing.linkstate import LinkState, decode_linkstates
from tests.interop.mesh import Mesh, mesh
from tests.routing.test_wire_differential import RecordingProxy
from tests.waits import until, value_of

zenoh = pytest.importorskip("zenoh")

pytestmark = [pytest.mark.interop, pytest.mark.timeout(240)]

#: Time for a step's messages to reach the proxies: the reference run waits this long.
SETTLE = 0.25
#: The pyzenoh run first waits for as many messages per link as the reference sent, then
#: this long for any extra one (one later than that lands in a later step, whose messages
#: then differ too). A step the reference saw nothing of, and the last step, wait SETTLE:
#: there no message shows that R has handled the step before the next one starts.
EXTRA_SETTLE = 0.05
#: Bound on waiting for a step's messages, a route, or a neighbour's link.
STEP_TIMEOUT = 8.0
REFERENCE_RETRIES = 2

R_ZID, M_ZID, N_ZID, L_ZID = "a1", "b2", "c3", "d4"
A_ZID, A2_ZID, M_CLIENT_ZID, N_CLIENT_ZID = "a0a0", "a0a2", "b0b0", "c0c0"
LINKS = ("M", "N", "L")
#: R's config, the same for both: zenohd's defaults for gossip (on, so R's LINKSTATE
#: carries its locators), start_router's for the rest (no multicast scouting, no admin
#: space, timestamping on).
ZENOH_EXTRA: dict[str, Any] = {"scouting/gossip/enabled": True}
PYZENOH_EXTRA: dict[str, Any] = {
    "scouting": {"multicast": {"enabled": False}, "gossip": {"enabled": True}},
    "adminspace": {"enabled": False},
}
NEIGHBOUR_EXTRA: dict[str, Any] = {"scouting/gossip/enabled": True}

L_JOINS = "L connects (R's side, M and N hold a subscriber, a queryable, a token each)"


@dataclass(frozen=True)
class LinkStateOam:
    """A LINKSTATE network OAM, decoded and normalised (see :func:`normalise`)."""

    qos: int
    states: tuple[LinkState, ...]


Recorded = NetworkMessage | LinkStateOam
Recording = list[tuple[str, str, list[Recorded]]]  # (step, link, what R sent on it)


def normalise(msg: NetworkMessage, ports: dict[int, str]) -> Recorded:
    """What differs from run to run, and only that:

    * the time of a data timestamp (the HLC clock); its id, the router where the data
      entered the mesh, is kept;
    * the ports in LINKSTATE locators (free ports picked per run), named by their router;
    * the order of a node's links in a LINKSTATE (each with its weight): a real router
      lists them in hash order (R's links were seen as (2, 1) and as (1, 2) in runs of the
      same scenario); they are sorted.

    Everything else is compared: NodeIds, key-expr ids and wire-expr shapes, entity ids,
    request ids, query timeouts, QoS, extensions, and the LINKSTATE contents (indexes,
    sequence numbers, zids, whatami, locators, links), decoded so a failure shows which.
    """
    if isinstance(msg, Push) and msg.body.timestamp is not None:
        return replace(msg, body=replace(msg.body, timestamp=Timestamp(0, msg.body.timestamp.id)))
    if isinstance(msg, NetworkOam) and msg.oam_id == OAM_LINKSTATE and isinstance(msg.body, bytes):
        states = []
        for s in decode_linkstates(msg.body):
            if s.locators is not None:
                s = replace(s, locators=tuple(_named_port(loc, ports) for loc in s.locators))
            if s.weights is None:
                s = replace(s, links=tuple(sorted(s.links)))
            else:
                pairs = sorted(zip(s.links, s.weights, strict=True))
                s = replace(s, links=tuple(p[0] for p in pairs), weights=tuple(p[1] for p in pairs))
            states.append(s)
        return LinkStateOam(msg.qos, tuple(states))
    return msg


def _named_port(locator: str, ports: dict[int, str]) -> str:
    head, _, port = locator.rpartition(":")
    return f"{head}:<{ports[int(port)]}>" if port.isdigit() and int(port) in ports else locator


def stream_messages(data: bytes) -> Iterator[tuple[int, NetworkMessage]]:
    """(offset of its batch, message) for every network message of a recorded stream; an
    incomplete batch at the end is left out."""
    pos = 0
    while pos + 2 <= len(data):
        n = int.from_bytes(data[pos : pos + 2], "little")
        if pos + 2 + n > len(data):
            return
        for tm in decode_batch(data[pos + 2 : pos + 2 + n]):
            if isinstance(tm, Frame):
                for msg in tm.messages:
                    yield pos, msg
        pos += 2 + n


@dataclass
class Link:
    """A neighbour's link to R, through a recording proxy; marks are stream offsets, one
    per step (where the step began)."""

    name: str
    proxy: RecordingProxy
    marks: list[int] = field(default_factory=list)

    def count_since(self, offset: int) -> int:
        return sum(1 for pos, _ in stream_messages(bytes(self.proxy.received)) if pos >= offset)

    def by_step(self, ports: dict[int, str]) -> list[list[Recorded]]:
        steps: list[list[Recorded]] = [[] for _ in self.marks]
        for pos, msg in stream_messages(bytes(self.proxy.received)):
            step = max(i for i, mark in enumerate(self.marks) if mark <= pos)
            steps[step].append(normalise(msg, ports))
        return steps


class World:
    """One run: R, its neighbours (started by the scenario), the clients, the steps."""

    def __init__(self, m: Mesh, kind: str, expected: dict[str, list[int]] | None) -> None:
        self.m = m
        self.expected = expected  # messages per link per step in the reference run
        self.r = m.add("R", kind, zid=R_ZID, extra=PYZENOH_EXTRA if kind == "pyzenoh" else ZENOH_EXTRA)
        self.links: dict[str, Link] = {}
        for name in LINKS:  # one by one: a proxy that failed to start leaves none behind
            self.links[name] = Link(name, RecordingProxy(self.r.port))
        self.steps: list[str] = []

    def close(self) -> None:
        for link in self.links.values():
            with contextlib.suppress(Exception):
                link.proxy.close()

    @contextlib.contextmanager
    def step(self, name: str, at_least: dict[str, int] | None = None) -> Iterator[None]:
        """Mark the streams, run the step, wait (bounded) for its messages, settle."""
        self.steps.append(name)
        for link in self.links.values():
            link.marks.append(len(link.proxy.received))
        yield
        wants = dict(at_least or {})
        if self.expected is not None:
            for link_name, counts in self.expected.items():
                wants[link_name] = max(wants.get(link_name, 0), counts[len(self.steps) - 1])
        for link_name, n in wants.items():
            link = self.links[link_name]
            until(lambda link=link, n=n: link.count_since(link.marks[-1]) >= n, STEP_TIMEOUT)
        # An absence: no message beyond the step's comes late (counted by the comparison).
        time.sleep(EXTRA_SETTLE if self._seen_before_last() else SETTLE)

    def _seen_before_last(self) -> bool:
        """In the pyzenoh run: the reference saw messages in this step, not the last one."""
        if self.expected is None:
            return False
        i = len(self.steps) - 1
        per_link = list(self.expected.values())
        return i < len(per_link[0]) - 1 and any(counts[i] for counts in per_link)

    def neighbour(self, name: str, zid: str) -> None:
        """Start real router ``name``, connected to R through its recording proxy."""
        endpoint = f"tcp/127.0.0.1:{self.links[name].proxy.port}"
        self.m.add(name, "zenoh", zid=zid, extra={"connect/endpoints": [endpoint], **NEIGHBOUR_EXTRA})

    def client(self, router: str, zid: str) -> Any:
        c = zenoh.Config()
        c.insert_json5("mode", '"client"')
        c.insert_json5("id", f'"{zid}"')
        c.insert_json5("connect/endpoints", f'["{self.m.routers[router].endpoint}"]')
        c.insert_json5("scouting/multicast/enabled", "false")
        s = zenoh.open(c)
        self.m.sessions.append(s)
        return s

    def recorded(self) -> Recording:
        ports = {r.port: name for name, r in self.m.routers.items()}
        per_link = {name: link.by_step(ports) for name, link in self.links.items()}
        return [(step, name, per_link[name][i]) for i, step in enumerate(self.steps) for name in LINKS]


def wait_matching(entity: Any) -> None:
    """A publisher's or querier's route is known to its router (bounded; no assertion:
    a missing route shows up as a missing message in the comparison)."""
    until(lambda: bool(entity.matching_status.matching), STEP_TIMEOUT)


def get(getter: Any, selector: str | None = None) -> list[str]:
    replies = getter.get() if selector is None else getter.get(selector, timeout=5)
    return [r.ok.payload.to_string() if r.ok is not None else f"err:{r.err.payload.to_string()}" for r in replies]


def scenario(w: World) -> None:
    keep: dict[str, Any] = {}  # dropping a zenoh entity undeclares it
    with w.step("M connects", at_least={"M": 2}):
        w.neighbour("M", M_ZID)
    with w.step("N connects", at_least={"N": 2}):
        w.neighbour("N", N_ZID)
    with w.step("clients open"):
        a, a2 = w.client("R", A_ZID), w.client("R", A2_ZID)
        mc, n = w.client("M", M_CLIENT_ZID), w.client("N", N_CLIENT_ZID)

    # -- subscribers: R's own (no NodeId), M's (NodeId of M), N's (to M), shared on R ------
    with w.step("a: subscriber w/a/**"):
        keep["sa"] = a.declare_subscriber("w/a/**", lambda s: None)
    with w.step("a2: subscriber w/a/** (R already owns it)"):
        keep["sa2"] = a2.declare_subscriber("w/a/**", lambda s: None)
    with w.step("m: subscriber w/m/**"):
        keep["sm"] = mc.declare_subscriber("w/m/**", lambda s: None)
    with w.step("n: subscriber w/**"):
        keep["sn"] = n.declare_subscriber("w/**", lambda s: None)
        pub_a, pub_m = a.declare_publisher("w/n/1"), mc.declare_publisher("w/n/2")
        wait_matching(pub_a)
        wait_matching(pub_m)

    # -- data: entering at R, at M, and at N (to R's clients and M, nothing back to N) ----
    with w.step("a: put w/n/1"):
        pub_a.put(b"x")
    with w.step("m: put w/n/2 (enters the mesh at M)"):
        pub_m.put(b"y")
    with w.step("a: put w/n/3 with encoding, attachment, priority, express, block"):
        a.put(
            "w/n/3",
            b"z",
            encoding="text/plain",
            attachment=b"att",
            priority=zenoh.Priority.REAL_TIME,
            express=True,
            congestion_control=zenoh.CongestionControl.BLOCK,
        )
    with w.step("a: delete w/n/4"):
        a.delete("w/n/4")
    with w.step("a: put w/m/5 (to M and to N, each with its own key ids)"):
        a.put("w/m/5", b"both")
    with w.step("n: put w/a/1 and w/m/1 (enter the mesh at N)"):
        n.put("w/a/1", b"from-n")
        n.put("w/m/1", b"from-n")
    with w.step("a: undeclares w/a/** (a2 still holds it)"):
        keep.pop("sa").undeclare()
    with w.step("a2: undeclares w/a/**"):
        keep.pop("sa2").undeclare()
    with w.step("a: subscriber w/a/** again"):
        keep["sa"] = a.declare_subscriber("w/a/**", lambda s: None)
    with w.step("a2: subscriber k/a$*/*/b/** (wildcards inside)"):
        keep["sk"] = a2.declare_subscriber("k/a$*/*/b/**", lambda s: None)
    with w.step("a2: undeclares k/a$*/*/b/**"):
        keep.pop("sk").undeclare()

    # -- queryables: complete, not complete, merged on R; M's; N's -------------------------
    with w.step("a: queryable q/a complete"):
        keep["qa"] = a.declare_queryable("q/a", lambda q: q.reply("q/a", b"ra"), complete=True)
    with w.step("a: queryable q/b/** not complete"):
        keep["qb"] = a.declare_queryable("q/b/**", lambda q: q.reply("q/b/x", b"rb"), complete=False)
    with w.step("a2: queryable q/b/** complete (merged)"):
        keep["qb2"] = a2.declare_queryable("q/b/**", lambda q: q.reply_err(b"nope"), complete=True)
    with w.step("a2: undeclares q/b/**"):
        keep.pop("qb2").undeclare()
    with w.step("a2: queryable q/e (replies ERR)"):
        keep["qe"] = a2.declare_queryable("q/e", lambda q: q.reply_err(b"nope"))
    with w.step("m: queryable q/m complete"):
        keep["qm"] = mc.declare_queryable("q/m", lambda q: q.reply("q/m", b"rm"), complete=True)
    with w.step("n: queryable q/n complete"):
        keep["qn"] = n.declare_queryable("q/n", lambda q: q.reply("q/n", b"rn"), complete=True)
        querier_a, querier_m = a.declare_querier("q/n"), mc.declare_querier("q/n")
        queriers = {key: n.declare_querier(key) for key in ("q/a", "q/b/x", "q/m", "q/e")}
        for querier in (querier_a, querier_m, *queriers.values()):
            wait_matching(querier)

    # -- queries: answered at R (RESPONSE to N) or at M; asked of N (REQUEST) at R or at M --
    with w.step("n: get q/a"):
        assert get(queriers["q/a"]) == ["ra"]
    with w.step("n: get q/b/x"):
        assert get(queriers["q/b/x"]) == ["rb"]
    with w.step("n: get q/m (answered at M)"):
        assert get(queriers["q/m"]) == ["rm"]
    with w.step("n: get q/e (an ERR reply)"):
        assert get(queriers["q/e"]) == ["err:nope"]
    with w.step("a: get q/n (a REQUEST to N)"):
        assert get(querier_a) == ["rn"]
    with w.step("m: get q/n (a REQUEST entering the mesh at M)"):
        assert get(querier_m) == ["rn"]
    with w.step("a: get q/n with parameters and a 5 s timeout"):
        assert get(a, "q/n?x=1;y=2") == ["rn"]
    with w.step("a: get q/n with target ALL, no consolidation, a payload"):
        replies = a.get(
            "q/n", target=zenoh.QueryTarget.ALL, consolidation=zenoh.ConsolidationMode.NONE, payload=b"qp", timeout=5
        )
        assert [r.ok.payload.to_string() for r in replies] == ["rn"]
    with w.step("a2: undeclares q/e"):
        keep.pop("qe").undeclare()
    for querier in (querier_a, querier_m, *queriers.values()):
        querier.undeclare()

    # -- liveliness: tokens of R's side, M's and N's; R answers its clients' gets itself ---
    with w.step("a: token l/a"):
        keep["ta"] = a.liveliness().declare_token("l/a")
    with w.step("m: token l/m"):
        keep["tm"] = mc.liveliness().declare_token("l/m")
    with w.step("n: token l/n"):
        keep["tn"] = n.liveliness().declare_token("l/n")
    with w.step("a: liveliness get l/n (answered by R, nothing to N)"):
        # a real client's get can come back empty right after the token reached it (R
        # answers it alone, so a second ask adds nothing on the recorded links)
        assert value_of(lambda: [str(r.ok.key_expr) for r in a.liveliness().get("l/n", timeout=2)], "l/n") == ["l/n"]
    with w.step("a: undeclares l/a"):
        keep.pop("ta").undeclare()
    with w.step("a: undeclares q/a"):
        keep.pop("qa").undeclare()
    with w.step("a: token l/a again"):
        keep["ta"] = a.liveliness().declare_token("l/a")

    # -- a router joining late: R sends it every entity of every owner -----------------------
    with w.step(L_JOINS, at_least={"L": 2}):
        w.neighbour("L", L_ZID)

    # -- departures: a client of R, an entity of M, then M itself ---------------------------
    # (a holds one entity of each kind: a real router withdraws several in hash order.)
    with w.step("a: closes (holds w/a/**, q/b/**, l/a)"):
        a.close()
    with w.step("m: undeclares q/m"):
        keep.pop("qm").undeclare()
    with w.step("n: undeclares l/n"):
        keep.pop("tn").undeclare()
    # Killed, not stopped: a router closing gracefully may or may not withdraw its clients'
    # entities before its link goes (a race inside it, seen both ways), which is not R's
    # doing. Killed, it sends nothing; what R tells N and L is R's own.
    with w.step("M is killed (holds w/m/**, l/m)"):
        w.m.kill("M")


def record(kind: str, expected: dict[str, list[int]] | None, tmp: Path) -> Recording:
    tmp.mkdir(parents=True, exist_ok=True)
    with mesh(tmp) as m:
        w: World | None = None
        try:
            w = World(m, kind, expected)
            scenario(w)
            return w.recorded()  # now: what teardown makes R send is not part of it
        finally:
            # The neighbours first: R stopping first would make them reconnect to a proxy.
            for name in ("L", "N", "M"):
                if name in m.routers:
                    m.stop(name)
            m.close()
            if w is not None:
                w.close()


def counts(rec: Recording) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for _, link, msgs in rec:
        out.setdefault(link, []).append(len(msgs))
    return out


@pytest.mark.slow
def test_router_sends_its_router_neighbours_what_a_real_router_sends(tmp_path: Path) -> None:
    expected = record("zenoh", None, tmp_path / "zenoh-0")
    assert sum(len(msgs) for _, _, msgs in expected) > 50
    got = record("pyzenoh", counts(expected), tmp_path / "pyzenoh")
    # The real router is the reference; before calling pyzenoh wrong, give it more runs
    # (its timing varies: a step's message may come after the step's settle time).
    for i in range(REFERENCE_RETRIES):
        if got == expected:
            break
        expected = record("zenoh", None, tmp_path / f"zenoh-{i + 1}")
    assert got == expected
