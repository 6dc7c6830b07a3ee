"""Scouting messages: SCOUT and HELLO, one per UDP datagram (zenoh-wire.md, zenoh-mesh.md 3).

Layout (Zenoh 1.x, wire version 0x09)::

    SCOUT  |Z|X|X| 0x01 |  version  |X|ZidLen|I|What|  [zid: ZidLen+1 bytes]  [exts]
    HELLO  |Z|X|L| 0x02 |  version  |X|ZidLen|X|X|Wai|  zid  [locators: VLE n, n x z8 str]  [exts]

``What`` is a 3-bit matcher (1 router, 2 peer, 4 client); ``Wai`` is the 2-bit WhatAmI
code (0 router, 1 peer, 2 client). A HELLO without L carries no locators (the receiver may
then use the datagram's source). Seen on the wire from eclipse-zenoh 1.10.2:
``01 09 03`` and ``22 09 10 cd ab 01 13 "tcp/127.0.0.1:17001"``.

Decoding raises :class:`ScoutingDecodeError` (a :class:`~pyzenoh.errors.DecodeError`) and
nothing else; counts read from the wire are checked against the bytes left before any
loop runs, so a huge declared locator count allocates nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntFlag

from typing_extensions import override

from pyzenoh.codec.extensions import (
    Extension,
    read_extensions,
    write_extensions,
)
from pyzenoh.codec.primitives import (
    U8_MAX,
    Reader,
    WhatAmI,
    ZenohId,
    read_zid_nibble,
    write_vle,
    zid_nibble_flags,
)
from pyzenoh.errors import DecodeError, UsageError

ID_SCOUT = 0x01
ID_HELLO = 0x02
MID_MASK = 0x1F

FLAG_Z = 0x80  # extensions follow the body
FLAG_L = 0x20  # HELLO: locators present
FLAG_I = 0x08  # SCOUT flags byte: a ZenohId follows

PROTOCOL_VERSION = 0x09

#: A locator is a z8 string on the wire (zenoh's EndPoint is capped at 255 bytes).
MAX_LOCATOR_LEN = U8_MAX
#: Locators accepted in one HELLO; a datagram could hold more, no real node sends them.
MAX_HELLO_LOCATORS = 256
#: Largest datagram a scouting socket reads (zenoh's RCV_BUF_SIZE).
MAX_DATAGRAM = 0xFFFF


class ScoutingDecodeError(DecodeError):
    """A datagram that is not a well-formed SCOUT or HELLO."""


class WhatAmIMatcher(IntFlag):
    """Set of node kinds a SCOUT asks for; bit values are those of :class:`WhatAmI`."""

    ROUTER = 1
    PEER = 2
    CLIENT = 4

    @classmethod
    def empty(cls) -> WhatAmIMatcher:
        return cls(0)

    @classmethod
    def all(cls) -> WhatAmIMatcher:
        return cls.ROUTER | cls.PEER | cls.CLIENT

    @classmethod
    def parse(cls, spec: str | Iterable[str] | WhatAmI | WhatAmIMatcher) -> WhatAmIMatcher:
        """``"router|peer"``, ``["router", "peer"]``, a WhatAmI or a matcher (as zenoh's
        config and ``zenoh.scout(what=...)`` accept them)."""
        if isinstance(spec, WhatAmIMatcher):
            return spec
        if isinstance(spec, WhatAmI):
            return cls(int(spec))
        names = spec.split("|") if isinstance(spec, str) else list(spec)
        result = cls(0)
        for raw in names:
            if not isinstance(raw, str):
                raise UsageError(f"a WhatAmI matcher lists node kinds, not {raw!r}")
            name = raw.strip().lower()
            if not name:
                continue
            try:
                result |= cls[name.upper()]
            except KeyError:
                raise UsageError(f"unknown node kind {raw!r} (router, peer or client)") from None
        return result

    def matches(self, whatami: WhatAmI) -> bool:
        return bool(int(self) & int(whatami))

    @override
    def __str__(self) -> str:
        return "|".join(m.name.lower() for m in WhatAmIMatcher if m.name and m in self)


@dataclass(frozen=True, slots=True)
class Scout:
    """Who is there? ``what`` selects the kinds of node that should answer."""

    what: WhatAmIMatcher
    zid: ZenohId | None = None
    version: int = PROTOCOL_VERSION
    extensions: tuple[Extension, ...] = ()


@dataclass(frozen=True, slots=True)
class Hello:
    """The answer to a SCOUT: the node's kind, id and locators (``tcp/1.2.3.4:7447``...)."""

    whatami: WhatAmI
    zid: ZenohId
    locators: tuple[str, ...] = ()
    version: int = PROTOCOL_VERSION
    extensions: tuple[Extension, ...] = ()


