"""Synthetic recordings of a mesh: routers in a line, each recording what it did, as
``pyzenoh router --record`` would, for the mesh audit's benchmarks and tests.

Router i (of n) has ``clients`` client faces (links 1..clients), a face to router i-1
(link 100 + 2i) and one to router i+1 (link 101 + 2i); each client subscribes to one
key expression, and every router hears of the others' subscribers on its router faces
(a router declaration, as the real ones pass them on). Clients publish on their router;
the entry router stamps the sample with its HLC (its zid), and every router sends it to
its own matching clients and on toward the routers that have some.

Faults the mesh audit must find: every ``drop_every``-th sample, the last router it
reaches drops it toward one subscribed client (a full queue: the route is recorded, the
send is not); every ``intercept_every``-th, an interceptor there drops it toward one
(an ``intercepted`` event, no send); and while the ``cut`` share of the samples goes by, the link between the
last two routers is down (closed at both ends, then opened again under new link ids,
the declarations passed on again).
"""

from __future__ import annotations

import os
import random
from collections.abc import Sequence

from pyzenoh.codec.data import Put
from pyzenoh.codec.network import Push, encode_network_message
from pyzenoh.codec.primitives import Encoding, Timestamp, WireExpr, ZenohId
from pyzenoh.pipeline.synth import DEFAULT_START_NS, SimRouter
from pyzenoh.recording import Recorder

KEYS = [f"mesh/{room}/{dev}" for room in ("kitchen", "hall", "lab", "roof") for dev in ("temp", "hum", "co2")]
SUB_KEYS = ["mesh/**", "mesh/kitchen/*", "mesh/*/temp", "mesh/lab/**", "mesh/roof/co2", "mesh/hall/hum"]
DWELL_NS = 20_000  # each hop's time inside a router
STEP_NS = 100_000  # between two published samples
#: The faults a sample can meet on its last router toward one client.
QUEUE = "queue"
INTERCEPTOR = "interceptor"
#: From the declarations to the first sample: longer than the audit's settle time.
SETTLED_NS = 2_000_000_000


def mesh_zid(index: int) -> ZenohId:
    return ZenohId(0xB0B0_0000 + index)


class _Mesh:
    def __init__(self, sims: list[SimRouter], clients: int) -> None:
        self.sims = sims
        self.n = len(sims)
        self.clients = clients
        self.left = {i: 100 + 2 * i for i in range(self.n)}  # router i's face to i-1
        self.right = {i: 101 + 2 * i for i in range(self.n)}  # router i's face to i+1
        self.client_keys: dict[tuple[int, int], str] = {}
        self.cut_at: int | None = None  # routers cut-1 and cut are apart
        self._eid = 1000

    def open_link(self, i: int) -> None:
        """Routers i and i+1 meet; each declares to the other the subscribers on its side."""
        a, b = self.sims[i], self.sims[i + 1]
        a.open(self.right[i], str(mesh_zid(i + 1)), "router")
        b.open(self.left[i + 1], str(mesh_zid(i)), "router")
        for (r, _c), key in sorted(self.client_keys.items()):
            self._eid += 1
            if r > i:
                a.declare_subscriber(self.right[i], self._eid, key)
            else:
                b.declare_subscriber(self.left[i + 1], self._eid, key)

    def close_link(self, i: int) -> None:
        self.sims[i].close(self.right[i])
        self.sims[i + 1].close(self.left[i + 1])
        # new link ids once open again (a new session between the same routers)
        self.right[i] += 1000
        self.left[i + 1] += 1000

    def subscribe(self, r: int, client: int, key: str) -> None:
        self.client_keys[(r, client)] = key
        self.sims[r].declare_subscriber(client, 1, key)
        for j in range(self.n):
            if j == r or (self.cut_at is not None and min(j, r) < self.cut_at <= max(j, r)):
                continue
            self._eid += 1
            self.sims[j].declare_subscriber(self.left[j] if r < j else self.right[j], self._eid, key)

    def publish(self, r: int, client: int, key: str, payload: bytes, now: int, fault: str | None) -> bool:
        """One sample through the mesh; whether ``fault`` (:data:`QUEUE`,
        :data:`INTERCEPTOR`) kept it from a subscribed client."""
        enc = Encoding.from_str("application/json")
        raw_in = encode_network_message(Push(WireExpr(0, key), Put(payload, enc)))
        stamped = encode_network_message(Push(WireExpr(0, key), Put(payload, enc, Timestamp.from_ns(now, mesh_zid(r)))))
        # the routers it crosses, in both directions, each from the face it came in on
        todo = [(r, client, raw_in, now)]
        hops: list[tuple[int, list[int], int]] = []  # (router, faces, seq of its rx)
        while todo:
            at, face, raw, t = todo.pop()
            sim = self.sims[at]
            sim.now = t
            seq = sim.rec.message(t, face, "rx", key, raw)
            faces = sim.subscribers_for(face, key)
            hops.append((at, faces, seq))
            for f in faces:
                if f in (self.left[at], self.right[at]):
                    nxt = at - 1 if f == self.left[at] else at + 1
                    back = self.right[nxt] if nxt < at else self.left[nxt]
                    todo.append((nxt, back, stamped, t + DWELL_NS))
        last = hops[-1]
        lost = None
        if fault is not None:
            clients_there = [f for f in last[1] if f <= self.clients]
            lost = clients_there[0] if clients_there else None
        for at, faces, seq in hops:
            sim = self.sims[at]
            t = sim.now
            if lost is not None and (at, faces, seq) == last:
                if fault == QUEUE:
                    sim.rec.route(t, seq, key, faces)
                else:
                    sim.rec.intercepted(
                        t, seq, lost, "egress", "put", key, "egress put dropped by downsampling 'synth'"
                    )
            for f in faces:
                if not (lost == f and (at, faces, seq) == last):
                    sim.rec.message(t + DWELL_NS, f, "tx", key, stamped, seq)
        return lost is not None


