"""pyzenoh: a pure-Python Eclipse Zenoh 1.x implementation."""

from __future__ import annotations

__version__ = "0.1.0"

from pyzenoh.session import (
    Config,
    CongestionControl,
    ConsolidationMode,
    Encoding,
    KeyExpr,
    Priority,
    QueryTarget,
    Reliability,
    ReplyKeyExpr,
    Sample,
    SampleKind,
    Selector,
    Session,
    ZBytes,
    open,
)
from pyzenoh.session.scouting import Hello, Scout, WhatAmI, WhatAmIMatcher, scout

__all__ = [
    "Config", "CongestionControl", "ConsolidationMode", "Encoding", "Hello", "KeyExpr",
    "Priority", "QueryTarget", "Reliability", "ReplyKeyExpr", "Sample", "SampleKind",
    "Scout", "Selector", "Session", "WhatAmI", "WhatAmIMatcher", "ZBytes",
    "__version__", "open", "scout",
]  # fmt: skip
