"""Which recorded samples a replay plays, and when: sans-IO (records in, samples out).

What a recorded sample is, and its timestamp, is :mod:`.entering`'s rule: a replay plays
a sample with the timestamp its router gave it, so that a replayed recording, recorded
again, holds the same samples. In the recordings of several routers of a mesh, a sample
is also an rx record on every router it crossed after the first, on a router face: those
are hops, and are skipped as soon as more than one recording is replayed. A sample is then
played once, and in recorded order.

:func:`recorded_samples` selects (keys, time window); :class:`Pacing` says when each
sample is due at a given speed.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from pyzenoh.codec import Encoding, Put, Timestamp
from pyzenoh.keyexpr.relations import intersects
from pyzenoh.recording.entering import EnteredSample, EnteringSamples
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
    """One recording's samples, in its order (:mod:`.entering`'s rule)."""
    whatami: dict[int, str | None] = {}
    entering = EnteringSamples()
    for rec in records:
        if isinstance(rec, LinkRecord):
            if rec.event == "open":
                whatami[rec.link] = rec.whatami
            continue
        if not isinstance(rec, NetRecord):
            continue
        keep = not (skip_router_faces and whatami.get(rec.link) == ROUTER)
        done = entering.on_record(rec, keep)
        if done is not None and (sample := _sample(done)) is not None:
            yield sample
    done = entering.finish()
    if done is not None and (sample := _sample(done)) is not None:
        yield sample


def _sample(entered: EnteredSample) -> RecordedSample | None:
    rec, push, body = entered.record, entered.push, entered.body
    if rec.key is None:
        return None
    if isinstance(body, Put):
        encoding = None if body.encoding == Encoding.DEFAULT else body.encoding
        return RecordedSample(
            rec.time_ns, rec.key, True, body.payload, encoding, body.attachment, entered.timestamp, push.qos
        )
    return RecordedSample(rec.time_ns, rec.key, False, b"", None, body.attachment, entered.timestamp, push.qos)


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
