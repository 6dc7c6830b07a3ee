"""pyzenoh's counterpart of ``zenoh.ext``: zenoh-ext's serialization format.

``z_serialize`` writes byte for byte what eclipse-zenoh's ``zenoh.ext.z_serialize`` writes;
``z_deserialize`` reads it back. See :mod:`pyzenoh.ext.serialization` for the details and
the few deliberate differences.

``declare_advanced_publisher`` / ``declare_advanced_subscriber`` and their configurations
are zenoh-ext's advanced publication and subscription (cache, history, sample miss
detection and recovery, publisher and subscriber detection), interoperable with
eclipse-zenoh's; see :mod:`pyzenoh.ext.advanced`.
"""

from __future__ import annotations

from pyzenoh.ext.advanced import (
    AdvancedPublisher,
    AdvancedSubscriber,
    CacheConfig,
    HistoryConfig,
    Miss,
    MissDetectionConfig,
    RecoveryConfig,
    RepliesConfig,
    SampleMissListener,
    declare_advanced_publisher,
    declare_advanced_subscriber,
)
from pyzenoh.ext.serialization import (
    Float32,
    Float64,
    Int8,
    Int16,
    Int32,
    Int64,
    Int128,
    UInt8,
    UInt16,
    UInt32,
    UInt64,
    UInt128,
    ZDeserializeError,
    z_deserialize,
    z_serialize,
)

__all__ = [
    "AdvancedPublisher",
    "AdvancedSubscriber",
    "CacheConfig",
    "Float32",
    "Float64",
    "HistoryConfig",
    "Int8",
    "Int16",
    "Int32",
    "Int64",
    "Int128",
    "Miss",
    "MissDetectionConfig",
    "RecoveryConfig",
    "RepliesConfig",
    "SampleMissListener",
    "UInt8",
    "UInt16",
    "UInt32",
    "UInt64",
    "UInt128",
    "ZDeserializeError",
    "declare_advanced_publisher",
    "declare_advanced_subscriber",
    "z_deserialize",
    "z_serialize",
]
