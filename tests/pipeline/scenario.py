"""A small scripted recording whose every table value is known in advance.

Faces: 1 publisher, 2 and 3 subscribers, 4 queryable, 5 querier. Three routing faults are
injected (a dropped delivery, an extra delivery, a wrong route record) and one record
holds bytes that do not decode.
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
        at(14)
        s["put_a2"] = sim.put(1, "demo/a", b"v5", route=[2, 3])
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
    "put_bz": ([2], [2], [2], True),
    "put_c": ([], [], [], True),
}
