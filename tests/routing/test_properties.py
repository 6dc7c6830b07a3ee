"""Random operation sequences checked against a model of what every face was told.

The model is built only from what the test sent and what the core output: each face's
view of the declarations it received (ids -> keys), of the key ids the router declared to
it, and of its queries. After every step the views must be consistent (no duplicate
declaration, no undeclaration of an unknown id), complete (an active CurrentFuture
interest sees every matching entity of the other faces) and, for clients, sound (nothing
stale is left declared). Data and queries must go exactly where the model says, never
back to their source, and every query must end with exactly one RESPONSE_FINAL.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyzenoh.codec import (
    Declare,
    DeclareFinal,
    DeclareKeyExpr,
    DeclareQueryable,
    DeclareSubscriber,
    DeclareToken,
    Del,
    Interest,
    InterestMode,
    InterestOptions,
    NetworkMessage,
    NetworkOam,
    Push,
    Put,
    Query,
    Reply,
    Request,
    Response,
    ResponseFinal,
    UndeclareKeyExpr,
    UndeclareQueryable,
    UndeclareSubscriber,
    UndeclareToken,
    WhatAmI,
    WireExpr,
    ZenohId,
    decode_network_message,
    encode_network_message,
)
from pyzenoh.keyexpr import intersects, is_canonical
from pyzenoh.routing import (
    QueryableInfo,
    RoutingConfig,
    RoutingCore,
    Send,
)
from pyzenoh.routing.declared import merge_queryable_infos
from tests.codec import strategies as cst
from tests.hyp import examples
from tests.routing.support import ROUTER_ZID, check_send

FACES = [0, 1, 2, 3]
KEYS = ["a", "a/b", "a/c", "a/*", "a/**", "b", "b/**", "**", "@x", "@x/a", "a/b$*", "a/*/c"]
PUSH_KEYS = ["a", "a/b", "a/c", "b", "@x", "@x/a", "a/b/c", "a/x/c", "b/d", "a/*", "a//b"]
PREFIXES = ["a", "a/b", "b", "@x", "a/"]
S, Q, T, K = (InterestOptions.SUBSCRIBERS, InterestOptions.QUERYABLES, InterestOptions.TOKENS, InterestOptions.KEYEXPRS)

face = st.sampled_from(FACES)
small_id = st.integers(1, 3)
ref = st.integers(0, 2)  # 0 full string, 1 a face's own id, 2 an id of the router

_op_kinds = {
    "open": (1, st.tuples(st.just("open"), face, st.booleans())),
    "close": (1, st.tuples(st.just("close"), face)),
    "dkey": (2, st.tuples(st.just("dkey"), face, small_id, st.sampled_from(PREFIXES))),
    "ukey": (1, st.tuples(st.just("ukey"), face, small_id)),
    "dsub": (4, st.tuples(st.just("dsub"), face, small_id, st.sampled_from(KEYS), ref)),
    "usub": (2, st.tuples(st.just("usub"), face, small_id)),
    "dqabl": (3, st.tuples(st.just("dqabl"), face, small_id, st.sampled_from(KEYS), ref, st.booleans())),
    "uqabl": (1, st.tuples(st.just("uqabl"), face, small_id)),
    "dtok": (3, st.tuples(st.just("dtok"), face, small_id, st.sampled_from(KEYS), ref)),
    "utok": (2, st.tuples(st.just("utok"), face, small_id)),
    "int": (
        4,
        st.tuples(
            st.just("int"),
            face,
            small_id,
            st.sampled_from([InterestMode.CURRENT, InterestMode.FUTURE, InterestMode.CURRENT_FUTURE]),
            st.integers(0, 15).map(InterestOptions),
            st.none() | st.sampled_from(KEYS),
            ref,
        ),
    ),
    "fin": (2, st.tuples(st.just("fin"), face, small_id)),
    "push": (5, st.tuples(st.just("push"), face, st.sampled_from(PUSH_KEYS), ref, st.booleans())),
    "req": (
        3,
        st.tuples(st.just("req"), face, st.sampled_from(KEYS), st.integers(0, 2), st.none() | st.integers(0, 5000)),
    ),
    "resp": (4, st.tuples(st.just("resp"), face, st.integers(0, 5), st.booleans(), st.booleans())),
    "tick": (1, st.tuples(st.just("tick"), st.floats(0, 6))),
}
# Weighted: declarations, data and queries far more often than opening/closing faces.
ops = st.one_of(*(strategy for weight, strategy in _op_kinds.values() for _ in range(weight)))


@dataclass
class FaceModel:
    peer: bool
    remote_ids: dict[int, str] = field(default_factory=dict)  # ids the face declared
    router_ids: dict[int, str] = field(default_factory=dict)  # ids the router declared to it
    subs: dict[int, str] = field(default_factory=dict)
    qabls: dict[int, tuple[str, bool]] = field(default_factory=dict)
    tokens: dict[int, str] = field(default_factory=dict)
    interests: dict[int, tuple[InterestMode, InterestOptions, str | None]] = field(default_factory=dict)
    view_subs: dict[int, str] = field(default_factory=dict)
    view_qabls: dict[int, tuple[str, QueryableInfo]] = field(default_factory=dict)
    view_tokens: dict[int, str] = field(default_factory=dict)
    next_rid: int = 1
    asked: dict[int, int] = field(default_factory=dict)  # rid -> finals received
    to_answer: dict[int, str] = field(default_factory=dict)  # rid the router sent -> key


class Model:
    def __init__(self, config: RoutingConfig) -> None:
        self.core = RoutingCore(ROUTER_ZID, config=config)
        self.now = 1_000_000.0
        self.faces: dict[int, FaceModel] = {}
        self.finished: list[tuple[int, int]] = []  # (face, rid) queries that got their final

    # -- building messages ------------------------------------------------------------------

    def wire(self, f: FaceModel, key: str, how: int) -> WireExpr:
        table = f.remote_ids if how == 1 else f.router_ids if how == 2 else {}
        best: tuple[int, str] | None = None
        for ident, prefix in table.items():
            if key.startswith(prefix) and (best is None or len(prefix) > len(best[1])):
                best = (ident, prefix)
        if best is None:
            return WireExpr(0, key, True)
        return WireExpr(best[0], key[len(best[1]) :], how == 1)

    def resolve_to(self, f: FaceModel, we: WireExpr) -> str:
        """A key written by the router to face ``f``."""
        if we.scope == 0:
            return we.suffix
        table = f.router_ids if we.mapping_sender else f.remote_ids
        assert we.scope in table, f"unknown id {we.scope} used towards a face"
        return table[we.scope] + we.suffix

    # -- running ----------------------------------------------------------------------------

    def run(self, op: tuple[Any, ...]) -> None:
        kind = op[0]
        if kind == "tick":
            self.now += op[1]
            self.check_outputs(None, None, self.core.handle_timer(self.now))
            return
        fid = op[1]
        f = self.faces.get(fid)
        if kind == "open":
            if f is None:
                whatami = WhatAmI.PEER if op[2] else WhatAmI.CLIENT
                self.faces[fid] = FaceModel(op[2])
                out = self.core.add_face(fid, ZenohId(fid + 1), whatami, self.now)
                assert [type(s.message) for s in out] == ([NetworkOam] if op[2] else [])
                self.check_outputs(None, None, out)
            return
        if f is None:
            return
        if kind == "close":
            del self.faces[fid]
            self.check_outputs(None, None, self.core.remove_face(fid, self.now))
            return
        msg = self.message(f, op)
        if msg is None:
            return
        # As a link delivers it: decoded from its bytes, with the bytes alongside.
        data = encode_network_message(msg)
        msg = decode_network_message(data)
        out = self.core.handle(fid, msg, self.now, data)
        self.accept(f, op, msg)
        self.check_outputs(fid, msg, out)

    def message(self, f: FaceModel, op: tuple[Any, ...]) -> NetworkMessage | None:
        kind = op[0]
        if kind == "dkey":
            return Declare(DeclareKeyExpr(op[2], WireExpr(0, op[3], True)))
        if kind == "ukey":
            return Declare(UndeclareKeyExpr(op[2]))
        if kind == "dsub":
            return Declare(DeclareSubscriber(op[2], self.wire(f, op[3], op[4])))
        if kind == "usub":
            return Declare(UndeclareSubscriber(op[2]))
        if kind == "dqabl":
            return Declare(DeclareQueryable(op[2], self.wire(f, op[3], op[4]), op[5]))
        if kind == "uqabl":
            return Declare(UndeclareQueryable(op[2]))
        if kind == "dtok":
            return Declare(DeclareToken(op[2], self.wire(f, op[3], op[4])))
        if kind == "utok":
            return Declare(UndeclareToken(op[2]))
        if kind == "int":
            key = None if op[5] is None else self.wire(f, op[5], op[6])
            return Interest(op[2], op[3], op[4], key)
        if kind == "fin":
            return Interest(op[2], InterestMode.FINAL)
        if kind == "push":
            body = Put(b"p") if op[4] else Del()
            return Push(self.wire(f, op[2], op[3]), body)
        if kind == "req":
            rid = f.next_rid
            f.next_rid += 1
            return Request(rid, self.wire(f, op[2], 0), Query(), target=op[3], timeout_ms=op[4])
        if kind == "resp":
            if not f.to_answer:
                return None
            rid = sorted(f.to_answer)[op[2] % len(f.to_answer)]
            if op[3]:
                return Response(
                    rid, WireExpr(0, f.to_answer[rid].replace("*", "z").replace("$", ""), True), Reply(Put(b"r"))
                )
            return ResponseFinal(rid)
        raise AssertionError(kind)

    def accept(self, f: FaceModel, op: tuple[Any, ...], msg: NetworkMessage) -> None:
        """Apply the router's acceptance rules to the model of what the face declared."""
        kind = op[0]
        # A face at its declaration cap has each new declaration refused, alone.
        full = (
            len(f.subs) + len(f.qabls) + len(f.tokens) + len(f.interests) >= self.core.config.max_declarations_per_face
        )
        if kind == "dkey":
            f.remote_ids.setdefault(op[2], op[3])
        elif kind == "ukey":
            f.remote_ids.pop(op[2], None)
        elif kind in ("dsub", "dtok"):
            table = f.subs if kind == "dsub" else f.tokens
            if op[2] not in table and not full:
                table[op[2]] = op[3]
        elif kind == "usub":
            f.subs.pop(op[2], None)
        elif kind == "utok":
            f.tokens.pop(op[2], None)
        elif kind == "dqabl":
            if op[2] in f.qabls and f.qabls[op[2]][0] == op[3] or op[2] not in f.qabls and not full:
                f.qabls[op[2]] = (op[3], op[5])
        elif kind == "uqabl":
            f.qabls.pop(op[2], None)
        elif kind == "int":
            mode, options = op[3], op[4]
            current_ok = mode != InterestMode.CURRENT or (options & T and not options & (S | Q))
            if mode != InterestMode.CURRENT and op[2] not in f.interests and current_ok and not full:
                f.interests[op[2]] = (mode, options, op[5])
        elif kind == "fin":
            f.interests.pop(op[2], None)
        elif kind == "req":
            assert isinstance(msg, Request)
            f.asked[msg.request_id] = 0
        elif kind == "resp" and isinstance(msg, ResponseFinal):
            f.to_answer.pop(msg.request_id, None)

    # -- checks -----------------------------------------------------------------------------

    def check_outputs(self, src: int | None, msg: NetworkMessage | None, out: list[Send]) -> None:
        pushes: dict[int, int] = {}
        for s in out:
            check_send(s)
            assert s.face in self.faces, "sent to a face that is not open"
            f = self.faces[s.face]
            m = s.message
            if isinstance(m, Push):
                assert s.face != src, "data sent back to its source"
                assert isinstance(msg, Push)
                pushes[s.face] = pushes.get(s.face, 0) + 1
                assert self.resolve_to(f, m.wire_expr) == self.key_of(src, msg.wire_expr)
            elif isinstance(m, Request):
                assert s.face != src, "query sent back to its source"
                assert m.request_id not in f.to_answer
                f.to_answer[m.request_id] = self.resolve_to(f, m.wire_expr)
            elif isinstance(m, Response):
                assert m.request_id in f.asked and f.asked[m.request_id] == 0
            elif isinstance(m, ResponseFinal):
                assert f.asked.get(m.request_id) == 0, "a second final, or one for nothing"
                f.asked[m.request_id] = 1
            elif isinstance(m, Declare):
                self.apply_declare(f, m, msg)
            else:
                assert isinstance(m, NetworkOam) and f.peer
        if isinstance(msg, Push) and src is not None:
            assert pushes == {d: 1 for d in self.push_destinations(src, msg)}
        self.check_views()
        self.core.check_invariants()

    def key_of(self, src: int | None, we: WireExpr) -> str:
        assert src is not None
        f = self.faces[src]
        if we.scope == 0:
            return we.suffix
        return (f.remote_ids if we.mapping_sender else f.router_ids)[we.scope] + we.suffix

    def push_destinations(self, src: int, msg: Push) -> list[int]:
        key = self.key_of(src, msg.wire_expr)
        if not is_canonical(key):
            return []
        # Like zenohd, nothing goes from a peer to a peer (they meet through gossip).
        source_peer = self.faces[src].peer
        return [
            fid
            for fid, f in self.faces.items()
            if fid != src and not (source_peer and f.peer) and any(intersects(k, key) for k in f.subs.values())
        ]

    def apply_declare(self, f: FaceModel, m: Declare, cause: NetworkMessage | None) -> None:
        body = m.body
        if isinstance(body, DeclareKeyExpr):
            assert body.wire_expr.scope == 0 and m.interest_id is None
            assert body.expr_id not in f.router_ids and body.expr_id not in f.remote_ids
            f.router_ids[body.expr_id] = body.wire_expr.suffix
        elif isinstance(body, DeclareSubscriber):
            key = self.resolve_to(f, body.wire_expr)
            if m.interest_id is None:
                assert body.entity_id not in f.view_subs, "declared twice"
            elif body.entity_id == 0:
                return
            assert f.view_subs.get(body.entity_id, key) == key
            f.view_subs[body.entity_id] = key
        elif isinstance(body, UndeclareSubscriber):
            assert f.view_subs.pop(body.entity_id, None) is not None, "undeclared unknown id"
        elif isinstance(body, DeclareQueryable):
            key = self.resolve_to(f, body.wire_expr)
            if m.interest_id is not None and body.entity_id == 0:
                return
            old = f.view_qabls.get(body.entity_id)
            info = QueryableInfo(body.complete, body.distance)
            if old is not None:
                assert old[0] == key
                assert m.interest_id is not None or old[1] != info, "declared twice"
            f.view_qabls[body.entity_id] = (key, info)
        elif isinstance(body, UndeclareQueryable):
            assert f.view_qabls.pop(body.entity_id, None) is not None, "undeclared unknown id"
        elif isinstance(body, DeclareToken):
            key = self.resolve_to(f, body.wire_expr)
            if body.entity_id == 0:
                assert m.interest_id is not None
                return
            if m.interest_id is None:
                assert body.entity_id not in f.view_tokens, "declared twice"
            assert f.view_tokens.get(body.entity_id, key) == key
            f.view_tokens[body.entity_id] = key
        elif isinstance(body, UndeclareToken):
            if body.entity_id == 0:
                assert body.ext_wire_expr is not None
                key = self.resolve_to(f, body.ext_wire_expr)
                assert key not in f.view_tokens.values()
            else:
                assert f.view_tokens.pop(body.entity_id, None) is not None, "undeclared unknown id"
        else:
            assert isinstance(body, DeclareFinal)
            assert isinstance(cause, Interest) and cause.interest_id == m.interest_id
            assert cause.mode != InterestMode.FINAL

    def check_views(self) -> None:
        for fid, f in self.faces.items():
            others = [h for hid, h in self.faces.items() if hid != fid and not (f.peer and h.peer)]
            other_subs = {k for h in others for k in h.subs.values()}
            other_qabls: dict[str, QueryableInfo] = {}
            for h in others:
                per_face: dict[str, QueryableInfo] = {}
                for k, complete in h.qabls.values():
                    info = QueryableInfo(complete, 0)
                    per_face[k] = merge_queryable_infos(per_face[k], info) if k in per_face else info
                for k, info in per_face.items():
                    old = other_qabls.get(k)
                    other_qabls[k] = info if old is None else merge_queryable_infos(old, info)
            others_tokens = {k for h in others for k in h.tokens.values()}
            tokens = others_tokens | (set() if f.peer else set(f.tokens.values()))
            for mode, options, key in f.interests.values():
                if mode != InterestMode.CURRENT_FUTURE:
                    continue

                def covered(k: str, key: str | None = key) -> bool:
                    return key is None or intersects(key, k)

                if options & S:
                    missing = {k for k in other_subs if covered(k)} - set(f.view_subs.values())
                    assert not missing, f"face {fid} misses subscribers {missing}"
                if options & Q:
                    # (Only keys: like zenoh, an info change that leaves the merged info
                    # of all holders unchanged is not announced.)
                    missing = {k for k in other_qabls if covered(k)} - {k for k, _ in f.view_qabls.values()}
                    assert not missing, f"face {fid} misses queryables {missing}"
                if options & T:
                    # (A client's own token may be missing: like zenoh, when the other
                    # holder of its key closes, the router says that token went.)
                    missing = {k for k in others_tokens if covered(k)} - set(f.view_tokens.values())
                    assert not missing, f"face {fid} misses tokens {missing}"
            if not f.peer:
                assert set(f.view_subs.values()) <= other_subs, "stale subscriber declaration"
                # (No such check for queryables: like zenoh, the router leaves the last
                # holder of a key with the declaration it got from the others.)
                assert set(f.view_tokens.values()) <= tokens, "stale token declaration"

    def teardown(self) -> None:
        # Every query of an open face ends once all deadlines passed.
        self.now += 3600
        self.check_outputs(None, None, self.core.handle_timer(self.now))
        for f in self.faces.values():
            assert all(n == 1 for n in f.asked.values()), "a query never ended"
        for fid in list(self.faces):
            self.run(("close", fid))
        self.core.check_invariants()
        assert self.core.is_empty()


