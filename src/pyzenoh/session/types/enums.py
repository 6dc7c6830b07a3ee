"""The enums of the session API, with zenoh-python's member names and values.

Priority values are the wire priorities (0, Control, is internal); ``DEFAULT``, ``MIN``
and ``MAX`` are aliases as in zenoh.
"""

from __future__ import annotations

from enum import Enum


class SampleKind(Enum):
    PUT = 1
    DELETE = 2


class Priority(Enum):
    """Message priority; the values are the wire priorities (0 Control is internal)."""

    REAL_TIME = 1
    INTERACTIVE_HIGH = 2
    INTERACTIVE_LOW = 3
    DATA_HIGH = 4
    DATA = 5
    DATA_LOW = 6
    BACKGROUND = 7
    DEFAULT = 5  # noqa: PIE796  (alias, as in zenoh)
    MIN = 7  # noqa: PIE796  (alias, as in zenoh)
    MAX = 1  # noqa: PIE796  (alias, as in zenoh)


class CongestionControl(Enum):
    DROP = 1
    BLOCK = 2
    BLOCK_FIRST = 3
    DEFAULT = 1  # noqa: PIE796  (alias, as in zenoh)


class Reliability(Enum):
    BEST_EFFORT = 1
    RELIABLE = 2


class QueryTarget(Enum):
    BEST_MATCHING = 0
    ALL = 1
    ALL_COMPLETE = 2
    DEFAULT = 0  # noqa: PIE796  (alias, as in zenoh)


class ConsolidationMode(Enum):
    AUTO = 0
    NONE = 1
    MONOTONIC = 2
    LATEST = 3
    DEFAULT = 0  # noqa: PIE796  (alias, as in zenoh)


class ReplyKeyExpr(Enum):
    ANY = 1
    MATCHING_QUERY = 2
    DEFAULT = 2  # noqa: PIE796  (alias, as in zenoh)


class Locality(Enum):
    SESSION_LOCAL = 1
    REMOTE = 2
    ANY = 3
    DEFAULT = 3  # noqa: PIE796  (alias, as in zenoh)
