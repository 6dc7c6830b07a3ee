"""Hypothesis strategies producing every codec message with arbitrary legal field values."""

from __future__ import annotations

from hypothesis import strategies as st

from pyzenoh.codec import (
    Close,
    Declare,
    DeclareFinal,
    DeclareKeyExpr,
    DeclareQueryable,
    DeclareSubscriber,
    DeclareToken,
    Del,
    Encoding,
    EntityGlobalId,
    Err,
    Extension,
    Fragment,
    Frame,
    InitAck,
    InitSyn,
    Interest,
    InterestMode,
    InterestOptions,
    Join,
    KeepAlive,
    NetworkOam,
    OpenAck,
    OpenSyn,
    Push,
    Put,
    Query,
    QueryBody,
    Reply,
    Request,
    Response,
    ResponseFinal,
    SourceInfo,
    Timestamp,
    TransportOam,
    UndeclareKeyExpr,
    UndeclareQueryable,
    UndeclareSubscriber,
    UndeclareToken,
    WhatAmI,
    WireExpr,
    ZenohId,
)

u8 = st.integers(0, 0xFF)
u16 = st.integers(0, 0xFFFF)
u32 = st.integers(0, 0xFFFF_FFFF)
u64 = st.integers(0, 2**64 - 1)
# Values near the VLE byte boundaries matter most; mix them in.
edge64 = st.sampled_from([0, 1, 127, 128, 2**14 - 1, 2**14, 2**28 - 1, 2**56 - 1, 2**56, 2**63, 2**64 - 1])
z64 = st.one_of(u64, edge64)
small_bytes = st.binary(max_size=40)
text = st.text(max_size=20)
nonempty_text = st.text(min_size=1, max_size=20)

zids = st.integers(1, 2**128 - 1).map(ZenohId)
timestamps = st.builds(Timestamp, z64, zids)
encodings = st.builds(
    Encoding,
    st.one_of(st.integers(0, 60), st.just(0xFFFF), u16),
    st.one_of(st.none(), st.binary(max_size=255)),
)
wire_exprs = st.builds(WireExpr, u16, text, st.booleans())
source_infos = st.builds(SourceInfo, zids, u32, u32)
entity_ids = st.builds(EntityGlobalId, zids, u32)


def unknown_exts(taken: set[int]) -> st.SearchStrategy[tuple[Extension, ...]]:
    """Non-mandatory extensions whose ids the message does not know."""

    def build(ext_id: int, data: st.DataObject) -> Extension:
        enc = ext_id & 0x60
        if enc == 0x00:
            return Extension(ext_id)
        if enc == 0x20:
            return Extension(ext_id, data.draw(z64))
        return Extension(ext_id, data.draw(small_bytes))

    ids = st.integers(0, 0x5F).filter(lambda i: not i & 0x10 and i not in taken)
    return st.lists(st.builds(build, ids, st.data()), max_size=2).map(tuple)


puts = st.builds(
    Put,
    payload=st.binary(max_size=64),
    encoding=encodings,
    timestamp=st.none() | timestamps,
    source_info=st.none() | source_infos,
    attachment=st.none() | small_bytes,
    shm=st.booleans(),
    extensions=unknown_exts({0x41, 0x12, 0x43}),
)
dels = st.builds(
    Del,
    timestamp=st.none() | timestamps,
    source_info=st.none() | source_infos,
    attachment=st.none() | small_bytes,
    extensions=unknown_exts({0x41, 0x42}),
)
queries = st.builds(
    Query,
    consolidation=st.none() | st.integers(0, 3),
    parameters=text,
    body=st.none() | st.builds(QueryBody, st.binary(max_size=32), encodings),
    source_info=st.none() | source_infos,
    attachment=st.none() | small_bytes,
    body_shm=st.booleans(),
    extensions=unknown_exts({0x41, 0x43, 0x04, 0x45}),
)
replies = st.builds(Reply, st.one_of(puts, dels), st.none() | st.integers(0, 3), unknown_exts(set()))
errs = st.builds(
    Err,
    payload=st.binary(max_size=32),
    encoding=encodings,
    source_info=st.none() | source_infos,
    shm=st.booleans(),
    extensions=unknown_exts({0x41, 0x12}),
)
qos = st.integers(0, 0x3F)
net_common = {0x21, 0x42, 0x33, 0x47}

