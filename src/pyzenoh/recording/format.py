"""The on-disk layout of a pyzenoh recording segment (sans-IO: constants and pure parsers).

A recording is a directory of MCAP files named ``seg-NNNNNN.mcap`` (the number sorts and
never repeats inside a directory). Each segment is a standard chunked MCAP file:

* magic, Header (profile ``pyzenoh``), one Metadata record ``pyzenoh.segment``
  (format version, segment number, run number, first seq), then the three Channel records;
* a sequence of *chunk groups*: one uncompressed Chunk record followed by exactly
  :data:`CHANNEL_COUNT` MessageIndex records (one per channel, possibly empty). A group is
  written with a single ``write`` call, so after a crash every group is either complete
  or a torn tail that readers ignore;
* on a clean close: DataEnd, the summary section (channels, statistics, chunk indexes,
  metadata index), summary offsets, Footer and the closing magic.

Channels (all without an MCAP schema; the layouts below are the contract):

``CH_NET`` (topic ``zenoh/network``): one encoded Zenoh network message. Data is
``NET_DATA`` = seq u64, cause i64, link u32, direction u8 (0 rx, 1 tx), key length u32
(``NO_KEY`` when there is none), then the UTF-8 key, then the raw message bytes.

``CH_ROUTE`` (topic ``pyzenoh/routes``): the router's routing decision for an rx record:
seq u64, cause i64, link count u32, key length u32, link ids u32 each, then the key.
``pyzenoh router`` writes one only for a PUSH of which a send was dropped: otherwise the
tx records caused by the rx record already say where it went.

``CH_LINK`` (topic ``pyzenoh/links``): one JSON object per event, ``seq``, ``event`` and
``link`` always present:

* ``"open"``: ``{"seq", "event", "link", "zid", "whatami", "remote"}`` (and
  ``"carried": true`` for a restatement);
* ``"close"``: ``{"seq", "event", "link", "reason"}``;
* ``"denied"``: access control denied a message: ``{"seq", "event", "link", "cause",
  "reason", "flow", "message", "key"}``. ``link`` is the face whose flow was denied (the
  source for ``"flow": "ingress"``, the destination for ``"egress"``); ``cause`` is the
  seq of the rx record being routed when it was denied (-1: none, e.g. a declaration
  denied toward a face being added); ``message`` is the rule's message kind (``put``,
  ``declare_subscriber``, ...); ``key`` the key expression decided on (null when the
  message had none; at most :data:`MAX_DENIED_KEY_CHARS` characters, a longer one is
  cut); ``reason`` e.g. ``"ingress put denied by rule 'no-vault'"``. A denial is
  written right after the rx record it is about (before that record's tx records). It
  changes no link state.
* ``"intercepted"``: an interceptor (``downsampling``, ``low_pass_filter``) dropped a
  message; the fields and their meaning are a ``"denied"`` event's, ``message`` one of
  ``put``, ``delete``, ``query``, ``reply``, and ``reason`` e.g. ``"egress put dropped
  by downsampling 'ds1'"``.

Every segment starts with one ``carried`` open event per link still open at rotation
time, so a segment (and every chunk of it, given the links open at its start) can be
decoded on its own. Readers apply ``open`` and ``close`` to their link state and
nothing else.

Format versions: ``"denied"`` and later ``"intercepted"`` events were added without changing
:data:`FORMAT_VERSION` (1): every record written before means what it meant, and a
reader that does not know the event loses only the denials (the pipeline's readers
of that time skip a link event they cannot parse; :func:`parse_link` of that time
raised :class:`~pyzenoh.errors.DecodeError` on it).

Every record of every channel takes the next value of one ``seq`` counter, which keeps
increasing across segments and across recorder restarts in the same directory; the MCAP
``sequence`` field holds its low 32 bits and ``log_time``/``publish_time`` hold the
router's clock in nanoseconds.
"""

from __future__ import annotations

import json
import struct
import sys
from array import array
from dataclasses import dataclass

