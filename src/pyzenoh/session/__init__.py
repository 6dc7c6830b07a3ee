"""pyzenoh sessions: a Zenoh client/peer API shaped like eclipse-zenoh's Python API.

Blocking API: ``pyzenoh.session.open(config)``; asyncio API: :mod:`pyzenoh.session.aio`.
"""

from pyzenoh.codec.primitives import ZenohId
from pyzenoh.keyexpr import KeyExpr
from pyzenoh.session import handlers
from pyzenoh.session.api import (
    Liveliness,
    LivelinessToken,
    MatchingListener,
    Publisher,
    Queryable,
    Session,
    SessionInfo,
    Subscriber,
    open,
)
from pyzenoh.session.config import Config
from pyzenoh.session.handlers import ChannelClosedError, Handler
from pyzenoh.session.types import (
    CongestionControl,
    ConsolidationMode,
    Encoding,
    EntityGlobalId,
    Locality,
    MatchingStatus,
    Parameters,
    Priority,
    Query,
    QueryTarget,
    Reliability,
    Reply,
    ReplyError,
    ReplyKeyExpr,
    Sample,
    SampleKind,
    Selector,
    Timestamp,
    ZBytes,
)

__all__ = [
    "ChannelClosedError", "Config", "CongestionControl", "ConsolidationMode", "Encoding",
    "EntityGlobalId", "Handler", "KeyExpr", "Liveliness", "LivelinessToken", "Locality",
    "MatchingListener", "MatchingStatus", "Parameters", "Priority", "Publisher", "Query",
    "QueryTarget", "Queryable", "Reliability", "Reply", "ReplyError", "ReplyKeyExpr",
    "Sample", "SampleKind", "Selector", "Session", "SessionInfo", "Subscriber", "Timestamp",
    "ZBytes", "ZenohId", "handlers", "open",
]  # fmt: skip