def generate_mesh(
    directories: Sequence[str | os.PathLike[str]],
    n_messages: int,
    *,
    seed: int = 7,
    clients: int = 4,
    payload_size: int = 16,
    drop_every: int = 1000,
    intercept_every: int = 0,
    cut: tuple[float, float] = (0.6, 0.65),
    max_segment_bytes: int = 64 << 20,
) -> dict[str, int]:
    """Write one recording per directory (routers in a line) of about ``n_messages``
    records in all; returns the counts written (records, samples, dropped, intercepted,
    during the cut)."""
    rnd = random.Random(seed)
    recorders = [
        Recorder(d, max_segment_bytes=max_segment_bytes, zid=str(mesh_zid(i))) for i, d in enumerate(directories)
    ]
    counts = {"records": 0, "samples": 0, "dropped": 0, "intercepted": 0, "during_cut": 0}
    try:
        sims = [SimRouter(rec, DEFAULT_START_NS) for rec in recorders]
        mesh = _Mesh(sims, clients)
        for i, sim in enumerate(sims):
            for c in range(1, clients + 1):
                sim.open(c, format(0xC000 + 16 * i + c, "x"))
        for i in range(len(sims) - 1):
            mesh.open_link(i)
        for i in range(len(sims)):
            for c in range(1, clients + 1):
                mesh.subscribe(i, c, SUB_KEYS[(i * clients + c) % len(SUB_KEYS)])
        payloads = [b'{"v": %d}' % rnd.randrange(10**payload_size) for _ in range(16)]
        now = DEFAULT_START_NS + SETTLED_NS
        cut_link = len(sims) - 2
        budget = n_messages * 4 + 1000
        for k in range(budget):
            written = sum(rec.next_seq for rec in recorders)
            if written >= n_messages:
                break
            share = written / n_messages
            if cut_link >= 0 and mesh.cut_at is None and cut[0] <= share < cut[1]:
                for sim in sims:
                    sim.now = now
                mesh.close_link(cut_link)
                mesh.cut_at = cut_link + 1
            elif mesh.cut_at is not None and share >= cut[1]:
                for sim in sims:
                    sim.now = now
                mesh.cut_at = None
                mesh.open_link(cut_link)
            r = rnd.randrange(len(sims))
            fault = None
            if drop_every > 0 and k % drop_every == drop_every - 1:
                fault = QUEUE
            elif intercept_every > 0 and k % intercept_every == intercept_every - 1:
                fault = INTERCEPTOR
            lost = mesh.publish(r, rnd.randrange(1, clients + 1), rnd.choice(KEYS), rnd.choice(payloads), now, fault)
            counts["samples"] += 1
            counts["dropped"] += lost and fault == QUEUE
            counts["intercepted"] += lost and fault == INTERCEPTOR
            counts["during_cut"] += mesh.cut_at is not None
            now += STEP_NS
        counts["records"] = sum(rec.next_seq for rec in recorders)
    finally:
        for rec in recorders:
            rec.close()
    return counts
