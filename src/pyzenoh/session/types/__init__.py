"""User-facing value types, named as in eclipse-zenoh's Python API (``zenoh.Sample`` ...).

They hold plain data; the only behaviour is on :class:`Query`, whose reply methods go
through the session that delivered it.

The modules: :mod:`.enums`, :mod:`.payload` (ZBytes, Encoding), :mod:`.timestamp`
(NTP64, TimestampId, Timestamp), :mod:`.selector` (Parameters, Selector),
:mod:`.sample` (Sample, SourceInfo, Reply, MatchingStatus ...), :mod:`.query`
(QueryConsolidation, Query) and :mod:`.stack` (TimestampStack and its records, InterceptionPoint, TimestampInstrumentation).
"""

from __future__ import annotations

from pyzenoh.codec.primitives import ZenohId
from pyzenoh.keyexpr import KeyExpr
from pyzenoh.session.types.enums import (
    CongestionControl,
    ConsolidationMode,
    Locality,
    Priority,
    QueryTarget,
    Reliability,
    ReplyKeyExpr,
    SampleKind,
)
from pyzenoh.session.types.payload import Encoding, ZBytes
from pyzenoh.session.types.payload import to_encoding as to_encoding
from pyzenoh.session.types.payload import to_payload as to_payload
from pyzenoh.session.types.query import Query, QueryConsolidation
from pyzenoh.session.types.query import Responder as Responder
from pyzenoh.session.types.sample import (
    EntityGlobalId,
    EntityId,
    MatchingStatus,
    Reply,
    ReplyError,
    Sample,
    SourceInfo,
    SourceSn,
)
from pyzenoh.session.types.selector import Parameters, Selector
from pyzenoh.session.types.selector import to_key_expr as to_key_expr
from pyzenoh.session.types.timestamp import NTP64, Timestamp, TimestampId

__all__ = [
    "NTP64",
    "CongestionControl",
    "ConsolidationMode",
    "Encoding",
    "EntityGlobalId",
    "EntityId",
    "KeyExpr",
    "Locality",
    "MatchingStatus",
    "Parameters",
    "Priority",
    "Query",
    "QueryConsolidation",
    "QueryTarget",
    "Reliability",
    "Reply",
    "ReplyError",
    "ReplyKeyExpr",
    "Sample",
    "SampleKind",
    "Selector",
    "SourceInfo",
    "SourceSn",
    "Timestamp",
    "TimestampId",
    "ZBytes",
    "ZenohId",
]
