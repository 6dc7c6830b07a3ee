"""The LINKSTATE OAM body (network OAM id 1): a list of link states (zenoh-wire.md 3.8).

Routers flood these between themselves (full link state) and a router exchanges them with
its peers (single-hop gossip); :mod:`pyzenoh.routing.network` interprets them. This module
is only the codec, pure and sans-IO::

    list   := VLE count, count x state
    state  := VLE options (0x01 zid, 0x02 whatami, 0x04 locators, 0x08 weights, 0x10 gateway)
              VLE psid, VLE sn,
              [zid: VLE length + little-endian bytes], [u8 whatami: 1 router, 2 peer, 4 client],
              [locators: VLE count + (VLE length + UTF-8) each],
              VLE nlinks, nlinks x VLE psid,
              [weights: nlinks x VLE u16 (no count: one per link)]

Decoding checks every count against the bytes left (each item takes at least one byte)
and against the named limits below before it builds anything, and raises only
:class:`LinkStateDecodeError`. Unknown option bits are ignored, as zenoh does.
Encoding is canonical: it reproduces the bytes real 1.10.2 routers send.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyzenoh.codec.primitives import (
    U16_MAX,
    U64_MAX,
    ZID_MAX_LEN,
    Reader,
    WhatAmI,
    ZenohId,
    write_vle,
    write_zstr,
)
from pyzenoh.errors import DecodeError, UsageError

# --- Options ------------------------------------------------------------------------------

OPT_ZID = 0x01
OPT_WHATAMI = 0x02
OPT_LOCATORS = 0x04
OPT_WEIGHTS = 0x08
OPT_GATEWAY = 0x10

# --- Limits (ours: zenoh only bounds by the buffer; a link state describes one node) -------

#: States in one list. A router sends at most one per node it knows (plus rare repeats),
#: so this is well above any graph :data:`pyzenoh.routing.network.MAX_NODES` allows.
MAX_LINKSTATES = 8192
#: Links of one node (its neighbours).
MAX_LINKS = 4096
#: Locators of one node (one per listening endpoint and interface).
MAX_LOCATORS = 256
#: Bytes of one locator string ("tcp/[fe80::...%eth0]:7447?metadata").
MAX_LOCATOR_LEN = 4096
#: psid and sn are u64 on the wire; a psid is a node index (petgraph's u32 in zenoh).
MAX_PSID = U64_MAX
MAX_SN = U64_MAX

#: The smallest encoded state: options, psid, sn, nlinks (one byte each).
_MIN_STATE_LEN = 4

_WHATAMI_BY_BYTE = {1: WhatAmI.ROUTER, 2: WhatAmI.PEER, 4: WhatAmI.CLIENT}


class LinkStateDecodeError(DecodeError):
    """A LINKSTATE body that does not decode (truncated, malformed or over a limit)."""


@dataclass(frozen=True, slots=True)
class LinkState:
    """One node's state as a neighbour described it, in that neighbour's numbering.

    ``psid`` is the sender's node index for the node, ``links`` the sender's indexes of
    its neighbours and ``weights`` (when present) one configured weight per link, 0
    meaning "not set".
    """

    psid: int
    sn: int
    zid: ZenohId | None
    whatami: WhatAmI | None
    locators: tuple[str, ...] | None
    links: tuple[int, ...]
    weights: tuple[int, ...] | None
    gateway: bool

    def options(self) -> int:
        opts = 0
        if self.zid is not None:
            opts |= OPT_ZID
        if self.whatami is not None:
            opts |= OPT_WHATAMI
        if self.locators is not None:
            opts |= OPT_LOCATORS
        if self.weights is not None:
            opts |= OPT_WEIGHTS
        if self.gateway:
            opts |= OPT_GATEWAY
        return opts


def _fail(reason: str, offset: int) -> LinkStateDecodeError:
    return LinkStateDecodeError(reason, offset)


def _check_locator(text: str, offset: int) -> None:
    # zenoh parses each one as an EndPoint: "<protocol>/<address>", both non-empty
    slash = text.find("/")
    if slash <= 0 or slash == len(text) - 1:
        raise _fail(f"locator {text[:64]!r} is not <protocol>/<address>", offset)


def _read_count(r: Reader, limit: int, what: str) -> int:
    start = r.pos
    n = r.vle(U64_MAX)
    if n > limit:
        raise _fail(f"{n} {what} exceed the limit of {limit}", start)
    if n > r.remaining():  # every item takes at least one byte
        raise _fail(f"{n} {what} declared, {r.remaining()} bytes left", start)
    return n


def _read_state(r: Reader) -> LinkState:
    options = r.vle(U64_MAX)
    psid = r.vle(MAX_PSID)
    sn = r.vle(MAX_SN)
    zid = None
    if options & OPT_ZID:
        start = r.pos
        n = r.vle(U64_MAX)
        if not 1 <= n <= ZID_MAX_LEN:
            raise _fail(f"zid length {n} out of 1..{ZID_MAX_LEN}", start)
        zid = ZenohId.from_wire(r.take(n), start)
    whatami = None
    if options & OPT_WHATAMI:
        start = r.pos
        code = r.u8()
        whatami = _WHATAMI_BY_BYTE.get(code)
        if whatami is None:
            raise _fail(f"invalid whatami {code}", start)
    locators = None
    if options & OPT_LOCATORS:
        n = _read_count(r, MAX_LOCATORS, "locators")
        locs: list[str] = []
        for _ in range(n):
            start = r.pos
            text = r.zstr(MAX_LOCATOR_LEN)
            _check_locator(text, start)
            locs.append(text)
        locators = tuple(locs)
    nlinks = _read_count(r, MAX_LINKS, "links")
    links = tuple(r.vle(MAX_PSID) for _ in range(nlinks))
    weights = None
    if options & OPT_WEIGHTS:
        if nlinks > r.remaining():
            raise _fail(f"{nlinks} weights expected, {r.remaining()} bytes left", r.pos)
        weights = tuple(r.vle(U16_MAX) for _ in range(nlinks))
    return LinkState(psid, sn, zid, whatami, locators, links, weights, bool(options & OPT_GATEWAY))


def decode_linkstates(body: bytes) -> list[LinkState]:
    """Decode a LINKSTATE OAM body; the whole body must be one list."""
    r = Reader(bytes(body))
    try:
        start = r.pos
        count = r.vle(U64_MAX)
        if count > MAX_LINKSTATES:
            raise _fail(f"{count} link states exceed the limit of {MAX_LINKSTATES}", start)
        if count * _MIN_STATE_LEN > r.remaining():
            raise _fail(f"{count} link states declared, {r.remaining()} bytes left", start)
        states = [_read_state(r) for _ in range(count)]
        if not r.at_end():
            raise _fail(f"{r.remaining()} trailing bytes after the link states", r.pos)
    except LinkStateDecodeError:
        raise
    except DecodeError as exc:  # from the primitives: re-raise as our one typed error
        raise LinkStateDecodeError(exc.reason, exc.offset) from None
    return states


def _write_state(out: bytearray, s: LinkState) -> None:
    write_vle(out, s.options())
    write_vle(out, s.psid)
    write_vle(out, s.sn)
    if s.zid is not None:
        wire = s.zid.to_wire()
        write_vle(out, len(wire))
        out += wire
    if s.whatami is not None:
        out.append(int(s.whatami))
    if s.locators is not None:
        write_vle(out, len(s.locators))
        for loc in s.locators:
            write_zstr(out, loc)
    write_vle(out, len(s.links))
    for link in s.links:
        write_vle(out, link)
    if s.weights is not None:
        if len(s.weights) != len(s.links):
            raise UsageError(f"{len(s.weights)} weights for {len(s.links)} links")
        for w in s.weights:
            if not 0 <= w <= U16_MAX:
                raise UsageError(f"link weight {w} out of range 0..{U16_MAX}")
            write_vle(out, w)


def encode_linkstates(states: Sequence[LinkState]) -> bytes:
    """The LINKSTATE OAM body carrying ``states``, in order."""
    out = bytearray()
    write_vle(out, len(states))
    for s in states:
        _write_state(out, s)
    return bytes(out)
