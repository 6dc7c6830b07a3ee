"""zenoh-plugin-rest's rules as pure functions: which response a request wants, how a
sample becomes JSON, HTML or an event, and which key expression a URL path names
(``plugins/zenoh-plugin-rest/src/lib.rs``).
"""

from __future__ import annotations

import base64
import html
import json
from typing import Any

from pyzenoh.codec import Encoding, Timestamp

__all__ = [
    "JSON_ENCODINGS",
    "STRING_ENCODINGS",
    "accept_mode",
    "html_listing",
    "json_sample",
    "key_from_path",
    "parameters",
    "payload_to_json",
    "sse_event",
    "timestamp_text",
]

JSON_ENCODINGS = ("application/json", "text/json", "text/json5")
STRING_ENCODINGS = ("text/plain", "zenoh/string")
RAW_KEY = "_raw"
TIME_KEY = "_time"


def parameters(query_string: str) -> dict[str, str]:
    """zenoh's ``Parameters``: ``;``-separated ``key=value`` (or ``key``) pairs; the first
    occurrence of a key wins."""
    out: dict[str, str] = {}
    for item in query_string.split(";"):
        if not item:
            continue
        key, _, value = item.partition("=")
        out.setdefault(key, value)
    return out


def accept_mode(accept: str | None, query_string: str) -> str:
    """``sse``, ``raw``, ``html`` or ``json``: the first media type of ``Accept`` decides
    (``text/event-stream`` first; then ``_raw`` in the parameters; then ``text/html``)."""
    first = None
    if accept is not None:
        first = accept.split(",", 1)[0].split(";", 1)[0].strip()
    if first == "text/event-stream":
        return "sse"
    if RAW_KEY in parameters(query_string):
        return "raw"
    if first == "text/html":
        return "html"
    return "json"


def wants_time_range(query_string: str) -> bool:
    """A ``_time`` parameter: the plugin then asks for no consolidation (else Latest)."""
    return TIME_KEY in parameters(query_string)


def key_from_path(path: str, zid: str) -> str:
    """The key expression a URL path (without its leading ``/``) names; ``@/local`` is the
    router's own ``@/<zid>``."""
    if path.startswith("@/local") and (len(path) == len("@/local") or path[len("@/local")] == "/"):
        return f"@/{zid}{path[len('@/local') :]}"
    return path


def timestamp_text(ts: Timestamp | None) -> str | None:
    """uhlc's Display: ``<NTP64 as an integer>/<HLC id in hex>``."""
    return None if ts is None else f"{ts.time}/{ts.id}"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def payload_to_json(payload: bytes, encoding: str) -> Any:
    """The ``value`` of a JSON sample: null when empty; parsed JSON for JSON encodings and
    a string for string encodings (base64 when they do not parse); base64 otherwise. The
    encoding's schema (``;...``) does not count, as zenoh compares encodings by id."""
    if not payload:
        return None
    base = encoding.split(";", 1)[0]
    if base in JSON_ENCODINGS:
        try:
            return json.loads(payload)
        except (ValueError, UnicodeDecodeError):
            return _b64(payload)
    if base in STRING_ENCODINGS:
        try:
            return payload.decode("utf-8")
        except UnicodeDecodeError:
            return _b64(payload)
    return _b64(payload)


def _base_encoding(encoding: Encoding) -> str:
    # zenoh compares the predefined encodings by id alone (a schema does not change them).
    return str(Encoding(encoding.id)) if encoding.id != 0xFFFF else str(encoding)


def json_sample(key: str, payload: bytes, encoding: Encoding, timestamp: Timestamp | None) -> dict[str, Any]:
    """``{key, value, encoding, timestamp}`` as the plugin's JSONSample."""
    return {
        "key": key,
        "value": payload_to_json(payload, _base_encoding(encoding)),
        "encoding": str(encoding),
        "timestamp": timestamp_text(timestamp),
    }


def html_listing(items: list[tuple[str, bytes]]) -> str:
    """``<dl>`` of ``<dt>key</dt><dd>payload</dd>`` (payload as lossy UTF-8). zenoh writes
    them unescaped; pyzenoh escapes them (a stored value must not inject markup)."""
    parts = ["<dl>\n"]
    for key, payload in items:
        text = payload.decode("utf-8", "replace")
        parts.append(f"<dt>{html.escape(key)}</dt>\n<dd>{html.escape(text)}</dd>\n")
    parts.append("</dl>\n")
    return "".join(parts)


def sse_event(kind: str, sample: dict[str, Any]) -> bytes:
    """One server-sent event: ``event: PUT|DELETE`` and the sample's JSON as data."""
    data = json.dumps(sample, separators=(",", ":"), ensure_ascii=False)
    return f"event: {kind}\ndata: {data}\n\n".encode()
