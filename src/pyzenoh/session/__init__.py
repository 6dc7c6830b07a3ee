"""pyzenoh sessions: a Zenoh client/peer API shaped like eclipse-zenoh's Python API.

Blocking API: ``pyzenoh.session.open(config)``; asyncio API: :mod:`pyzenoh.session.aio`.
Every name here is also importable from :mod:`pyzenoh` itself (``import pyzenoh as zenoh``).
"""

from pyzenoh.codec.primitives import ZenohId
from pyzenoh.errors import ZError
from pyzenoh.keyexpr import KeyExpr, SetIntersectionLevel
from pyzenoh.session import handlers
from pyzenoh.session.api import (
    LinkEventsListener,
    Liveliness,
    LivelinessToken,
    MatchingListener,
    Publisher,
    Querier,
    Queryable,
    Session,
    SessionInfo,
    Subscriber,
    TransportEventsListener,
    open,
)
from pyzenoh.session.cancel import CancellationToken
from pyzenoh.session.config import Config
from pyzenoh.session.handlers import ChannelClosedError, Handler
from pyzenoh.session.info import Link, LinkEvent, Transport, TransportEvent
from pyzenoh.session.instrumentation import (
    InterceptionPoint,
    TimestampContext,
    TimestampInstrumentation,
    TimestampInstrumentationBuilder,
    TimestampStack,
    TimestampStackRecord,
)
from pyzenoh.session.logs import init_log_from_env_or, try_init_log_from_env
from pyzenoh.session.scouting import Hello, Scout, WhatAmI, WhatAmIMatcher, scout
from pyzenoh.session.types import (
    NTP64,
    CongestionControl,
    ConsolidationMode,
    Encoding,
    EntityGlobalId,
    EntityId,
    Locality,
    MatchingStatus,
    Parameters,
    Priority,
    Query,
    QueryConsolidation,
    QueryTarget,
    Reliability,
    Reply,
    ReplyError,
    ReplyKeyExpr,
    Sample,
    SampleKind,
    Selector,
    SourceInfo,
    SourceSn,
    Timestamp,
    TimestampId,
    ZBytes,
)

__all__ = [
    "NTP64", "CancellationToken", "ChannelClosedError", "Config", "CongestionControl",
    "ConsolidationMode", "Encoding", "EntityGlobalId", "EntityId", "Handler", "Hello",
    "InterceptionPoint", "KeyExpr", "Link", "LinkEvent", "LinkEventsListener", "Liveliness",
    "LivelinessToken", "Locality", "MatchingListener", "MatchingStatus", "Parameters",
    "Priority", "Publisher", "Querier", "Query", "QueryConsolidation", "QueryTarget",
    "Queryable", "Reliability", "Reply", "ReplyError", "ReplyKeyExpr", "Sample", "SampleKind",
    "Scout", "Selector", "Session", "SessionInfo", "SetIntersectionLevel", "SourceInfo",
    "SourceSn", "Subscriber", "Timestamp", "TimestampContext", "TimestampId",
    "TimestampInstrumentation", "TimestampInstrumentationBuilder", "TimestampStack",
    "TimestampStackRecord", "Transport", "TransportEvent", "TransportEventsListener",
    "WhatAmI", "WhatAmIMatcher", "ZBytes", "ZError", "ZenohId", "handlers",
    "init_log_from_env_or", "open", "scout", "try_init_log_from_env",
]  # fmt: skip
