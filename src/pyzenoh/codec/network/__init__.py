"""Network layer: PUSH, REQUEST, RESPONSE, RESPONSE_FINAL, DECLARE, INTEREST, OAM.

Network messages travel inside FRAMEs (or reassembled FRAGMENTs). They carry no length:
a reader parses one message and stops where it ends (zenoh-wire.md 3).

One module per message family, each named for it; this package reads any of them by
its header (:func:`read_network_message`) and re-exports every name:

* :mod:`.header` -- message ids, header flags, the extensions every message may carry;
* :mod:`.qos` -- :class:`Priority` and the QoS extension's values;
* :mod:`.push` -- PUSH (a PUT or DEL for subscribers);
* :mod:`.request` -- REQUEST, RESPONSE, RESPONSE_FINAL, :func:`with_request_id`;
* :mod:`.declare` -- DECLARE and its bodies;
* :mod:`.interest` -- INTEREST;
* :mod:`.oam` -- network OAM (LINKSTATE's carrier).
"""

from __future__ import annotations

from pyzenoh.codec.extensions import expect_end
from pyzenoh.codec.network.declare import (
    D_FINAL,
    D_KEYEXPR,
    D_QUERYABLE,
    D_SUBSCRIBER,
    D_TOKEN,
    EXT_QUERYABLE_INFO,
    EXT_WIRE_EXPR,
    NULL_WIRE_EXPR,
    U_KEYEXPR,
    U_QUERYABLE,
    U_SUBSCRIBER,
    U_TOKEN,
    DeclarationBody,
    Declare,
    DeclareFinal,
    DeclareKeyExpr,
    DeclareQueryable,
    DeclareSubscriber,
    DeclareToken,
    UndeclareKeyExpr,
    UndeclareQueryable,
    UndeclareSubscriber,
    UndeclareToken,
)
from pyzenoh.codec.network.header import (
    EXT_NODE_ID,
    EXT_QOS,
    EXT_TIMESTAMP,
    EXT_TS_STACK,
    FIRST_NETWORK_ID,
    FLAG_I,
    FLAG_M,
    FLAG_N,
    FLAG_Z,
    ID_DECLARE,
    ID_INTEREST,
    ID_OAM,
    ID_PUSH,
    ID_REQUEST,
    ID_RESPONSE,
    ID_RESPONSE_FINAL,
)
from pyzenoh.codec.network.interest import (
    NO_OPTIONS,
    OPT_AGGREGATE,
    OPT_MAPPING,
    OPT_NAMED,
    OPT_RESTRICTED,
    Interest,
    InterestMode,
    InterestOptions,
)
from pyzenoh.codec.network.oam import OAM_LINKSTATE, NetworkOam, read_oam_body
from pyzenoh.codec.network.oam import (
    _oam_encoding as _oam_encoding,  # codec/transport.py: transport OAM
)
from pyzenoh.codec.network.oam import _write_oam_body as _write_oam_body
from pyzenoh.codec.network.push import Push
from pyzenoh.codec.network.qos import (
    QOS_BLOCK,
    QOS_BLOCK_FIRST,
    QOS_DECLARE,
    QOS_DEFAULT,
    QOS_EXPRESS,
    QOS_PRIORITY_MASK,
    QOS_REQUEST,
    Priority,
    qos_value,
)
from pyzenoh.codec.network.request import (
    EXT_BUDGET,
    EXT_RESPONDER_ID,
    EXT_TARGET,
    EXT_TIMEOUT,
    QueryTarget,
    Request,
    Response,
    ResponseFinal,
    with_request_id,
)
from pyzenoh.codec.primitives import Reader
from pyzenoh.errors import DecodeError

__all__ = [
    "D_FINAL",
    "D_KEYEXPR",
    "D_QUERYABLE",
    "D_SUBSCRIBER",
    "D_TOKEN",
    "EXT_BUDGET",
    "EXT_NODE_ID",
    "EXT_QOS",
    "EXT_QUERYABLE_INFO",
    "EXT_RESPONDER_ID",
    "EXT_TARGET",
    "EXT_TIMEOUT",
    "EXT_TIMESTAMP",
    "EXT_TS_STACK",
    "EXT_WIRE_EXPR",
    "FIRST_NETWORK_ID",
    "FLAG_I",
    "FLAG_M",
    "FLAG_N",
    "FLAG_Z",
    "ID_DECLARE",
    "ID_INTEREST",
    "ID_OAM",
    "ID_PUSH",
    "ID_REQUEST",
    "ID_RESPONSE",
    "ID_RESPONSE_FINAL",
    "NO_OPTIONS",
    "NULL_WIRE_EXPR",
    "OAM_LINKSTATE",
    "OPT_AGGREGATE",
    "OPT_MAPPING",
    "OPT_NAMED",
    "OPT_RESTRICTED",
    "QOS_BLOCK",
    "QOS_BLOCK_FIRST",
    "QOS_DECLARE",
    "QOS_DEFAULT",
    "QOS_EXPRESS",
    "QOS_PRIORITY_MASK",
    "QOS_REQUEST",
    "U_KEYEXPR",
    "U_QUERYABLE",
    "U_SUBSCRIBER",
    "U_TOKEN",
    "DeclarationBody",
    "Declare",
    "DeclareFinal",
    "DeclareKeyExpr",
    "DeclareQueryable",
    "DeclareSubscriber",
    "DeclareToken",
    "Interest",
    "InterestMode",
    "InterestOptions",
    "NetworkMessage",
    "NetworkOam",
    "Priority",
    "Push",
    "QueryTarget",
    "Request",
    "Response",
    "ResponseFinal",
    "UndeclareKeyExpr",
    "UndeclareQueryable",
    "UndeclareSubscriber",
    "UndeclareToken",
    "decode_network_message",
    "encode_network_message",
    "qos_value",
    "read_network_message",
    "read_oam_body",
    "with_request_id",
]


NetworkMessage = Push | Request | Response | ResponseFinal | Declare | Interest | NetworkOam

_NETWORK_READERS = {
    ID_PUSH: Push.read,
    ID_REQUEST: Request.read,
    ID_RESPONSE: Response.read,
    ID_RESPONSE_FINAL: ResponseFinal.read,
    ID_DECLARE: Declare.read,
    ID_INTEREST: Interest.read,
    ID_OAM: NetworkOam.read,
}


def read_network_message(r: Reader) -> NetworkMessage:
    start = r.pos
    header = r.u8()
    reader = _NETWORK_READERS.get(header & 0x1F)
    if reader is None:
        raise DecodeError(f"unknown network message id 0x{header & 0x1F:02x}", start)
    return reader(r, header)  # type: ignore[return-value]


def decode_network_message(data: bytes | bytearray | memoryview) -> NetworkMessage:
    """Decode exactly one network message filling ``data``."""
    r = Reader(bytes(data))
    msg = read_network_message(r)
    expect_end(r, "network message")
    return msg


def encode_network_message(msg: NetworkMessage) -> bytes:
    out = bytearray()
    msg.write(out)
    return bytes(out)