from pyzenoh.errors import DecodeError

FORMAT_VERSION = 1
PROFILE = "pyzenoh"
LIBRARY = "pyzenoh-recorder 1"
SEGMENT_METADATA = "pyzenoh.segment"
SEGMENT_PREFIX = "seg-"
SEGMENT_SUFFIX = ".mcap"
SEGMENT_DIGITS = 6

MAGIC = b"\x89MCAP0\r\n"

# MCAP opcodes used here.
OP_HEADER = 0x01
OP_FOOTER = 0x02
OP_CHANNEL = 0x04
OP_MESSAGE = 0x05
OP_CHUNK = 0x06
OP_MESSAGE_INDEX = 0x07
OP_METADATA = 0x0C
OP_DATA_END = 0x0F

CH_NET = 1
CH_LINK = 2
CH_ROUTE = 3
CHANNEL_COUNT = 3
CHANNELS: dict[int, tuple[str, str]] = {
    CH_NET: ("zenoh/network", "pyzenoh.net.v1"),
    CH_LINK: ("pyzenoh/links", "json"),
    CH_ROUTE: ("pyzenoh/routes", "pyzenoh.route.v1"),
}

DIR_RX = 0
DIR_TX = 1
DIRECTIONS = ("rx", "tx")
NO_KEY = 0xFFFFFFFF

# Record header (opcode, length) and the Message record's fixed part.
RECORD_HEAD = struct.Struct("<BQ")
# opcode, length, channel, sequence, log_time, publish_time
MESSAGE_HEAD = struct.Struct("<BQHIQQ")
NET_DATA = struct.Struct("<QqIBI")  # seq, cause, link, direction, key length
ROUTE_DATA = struct.Struct("<QqII")  # seq, cause, link count, key length
# Everything a net record needs before its key, packed by one call on the hot path.
NET_RECORD = struct.Struct("<BQHIQQQqIBI")
ROUTE_RECORD = struct.Struct("<BQHIQQQqII")
U32 = struct.Struct("<I")
U64 = struct.Struct("<Q")
CHUNK_FIXED = struct.Struct("<QQQI")  # start time, end time, uncompressed size, crc
MESSAGE_FIXED_LEN = MESSAGE_HEAD.size - RECORD_HEAD.size  # 22: channel..publish_time
LOG_TIME_AT = 1 + 8 + 2 + 4  # offset of log_time inside a Message record

# Parser limits: a record or chunk larger than this is treated as corruption, never allocated.
MAX_RECORD_BYTES = 1 << 31
MAX_KEY_BYTES = 1 << 20
MAX_ROUTE_LINKS = 1 << 20
MAX_JSON_BYTES = 1 << 16
# A "denied" link event's strings are cut to these many characters, so that its JSON
# (every character escaped at worst) always fits MAX_JSON_BYTES.
MAX_DENIED_KEY_CHARS = 4096
MAX_DENIED_TEXT_CHARS = 512
MAX_DENIED_NAME_CHARS = 64
#: The events that say a policy stopped a message: access control's, an interceptor's.
#: The link events of a message a policy stopped: access control's, an interceptor's.
DENIED = "denied"
INTERCEPTED = "intercepted"
STOP_EVENTS = (DENIED, INTERCEPTED)
LINK_EVENTS = ("open", "close", *STOP_EVENTS)
# Largest values the tables can hold (signed 64-bit times and seqs, 32-bit link ids).
MAX_TIME_NS = MAX_SEQ = (1 << 63) - 1
MAX_LINK_ID = (1 << 31) - 1

LITTLE_ENDIAN = sys.byteorder == "little"
# array typecode holding exactly 4 bytes (C's unsigned int nearly everywhere).
U32_CODE = "I" if array("I").itemsize == 4 else "L"


def segment_name(number: int) -> str:
    return f"{SEGMENT_PREFIX}{number:0{SEGMENT_DIGITS}d}{SEGMENT_SUFFIX}"