ScoutingMessage = Scout | Hello


# --- encoding ------------------------------------------------------------------------------


def encode_scouting_message(msg: ScoutingMessage) -> bytes:
    """The datagram for ``msg``; raises UsageError for values that cannot be encoded."""
    if not 0 <= msg.version <= U8_MAX:
        raise UsageError(f"scouting version {msg.version} out of range 0..255")
    out = bytearray()
    z = FLAG_Z if msg.extensions else 0
    if isinstance(msg, Scout):
        what = int(msg.what)
        if not 0 <= what <= 0b111:
            raise UsageError(f"WhatAmI matcher {what} out of range")
        flags = what
        zid_bytes = b""
        if msg.zid is not None:
            nibble, zid_bytes = zid_nibble_flags(msg.zid)
            flags |= nibble | FLAG_I
        out += bytes((ID_SCOUT | z, msg.version, flags))
        out += zid_bytes
    else:
        header = ID_HELLO | z | (FLAG_L if msg.locators else 0)
        nibble, zid_bytes = zid_nibble_flags(msg.zid)
        out += bytes((header, msg.version, nibble | WhatAmI(msg.whatami).to_code()))
        out += zid_bytes
        if msg.locators:
            write_vle(out, len(msg.locators))
            for loc in msg.locators:
                raw = loc.encode("utf-8")
                if len(raw) > MAX_LOCATOR_LEN:
                    raise UsageError(f"locator {loc!r} is longer than {MAX_LOCATOR_LEN} bytes")
                write_vle(out, len(raw))
                out += raw
    if msg.extensions:
        write_extensions(out, msg.extensions)
    return bytes(out)


# --- decoding ------------------------------------------------------------------------------


def decode_scouting_message(data: bytes) -> ScoutingMessage:
    """One datagram -> one SCOUT or HELLO; anything else raises ScoutingDecodeError.

    Like zenoh, bytes after the message are ignored (a datagram holds one message).
    """
    if len(data) > MAX_DATAGRAM:
        raise ScoutingDecodeError(f"datagram of {len(data)} bytes exceeds {MAX_DATAGRAM}", 0)
    try:
        return _decode(Reader(bytes(data)))
    except ScoutingDecodeError:
        raise
    except DecodeError as exc:  # primitives raise the generic kind: narrow it
        raise ScoutingDecodeError(exc.reason, exc.offset) from None


def _decode(r: Reader) -> ScoutingMessage:
    header = r.u8()
    mid = header & MID_MASK
    if mid == ID_SCOUT:
        version = r.u8()
        flags = r.u8()
        what = WhatAmIMatcher(flags & 0b111)
        zid = read_zid_nibble(r, flags) if flags & FLAG_I else None
        return Scout(what, zid, version, _extensions(r, header))
    if mid == ID_HELLO:
        version = r.u8()
        flags = r.u8()
        whatami = WhatAmI.from_code(flags & 0b11, r.pos - 1)
        zid = read_zid_nibble(r, flags)
        locators: tuple[str, ...] = ()
        if header & FLAG_L:
            locators = _read_locators(r)
        return Hello(whatami, zid, locators, version, _extensions(r, header))
    raise ScoutingDecodeError(f"not a scouting message (id 0x{mid:02x})", 0)


def _read_locators(r: Reader) -> tuple[str, ...]:
    start = r.pos
    count = r.vle(MAX_HELLO_LOCATORS)
    if count > r.remaining():  # each locator takes at least its length byte
        raise ScoutingDecodeError(f"{count} locators declared, {r.remaining()} bytes left", start)
    out: list[str] = []
    for _ in range(count):
        pos = r.pos
        text = r.zstr(MAX_LOCATOR_LEN)
        if not is_valid_locator(text):
            raise ScoutingDecodeError(f"malformed locator {text!r}", pos)
        out.append(text)
    return tuple(out)


def _extensions(r: Reader, header: int) -> tuple[Extension, ...]:
    if not header & FLAG_Z:
        return ()
    # No scouting extension is defined; zenoh skips every one, mandatory or not.
    return tuple(read_extensions(r))


def is_valid_locator(text: str) -> bool:
    """``<protocol>/<address>[?<metadata>]`` with non-empty parts, as zenoh's Locator parse
    requires; a ``#config`` part is refused (zenoh refuses it in a HELLO too)."""
    proto, sep, rest = text.partition("/")
    if not sep or not proto or not rest or "#" in text or "?" in proto:
        return False
    address, qmark, metadata = rest.partition("?")
    return bool(address) and (not qmark or bool(metadata))
