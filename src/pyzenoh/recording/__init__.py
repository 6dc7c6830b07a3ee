"""Recording of routed Zenoh traffic into rotating, chunked MCAP segments.

The router calls :class:`Recorder`; analysis reads back with :func:`read_records` /
:class:`SegmentReader` or with the Spark source in :mod:`pyzenoh.pipeline.source`.
"""

from __future__ import annotations

from pyzenoh.recording.format import LinkRecord, NetRecord, Record, RouteRecord
from pyzenoh.recording.reader import (
    SegmentInfo,
    SegmentReader,
    list_segments,
    read_records,
    scan_segment,
)
from pyzenoh.recording.recorder import Recorder

__all__ = [
    "LinkRecord",
    "NetRecord",
    "Record",
    "Recorder",
    "RouteRecord",
    "SegmentInfo",
    "SegmentReader",
    "list_segments",
    "read_records",
    "scan_segment",
]
