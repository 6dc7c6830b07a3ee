"""What a recorded sample is: the one rule ``pyzenoh replay``, ``pyzenoh export-mcap`` and the
pipeline's ``samples`` table share. Sans-IO: records in, samples out, in record order.

A published sample enters a router once, on the face of its publisher: one rx record of a
PUSH holding a PUT or a DELETE. The router's copies of it are the tx records whose
``cause`` is that rx record's seq; they follow it, before the next rx record. Its
timestamp is the publisher's, else the one the router gave its first stamped copy (what
the subscribers saw). An rx record on a router face is a hop of a sample that entered
another router of the mesh: the caller says whether it counts (``keep``).
"""

from __future__ import annotations

from dataclasses import dataclass

from pyzenoh.codec import Del, Push, Put, Timestamp, decode_network_message
from pyzenoh.errors import DecodeError
from pyzenoh.recording.format import NetRecord


@dataclass(slots=True)
class EnteredSample:
    """A sample's entering record, its message, and its timestamp (None: nobody stamped it)."""

    record: NetRecord
    push: Push
    body: Put | Del
    timestamp: Timestamp | None


def push_body(raw: bytes) -> tuple[Push, Put | Del] | None:
    """The PUSH and its PUT/DELETE in a recorded message's bytes, else None."""
    try:
        msg = decode_network_message(raw)
    except DecodeError:
        return None
    if isinstance(msg, Push) and isinstance(msg.body, Put | Del):
        return msg, msg.body
    return None


class EnteringSamples:
    """Feed one recording's net records in order; :meth:`on_record` returns a sample once
    the records that can complete it are past (:meth:`finish`: the one still open)."""

    __slots__ = ("_pending",)

    def __init__(self) -> None:
        self._pending: EnteredSample | None = None

    def on_record(self, rec: NetRecord, keep: bool = True) -> EnteredSample | None:
        """``keep``: an rx record here may be a sample (False: a hop, or another reader's)."""
        pending = self._pending
        if rec.direction == "tx":
            if pending is not None and pending.timestamp is None and rec.cause == pending.record.seq:
                copy = push_body(rec.raw)
                if copy is not None:
                    pending.timestamp = copy[1].timestamp or copy[0].timestamp
            return None
        done = self.finish()
        if keep:
            found = push_body(rec.raw)
            if found is not None:
                push, body = found
                self._pending = EnteredSample(rec, push, body, body.timestamp or push.timestamp)
        return done

    def finish(self) -> EnteredSample | None:
        pending, self._pending = self._pending, None
        return pending
