"""Which recorded samples a replay plays, and when: sans-IO (records in, samples out).

A published sample enters a router once, on the face of its publisher: one rx record of
a PUSH. The router's copies (tx records caused by it) carry the timestamp the router gave
it, which the subscribers saw; a replay plays the sample with that timestamp, so that a
replayed recording, recorded again, holds the same samples. In the recordings of several
routers of a mesh, a sample is also an rx record on every router it crossed after the
first, on a router face: those are hops, not samples, and are skipped (any router face's
rx is skipped as soon as more than one recording is replayed). A sample is then played
once, and in recorded order.

:func:`recorded_samples` selects (keys, time window); :class:`Pacing` says when each
sample is due at a given speed.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from pyzenoh.codec import Del, Encoding, Push, Put, Timestamp, decode_network_message
from pyzenoh.errors import DecodeError
from pyzenoh.keyexpr.relations import intersects
from pyzenoh.recording.format import LinkRecord, NetRecord, Record

ROUTER = "router"


@dataclass(frozen=True, slots=True)
class RecordedSample:
    """One published sample as it was recorded."""

    time_ns: int
    key: str
    put: bool  # False: a DELETE
    payload: bytes
    encoding: Encoding | None  # None: the default
    attachment: bytes | None
    timestamp: Timestamp | None
    #: The PUSH's QoS byte (priority, congestion control, express).
    qos: int


def recorded_samples(
    recordings: Iterable[Iterable[Record]],
    *,
    keys: str | None = None,
    start_ns: int | None = None,
    end_ns: int | None = None,
    from_s: float | None = None,
    to_s: float | None = None,
) -> Iterator[RecordedSample]:
    """The samples of one or several recordings (each an iterable of its records in seq
    order), merged in time order; ``keys`` a key expression they must intersect,
    ``start_ns``/``end_ns`` a wall-clock window, ``from_s``/``to_s`` one in seconds
    after the first sample (inclusive start, exclusive end)."""
    sources = list(recordings)
    skip_router_faces = len(sources) > 1
    streams = [_samples_of(records, skip_router_faces) for records in sources]
    first_ns: int | None = None
    for sample in heapq.merge(*streams, key=lambda s: s.time_ns):
        if first_ns is None:
            first_ns = sample.time_ns
            if from_s is not None:
                start_ns = max(start_ns or 0, first_ns + int(from_s * 1e9))
            if to_s is not None:
                end_ns = first_ns + int(to_s * 1e9) if end_ns is None else min(end_ns, first_ns + int(to_s * 1e9))
        if start_ns is not None and sample.time_ns < start_ns:
            continue
        if end_ns is not None and sample.time_ns >= end_ns:
            continue
        if keys is not None and not intersects(keys, sample.key):
            continue
        yield sample


def _samples_of(records: Iterable[Record], skip_router_faces: bool) -> Iterator[RecordedSample]:
    """One recording's samples, in its order, each with the timestamp its copies got."""
    whatami: dict[int, str | None] = {}
    pending: RecordedSample | None = None  # the last rx sample, until its copies are read
    pending_seq = -1
    for rec in records:
        if isinstance(rec, LinkRecord):
            if rec.event == "opened":
                whatami[rec.link] = rec.whatami
            continue
        if not isinstance(rec, NetRecord):
            continue
        if rec.direction == "tx":
            if pending is not None and pending.timestamp is None and rec.cause == pending_seq:
                stamped = _push_body(rec.raw)
                if stamped is not None and stamped[1].timestamp is not None:
                    pending = _with_timestamp(pending, stamped[1].timestamp)
            continue
        # an rx record: the copies of the one before are all read (they follow it)
        if pending is not None:
            yield pending
            pending = None
        if skip_router_faces and whatami.get(rec.link) == ROUTER:
            continue
        sample = _sample(rec)
        if sample is not None:
            pending, pending_seq = sample, rec.seq
    if pending is not None:
        yield pending


def _push_body(raw: bytes) -> tuple[Push, Put | Del] | None:
    try:
        msg = decode_network_message(raw)
    except DecodeError:
        return None
    if isinstance(msg, Push) and isinstance(msg.body, Put | Del):
        return msg, msg.body
    return None


def _sample(rec: NetRecord) -> RecordedSample | None:
    found = _push_body(rec.raw)
    if found is None or rec.key is None:
        return None
    push, body = found
    if isinstance(body, Put):
        encoding = None if body.encoding == Encoding.DEFAULT else body.encoding
        return RecordedSample(
            rec.time_ns, rec.key, True, body.payload, encoding, body.attachment, body.timestamp, push.qos
        )
    return RecordedSample(rec.time_ns, rec.key, False, b"", None, body.attachment, body.timestamp, push.qos)


def _with_timestamp(sample: RecordedSample, ts: Timestamp) -> RecordedSample:
    return RecordedSample(
        sample.time_ns,
        sample.key,
        sample.put,
        sample.payload,
        sample.encoding,
        sample.attachment,
        ts,
        sample.qos,
    )


class Pacing:
    """When each sample is due: the recorded gaps divided by ``speed`` (0: no waiting),
    from the monotonic ``start`` the first sample is played at."""

    __slots__ = ("_first_ns", "_speed", "_start")

    def __init__(self, speed: float, start: float) -> None:
        if speed < 0:
            raise ValueError("speed must be >= 0")
        self._speed = speed
        self._start = start
        self._first_ns: int | None = None

    def due(self, time_ns: int) -> float:
        """The monotonic time the sample recorded at ``time_ns`` is due."""
        if self._first_ns is None:
            self._first_ns = time_ns
        if self._speed == 0:
            return self._start
        return self._start + max(0, time_ns - self._first_ns) / 1e9 / self._speed
