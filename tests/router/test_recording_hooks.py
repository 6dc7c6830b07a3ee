"""The router's recording hooks, in process: a RouterDaemon with a real Recorder and fake
links driven through its event entry point. Checks what ends up in the recording: rx and
tx records with their keys and ``cause``, route records only for dropped sends, link
events, the key filter, the order of records around re-entrant calls (a face closed
while routing), and access control's denials (``"denied"`` link events)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pyzenoh.codec import (
    Declare,
    Push,
    Put,
    Query,
    Request,
    ResponseFinal,
    WhatAmI,
    WireExpr,
    ZenohId,
    encode_network_message,
)
from pyzenoh.codec.network import (
    OAM_LINKSTATE,
    DeclareKeyExpr,
    DeclareQueryable,
    DeclareSubscriber,
    NetworkOam,
)
from pyzenoh.recording import LinkRecord, NetRecord, Recorder, RouteRecord, read_records
from pyzenoh.recording.process import RecorderProcess
from pyzenoh.router.config import RouterConfig
from pyzenoh.router.daemon import RouterDaemon
from pyzenoh.transport.link import Established, LinkClosed, Received


@dataclass(eq=False)
class FakeLink:
    """Stands in for a TcpLink: keeps what is sent, can drop, closes re-entrantly."""

    daemon: RouterDaemon
    port: int
    sent: list[bytes] = field(default_factory=list)
    accept: bool = True
    queued_bytes: int = 0
    closed: bool = False
    is_full: bool = False  # never full: Block back-pressure is tested on real links
    protocol: str = "tcp"
    cert_common_name: str | None = None
    local_address: tuple[str, int] = ("127.0.0.1", 7447)  # access control's interface

    @property
    def remote_address(self) -> tuple[str, int]:
        return ("127.0.0.1", self.port)

    def send(self, data: bytes, **_: object) -> bool:
        if not self.accept:
            return False
        self.sent.append(bytes(data))
        return True

    def send_run(self, data: bytes, ends: list[int], **_: object) -> bool:
        if not self.accept:
            return False
        start = 0
        for end in ends:
            self.sent.append(data[start:end])
            start = end
        return True

    def close(self, reason: int = 0) -> None:
        # Like TcpLink.close: the LinkClosed event is dispatched synchronously.
        if not self.closed:
            self.closed = True
            self.daemon._on_event(self, LinkClosed(reason, False, "test"))  # type: ignore[arg-type]


@pytest.fixture(params=["in-process", "process"])
def recorder_cls(request: pytest.FixtureRequest) -> type:
    """The hooks must record the same with a Recorder and with a RecorderProcess (whose
    calls return references, not seqs, as causes)."""
    return Recorder if request.param == "in-process" else RecorderProcess


class Net:
    def __init__(
        self,
        tmp: Path,
        recorder_cls: type,
        key_filter: str | None = None,
        **cfg: object,
    ) -> None:
        from dataclasses import replace

        self.dir = tmp / "rec"
        self.recorder = recorder_cls(self.dir, key_filter=key_filter)
        self.daemon = RouterDaemon(replace(RouterConfig(), **cfg), recorder=self.recorder)  # type: ignore[arg-type]
        self.links: dict[int, FakeLink] = {}

    def connect(self, n: int, whatami: WhatAmI = WhatAmI.CLIENT) -> FakeLink:
        link = FakeLink(self.daemon, 4000 + n)
        ev = Established(ZenohId(n), whatami, 10_000, 65535, 0, False, 0, 0, 0)
        self.daemon._on_event(link, ev)  # type: ignore[arg-type]
        self.links[n] = link
        return link

    def rx(self, n: int, msg: object) -> bytes:
        raw = encode_network_message(msg)  # type: ignore[arg-type]
        self.daemon._on_event(self.links[n], Received(msg, raw, True, 5))  # type: ignore[arg-type]
        return raw

    def records(self) -> list[object]:
        self.recorder.close()
        return list(read_records(self.dir))

    def face(self, n: int) -> int:
        return self.daemon.faces.by_link[id(self.links[n])]


def _net(recs: list[object]) -> list[NetRecord]:
    return [r for r in recs if isinstance(r, NetRecord)]


def _setup_pub_sub(net: Net, subs: int = 1) -> None:
    net.connect(1)
    for i in range(subs):
        net.connect(2 + i)
        net.rx(2 + i, Declare(DeclareSubscriber(1, WireExpr(0, "demo/**", True))))
    net.rx(1, Declare(DeclareKeyExpr(7, WireExpr(0, "demo/a", True))))


def test_routed_push_rx_and_tx_records(tmp_path: Path, recorder_cls: type) -> None:
    net = Net(tmp_path, recorder_cls)
    _setup_pub_sub(net, subs=2)
    raw = net.rx(1, Push(WireExpr(7, "", True), Put(b"hello")))
    recs = net.records()
    assert [r.seq for r in recs] == list(range(len(recs)))
    links = [r for r in recs if isinstance(r, LinkRecord)]
    assert [(r.event, r.link, r.remote) for r in links] == [
        ("open", 1, "tcp/127.0.0.1:4001"),
        ("open", 2, "tcp/127.0.0.1:4002"),
        ("open", 3, "tcp/127.0.0.1:4003"),
    ]
    net_recs = _net(recs)
    declares = net_recs[:3]
    assert [(r.direction, r.key, r.cause) for r in declares] == [
        ("rx", "demo/**", -1),
        ("rx", "demo/**", -1),
        ("rx", "demo/a", -1),
    ]
    rx, *txs = net_recs[3:]
    assert (rx.direction, rx.link, rx.key, rx.raw, rx.cause) == (
        "rx",
        1,
        "demo/a",
        raw,
        -1,
    )
    assert [(t.direction, t.link, t.key, t.cause, t.time_ns) for t in txs] == [
        ("tx", 2, "demo/a", rx.seq, rx.time_ns),
        ("tx", 3, "demo/a", rx.seq, rx.time_ns),
    ]
    assert [t.raw for t in txs] == [net.links[2].sent[-1], net.links[3].sent[-1]]
    assert all(t.seq > rx.seq for t in txs)
    assert not [r for r in recs if isinstance(r, RouteRecord)]


def test_dropped_send_writes_one_route_record(tmp_path: Path, recorder_cls: type) -> None:
    net = Net(tmp_path, recorder_cls)
    _setup_pub_sub(net, subs=3)
    net.links[2].accept = False
    net.links[4].accept = False
    net.rx(1, Push(WireExpr(7, "", True), Put(b"x")))
    recs = net.records()
    rx = [r for r in _net(recs) if r.direction == "rx"][-1]  # the PUSH
    routes = [r for r in recs if isinstance(r, RouteRecord)]
    assert len(routes) == 1
    route = routes[0]
    assert (route.cause, route.key, sorted(route.links)) == (
        rx.seq,
        "demo/a",
        [2, 3, 4],
    )
    assert route.seq > rx.seq
    txs = [r for r in _net(recs) if r.direction == "tx"]
    assert [(t.link, t.cause) for t in txs] == [(3, rx.seq)]


def test_request_without_queryable_answers_final_with_cause(tmp_path: Path, recorder_cls: type) -> None:
    net = Net(tmp_path, recorder_cls)
    net.connect(1)
    net.rx(1, Request(5, WireExpr(0, "demo/q", True), Query()))
    rx, final = _net(net.records())
    assert (rx.direction, rx.key, rx.link) == ("rx", "demo/q", 1)
    assert (final.direction, final.key, final.link, final.cause) == (
        "tx",
        None,
        1,
        rx.seq,
    )
    assert final.raw == encode_network_message(ResponseFinal(5))


def test_request_to_queryable_keeps_key(tmp_path: Path, recorder_cls: type) -> None:
    net = Net(tmp_path, recorder_cls)
    net.connect(1)
    net.connect(2)
    net.rx(2, Declare(DeclareQueryable(3, WireExpr(0, "demo/**", True), complete=True)))
    net.rx(1, Request(5, WireExpr(0, "demo/q", True), Query()))
    recs = _net(net.records())
    rx = next(r for r in recs if r.direction == "rx" and r.key == "demo/q")
    txs = [r for r in recs if r.cause == rx.seq]
    assert [(t.direction, t.link, t.key) for t in txs] == [("tx", 2, "demo/q")]
    assert txs[0].raw == net.links[2].sent[-1]


def test_key_filter_drops_push_records_keeps_keyless(tmp_path: Path, recorder_cls: type) -> None:
    net = Net(tmp_path, recorder_cls, key_filter="other/**")
    _setup_pub_sub(net)
    net.rx(1, Push(WireExpr(7, "", True), Put(b"x")))
    net.rx(1, Request(5, WireExpr(0, "demo/q", True), Query()))
    recs = _net(net.records())
    assert [(r.direction, r.key, r.cause) for r in recs] == [("tx", None, -1)]
    assert len(net.links[2].sent) == 1  # routed all the same


def test_slow_face_closed_while_routing(tmp_path: Path, recorder_cls: type) -> None:
    net = Net(tmp_path, recorder_cls, send_queue_max_bytes=10)
    _setup_pub_sub(net, subs=2)
    net.links[2].queued_bytes = 1000
    net.rx(1, Push(WireExpr(7, "", True), Put(b"x")))
    recs = net.records()
    rx = [r for r in _net(recs) if r.direction == "rx"][-1]  # the PUSH
    rx_i = recs.index(rx)
    after = recs[rx_i + 1 :]
    assert isinstance(after[0], LinkRecord) and (after[0].event, after[0].link) == (
        "close",
        2,
    )
    assert [(r.link, r.cause) for r in _net(after)] == [(3, rx.seq)]
    assert net.links[2].closed


def test_link_close_and_local_face(tmp_path: Path, recorder_cls: type) -> None:
    net = Net(tmp_path, recorder_cls)
    got: list[object] = []
    net.connect(1)
    local = net.daemon.add_local_face(ZenohId(99), got.append, WhatAmI.CLIENT, name="bridge")
    net.daemon.local_input(local, Declare(DeclareSubscriber(1, WireExpr(0, "demo/**", True))))
    net.rx(1, Push(WireExpr(0, "demo/b", True), Put(b"y")))
    net.links[1].close()
    recs = net.records()
    links = [(r.event, r.link, r.remote) for r in recs if isinstance(r, LinkRecord)]
    assert links == [
        ("open", 1, "tcp/127.0.0.1:4001"),
        ("open", 2, "local/bridge"),
        ("close", 1, None),
    ]
    rx = next(r for r in _net(recs) if r.key == "demo/b")
    tx = [r for r in _net(recs) if r.cause == rx.seq]
    assert [(t.direction, t.link, t.key) for t in tx] == [("tx", 2, "demo/b")]
    assert len(got) == 1


def test_bad_input_is_recorded_before_the_close(tmp_path: Path, recorder_cls: type) -> None:
    net = Net(tmp_path, recorder_cls)
    net.connect(1, WhatAmI.PEER)
    for i in range(2):
        net.rx(1, Declare(DeclareSubscriber(i + 1, WireExpr(0, f"demo/{i}", True))))
    bad = net.rx(1, NetworkOam(OAM_LINKSTATE, b"\x05"))  # five link states announced, none sent
    recs = net.records()
    assert net.links[1].closed
    kinds = [(type(r).__name__, getattr(r, "raw", None)) for r in recs]
    assert kinds[-2:] == [("NetRecord", bad), ("LinkRecord", None)]


@pytest.mark.parametrize("n", [1, 3])
def test_many_pushes_seq_and_cause_consistent(tmp_path: Path, recorder_cls: type, n: int) -> None:
    net = Net(tmp_path, recorder_cls)
    _setup_pub_sub(net, subs=n)
    for i in range(500):
        net.rx(1, Push(WireExpr(7, "", True), Put(bytes([i & 0xFF]) * (i % 40))))
    recs = _net(net.records())
    rxs = [r for r in recs if r.direction == "rx" and r.key == "demo/a"][1:]  # not D_KEYEXPR
    assert len(rxs) == 500
    by_cause: dict[int, list[NetRecord]] = {}
    for r in recs:
        if r.direction == "tx":
            by_cause.setdefault(r.cause, []).append(r)
    for rx in rxs:
        txs = by_cause[rx.seq]
        assert [t.link for t in txs] == list(range(2, 2 + n))
        assert all(t.seq > rx.seq and t.time_ns == rx.time_ns for t in txs)


# --- access control's denials -------------------------------------------------------------


def _deny(ident: str, message: str, keys: list[str], flow: str) -> dict[str, object]:
    return {"id": ident, "messages": [message], "key_exprs": keys, "permission": "deny", "flows": [flow]}


def _acl_net(tmp: Path, recorder_cls: type, key_filter: str | None = None) -> Net:
    """Face 1 may not put to vault/** (ingress), face 3 gets no demo/secret/** put
    (egress), face 4 may not declare a subscriber on demo/** (ingress)."""
    from pyzenoh.routing.access_control import parse_access_control

    acl = parse_access_control(
        {
            "enabled": True,
            "default_permission": "allow",
            "rules": [
                _deny("no-vault", "put", ["vault/**"], "ingress"),
                _deny("no-secret-out", "put", ["demo/secret/**"], "egress"),
                _deny("no-sub", "declare_subscriber", ["demo/**"], "ingress"),
            ],
            "subjects": [{"id": "pub", "zids": ["1"]}, {"id": "s3", "zids": ["3"]}, {"id": "s4", "zids": ["4"]}],
            "policies": [
                {"rules": ["no-vault"], "subjects": ["pub"]},
                {"rules": ["no-secret-out"], "subjects": ["s3"]},
                {"rules": ["no-sub"], "subjects": ["s4"]},
            ],
        }
    )
    return Net(tmp, recorder_cls, key_filter, access_control=acl)


def _denied(recs: list[object]) -> list[LinkRecord]:
    return [r for r in recs if isinstance(r, LinkRecord) and r.event == "denied"]


def test_denials_follow_the_rx_record_they_are_about(tmp_path: Path, recorder_cls: type) -> None:
    net = _acl_net(tmp_path, recorder_cls)
    net.connect(1)
    for n in (2, 3, 4):
        net.connect(n)
        net.rx(n, Declare(DeclareSubscriber(1, WireExpr(0, "demo/**", True))))
    net.rx(2, Declare(DeclareSubscriber(2, WireExpr(0, "vault/**", True))))
    net.rx(1, Push(WireExpr(0, "vault/door", True), Put(b"1234")))
    net.rx(1, Push(WireExpr(0, "demo/secret/x", True), Put(b"s")))
    net.rx(1, Push(WireExpr(0, "demo/a", True), Put(b"a")))
    assert net.daemon.ingress._subject_faces  # type: ignore[attr-defined]  # one per face with a subject
    recs = net.records()
    by_seq = {r.seq: r for r in recs if isinstance(r, NetRecord | LinkRecord)}
    assert list(by_seq) == list(range(len(recs)))
    denied = _denied(recs)
    got = [(d.link, d.flow, d.message, d.key, d.reason) for d in denied]
    assert got == [
        (4, "ingress", "declare_subscriber", "demo/**", "ingress declare_subscriber denied by rule 'no-sub'"),
        (1, "ingress", "put", "vault/door", "ingress put denied by rule 'no-vault'"),
        (3, "egress", "put", "demo/secret/x", "egress put denied by rule 'no-secret-out'"),
    ]
    for d in denied:
        assert d.cause is not None
        rx = by_seq[d.cause]
        assert isinstance(rx, NetRecord) and rx.direction == "rx" and rx.key in (d.key, "demo/**")
        assert d.seq == rx.seq + 1 and d.time_ns == rx.time_ns  # right after it
        assert (d.zid, d.whatami, d.remote, d.carried) == (None, None, None, False)
    decl, vault, secret = (by_seq[d.cause] for d in denied if d.cause is not None)
    assert decl.link == 4
    txs = [r for r in _net(recs) if r.direction == "tx"]
    assert not [t for t in txs if t.cause == vault.seq]  # denied on the way in: nowhere
    assert [t.link for t in txs if t.cause == secret.seq] == [2]  # not to 3
    last = _net(recs)[-1]
    assert (last.direction, last.key) == ("tx", "demo/a")
    a_rx = max(r.seq for r in _net(recs) if r.direction == "rx")
    assert sorted(t.link for t in txs if t.cause == a_rx) == [2, 3]  # 4 never subscribed
    assert net.daemon.stats.access_control_denied == {"no-sub": 1, "no-vault": 1, "no-secret-out": 1}


def test_denials_outside_routing_have_no_cause_and_closed_faces_are_forgotten(
    tmp_path: Path, recorder_cls: type
) -> None:
    from pyzenoh.routing.access_control import EGRESS, PUT, Denial

    net = _acl_net(tmp_path, recorder_cls)
    net.connect(1)
    net.connect(3)
    acl = net.daemon.access_control
    assert acl is not None and acl.listener is not None
    subject = net.daemon.faces.by_id[net.face(3)].subject
    assert subject is not None
    acl.record(subject, EGRESS, PUT, "demo/t", Denial("r", "s3"))  # as a timer would meet it
    net.daemon._on_timer()
    net.links[3].close()
    assert id(subject) not in net.daemon.ingress._subject_faces  # type: ignore[attr-defined]
    acl.record(subject, EGRESS, PUT, "demo/t", Denial("r", "s3"))  # a face gone: not recorded
    net.rx(1, Push(WireExpr(0, "demo/u", True), Put(b"u")))
    recs = net.records()
    assert [(d.cause, d.link, d.reason) for d in _denied(recs)] == [(-1, 2, "egress put denied by rule 'r'")]


def test_denials_follow_the_key_filter(tmp_path: Path, recorder_cls: type) -> None:
    net = _acl_net(tmp_path, recorder_cls, key_filter="demo/**")
    net.connect(1)
    net.connect(4)
    net.rx(1, Push(WireExpr(0, "vault/door", True), Put(b"1234")))
    net.rx(4, Declare(DeclareSubscriber(1, WireExpr(0, "demo/x", True))))
    recs = net.records()
    (denied,) = _denied(recs)
    assert (denied.link, denied.key, denied.cause) == (2, "demo/x", _net(recs)[-1].seq)


def test_no_listener_without_a_recorder() -> None:
    from dataclasses import replace

    from pyzenoh.routing.access_control import parse_access_control

    acl = parse_access_control(
        {"enabled": True, "default_permission": "deny", "rules": [], "subjects": [], "policies": []}
    )
    daemon = RouterDaemon(replace(RouterConfig(), access_control=acl))
    assert daemon.access_control is not None and daemon.access_control.listener is None


@pytest.mark.parametrize("accept", [True, False], ids=["delivered", "dropped"])
def test_a_run_is_recorded_as_its_messages_one_by_one(tmp_path: Path, recorder_cls: type, accept: bool) -> None:
    from pyzenoh.codec import Frame
    from pyzenoh.dataplane import PushRun, decode_batch
    from pyzenoh.transport.link import ReceivedRun

    msgs = [Push(WireExpr(7, "", True), Put(b"%05d" % i)) for i in range(40)]
    frame = bytearray()
    Frame(True, 1, (), 5).write_header(frame)
    for m in msgs:
        frame += encode_network_message(m)
    (decoded,) = decode_batch(bytes(frame), keep_raw=True, runs=True)
    (run,) = decoded.messages  # type: ignore[attr-defined]
    assert isinstance(run, PushRun) and run.count == 40
    seen = []
    for sub in ("run", "each"):
        # One router id for both: the copies' lengths include the router's timestamp id,
        # and a random id one byte shorter (a zero top byte) would tell them apart.
        net = Net(tmp_path / sub, recorder_cls, id="a1a2a3a4a5a6a7a8a9aaabacadaeaf10")
        _setup_pub_sub(net, subs=2)
        net.links[3].accept = accept
        if sub == "run":
            net.daemon._on_event(net.links[1], ReceivedRun(run, True, 5))  # type: ignore[arg-type]
        else:
            for m in msgs:
                net.rx(1, m)
        recs = [
            r
            for r in net.records()
            if isinstance(r, RouteRecord) or (isinstance(r, NetRecord) and r.raw[0] & 0x1F == 0x1D)
        ]
        seqs = {r.seq: i for i, r in enumerate(recs) if isinstance(r, NetRecord)}
        shape = []
        for r in recs:
            if isinstance(r, NetRecord):
                # raw of tx copies holds the router's timestamps: compare all but them
                shape.append(("net", r.direction, r.link, r.key, seqs.get(r.cause), len(r.raw)))
            else:
                shape.append(("route", seqs.get(r.cause), tuple(r.links)))
        seen.append((sorted(shape, key=repr), len(net.links[2].sent), len(net.links[3].sent)))
    assert seen[0] == seen[1]
    assert len(seen[0][0]) == 40 * 3  # rx and two copies, or rx, one copy and a route record


def test_interceptors_drops_follow_the_rx_record_they_are_about(tmp_path: Path, recorder_cls: type) -> None:
    """Messages an interceptor dropped are ``"intercepted"`` link events right after the
    rx record being routed, on the face whose flow dropped them: the publisher's on the
    way in, each subscriber's on the way out."""
    from pyzenoh.interceptors import Interceptors

    def small(ident: str, flow: str, key: str) -> dict[str, object]:
        return {"id": ident, "flows": [flow], "messages": ["put"], "key_exprs": [key], "size_limit": 10}

    interceptors = Interceptors.from_config(
        {"low_pass_filter": [small("small-out", "egress", "demo/big/**"), small("small-in", "ingress", "demo/in/**")]}
    )
    net = Net(tmp_path, recorder_cls, interceptors=interceptors)
    _setup_pub_sub(net, subs=2)
    for key, payload in (("demo/big/x", b"x" * 50), ("demo/in/x", b"x" * 50), ("demo/big/y", b"ok")):
        net.rx(1, Push(WireExpr(0, key, True), Put(payload)))
    recs = net.records()
    by_seq = {r.seq: r for r in recs if isinstance(r, NetRecord | LinkRecord)}
    stops = [r for r in recs if isinstance(r, LinkRecord) and r.event == "intercepted"]
    out = "egress put dropped by low_pass_filter 'small-out'"
    assert sorted((s.link, s.flow, s.message, s.key, s.reason) for s in stops) == [
        (1, "ingress", "put", "demo/in/x", "ingress put dropped by low_pass_filter 'small-in'"),
        (2, "egress", "put", "demo/big/x", out),
        (3, "egress", "put", "demo/big/x", out),
    ]
    txs = [r for r in _net(recs) if r.direction == "tx"]
    for s in stops:
        assert s.cause is not None
        rx = by_seq[s.cause]
        assert isinstance(rx, NetRecord) and (rx.direction, rx.key) == ("rx", s.key)
        assert s.time_ns == rx.time_ns and s.seq > rx.seq
        assert not [t for t in txs if t.cause == rx.seq]  # dropped everywhere
    y = next(r for r in _net(recs) if r.direction == "rx" and r.key == "demo/big/y")
    assert sorted(t.link for t in txs if t.cause == y.seq) == [2, 3]
    assert not _denied(recs)  # not access control's
