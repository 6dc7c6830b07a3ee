"""The ``samples`` table: one row per published sample, from a router's recorded messages.

A recording holds network messages per link: a sample is recorded once when it enters
the router and once more per face the router sent it to. What a sample is, and its HLC
timestamp, is :mod:`pyzenoh.recording.entering`'s rule, shared with ``pyzenoh replay``.
Its row comes from the record of it entering on the face of its publisher, a client's or
a peer's, never a router's: across the recordings of a mesh, a sample's rx on a router
face is a hop, and the router it entered first holds its row. Copies are looked for in
the entering record's chunk only (one written to another chunk leaves the timestamp null),
so that rows do not depend on how a recording is cut into slices. Payloads are decoded into typed columns where the encoding says what
they are: text (``text/*``, ``zenoh/string``), JSON (``application/json``, ``text/json``;
a JSON number or a numeric text also fills ``value_number``).

Sans-IO: records in, rows out, in record order. Each row belongs to the slice holding its
rx record, so streams get every sample exactly once, as they get messages.
"""

from __future__ import annotations

import json
import math
from typing import Any

from pyzenoh.codec import Put
from pyzenoh.pipeline.rows import _encoding, ntp64_to_ns
from pyzenoh.recording.entering import EnteredSample, EnteringSamples
from pyzenoh.recording.format import NetRecord
from pyzenoh.recording.replay import ROUTER

_TEXT = ("text/", "zenoh/string")
_JSON = ("application/json", "text/json", "application/json5")
#: Longest payload decoded into the typed columns (larger ones keep only ``payload``).
MAX_TYPED_BYTES = 64 * 1024


def typed_values(encoding: str, payload: bytes) -> tuple[str | None, str | None, float | None]:
    """(text, json, number) of a payload whose encoding names them; None where not."""
    if len(payload) > MAX_TYPED_BYTES:
        return None, None, None
    base = encoding.split(";", 1)[0]
    is_json = base in _JSON
    if not is_json and not base.startswith(_TEXT):
        return None, None, None
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError:
        return None, None, None
    number: float | None = None
    doc: str | None = None
    if is_json:
        try:
            value = json.loads(text)
        except ValueError:
            return text, None, None
        doc = text
        if isinstance(value, int | float) and not isinstance(value, bool):
            number = float(value)
    else:
        try:
            number = float(text.strip())
        except ValueError:
            number = None
    if number is not None and not math.isfinite(number):
        number = None
    return text, doc, number


class SampleRows:
    """Feed a segment's net records in order; rows come out once a sample's copies are read
    (the rule: :class:`~pyzenoh.recording.entering.EnteringSamples`)."""

    def __init__(self, seg: int, run: int) -> None:
        self.seg = seg
        self.run = run
        self._entering = EnteringSamples()
        #: Where each open sample's row starts: its ordinal and its link's (zid, whatami).
        self._at: tuple[int, str | None, str | None] = (0, None, None)

    def on_record(
        self,
        ordinal: int,
        rec: NetRecord,
        link_info: tuple[str | None, str | None, str | None] | None,
        in_window: bool,
    ) -> tuple[Any, ...] | None:
        """One net record (``ordinal``: its number in the segment's net channel); a row when
        a sample is complete. ``in_window``: rows of rx records here are this reader's."""
        keep = in_window and (link_info is None or link_info[1] != ROUTER)
        at = self._at
        done = self._entering.on_record(rec, keep)
        if rec.direction == "rx" and keep:
            self._at = (ordinal, *(link_info[:2] if link_info is not None else (None, None)))
        return self._row(done, at) if done is not None else None

    def finish(self) -> tuple[Any, ...] | None:
        """The row still waiting for copies (at the end of what there is to read)."""
        done = self._entering.finish()
        return self._row(done, self._at) if done is not None else None

    def _row(self, entered: EnteredSample, at: tuple[int, str | None, str | None]) -> tuple[Any, ...]:
        rec, msg, body, ts = entered.record, entered.push, entered.body, entered.timestamp
        ordinal, zid, whatami = at
        if isinstance(body, Put):
            payload = bytes(body.payload)
            encoding: str | None = _encoding(body.encoding)
            text, doc, number = typed_values(encoding or "", payload)
            kind, size = "put", len(payload)
        else:
            payload, encoding, text, doc, number = b"", None, None, None, None
            kind, size = "delete", 0
        source = body.source_info
        return (
            self.seg,
            ordinal,
            self.run,
            rec.seq,
            rec.time_ns,
            rec.time_ns // 1000,  # TIMESTAMP: microseconds (rows_to_batches' convention)
            rec.link,
            zid,
            whatami,
            rec.key,
            kind,
            msg.qos & 0x07,  # the QoS byte's priority (as the messages table's)
            payload,
            size,
            encoding,
            bytes(body.attachment) if body.attachment is not None else None,
            ntp64_to_ns(ts.time) if ts is not None else None,
            str(ts.id) if ts is not None else None,
            str(source.zid) if source is not None else None,
            source.eid if source is not None else None,
            text,
            doc,
            number,
        )