pushes = st.builds(
    Push,
    wire_expr=wire_exprs,
    body=st.one_of(puts, dels),
    qos=qos,
    timestamp=st.none() | timestamps,
    node_id=st.none() | z64,
    ts_stack=st.none() | small_bytes,
    extensions=unknown_exts(net_common),
)
requests = st.builds(
    Request,
    request_id=u32,
    wire_expr=wire_exprs,
    body=queries,
    qos=qos,
    timestamp=st.none() | timestamps,
    target=st.integers(0, 2),
    budget=st.none() | z64,
    timeout_ms=st.none() | z64,
    node_id=st.none() | z64,
    ts_stack=st.none() | small_bytes,
    extensions=unknown_exts(net_common | {0x34, 0x25, 0x26}),
)
responses = st.builds(
    Response,
    request_id=u32,
    wire_expr=wire_exprs,
    body=st.one_of(replies, errs),
    qos=qos,
    timestamp=st.none() | timestamps,
    responder=st.none() | entity_ids,
    ts_stack=st.none() | small_bytes,
    extensions=unknown_exts(net_common | {0x43}),
)
response_finals = st.builds(ResponseFinal, u32, qos, st.none() | timestamps, unknown_exts(net_common))
interests = st.builds(
    Interest,
    interest_id=u32,
    mode=st.sampled_from(list(InterestMode)),
    options=st.integers(0, 15).map(InterestOptions),
    wire_expr=st.none() | wire_exprs,
    aggregate=st.booleans(),
    qos=qos,
    timestamp=st.none() | timestamps,
    node_id=st.none() | z64,
    extensions=unknown_exts(net_common),
).map(
    # A Final interest carries no options byte, hence no options.
    lambda i: (
        Interest(i.interest_id, i.mode, qos=i.qos, timestamp=i.timestamp, node_id=i.node_id, extensions=i.extensions)
        if i.mode == InterestMode.FINAL
        else i
    )
)
body_exts = unknown_exts({0x5F, 0x21})
declaration_bodies = st.one_of(
    st.builds(DeclareKeyExpr, u16, wire_exprs.map(lambda w: WireExpr(w.scope, w.suffix, True)), body_exts),
    st.builds(UndeclareKeyExpr, u16, body_exts),
    st.builds(DeclareSubscriber, u32, wire_exprs, body_exts),
    st.builds(UndeclareSubscriber, u32, st.none() | wire_exprs, body_exts),
    st.builds(DeclareQueryable, u32, wire_exprs, st.booleans(), u16, body_exts),
    st.builds(UndeclareQueryable, u32, st.none() | wire_exprs, body_exts),
    st.builds(DeclareToken, u32, wire_exprs, body_exts),
    st.builds(UndeclareToken, u32, st.none() | wire_exprs, body_exts),
    st.builds(DeclareFinal, body_exts),
)
declares = st.builds(
    Declare,
    body=declaration_bodies,
    interest_id=st.none() | u32,
    qos=qos,
    timestamp=st.none() | timestamps,
    node_id=st.none() | z64,
    extensions=unknown_exts(net_common),
)
network_oams = st.builds(
    NetworkOam,
    u16,
    st.none() | z64 | small_bytes,
    qos,
    st.none() | timestamps,
    unknown_exts(net_common),
)
network_messages = st.one_of(pushes, requests, responses, response_finals, interests, declares, network_oams)

