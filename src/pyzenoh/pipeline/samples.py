"""The ``samples`` table: one row per published sample, from a router's recorded messages.

A recording holds network messages per link: a sample is recorded once when it enters
the router (an rx record of a PUSH) and once more per face the router sent it to (tx
records whose ``cause`` is that rx record). Its row comes from the rx record on the face
of its publisher, a client's or a peer's, never a router's: across the recordings of a
mesh, a sample's rx on a router face is a hop, and the router it entered first holds its
row (the same rule as ``pyzenoh replay``, :mod:`pyzenoh.recording.replay`). Its HLC
timestamp is the publisher's, else the one the router gave its copies (read from the
first copy that follows the rx record in the same chunk: a copy written to another chunk
leaves it null). Payloads are decoded into typed columns where the encoding says what
they are: text (``text/*``, ``zenoh/string``), JSON (``application/json``, ``text/json``;
a JSON number or a numeric text also fills ``value_number``).

Sans-IO: records in, rows out, in record order. Each row belongs to the slice holding its
rx record, so streams get every sample exactly once, as they get messages.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from pyzenoh.codec import Del, Push, Put, decode_network_message
from pyzenoh.errors import DecodeError
from pyzenoh.pipeline.rows import _encoding, ntp64_to_ns
from pyzenoh.recording.format import NetRecord

ROUTER = "router"

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


@dataclass(slots=True)
class _Pending:
    row: list[Any]
    seq: int
    stamped: bool


# Row positions that are filled after the rx record (the HLC timestamp from a copy).
_HLC_NS = 16
_HLC_ID = 17


class SampleRows:
    """Feed a segment's net records in order; rows come out once a sample's copies are read."""

    def __init__(self, seg: int, run: int) -> None:
        self.seg = seg
        self.run = run
        self._pending: _Pending | None = None

    def on_record(
        self,
        ordinal: int,
        rec: NetRecord,
        link_info: tuple[str | None, str | None, str | None] | None,
        in_window: bool,
    ) -> tuple[Any, ...] | None:
        """One net record (``ordinal``: its number in the segment's net channel); a row when
        a sample is complete. ``in_window``: rows of rx records here are this reader's."""
        pending = self._pending
        if rec.direction == "tx":
            if pending is not None and not pending.stamped and rec.cause == pending.seq:
                self._stamp_from(pending, rec.raw)
            return None
        out = self.finish()
        if in_window and (link_info is None or link_info[1] != ROUTER):
            self._pending = self._start(ordinal, rec, link_info)
        return out

    def finish(self) -> tuple[Any, ...] | None:
        """The row still waiting for copies (at the end of what there is to read)."""
        pending, self._pending = self._pending, None
        return tuple(pending.row) if pending is not None else None

    def _start(
        self, ordinal: int, rec: NetRecord, link_info: tuple[str | None, str | None, str | None] | None
    ) -> _Pending | None:
        try:
            msg = decode_network_message(rec.raw)
        except DecodeError:
            return None
        if not isinstance(msg, Push) or not isinstance(msg.body, Put | Del):
            return None
        body = msg.body
        key = rec.key
        zid, whatami = (link_info[0], link_info[1]) if link_info is not None else (None, None)
        ts = body.timestamp or msg.timestamp
        if isinstance(body, Put):
            payload = bytes(body.payload)
            encoding = _encoding(body.encoding)
            text, doc, number = typed_values(encoding, payload)
            kind, size = "put", len(payload)
        else:
            payload, encoding, text, doc, number = b"", None, None, None, None
            kind, size = "delete", 0
        source = body.source_info
        row: list[Any] = [
            self.seg,
            ordinal,
            self.run,
            rec.seq,
            rec.time_ns,
            rec.time_ns // 1000,  # TIMESTAMP: microseconds (rows_to_batches' convention)
            rec.link,
            zid,
            whatami,
            key,
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
        ]
        return _Pending(row, rec.seq, ts is not None)

    def _stamp_from(self, pending: _Pending, raw: bytes) -> None:
        try:
            msg = decode_network_message(raw)
        except DecodeError:
            return
        if isinstance(msg, Push) and isinstance(msg.body, Put | Del):
            ts = msg.body.timestamp or msg.timestamp
            if ts is not None:
                pending.row[_HLC_NS] = ntp64_to_ns(ts.time)
                pending.row[_HLC_ID] = str(ts.id)
                pending.stamped = True