def segment_number(name: str) -> int | None:
    """The number in a segment file name, or None when ``name`` is not a segment."""
    if not (name.startswith(SEGMENT_PREFIX) and name.endswith(SEGMENT_SUFFIX)):
        return None
    digits = name[len(SEGMENT_PREFIX) : -len(SEGMENT_SUFFIX)]
    if not digits.isascii() or not digits.isdigit():
        return None
    return int(digits)


@dataclass(frozen=True, slots=True)
class NetRecord:
    """One recorded Zenoh network message."""

    seq: int
    time_ns: int
    link: int
    direction: str
    key: str | None
    raw: bytes
    cause: int


@dataclass(frozen=True, slots=True)
class RouteRecord:
    """The router's list of faces with an intersecting subscriber for rx record ``cause``."""

    seq: int
    time_ns: int
    cause: int
    key: str
    links: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class LinkRecord:
    """A link opening or closing (``carried`` marks a re-statement at segment start), or
    a message access control denied or an interceptor dropped on it (``event`` one of
    :data:`STOP_EVENTS`: then ``cause`` is the
    rx record being routed, -1 for none, and ``flow``, ``message``, ``key`` what was
    denied; all four are None for the other events)."""

    seq: int
    time_ns: int
    event: str
    link: int
    zid: str | None
    whatami: str | None
    remote: str | None
    reason: str | None
    carried: bool
    cause: int | None = None
    flow: str | None = None
    message: str | None = None
    key: str | None = None


Record = NetRecord | RouteRecord | LinkRecord


def u32_array(data: bytes | memoryview) -> tuple[int, ...]:
    a = array(U32_CODE)
    a.frombytes(data)
    if not LITTLE_ENDIAN:
        a.byteswap()
    return tuple(a)


def _key(data: memoryview, at: int, klen: int, end: int) -> tuple[str | None, int]:
    if klen == NO_KEY:
        return None, at
    if klen > MAX_KEY_BYTES or at + klen > end:
        raise DecodeError("key length beyond the record", at)
    try:
        return str(data[at : at + klen], "utf-8"), at + klen
    except UnicodeDecodeError:
        raise DecodeError("key is not UTF-8", at) from None


def parse_net(data: memoryview, time_ns: int) -> NetRecord:
    """Parse the data of a ``CH_NET`` message."""
    if len(data) < NET_DATA.size:
        raise DecodeError("network record too short", 0)
    seq, cause, link, direction, klen = NET_DATA.unpack_from(data, 0)
    if direction > DIR_TX:
        raise DecodeError("bad direction", NET_DATA.size - 5)
    if seq > MAX_SEQ or link > MAX_LINK_ID:
        raise DecodeError("seq or link id out of range", 0)
    key, at = _key(data, NET_DATA.size, klen, len(data))
    return NetRecord(seq, time_ns, link, DIRECTIONS[direction], key, bytes(data[at:]), cause)


def parse_route(data: memoryview, time_ns: int) -> RouteRecord:
    """Parse the data of a ``CH_ROUTE`` message."""
    end = len(data)
    if end < ROUTE_DATA.size:
        raise DecodeError("route record too short", 0)
    seq, cause, n, klen = ROUTE_DATA.unpack_from(data, 0)
    at = ROUTE_DATA.size
    if n > MAX_ROUTE_LINKS or at + 4 * n > end:
        raise DecodeError("route link count runs past the record", at)
    links = u32_array(data[at : at + 4 * n])
    if seq > MAX_SEQ or any(link > MAX_LINK_ID for link in links):
        raise DecodeError("seq or link id out of range", 0)
    key, at = _key(data, at + 4 * n, klen, end)
    if key is None or at != end:
        raise DecodeError("route key does not fill the record", at)
    return RouteRecord(seq, time_ns, cause, key, links)


def _opt_str(obj: dict[str, object], name: str) -> str | None:
    v = obj.get(name)
    return v if isinstance(v, str) else None


