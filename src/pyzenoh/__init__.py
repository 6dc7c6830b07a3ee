"""pyzenoh: a pure-Python Eclipse Zenoh 1.x implementation.

``import pyzenoh as zenoh`` gives zenoh-python 1.10's names: sessions and their
entities, value types, ``ZError``, logging set-up, and the ``handlers``, ``shm`` (present,
but shared memory is not supported) and ``ext`` modules.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

from pyzenoh import handlers, shm
from pyzenoh.session import (
    NTP64,
    CancellationToken,
    Config,
    CongestionControl,
    ConsolidationMode,
    Encoding,
    EntityGlobalId,
    EntityId,
    Handler,
    Hello,
    InterceptionPoint,
    KeyExpr,
    Link,
    LinkEvent,
    LinkEventsListener,
    Liveliness,
    LivelinessToken,
    Locality,
    MatchingListener,
    MatchingStatus,
    Parameters,
    Priority,
    Publisher,
    Querier,
    Query,
    Queryable,
    QueryConsolidation,
    QueryTarget,
    Reliability,
    Reply,
    ReplyError,
    ReplyKeyExpr,
    Sample,
    SampleKind,
    Scout,
    Selector,
    Session,
    SessionInfo,
    SetIntersectionLevel,
    SourceInfo,
    SourceSn,
    Subscriber,
    Timestamp,
    TimestampContext,
    TimestampId,
    TimestampInstrumentation,
    TimestampInstrumentationBuilder,
    TimestampStack,
    TimestampStackRecord,
    Transport,
    TransportEvent,
    TransportEventsListener,
    WhatAmI,
    WhatAmIMatcher,
    ZBytes,
    ZenohId,
    ZError,
    init_log_from_env_or,
    open,
    scout,
    try_init_log_from_env,
)


def __getattr__(name: str) -> Any:
    """``pyzenoh.ext`` is imported on first use, as zenoh-python does."""
    if name == "ext":
        import importlib

        return importlib.import_module("pyzenoh.ext")
    raise AttributeError(f"module 'pyzenoh' has no attribute {name!r}")


__all__ = [
    "NTP64", "CancellationToken", "Config", "CongestionControl", "ConsolidationMode",
    "Encoding", "EntityGlobalId", "EntityId", "Handler", "Hello", "InterceptionPoint",
    "KeyExpr", "Link", "LinkEvent", "LinkEventsListener", "Liveliness", "LivelinessToken",
    "Locality", "MatchingListener", "MatchingStatus", "Parameters", "Priority", "Publisher",
    "Querier", "Query", "QueryConsolidation", "QueryTarget", "Queryable", "Reliability",
    "Reply", "ReplyError", "ReplyKeyExpr", "Sample", "SampleKind", "Scout", "Selector",
    "Session", "SessionInfo", "SetIntersectionLevel", "SourceInfo", "SourceSn", "Subscriber",
    "Timestamp", "TimestampContext", "TimestampId", "TimestampInstrumentation",
    "TimestampInstrumentationBuilder", "TimestampStack", "TimestampStackRecord", "Transport",
    "TransportEvent", "TransportEventsListener", "WhatAmI", "WhatAmIMatcher", "ZBytes",
    "ZError", "ZenohId", "__version__", "handlers", "init_log_from_env_or", "open", "scout",
    "shm", "try_init_log_from_env",
]  # fmt: skip
