"""Recorded samples as an MCAP file the MCAP tools and Foxglove read: one channel per key,
each with a JSON Schema, messages JSON-encoded.

A recording's own MCAP segments hold network messages per link on schemaless channels:
tools list them but cannot decode them. This export writes the samples instead (the ones
``pyzenoh replay`` plays, :func:`~pyzenoh.recording.replay.recorded_samples`: each once,
with the timestamp its router gave it) on channels named by key, so that a numeric field
can be plotted (``/demo/temperature/kitchen.value``):

* a JSON payload that is an object is the message itself; any other JSON value, and a
  text payload, is ``{"value": ...}`` (numeric text as a number);
* any other payload is ``{"base64": ..., "size": N}``;
* every message also carries ``zenoh``: kind (put/delete), encoding, HLC time and id,
  the attachment in base64.

A channel's schema is inferred from its first sample (types of the fields it has; later
samples may add fields). Log time is the sample's HLC time when it has one, publish time
the time it was recorded. Sans-IO but for :func:`export`, which writes the file.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any, BinaryIO

from pyzenoh.recording.replay import RecordedSample

#: Depth of nested objects a channel's schema describes (deeper values: any type).
SCHEMA_DEPTH = 4
_JSON = ("application/json", "text/json", "application/json5")
_TEXT = ("text/", "zenoh/string")


def _ntp_to_ns(t: int) -> int:
    return (t >> 32) * 1_000_000_000 + (((t & 0xFFFF_FFFF) * 1_000_000_000) >> 32)


def sample_message(sample: RecordedSample) -> dict[str, Any]:
    """The JSON object a sample is written as."""
    encoding = str(sample.encoding) if sample.encoding is not None else "zenoh/bytes"
    base = encoding.split(";", 1)[0]
    message: dict[str, Any]
    if not sample.put:
        message = {}
    elif base in _JSON and (doc := _json(sample.payload)) is not None:
        message = doc if isinstance(doc, dict) else {"value": doc}
    elif base.startswith(_TEXT) and (text := _text(sample.payload)) is not None:
        message = {"value": _number(text) if _number(text) is not None else text}
    else:
        message = {"base64": base64.b64encode(sample.payload).decode(), "size": len(sample.payload)}
    ts = sample.timestamp
    message["zenoh"] = {
        "kind": "put" if sample.put else "delete",
        "encoding": encoding,
        "hlc_ns": _ntp_to_ns(ts.time) if ts is not None else None,
        "hlc_id": str(ts.id) if ts is not None else None,
        "attachment_base64": base64.b64encode(sample.attachment).decode() if sample.attachment is not None else None,
    }
    return message


def _json(payload: bytes) -> Any:
    try:
        value = json.loads(payload)
    except ValueError:
        return None
    return value


def _text(payload: bytes) -> str | None:
    try:
        return payload.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _number(text: str) -> float | None:
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def schema_of(value: Any, depth: int = 0) -> dict[str, Any]:
    """A JSON Schema describing ``value``'s shape (what MCAP readers use to show fields)."""
    if isinstance(value, bool):
        return {"type": "boolean"}
    if isinstance(value, int | float):
        return {"type": "number"}
    if isinstance(value, str):
        return {"type": "string"}
    if value is None:
        return {"type": "null"}
    if depth >= SCHEMA_DEPTH:
        return {}
    if isinstance(value, list):
        return {"type": "array", "items": schema_of(value[0], depth + 1) if value else {}}
    if isinstance(value, dict):
        props = {k: schema_of(v, depth + 1) for k, v in value.items()}
        if depth == 0 and "zenoh" in props:
            props["zenoh"] = _ZENOH_SCHEMA
        return {"type": "object", "properties": props}
    return {}


_ZENOH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "kind": {"type": "string", "enum": ["put", "delete"]},
        "encoding": {"type": "string"},
        "hlc_ns": {"type": ["integer", "null"]},
        "hlc_id": {"type": ["string", "null"]},
        "attachment_base64": {"type": ["string", "null"]},
    },
}


def write_samples(samples: Iterable[RecordedSample], out: BinaryIO) -> dict[str, int]:
    """Write ``samples`` to ``out`` as MCAP; messages per channel (key)."""
    from mcap.writer import Writer  # type: ignore[import-untyped,unused-ignore]

    writer = Writer(out)
    writer.start(profile="", library="pyzenoh")
    channels: dict[str, int] = {}
    counts: dict[str, int] = {}
    for sample in samples:
        message = sample_message(sample)
        channel = channels.get(sample.key)
        if channel is None:
            schema = dict(schema_of(message), title=sample.key)
            schema_id = writer.register_schema(
                name=f"zenoh:{sample.key}", encoding="jsonschema", data=json.dumps(schema).encode()
            )
            channel = channels[sample.key] = writer.register_channel(
                topic=sample.key, message_encoding="json", schema_id=schema_id
            )
        hlc = message["zenoh"]["hlc_ns"]
        writer.add_message(
            channel,
            log_time=hlc if hlc is not None else sample.time_ns,
            data=json.dumps(message, separators=(",", ":")).encode(),
            publish_time=sample.time_ns,
            sequence=counts.get(sample.key, 0),
        )
        counts[sample.key] = counts.get(sample.key, 0) + 1
    writer.finish()  # type: ignore[no-untyped-call]
    return counts


def export(samples: Iterable[RecordedSample], path: str | Path) -> dict[str, int]:
    with open(path, "wb") as out:
        return write_samples(samples, out)
