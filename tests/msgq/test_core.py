"""The sans-IO daemon core: routing rules, commands, dialects, bridge hook, bad input."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyzenoh.msgq.core import Deliver, Disconnect, MsgqCore
from pyzenoh.msgq.frame import decode_frame, encode_frame
from pyzenoh.msgq.protocol import Subtype, encode_message
from pyzenoh.msgq.skan import (
    Dialect,
    SkanEncodeError,
    SkanValue,
    decode,
    decode_ex,
    encode,
)
from tests.hyp import FUZZ

Msg = tuple[dict[str, SkanValue], dict[str, SkanValue] | None]


class Net:
    """A core plus helpers to speak to it as clients."""

    def __init__(self, **options: Any) -> None:
        self.core = MsgqCore(hostname="host", **options)
        self.now = 1_700_000_000.0

    def connect(self) -> int:
        return self.core.connect(self.now)

    def feed(
        self, cid: int, header: dict[str, Any], body: Any = None, dialect: Dialect = Dialect.BIND10
    ) -> list[Deliver | Disconnect]:
        return self.core.receive(cid, encode_message(header, body, dialect=dialect))

    def send(
        self, cid: int, group: str, body: Any = None, *, instance: str = "*", to: str = "*", **extra: Any
    ) -> dict[int, Msg]:
        header = {
            "type": "send",
            "from": self.core.lname(cid),
            "to": to,
            "group": group,
            "instance": instance,
            "seq": 2,
            **extra,
        }
        return deliveries(self.feed(cid, header, body))

    def sub(self, cid: int, group: str, instance: str = "*", subtype: str | None = None) -> None:
        header: dict[str, Any] = {"type": "subscribe", "group": group, "instance": instance}
        if subtype is not None:
            header["subtype"] = subtype
        assert self.feed(cid, header) == []


def parse(data: bytes) -> Msg:
    frame = decode_frame(data)
    return decode(frame.header), (decode(frame.body) if frame.body is not None else None)


def deliveries(actions: list[Deliver | Disconnect]) -> dict[int, Msg]:
    out: dict[int, Msg] = {}
    for action in actions:
        assert isinstance(action, Deliver), action
        assert action.client not in out
        out[action.client] = parse(action.data)
    return out


def test_lnames_are_unique_and_bind10_shaped() -> None:
    net = Net()
    a, b = net.connect(), net.connect()
    assert net.core.lname(a) != net.core.lname(b)
    assert net.core.lname(a) == f"{int(net.now):x}_{a:x}@host"
    assert net.core.client_by_lname(net.core.lname(b)) == b


def test_getlname_any_time_and_repeated() -> None:
    net = Net()
    a = net.connect()
    net.sub(a, "g")  # nothing enforces getlname first
    for _ in range(2):
        got = deliveries(net.feed(a, {"type": "getlname"}))
        assert got == {a: ({"type": "getlname"}, {"lname": net.core.lname(a)})}


def test_wildcard_and_instance_matching() -> None:
    net = Net()
    sender, star, inst1, inst2 = (net.connect() for _ in range(4))
    net.sub(star, "g")
    net.sub(inst1, "g", "i1")
    net.sub(inst2, "g", "i2")
    assert set(net.send(sender, "g", {"x": 1}, instance="i1")) == {star, inst1}
    # A message to instance "*" reaches only the wildcard subscribers (BIND 10, observed).
    assert set(net.send(sender, "g", {"x": 1})) == {star}
    assert set(net.send(sender, "g", {"x": 1}, instance="other")) == {star}
    assert net.send(sender, "other-group", {"x": 1}) == {}


def test_union_does_not_duplicate() -> None:
    net = Net()
    sender, both = net.connect(), net.connect()
    net.sub(both, "g")
    net.sub(both, "g", "i1")
    net.sub(both, "g", "i1")  # duplicate ignored
    assert list(net.send(sender, "g", {"x": 1}, instance="i1")) == [both]
    assert net.core.subscription_count() == 2


def test_message_content_is_forwarded() -> None:
    net = Net()
    sender, receiver = net.connect(), net.connect()
    net.sub(receiver, "g")
    got = net.send(sender, "g", {"hello": "a"}, extra_field=[1, None])
    header, body = got[receiver]
    assert header == {
        "type": "send",
        "from": net.core.lname(sender),
        "to": "*",
        "group": "g",
        "instance": "*",
        "seq": 2,
        "extra_field": [1, None],
    }
    assert body == {"hello": "a"}


def test_body_is_opaque_and_header_re_encoded() -> None:
    net = Net()
    sender, receiver = net.connect(), net.connect()
    net.sub(receiver, "g")
    # Non-minimal length forms and a duplicate key in the header; a non-Skan body.
    header = (
        b"Skan\x04type\x08\x00\x00\x00\x04send\x05group\x18\x00\x01g\x08instance\x28\x01*\x02to\x28\x01*\x02to\x28\x01*"
    )
    out = net.core.receive(sender, encode_frame(header, b"not-skan-body"))
    assert len(out) == 1 and isinstance(out[0], Deliver)
    frame = decode_frame(out[0].data)
    assert frame.body == b"not-skan-body"
    assert frame.header == encode({"type": "send", "group": "g", "instance": "*", "to": "*"})
    # Header-only sends stay header-only.
    out = net.core.receive(sender, encode_frame(header))
    assert isinstance(out[0], Deliver) and decode_frame(out[0].data).body is None


def test_directed_send() -> None:
    net = Net()
    sender, target, bystander = net.connect(), net.connect(), net.connect()
    net.sub(bystander, "g")
    got = net.send(sender, "unsubscribed-group", {"x": 1}, to=net.core.lname(target), instance="i9")
    assert list(got) == [target]
    assert got[target][0]["to"] == net.core.lname(target)
    assert net.send(sender, "g", {"x": 1}, to="nobody@host") == {}
    assert net.core.counters.no_recipient == 1


def test_never_back_to_sender() -> None:
    net = Net()
    a = net.connect()
    net.sub(a, "g")
    assert net.send(a, "g", {"x": 1}) == {}
    assert net.send(a, "g", {"x": 1}, to=net.core.lname(a)) == {}


def test_unsubscribe_and_disconnect_cleanup() -> None:
    net = Net()
    sender, a = net.connect(), net.connect()
    net.sub(a, "g")
    net.sub(a, "g", "i1")
    assert net.feed(a, {"type": "unsubscribe", "group": "g", "instance": "*"}) == []
    assert set(net.send(sender, "g", {}, instance="i1")) == {a}
    assert net.send(sender, "g", {}) == {}
    net.feed(a, {"type": "unsubscribe", "group": "nope", "instance": "*"})  # harmless
    lname = net.core.lname(a)
    assert net.core.disconnect(a) and not net.core.disconnect(a)
    assert net.core.subscription_count() == 0
    assert net.send(sender, "g", {}, instance="i1") == {}
    assert net.send(sender, "g", {}, to=lname) == {}
    assert net.core.receive(a, b"anything") == []


def test_subtypes() -> None:
    net = Net()
    sender, normal, meonly, promisc, target = (net.connect() for _ in range(5))
    net.sub(normal, "g")
    net.sub(meonly, "g", subtype="meonly")
    net.sub(promisc, "g", subtype="promisc")
    assert net.core.subscribers("g", "*") == {normal: Subtype.NORMAL, meonly: Subtype.MEONLY, promisc: Subtype.PROMISC}
    # Broadcast: normal and promisc, not meonly.
    assert set(net.send(sender, "g", {})) == {normal, promisc}
    # Directed to someone else: that client plus the promiscuous one.
    assert set(net.send(sender, "g", {}, to=net.core.lname(target))) == {target, promisc}
    # Directed to the meonly client: it gets it.
    assert set(net.send(sender, "g", {}, to=net.core.lname(meonly))) == {meonly, promisc}
    # Promisc still honours the group and never sees its own sends.
    assert set(net.send(sender, "h", {}, to=net.core.lname(target))) == {target}
    assert set(net.send(promisc, "g", {}, to=net.core.lname(target))) == {target}
    # Re-subscribing changes the subtype; unknown subtypes subscribe normally.
    net.sub(meonly, "g", subtype="normal")
    net.sub(target, "g", subtype="bogus")
    assert set(net.send(sender, "g", {})) == {normal, promisc, meonly, target}


def test_stats() -> None:
    net = Net()
    a, b = net.connect(), net.connect()
    net.sub(b, "g")
    net.send(a, "g", {})
    got = deliveries(net.feed(a, {"type": "stats", "seq": 7}))
    header, body = got[a]
    assert header == {"type": "stats", "reply": 7}
    assert body is not None
    stats = body["stats"]
    assert isinstance(stats, dict)
    assert stats["clients"] == 2 and stats["subscriptions"] == 1
    assert stats["sends"] == 1 and stats["deliveries"] == 1
    assert stats["frames_in"] == 3
    assert deliveries(net.feed(a, {"type": "stats"}))[a][0] == {"type": "stats"}


def test_ping_echoes_the_body() -> None:
    net = Net()
    a = net.connect()
    out = net.core.receive(a, encode_frame(encode({"type": "ping", "seq": 3}), b"opaque\x00"))
    assert isinstance(out[0], Deliver)
    frame = decode_frame(out[0].data)
    assert decode(frame.header) == {"type": "pong", "reply": 3}
    assert frame.body == b"opaque\x00"
    assert deliveries(net.feed(a, {"type": "ping"}))[a] == ({"type": "pong"}, None)


def test_want_answer() -> None:
    net = Net()
    a, b = net.connect(), net.connect()
    got = net.send(a, "g", {"q": 1}, want_answer=True)
    header, body = got[a]
    assert header["reply"] == 2 and header["from"] == "msgq" and header["to"] == net.core.lname(a)
    assert header["group"] == "g" and header["seq"] == 2
    assert body == {"result": [-1, "No such recipient"]}
    # Unknown lname: same answer.
    assert list(net.send(a, "g", {}, to="gone@host", want_answer=True)) == [a]
    # A reply never triggers it, nor a false flag, nor a delivered message.
    assert net.send(a, "g", {}, want_answer=True, reply=1) == {}
    assert net.send(a, "g", {}, want_answer=False) == {}
    net.sub(b, "g")
    assert list(net.send(a, "g", {}, want_answer=True)) == [b]


def test_unknown_type_and_invalid_headers_are_ignored() -> None:
    net = Net()
    a, b = net.connect(), net.connect()
    net.sub(b, "g")
    assert net.feed(a, {"type": "members"}) == []
    assert net.feed(a, {"type": 5}) == []
    assert net.feed(a, {"no": "type"}) == []
    assert net.core.receive(a, encode_frame(b"Skan")) == []  # empty header: no type
    assert net.feed(a, {"type": "send", "group": "g", "instance": "*"}) == []  # no "to"
    assert net.feed(a, {"type": "send", "group": None, "instance": "*", "to": "*"}) == []
    assert net.feed(a, {"type": "subscribe", "group": "g"}) == []  # no instance
    assert net.feed(a, {"type": "unsubscribe", "instance": "*"}) == []
    assert net.core.counters.invalid_headers == 7
    assert net.core.counters.unknown_types == 1
    # The client is still fully served.
    assert set(net.send(a, "g", {})) == {b}


def test_undecodable_header_disconnects_only_that_client() -> None:
    net = Net()
    bad, good, other = net.connect(), net.connect(), net.connect()
    net.sub(other, "g")
    out = net.core.receive(bad, encode_frame(b"Skab\x01a\x04"))
    assert out == [Disconnect(bad, out[0].reason)] and "undecodable" in out[0].reason
    assert bad not in net.core.clients
    assert set(net.send(good, "g", {})) == {other}


@pytest.mark.parametrize(
    "prefix", [b"\x00\x00\x00\x01\x00\x00", b"\x00\x00\x00\x05\x00\x00", b"\x00\x00\x00\x05\x00\x09"]
)
def test_bad_frame_disconnects(prefix: bytes) -> None:
    net = Net()
    a = net.connect()
    out = net.core.receive(a, prefix)
    assert len(out) == 1 and isinstance(out[0], Disconnect)
    assert net.core.counters.bad_frames == 1


def test_frame_size_limit() -> None:
    net = Net(max_frame_size=1000)
    a = net.connect()
    out = net.core.receive(a, b"\x00\x00\x10\x00\x00\x10")
    assert isinstance(out[0], Disconnect)


def test_frames_after_a_disconnecting_one_are_not_processed() -> None:
    net = Net()
    a, b = net.connect(), net.connect()
    net.sub(b, "g")
    send = encode_message({"type": "send", "group": "g", "instance": "*", "to": "*"})
    out = net.core.receive(a, send + encode_frame(b"junk") + send)
    assert [type(x) for x in out] == [Deliver, Disconnect]


def test_split_input() -> None:
    net = Net()
    a, b = net.connect(), net.connect()
    net.sub(b, "g")
    data = encode_message({"type": "send", "group": "g", "instance": "*", "to": "*"}, {"k": "v"}) * 2
    out = []
    for i in range(len(data)):
        out.extend(net.core.receive(a, data[i : i + 1]))
        assert net.core.mid_frame(a) == ((i + 1) not in (len(data) // 2, len(data)))
    assert len(out) == 2


def test_enforce_from() -> None:
    net = Net(enforce_from=True)
    a, b = net.connect(), net.connect()
    net.sub(b, "g")
    assert net.send(a, "g", {}, **{"from": "forged@x"}) == {}
    assert net.core.counters.forged_from == 1
    assert set(net.send(a, "g", {})) == {b}
    # Default: forged from passes through (BIND 10, observed).
    net2 = Net()
    c, d = net2.connect(), net2.connect()
    net2.sub(d, "g")
    assert net2.send(c, "g", {}, **{"from": "forged@x"})[d][0]["from"] == "forged@x"


# -- dialects -------------------------------------------------------------------------------


def test_each_client_is_answered_in_its_dialect() -> None:
    net = Net()
    seed, typed = net.connect(), net.connect()
    out = net.feed(seed, {"type": "getlname"}, dialect=Dialect.SEED)
    assert isinstance(out[0], Deliver)
    frame = decode_frame(out[0].data)
    assert decode_ex(frame.header).dialect == Dialect.SEED
    assert decode(frame.body or b"") == {"lname": net.core.lname(seed).encode()}
    assert net.core.dialect(seed) == Dialect.SEED and net.core.dialect(typed) == Dialect.BIND10
    # Seed subscribe works (its DATA fields are normalised to text).
    assert net.feed(seed, {"type": "subscribe", "group": "g", "instance": "*"}, dialect=Dialect.SEED) == []
    net.sub(typed, "g")
    # typed -> seed: the seed client gets an all-DATA header; the body is untouched.
    out = net.feed(typed, {"type": "send", "from": "x", "group": "g", "instance": "*", "to": "*", "seq": 5}, {"n": 1})
    assert len(out) == 1 and isinstance(out[0], Deliver) and out[0].client == seed
    frame = decode_frame(out[0].data)
    assert decode_ex(frame.header).dialect == Dialect.SEED
    assert decode(frame.header)["seq"] == b"5" and decode(frame.body or b"") == {"n": 1}
    # seed -> typed: seq text becomes an INT again, strings become UTF8.
    header = {
        "type": "send",
        "from": net.core.lname(seed),
        "to": "*",
        "group": "g",
        "instance": "*",
        "seq": 9,
        "want_answer": False,
    }
    received = deliveries(net.feed(seed, header, {"n": 1}, dialect=Dialect.SEED))
    assert received[typed][0] == header
    assert received[typed][1] == {"n": b"1"}  # the body is opaque: still seed-encoded


def test_seed_want_answer_flag() -> None:
    net = Net()
    seed = net.connect()
    header = {"type": "send", "from": "me", "to": "*", "group": "g", "instance": "*", "seq": 4, "want_answer": True}
    got = deliveries(net.feed(seed, header, {}, dialect=Dialect.SEED))
    assert got[seed][0]["reply"] == b"4" and got[seed][1] == {"result": [b"-1", b"No such recipient"]}


def test_empty_tag_cannot_go_to_a_seed_client() -> None:
    net = Net()
    seed, typed = net.connect(), net.connect()
    net.feed(seed, {"type": "subscribe", "group": "g", "instance": "*"}, dialect=Dialect.SEED)
    assert net.send(typed, "g", {}, **{"": "x"}) == {}
    assert net.core.counters.encode_failures == 1


# -- bridge hook ----------------------------------------------------------------------------


class Recorder:
    def __init__(self, claim: bool = False, fail: bool = False) -> None:
        self.seen: list[tuple[dict[str, SkanValue], bytes | None, str]] = []
        self.claim = claim
        self.fail = fail

    def on_send(self, header: dict[str, SkanValue], body: bytes | None, sender_lname: str) -> bool:
        self.seen.append((header, body, sender_lname))
        if self.fail:
            raise RuntimeError("bridge down")
        return self.claim


def test_observer_sees_every_routed_send() -> None:
    rec = Recorder()
    net = Net(observer=rec)
    a, b = net.connect(), net.connect()
    net.sub(b, "g")
    net.send(a, "g", {"x": 1})
    net.send(a, "nobody", None)
    net.feed(a, {"type": "ping"})
    net.feed(a, {"type": "send", "group": "g"})  # invalid: not routed, not observed
    assert [(h["group"], body, lname) for h, body, lname in rec.seen] == [
        ("g", encode({"x": 1}), net.core.lname(a)),
        ("nobody", None, net.core.lname(a)),
    ]
    rec.seen[0][0]["group"] = "mutated"  # the observer gets its own copy
    assert set(net.send(a, "g", {})) == {b}


def test_observer_claim_suppresses_no_recipient_answer() -> None:
    net = Net(observer=Recorder(claim=True))
    a = net.connect()
    assert net.send(a, "g", {}, want_answer=True) == {}


def test_observer_failure_is_contained() -> None:
    net = Net(observer=Recorder(fail=True))
    a, b = net.connect(), net.connect()
    net.sub(b, "g")
    assert set(net.send(a, "g", {})) == {b}
    assert net.core.counters.observer_errors == 1


def test_inject() -> None:
    rec = Recorder()
    net = Net(observer=rec)
    star, inst, seed = net.connect(), net.connect(), net.connect()
    net.sub(star, "g")
    net.sub(inst, "g", "i1")
    net.feed(seed, {"type": "subscribe", "group": "g", "instance": "i1"}, dialect=Dialect.SEED)
    header = {"from": "remote@elsewhere", "to": "*", "group": "g", "instance": "i1", "seq": 3}
    got = deliveries(net.core.inject(header, encode({"v": 1})))
    assert set(got) == {star, inst, seed}
    assert got[star] == ({"type": "send", **header}, {"v": 1})
    assert got[seed][0]["seq"] == b"3"
    # Directed to a local lname.
    got = deliveries(net.core.inject({**header, "to": net.core.lname(inst)}, None))
    assert set(got) == {inst} and got[inst][1] is None
    assert rec.seen == []  # never observed: no bridge loops
    assert net.core.counters.injected == 2
    assert net.core.inject({**header, "group": "none"}) == []
    for bad in ({"to": "*", "group": "g"}, {**header, "type": "subscribe"}, {**header, "x": object()}):
        with pytest.raises(SkanEncodeError):
            net.core.inject(bad)


# -- fuzz -----------------------------------------------------------------------------------


@FUZZ
@given(st.lists(st.binary(max_size=120), max_size=6))
def test_fuzz_core_input(chunks: list[bytes]) -> None:
    net = Net()
    victim, bystander = net.connect(), net.connect()
    net.sub(bystander, "g")
    for chunk in chunks:
        for action in net.core.receive(victim, chunk):
            assert isinstance(action, (Deliver, Disconnect))
    assert set(net.send(bystander, "g", {})) <= {victim}


@pytest.mark.slow
@FUZZ
@given(
    st.dictionaries(
        st.sampled_from(["type", "group", "instance", "to", "from", "seq", "reply", "subtype", "want_answer"]),
        st.one_of(
            st.none(),
            st.booleans(),
            st.integers(),
            st.text(max_size=5),
            st.binary(max_size=5),
            st.sampled_from(["send", "subscribe", "unsubscribe", "getlname", "stats", "ping", "*", "g"]),
        ),
        max_size=9,
    ),
    st.sampled_from(list(Dialect)),
)
def test_fuzz_headers(header: dict[str, Any], dialect: Dialect) -> None:
    net = Net()
    a, b = net.connect(), net.connect()
    net.sub(b, "g")
    try:
        data = encode_message(header, {"x": 1}, dialect=dialect)
    except SkanEncodeError:
        return
    for action in net.core.receive(a, data):
        assert isinstance(action, Deliver)
        parse(action.data)
