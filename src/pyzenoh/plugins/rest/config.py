"""The REST plugin's configuration, as strict as ``zenoh-plugin-rest``'s ``config.rs``.

``plugins/rest``: ``http_port`` (required) is an integer port (bound on ``[::]``, all
interfaces), or a string ``"PORT"`` or ``"IP:PORT"`` (``--rest-http-port`` writes a
string); ``work_thread_num`` and ``max_block_thread_num`` are accepted (zenoh's tokio
pool sizes; pyzenoh serves on the router's event loop); any other key is refused, naming
it. zenohd's own ``__path__``/``__required__``/``__config__`` are taken off by the host.

pyzenoh's limits (``pyzenoh/rest``, :class:`RestLimits`) bound what one client can make
the router hold: a request body, a request's header lines, the concurrent event streams
and the samples queued for one stream.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any

from pyzenoh.errors import UsageError

__all__ = ["RestConfig", "RestLimits", "parse_rest_config", "parse_rest_limits"]

KNOWN_KEYS = ("http_port", "work_thread_num", "max_block_thread_num")


@dataclass(frozen=True, slots=True)
class RestLimits:
    #: Largest request body taken (PUT payload, POST query payload): 413 beyond.
    max_request_body_bytes: int = 16 << 20
    #: Longest request line / header field (aiohttp's max_line_size / max_field_size).
    max_header_bytes: int = 8190
    #: Concurrent ``text/event-stream`` subscriptions: 503 beyond.
    max_sse_streams: int = 1_000
    #: Samples waiting for one stream's client; a client that falls this far behind is
    #: dropped (its stream closed) so that it never slows routing.
    sse_queue_samples: int = 10_000


@dataclass(frozen=True, slots=True)
class RestConfig:
    host: str
    port: int
    http_port: Any  # as configured (the status key shows it)


def _port(value: int, text: str) -> int:
    if not 0 <= value <= 65535:
        raise UsageError(f"plugins/rest/http_port: {text} is not a port number")
    return value


def parse_rest_config(section: dict[str, Any]) -> RestConfig:
    unknown = [k for k in section if k not in KNOWN_KEYS]
    if unknown:
        raise UsageError(
            f"plugins/rest/{unknown[0]}: unknown field `{unknown[0]}`, expected one of "
            + ", ".join(f"`{k}`" for k in KNOWN_KEYS)
        )
    for key in ("work_thread_num", "max_block_thread_num"):
        value = section.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise UsageError(f"plugins/rest/{key}: expected an unsigned integer, got {value!r}")
    if "http_port" not in section:
        raise UsageError("plugins/rest/http_port: missing field `http_port`")
    raw = section["http_port"]
    if isinstance(raw, int) and not isinstance(raw, bool):
        return RestConfig("::", _port(raw, str(raw)), raw)
    if not isinstance(raw, str):
        raise UsageError(f'plugins/rest/http_port: expected a port or "ip:port", got {raw!r}')
    text = raw.strip()
    if text.isdigit():
        return RestConfig("::", _port(int(text), text), raw)
    host, sep, port = text.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        ipaddress.ip_address(host)
    except ValueError:
        raise UsageError(f"plugins/rest/http_port: {raw!r} is not PORT or IP:PORT") from None
    if not sep or not port.isdigit():
        raise UsageError(f"plugins/rest/http_port: {raw!r} is not PORT or IP:PORT")
    return RestConfig(host, _port(int(port), port), raw)


def parse_rest_limits(section: Any) -> RestLimits:
    """``pyzenoh/rest`` (already checked against the schema: positive integers)."""
    if not isinstance(section, dict):
        return RestLimits()
    values = {k: v for k, v in section.items() if v is not None and k in RestLimits.__dataclass_fields__}
    return RestLimits(**values)
