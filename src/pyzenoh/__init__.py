"""pyzenoh: a pure-Python Eclipse Zenoh 1.x implementation.

``import pyzenoh as zenoh`` gives zenoh-python 1.10's names: sessions and their
entities, value types, ``ZError``, logging set-up, and the ``handlers``, ``shm`` (present,
but shared memory is not supported) and ``ext`` modules.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
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

#: The submodules imported on first use (``pyzenoh.ext`` as zenoh-python does; all of them
#: so that ``import pyzenoh.<subpackage>`` - the pipeline's Spark workers, the router - does
#: not pay for the whole session API, about 0.6 s).
_SUBMODULES = frozenset({"ext", "handlers", "shm"})


def __getattr__(name: str) -> Any:
    """The public names, imported on first use (PEP 562): from ``pyzenoh.session``, or the
    submodules. Each is then kept in the module, so this runs once per name."""
    if name in _SUBMODULES:
        value: Any = importlib.import_module(f"pyzenoh.{name}")
    elif name in __all__:
        value = getattr(importlib.import_module("pyzenoh.session"), name)
    else:
        raise AttributeError(f"module 'pyzenoh' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__) | _SUBMODULES)


__all__ = [
    "NTP64",
    "CancellationToken",
    "Config",
    "CongestionControl",
    "ConsolidationMode",
    "Encoding",
    "EntityGlobalId",
    "EntityId",
    "Handler",
    "Hello",
    "InterceptionPoint",
    "KeyExpr",
    "Link",
    "LinkEvent",
    "LinkEventsListener",
    "Liveliness",
    "LivelinessToken",
    "Locality",
    "MatchingListener",
    "MatchingStatus",
    "Parameters",
    "Priority",
    "Publisher",
    "Querier",
    "Query",
    "QueryConsolidation",
    "QueryTarget",
    "Queryable",
    "Reliability",
    "Reply",
    "ReplyError",
    "ReplyKeyExpr",
    "Sample",
    "SampleKind",
    "Scout",
    "Selector",
    "Session",
    "SessionInfo",
    "SetIntersectionLevel",
    "SourceInfo",
    "SourceSn",
    "Subscriber",
    "Timestamp",
    "TimestampContext",
    "TimestampId",
    "TimestampInstrumentation",
    "TimestampInstrumentationBuilder",
    "TimestampStack",
    "TimestampStackRecord",
    "Transport",
    "TransportEvent",
    "TransportEventsListener",
    "WhatAmI",
    "WhatAmIMatcher",
    "ZBytes",
    "ZError",
    "ZenohId",
    "__version__",
    "handlers",
    "init_log_from_env_or",
    "open",
    "scout",
    "shm",
    "try_init_log_from_env",
]