@pytest.mark.slow
@examples(ci=400, local=120)
@given(st.lists(ops, min_size=20, max_size=80), st.integers(2, 12))
def test_random_sequences_keep_every_face_view_right(steps: list[tuple[Any, ...]], cap: int) -> None:
    model = Model(RoutingConfig(max_declarations_per_face=cap))
    for fid in FACES[:3]:
        model.run(("open", fid, fid == 2))
    for op in steps:
        model.run(op)
    model.teardown()


garbage = st.tuples(st.just("garbage"), face, cst.network_messages)


@examples(ci=400, local=100)
@given(st.lists(st.one_of(ops, garbage), min_size=10, max_size=60))
def test_arbitrary_messages_never_crash_or_leak(steps: list[tuple[Any, ...]]) -> None:
    core = RoutingCore(ROUTER_ZID, config=RoutingConfig(max_declarations_per_face=8, max_keyexpr_ids_per_face=4))
    model = Model(RoutingConfig())
    model.core = core  # reuse the message builders only
    now = 1_000_000.0
    open_faces: set[int] = set()
    for op in steps:
        fid = op[1] if op[0] != "tick" else None
        if op[0] == "tick":
            now += op[1]
            out = core.handle_timer(now)
        elif op[0] == "open":
            if fid in open_faces:
                continue
            open_faces.add(fid)
            model.faces[fid] = FaceModel(op[2])
            out = core.add_face(fid, ZenohId(fid + 1), WhatAmI.PEER if op[2] else WhatAmI.CLIENT, now)
        elif fid not in open_faces:
            continue
        elif op[0] == "close":
            open_faces.discard(fid)
            del model.faces[fid]
            out = core.remove_face(fid, now)
        else:
            msg = op[2] if op[0] == "garbage" else model.message(model.faces[fid], op)
            if msg is None:
                continue
            data = encode_network_message(msg)
            out = core.handle(fid, decode_network_message(data), now, data)
        for s in out:
            check_send(s)
            assert s.face in open_faces
            if isinstance(s.message, (Push, Request)):
                assert s.face != fid
        core.check_invariants()
    for fid in sorted(open_faces):
        for s in core.remove_face(fid, now):
            check_send(s)
        core.check_invariants()
    assert core.is_empty()
