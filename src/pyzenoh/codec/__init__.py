"""Bytes <-> typed Zenoh 1.x messages (wire version 0x09), with no I/O and no clock.

Layers: :mod:`.primitives` (VLE, ZenohId, Timestamp, Encoding, WireExpr),
:mod:`.extensions`, :mod:`.transport`, :mod:`.network`, :mod:`.data`, and :mod:`.batch`
(TCP batch framing). Every decoder either returns messages or raises
:class:`~pyzenoh.errors.DecodeError`.
"""

from pyzenoh.codec.batch import BatchReader, decode_batch, encode_batch, frame_batch
from pyzenoh.codec.data import Consolidation, Del, Err, Put, Query, QueryBody, Reply
from pyzenoh.codec.extensions import Extension
from pyzenoh.codec.network import (
    Declare,
    DeclareFinal,
    DeclareKeyExpr,
    DeclareQueryable,
    DeclareSubscriber,
    DeclareToken,
    Interest,
    InterestMode,
    InterestOptions,
    NetworkMessage,
    NetworkOam,
    Priority,
    Push,
    QueryTarget,
    Request,
    Response,
    ResponseFinal,
    UndeclareKeyExpr,
    UndeclareQueryable,
    UndeclareSubscriber,
    UndeclareToken,
    decode_network_message,
    encode_network_message,
)
from pyzenoh.codec.primitives import (
    Encoding,
    EntityGlobalId,
    SourceInfo,
    Timestamp,
    WhatAmI,
    WireExpr,
    ZenohId,
)
from pyzenoh.codec.scouting import Hello as Hello  # scouting: explicit re-exports
from pyzenoh.codec.scouting import Scout as Scout
from pyzenoh.codec.scouting import ScoutingDecodeError as ScoutingDecodeError
from pyzenoh.codec.scouting import ScoutingMessage as ScoutingMessage
from pyzenoh.codec.scouting import WhatAmIMatcher as WhatAmIMatcher
from pyzenoh.codec.scouting import decode_scouting_message as decode_scouting_message
from pyzenoh.codec.scouting import encode_scouting_message as encode_scouting_message
from pyzenoh.codec.transport import (
    Close,
    Fragment,
    Frame,
    InitAck,
    InitSyn,
    Join,
    KeepAlive,
    OpenAck,
    OpenSyn,
    TransportMessage,
    TransportOam,
)
from pyzenoh.errors import DecodeError

__all__ = [
    "BatchReader",
    "Close",
    "Consolidation",
    "Declare",
    "DeclareFinal",
    "DeclareKeyExpr",
    "DeclareQueryable",
    "DeclareSubscriber",
    "DeclareToken",
    "DecodeError",
    "Del",
    "Encoding",
    "EntityGlobalId",
    "Err",
    "Extension",
    "Fragment",
    "Frame",
    "InitAck",
    "InitSyn",
    "Interest",
    "InterestMode",
    "InterestOptions",
    "Join",
    "KeepAlive",
    "NetworkMessage",
    "NetworkOam",
    "OpenAck",
    "OpenSyn",
    "Priority",
    "Push",
    "Put",
    "Query",
    "QueryBody",
    "QueryTarget",
    "Reply",
    "Request",
    "Response",
    "ResponseFinal",
    "SourceInfo",
    "Timestamp",
    "TransportMessage",
    "TransportOam",
    "UndeclareKeyExpr",
    "UndeclareQueryable",
    "UndeclareSubscriber",
    "UndeclareToken",
    "WhatAmI",
    "WireExpr",
    "ZenohId",
    "decode_batch",
    "decode_network_message",
    "encode_batch",
    "encode_network_message",
    "frame_batch",
]
