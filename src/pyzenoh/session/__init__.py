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
from pyzenoh.session.scouting import Hello, Scout, WhatAmI, WhatAmIMatcher, scout
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
    "ChannelClosedError", "Config", "CongestionControl", "ConsolidationMode",
    "Encoding", "EntityGlobalId", "Handler", "Hello", "KeyExpr", "Liveliness",
    "LivelinessToken", "Locality", "MatchingListener", "MatchingStatus", "Parameters",
    "Priority", "Publisher", "Query", "QueryTarget", "Queryable", "Reliability",
    "Reply", "ReplyError", "ReplyKeyExpr", "Sample", "SampleKind", "Scout", "Selector",
    "Session", "SessionInfo", "Subscriber", "Timestamp", "WhatAmI", "WhatAmIMatcher",
    "ZBytes", "ZenohId", "handlers", "open", "scout",
]  # fmt: skip
