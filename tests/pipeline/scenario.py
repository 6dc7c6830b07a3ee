"""A small scripted recording whose every table value is known in advance.

Faces: 1 publisher, 2 and 3 subscribers, 4 queryable, 5 querier. Three routing faults are
injected (a dropped delivery, an extra delivery, a wrong route record) and one record
holds bytes that do not decode. Access control refuses face 5's subscriber and denies
two PUTs (one on the way in, one toward face 3): none of that is a fault.

:func:`build_acl` is a smaller recording whose only irregularities are access control's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pyzenoh.pipeline.synth import DEFAULT_START_NS, MS, SimRouter
from pyzenoh.recording import Recorder

T0 = DEFAULT_START_NS


@dataclass
class Facts:
    seqs: dict[str, int] = field(default_factory=dict)
    messages: int = 0


def build(directory: Path, *, max_segment_bytes: int = 64 << 20) -> Facts:
    facts = Facts()
    s = facts.seqs
    with Recorder(directory, max_segment_bytes=max_segment_bytes) as rec:
        sim = SimRouter(rec, T0)

        def at(ms: int) -> None:
            sim.now = T0 + ms * MS

        for link in range(1, 6):
            sim.open(link, format(0x1000 + link, "x"))
        at(1)
        s["sub2"] = sim.declare_subscriber(2, 1, "demo/**")
        at(2)
        s["sub3"] = sim.declare_subscriber(3, 1, "demo/b/*")
        at(3)
        s["qbl4"] = sim.declare_queryable(4, 1, "demo/q/**")
        at(4)
        s["tok2"] = sim.declare_token(2, 7, "alive/2")
        at(5)
        s["interest1"] = sim.interest(1, 1, "demo/**")
        at(10)
        s["put_a"] = sim.put(1, "demo/a", b"v1")
        at(11)
        s["put_bx"] = sim.put(1, "demo/b/x", b"v2-longer", "text/plain", drop=(3,))
        at(12)
        s["put_other"] = sim.put(1, "other/z", b"v3", extra=(2,))
        at(13)
        s["put_by"] = sim.put(2, "demo/b/y", b"v4")
        at(6)
        s["sub5_denied"] = sim.declare_subscriber(5, 1, "demo/**", denied_by="no-sub")
        at(14)
        s["put_a2"] = sim.put(1, "demo/a", b"v5", route=[2, 3])
        at(15)
        s["put_e_denied"] = sim.put(1, "demo/e", b"v8", denied_in="no-e")
        at(16)
        s["put_bw_denied3"] = sim.put(1, "demo/b/w", b"v9", denied_out=(3,), rule="no-bw")
        at(20)
        s["q1"], fwd1 = sim.get(5, 1, "demo/q/x", "n=1", timeout_ms=1000)
        at(25)
        sim.reply(4, fwd1[4], "demo/q/x", b"r1")
        at(27)
        sim.final(4, fwd1[4])
        at(30)
        s["q2"], fwd2 = sim.get(5, 2, "demo/q/y", timeout_ms=100)
        at(31)
        sim.reply_err(4, fwd2[4], b"bad")
        at(200)
        sim.expire(4, fwd2[4])
        at(210)
        s["q3"], _ = sim.get(5, 3, "nothing/here")
        at(300)
        sim.undeclare_subscriber(3, 1)
        at(301)
        s["put_bz"] = sim.put(1, "demo/b/z", b"v6")
        at(400)
        sim.undeclare_token(2, 7)
        at(500)
        sim.close(2)
        at(501)
        s["put_c"] = sim.put(1, "demo/c", b"v7")
        at(502)
        s["bad"] = rec.message(sim.now, 1, "rx", "demo/bad", b"\x7d\xff")
        facts.messages = rec.next_seq
    return facts


# Expected audit per data message: (subscribed, sent_to, route_expected, ok)
EXPECTED_DELIVERY = {
    "put_a": ([2], [2], [2], True),
    "put_bx": ([2, 3], [2], [2, 3], False),
    "put_other": ([], [2], [], False),
    "put_by": ([3], [3], [3], True),
    "put_a2": ([2], [2], [2, 3], False),
    "put_e_denied": ([2], [], [], True),
    "put_bw_denied3": ([2, 3], [2], [2], True),
    "put_bz": ([2], [2], [2], True),
    "put_c": ([], [], [], True),
}


def build_acl(directory: Path, *, record_denials: bool = True) -> Facts:
    """Faces 2, 3 subscribe to demo/**; face 4's subscriber is refused; face 1's PUTs:
    one denied on the way in, one denied toward face 3, one allowed. With
    ``record_denials=False`` the same traffic is recorded without the denials."""
    facts = Facts()
    s = facts.seqs
    with Recorder(directory) as rec:
        sim = SimRouter(rec, T0, record_denials=record_denials)
        for link in range(1, 5):
            sim.open(link, format(0x1000 + link, "x"))
        sim.advance(MS)
        s["sub2"] = sim.declare_subscriber(2, 1, "demo/**")
        s["sub3"] = sim.declare_subscriber(3, 1, "demo/**")
        s["sub4"] = sim.declare_subscriber(4, 1, "demo/**", denied_by="no-sub")
        sim.advance(MS)
        s["put_in"] = sim.put(1, "demo/secret/x", b"1", denied_in="no-secret")
        s["put_out"] = sim.put(1, "demo/b", b"2", denied_out=(3,), rule="no-b-to-3")
        s["put_ok"] = sim.put(1, "demo/c", b"3")
        facts.messages = rec.next_seq
    return facts