def parse_link(data: memoryview, time_ns: int) -> LinkRecord:
    """Parse the data of a ``CH_LINK`` message."""
    if len(data) > MAX_JSON_BYTES:
        raise DecodeError("link record too large", 0)
    try:
        obj = json.loads(bytes(data))
    except (ValueError, RecursionError):
        raise DecodeError("link record is not JSON", 0) from None
    if not isinstance(obj, dict):
        raise DecodeError("link record is not an object", 0)
    seq, link, event = obj.get("seq"), obj.get("link"), obj.get("event")
    if not isinstance(seq, int) or not isinstance(link, int) or event not in LINK_EVENTS:
        raise DecodeError("link record lacks seq, link or event", 0)
    if not (0 <= seq <= MAX_SEQ and 0 <= link <= MAX_LINK_ID):
        raise DecodeError("seq or link id out of range", 0)
    if event in STOP_EVENTS:
        cause = obj.get("cause")
        if not isinstance(cause, int) or not -1 <= cause <= MAX_SEQ:
            raise DecodeError(f"{event} event lacks a cause", 0)
        return LinkRecord(
            seq=seq,
            time_ns=time_ns,
            event=str(event),
            link=link,
            zid=None,
            whatami=None,
            remote=None,
            reason=_opt_str(obj, "reason"),
            carried=False,
            cause=cause,
            flow=_opt_str(obj, "flow"),
            message=_opt_str(obj, "message"),
            key=_opt_str(obj, "key"),
        )
    return LinkRecord(
        seq=seq,
        time_ns=time_ns,
        event=str(event),
        link=link,
        zid=_opt_str(obj, "zid"),
        whatami=_opt_str(obj, "whatami"),
        remote=_opt_str(obj, "remote"),
        reason=_opt_str(obj, "reason"),
        carried=obj.get("carried") is True,
    )


def link_json(
    seq: int,
    event: str,
    link: int,
    *,
    zid: str | None = None,
    whatami: str | None = None,
    remote: str | None = None,
    reason: str | None = None,
    carried: bool = False,
    cause: int = -1,
    flow: str | None = None,
    message: str | None = None,
    key: str | None = None,
) -> bytes:
    """The data of a ``CH_LINK`` message (see the module docstring for each event's
    fields; a "denied" event's strings are cut to their limits here)."""
    obj: dict[str, object] = {"seq": seq, "event": event, "link": link}
    if event == "open":
        obj.update(zid=zid, whatami=whatami, remote=remote)
    elif event in STOP_EVENTS:
        obj.update(
            cause=cause,
            reason=_cut(reason, MAX_DENIED_TEXT_CHARS),
            flow=_cut(flow, MAX_DENIED_NAME_CHARS),
            message=_cut(message, MAX_DENIED_NAME_CHARS),
            key=_cut(key, MAX_DENIED_KEY_CHARS),
        )
    else:
        obj["reason"] = reason
    if carried:
        obj["carried"] = True
    return json.dumps(obj, separators=(",", ":")).encode()


def _cut(text: str | None, limit: int) -> str | None:
    return text if text is None or len(text) <= limit else text[:limit]


def iter_chunk_messages(records: memoryview) -> list[tuple[int, int, int, int]]:
    """``(channel, log_time, data_start, data_end)`` of every Message in a chunk's records.

    Other record kinds inside a chunk are skipped; a record running past the end raises.
    """
    out: list[tuple[int, int, int, int]] = []
    at, end = 0, len(records)
    head, fixed = RECORD_HEAD, MESSAGE_HEAD
    while at < end:
        if at + 9 > end:
            raise DecodeError("truncated record header in chunk", at)
        op, length = head.unpack_from(records, at)
        stop = at + 9 + length
        if stop > end:
            raise DecodeError("record runs past the chunk", at)
        if op == OP_MESSAGE:
            if length < MESSAGE_FIXED_LEN:
                raise DecodeError("message record too short", at)
            _, _, channel, _, log_time, _ = fixed.unpack_from(records, at)
            out.append((channel, log_time, at + fixed.size, stop))
        at = stop
    return out
