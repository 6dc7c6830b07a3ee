"""``@/<zid>/router/metrics``: OpenMetrics text, zenohd's ``zenoh_build_info`` then
pyzenoh's counters and gauges, gzipped as zenohd's flate2 does unless the selector's
parameters say ``compression=false`` (``descriptors=false`` drops the ``#`` lines).
"""

from __future__ import annotations

import dataclasses
import struct
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pyzenoh.codec import Encoding
from pyzenoh.router.admin.router_info import version_string

METRICS_ENCODING = "application/openmetrics-text; version=1.0.0; charset=utf-8"
GZIP_SUFFIX = ";content-encoding=gzip"


@dataclass(frozen=True, slots=True)
class MetricFamily:
    name: str
    kind: str  # "counter" or "gauge"
    help: str
    samples: tuple[tuple[tuple[tuple[str, str], ...], float], ...] = ()  # (labels, value)


def _label_value(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def metrics_text(
    zid: str,
    families: Iterable[MetricFamily] = (),
    *,
    version: str | None = None,
    descriptors: bool = True,
) -> str:
    """OpenMetrics text: zenohd's ``zenoh_build_info`` exactly, then pyzenoh's families.

    zenohd ends its text with ``"# EOF\\n "`` (a stray space included) and filters
    ``descriptors=false`` line by line, keeping that space; both are reproduced.
    """
    version = version_string() if version is None else version
    parts = [
        "# HELP zenoh_build Zenoh build version.\n",
        "# TYPE zenoh_build info\n",
        (f'zenoh_build_info{{local_id="{zid}",local_whatami="router",version="{_label_value(version)}"}} 1\n'),
    ]
    for fam in families:
        parts.append(f"# HELP {fam.name} {fam.help}\n")
        parts.append(f"# TYPE {fam.name} {fam.kind}\n")
        sample = f"{fam.name}_total" if fam.kind == "counter" else fam.name
        for labels, value in fam.samples:
            text = ",".join(f'{k}="{_label_value(v)}"' for k, v in labels)
            parts.append(f"{sample}{{{text}}} {_number(value)}\n" if text else f"{sample} {_number(value)}\n")
    parts.append("# EOF\n ")
    text = "".join(parts)
    if not descriptors:
        kept = [line for line in text.splitlines(keepends=True) if not line.startswith("#")]
        text = "".join(kept) + "# EOF\n"
    return text


def metrics_payload(text: str, compression: bool = True) -> tuple[bytes, Encoding]:
    data = text.encode()
    if not compression:
        return data, Encoding.from_str(METRICS_ENCODING)
    return gzip_fast(data), Encoding.from_str(METRICS_ENCODING + GZIP_SUFFIX)


#: The gzip header zenohd's flate2 ``GzEncoder(Compression::fast())`` writes: no name,
#: mtime 0, XFL 4 ("fastest"), OS 255 ("unknown"). Python's gzip module writes OS 3.
GZIP_FAST_HEADER = bytes.fromhex("1f8b08000000000004ff")


def gzip_fast(data: bytes) -> bytes:
    deflate = zlib.compressobj(1, zlib.DEFLATED, -zlib.MAX_WBITS)
    body = deflate.compress(data) + deflate.flush()
    trailer = struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)
    return GZIP_FAST_HEADER + body + trailer


#: Help texts of the daemon's and the routing core's counters (others get a generic one).
_HELP = {
    "pyzenoh_router_links_accepted": "Sessions opened on the router's links.",
    "pyzenoh_router_links_closed": "Sessions closed.",
    "pyzenoh_router_links_closed_by_reason": "Sessions closed, by close reason.",
    "pyzenoh_router_messages_in": "Network messages received from faces.",
    "pyzenoh_router_messages_out": "Network messages queued to links.",
    "pyzenoh_router_dropped": "Messages dropped because a link's queue was full.",
    "pyzenoh_router_drop_waits": "Drop messages that found a full queue and waited for room (wait_before_drop).",
    "pyzenoh_router_faces_closed_slow": "Faces closed because they did not read.",
    "pyzenoh_router_faces_closed_bad_input": "Faces closed for protocol errors or limits.",
    "pyzenoh_router_refused": "Connections refused by a limit, and second links from a node (max_links), by reason.",
    "pyzenoh_routing_sub_index_lookups": "Subscriber index lookups to build data routes.",
    "pyzenoh_routing_qabl_index_lookups": "Queryable index lookups to build query routes.",
    "pyzenoh_routing_data_route_hits": "PUSH routes served from the route cache.",
    "pyzenoh_routing_route_cache_flushes": "Route caches emptied on reaching pyzenoh/limits/max_route_cache.",
    "pyzenoh_routing_pushes_routed": "PUSH messages routed.",
    "pyzenoh_routing_push_runs_routed": "Runs of same-shape PUSHes routed as one unit.",
    "pyzenoh_routing_pushes_in_runs": "PUSH messages routed as part of a run.",
    "pyzenoh_routing_lone_pushes_routed": "Lone PUSH messages forwarded from their received bytes.",
    "pyzenoh_routing_requests_routed": "REQUEST messages routed.",
    "pyzenoh_routing_query_timeouts": "Query destinations that timed out.",
    "pyzenoh_routing_dropped": "Messages the routing core ignored, by reason.",
    "pyzenoh_router_access_control_denied": "Messages access control denied, by rule id.",
    "pyzenoh_router_udp_dropped": "udp listeners: datagrams dropped and links ended by their limits, by reason.",
    "pyzenoh_router_intercepted": "Messages interceptors dropped or rewrote, by interceptor/item.",
}

#: Stats fields whose metric name says more than the field's.
_RENAMED = {"pyzenoh_router_by_reason": "pyzenoh_router_links_closed_by_reason"}


def stats_families(prefix: str, stats: object) -> list[MetricFamily]:
    """Counter families from a stats dataclass: int fields, and str -> int dicts (``reason``)."""
    if dataclasses.is_dataclass(stats) and not isinstance(stats, type):
        items = [(f.name, getattr(stats, f.name)) for f in dataclasses.fields(stats)]
    else:
        items = list(vars(stats).items())
    out: list[MetricFamily] = []
    for attr, value in items:
        name = f"{prefix}_{attr}"
        name = _RENAMED.get(name, name)
        help_text = _HELP.get(name, f"pyzenoh counter {attr}.")
        if isinstance(value, bool):
            continue
        if isinstance(value, int | float):
            out.append(MetricFamily(name, "counter", help_text, (((), value),)))
        elif isinstance(value, Mapping):
            samples = tuple(
                ((("reason", str(k)),), v)
                for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))
                if isinstance(v, int | float) and not isinstance(v, bool)
            )
            out.append(MetricFamily(name, "counter", help_text, samples))
    return out


def gauge(name: str, help_text: str, label: str, counts: Mapping[str, int]) -> MetricFamily:
    samples = tuple((((label, k),), v) for k, v in counts.items())
    return MetricFamily(name, "gauge", help_text, samples)


def parse_parameters(text: str) -> dict[str, str]:
    """A selector's parameters, ``k=v;k2=v2``; the first value of a repeated key wins."""
    out: dict[str, str] = {}
    for part in text.split(";"):
        if part:
            k, _, v = part.partition("=")
            out.setdefault(k, v)
    return out