whatamis = st.sampled_from(list(WhatAmI))
init_fields = {
    "zid": zids,
    "whatami": whatamis,
    "version": u8,
    "resolution": st.integers(0, 15),
    "batch_size": u16,
    "qos": st.booleans(),
    "qos_link": st.none() | z64,
    "shm": st.none() | small_bytes,
    "auth": st.none() | small_bytes,
    "multilink": st.none() | small_bytes,
    "lowlatency": st.booleans(),
    "compression": st.booleans(),
    "patch": st.none() | z64,
    "region_name": st.none() | small_bytes,
    "extensions": unknown_exts({0x01, 0x21, 0x42, 0x43, 0x44, 0x05, 0x06, 0x27, 0x48}),
}
init_syns = st.builds(InitSyn, **init_fields)
init_acks = st.builds(InitAck, cookie=small_bytes, **init_fields)
lease = st.one_of(st.integers(0, 2**40), st.integers(0, 2**30).map(lambda s: s * 1000))
open_fields = {
    "lease_ms": lease,
    "initial_sn": u32,
    "qos": st.booleans(),
    "shm": st.none() | small_bytes,
    "auth": st.none() | small_bytes,
    "multilink": st.none() | small_bytes,
    "lowlatency": st.booleans(),
    "compression": st.booleans(),
    "remote_bound": st.none() | z64,
    "extensions": unknown_exts({0x01, 0x42, 0x43, 0x44, 0x04, 0x05, 0x06, 0x27}),
}
open_syns = st.builds(OpenSyn, cookie=small_bytes, **open_fields)
open_acks = st.builds(OpenAck, multilink_ack=st.booleans(), **open_fields)
closes = st.builds(Close, u8, st.booleans(), unknown_exts(set()))
keepalives = st.builds(KeepAlive, unknown_exts(set()))
frames = st.builds(
    Frame,
    reliable=st.booleans(),
    sn=u32,
    messages=st.lists(network_messages, max_size=3).map(tuple),
    priority=st.integers(0, 7),
    extensions=unknown_exts({0x31}),
)
fragments = st.builds(
    Fragment,
    reliable=st.booleans(),
    sn=u32,
    payload=st.binary(max_size=64),
    more=st.booleans(),
    priority=st.integers(0, 7),
    first=st.booleans(),
    drop=st.booleans(),
    extensions=unknown_exts({0x31, 0x02, 0x03}),
)
joins = st.builds(
    Join,
    zid=zids,
    whatami=whatamis,
    lease_ms=lease,
    next_sn_reliable=u32,
    next_sn_best_effort=u32,
    version=u8,
    resolution=u8,
    batch_size=u16,
    qos=st.none() | small_bytes,
    shm=st.none() | small_bytes,
    patch=st.none() | z64,
    extensions=unknown_exts({0x51, 0x52, 0x27}),
)
transport_oams = st.builds(TransportOam, u16, st.none() | z64 | small_bytes, st.integers(0, 7), unknown_exts({0x31}))
# A FRAGMENT swallows the rest of its batch, so it can only be last.
non_fragment_transport = st.one_of(
    init_syns, init_acks, open_syns, open_acks, closes, keepalives, frames, joins, transport_oams
)
batches = st.tuples(st.lists(non_fragment_transport, min_size=1, max_size=3), st.none() | fragments).map(
    lambda t: t[0] + ([t[1]] if t[1] is not None else [])
)


def plain_pushes(
    wire: st.SearchStrategy[WireExpr],
    encoding: st.SearchStrategy[Encoding],
    stamp: st.SearchStrategy[Timestamp],
) -> st.SearchStrategy[Push]:
    """PUSH(PUT/DEL) without extensions beyond QoS: the shape the fast paths read."""
    return st.builds(
        Push,
        wire_expr=wire,
        body=st.one_of(
            st.builds(Put, st.binary(max_size=300), encoding, st.none() | stamp),
            st.builds(Del, st.none() | stamp),
        ),
        qos=qos,
    )
