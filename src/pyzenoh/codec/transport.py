"""Transport layer: INIT, OPEN, CLOSE, KEEPALIVE, FRAME, FRAGMENT, JOIN, OAM (zenoh-wire.md 2).

A batch (the bytes after the TCP length prefix) holds one or more transport messages.
A FRAME has no length: its network messages run until the batch ends or until a byte
whose message id is a transport id (< 0x19).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from typing_extensions import override

from pyzenoh.codec.extensions import (
    Extension,
    KnownExtensions,
    add_optional,
    read_extensions,
    write_extensions,
)
from pyzenoh.codec.network import (
    FIRST_NETWORK_ID,
    NetworkMessage,
    _oam_encoding,
    _write_oam_body,
    read_network_message,
    read_oam_body,
)
from pyzenoh.codec.primitives import (
    U16_MAX,
    U32_MAX,
    U64_MAX,
    Reader,
    WhatAmI,
    ZenohId,
    check_bound,
    read_zid_nibble,
    vle_bytes,
    write_vle,
    write_zbytes,
    zid_nibble_flags,
)
from pyzenoh.errors import CloseReason, DecodeError, UsageError

ID_OAM = 0x00
ID_INIT = 0x01
ID_OPEN = 0x02
ID_CLOSE = 0x03
ID_KEEPALIVE = 0x04
ID_FRAME = 0x05
ID_FRAGMENT = 0x06
ID_JOIN = 0x07

FLAG_Z = 0x80
FLAG_A = 0x20  # INIT/OPEN: ack
FLAG_S = 0x40  # INIT/JOIN: size params present
FLAG_CLOSE_SESSION = 0x20  # CLOSE: close the whole session, not only this link
FLAG_T = 0x40  # OPEN: lease in seconds
FLAG_R = 0x20  # FRAME/FRAGMENT: reliable
FLAG_M = 0x40  # FRAGMENT: more fragments follow
FLAG_JOIN_T = 0x20  # JOIN: lease in seconds

PROTOCOL_VERSION = 0x09
DEFAULT_RESOLUTION = 0x0A  # 32-bit frame SN, 32-bit request id
DEFAULT_BATCH_SIZE = U16_MAX
#: Cookies from an InitAck are z16 long; OpenSyn reads them unbounded, we keep z16.
MAX_COOKIE_LEN = U16_MAX

# INIT extensions (ids are the header's low 7 bits)
EXT_QOS = 0x01
EXT_QOS_LINK = 0x21
EXT_SHM = 0x42
EXT_AUTH = 0x43
EXT_MULTILINK = 0x44
EXT_LOWLATENCY = 0x05
EXT_COMPRESSION = 0x06
EXT_PATCH = 0x27
EXT_REGION_NAME = 0x48
# Inside the Auth extension's body (its own extension list): the authentication methods.
AUTH_PUBKEY = 0x01
AUTH_USRPWD = 0x02
#: The bits of an Auth inner extension header that name its method (zenoh's iext ID_MASK).
AUTH_ID_MASK = 0x0F
# OPEN-only extensions
EXT_MULTILINK_ACK = 0x04
EXT_REMOTE_BOUND = 0x27
# FRAME / FRAGMENT / transport OAM
EXT_FRAME_QOS = 0x31
EXT_FRAGMENT_FIRST = 0x02
EXT_FRAGMENT_DROP = 0x03
# JOIN
EXT_JOIN_QOS = 0x51
EXT_JOIN_SHM = 0x52

PRIORITY_DATA = 5


# --- Auth extension body ------------------------------------------------------------------


def read_auth_extensions(body: bytes) -> tuple[Extension, ...]:
    """The extension list inside an Auth extension (0x43) of INIT or OPEN.

    An empty body is an empty list. Malformed bodies (truncated, reserved encoding, a
    chain that does not end with the body, trailing bytes) raise :class:`DecodeError`
    with reason GENERIC, the reason zenohd closes with when its Auth extension fails.
    """
    if not body:
        return ()
    r = Reader(body)
    try:
        exts = read_extensions(r)
        if not r.at_end():
            raise r.fail(f"{r.remaining()} trailing bytes after the auth extension list")
    except DecodeError as exc:
        raise DecodeError(f"malformed auth extension: {exc.reason}", exc.offset, CloseReason.GENERIC) from None
    return tuple(exts)


def write_auth_extensions(exts: list[Extension] | tuple[Extension, ...]) -> bytes | None:
    """The body of an Auth extension holding ``exts`` (None, no extension, when empty)."""
    if not exts:
        return None
    out = bytearray()
    write_extensions(out, exts)
    return bytes(out)


def find_auth_extension(exts: tuple[Extension, ...], method: int) -> Extension | None:
    """The first inner extension of ``method`` (:data:`AUTH_USRPWD`...), whatever its
    encoding and M bits: the caller checks them, as zenoh does."""
    for ext in exts:
        if ext.id & AUTH_ID_MASK == method:
            return ext
    return None


# --- INIT ---------------------------------------------------------------------------------

_INIT_EXTS = frozenset(
    {
        EXT_QOS,
        EXT_QOS_LINK,
        EXT_SHM,
        EXT_AUTH,
        EXT_MULTILINK,
        EXT_LOWLATENCY,
        EXT_COMPRESSION,
        EXT_PATCH,
        EXT_REGION_NAME,
    }
)


@dataclass(frozen=True, slots=True)
class InitSyn:
    zid: ZenohId
    whatami: WhatAmI
    version: int = PROTOCOL_VERSION
    resolution: int = DEFAULT_RESOLUTION
    batch_size: int = DEFAULT_BATCH_SIZE
    qos: bool = False
    qos_link: int | None = None
    shm: bytes | None = None
    auth: bytes | None = None
    multilink: bytes | None = None
    lowlatency: bool = False
    compression: bool = False
    patch: int | None = None
    region_name: bytes | None = None
    extensions: tuple[Extension, ...] = ()

    ACK = False

    def _cookie(self) -> bytes | None:
        return None

    def write(self, out: bytearray) -> None:
        check_bound(self.resolution, 0x0F, "resolution")
        check_bound(self.batch_size, U16_MAX, "batch size")
        exts: list[Extension] = []
        add_optional(exts, EXT_QOS, self.qos)
        add_optional(exts, EXT_QOS_LINK, self.qos_link)
        add_optional(exts, EXT_SHM, self.shm)
        add_optional(exts, EXT_AUTH, self.auth)
        add_optional(exts, EXT_MULTILINK, self.multilink)
        add_optional(exts, EXT_LOWLATENCY, self.lowlatency)
        add_optional(exts, EXT_COMPRESSION, self.compression)
        add_optional(exts, EXT_PATCH, self.patch)
        add_optional(exts, EXT_REGION_NAME, self.region_name)
        exts.extend(self.extensions)
        sized = self.resolution != DEFAULT_RESOLUTION or self.batch_size != DEFAULT_BATCH_SIZE
        header = ID_INIT | (FLAG_A if self.ACK else 0) | (FLAG_S if sized else 0)
        out.append(header | (FLAG_Z if exts else 0))
        out.append(self.version)
        flags, wire = zid_nibble_flags(self.zid)
        out.append(flags | self.whatami.to_code())
        out += wire
        if sized:
            out.append(self.resolution)
            out += self.batch_size.to_bytes(2, "little")
        cookie = self._cookie()
        if cookie is not None:
            if len(cookie) > MAX_COOKIE_LEN:
                raise UsageError("cookie longer than 65535 bytes")
            write_zbytes(out, cookie)
        if exts:
            write_extensions(out, exts)


def _read_init(r: Reader, header: int) -> InitSyn | InitAck:
    version = r.u8()
    start = r.pos
    flags = r.u8()
    whatami = WhatAmI.from_code(flags & 0x03, start)
    if flags & 0x0C:
        raise DecodeError("reserved bits set in INIT zid flags", start)
    zid = read_zid_nibble(r, flags)
    resolution = DEFAULT_RESOLUTION
    batch_size = DEFAULT_BATCH_SIZE
    if header & FLAG_S:
        resolution = r.u8()
        if resolution & 0xF0:
            raise DecodeError(f"reserved bits set in resolution 0x{resolution:02x}", r.pos - 1)
        batch_size = r.u16_le()
    cookie = r.zbytes(MAX_COOKIE_LEN) if header & FLAG_A else None
    e = KnownExtensions(r, header, _INIT_EXTS)
    fields = {
        "zid": zid,
        "whatami": whatami,
        "version": version,
        "resolution": resolution,
        "batch_size": batch_size,
        "qos": e.flag(EXT_QOS),
        "qos_link": e.z64(EXT_QOS_LINK),
        "shm": e.zbuf(EXT_SHM),
        "auth": e.zbuf(EXT_AUTH),
        "multilink": e.zbuf(EXT_MULTILINK),
        "lowlatency": e.flag(EXT_LOWLATENCY),
        "compression": e.flag(EXT_COMPRESSION),
        "patch": e.z64(EXT_PATCH),
        "region_name": e.zbuf(EXT_REGION_NAME),
        "extensions": tuple(e.others),
    }
    if cookie is None:
        return InitSyn(**fields)  # type: ignore[arg-type]
    return InitAck(cookie=cookie, **fields)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class InitAck(InitSyn):
    cookie: bytes = b""

    ACK = True

    @override
    def _cookie(self) -> bytes | None:
        return self.cookie


# --- OPEN ---------------------------------------------------------------------------------

_OPEN_EXTS = frozenset(
    {EXT_QOS, EXT_SHM, EXT_AUTH, EXT_MULTILINK, EXT_MULTILINK_ACK, EXT_LOWLATENCY, EXT_COMPRESSION, EXT_REMOTE_BOUND}
)


@dataclass(frozen=True, slots=True)
class OpenSyn:
    lease_ms: int
    initial_sn: int
    cookie: bytes = b""
    qos: bool = False
    shm: bytes | None = None
    auth: bytes | None = None
    multilink: bytes | None = None
    lowlatency: bool = False
    compression: bool = False
    remote_bound: int | None = None
    extensions: tuple[Extension, ...] = ()

    ACK = False

    def write(self, out: bytearray) -> None:
        check_bound(self.lease_ms, U64_MAX, "lease")
        check_bound(self.initial_sn, U32_MAX, "initial SN")
        exts: list[Extension] = []
        add_optional(exts, EXT_QOS, self.qos)
        add_optional(exts, EXT_SHM, self.shm)
        add_optional(exts, EXT_AUTH, self.auth)
        add_optional(exts, EXT_MULTILINK, self.multilink)
        self._ack_exts(exts)
        add_optional(exts, EXT_LOWLATENCY, self.lowlatency)
        add_optional(exts, EXT_COMPRESSION, self.compression)
        add_optional(exts, EXT_REMOTE_BOUND, self.remote_bound)
        exts.extend(self.extensions)
        in_seconds = self.lease_ms % 1000 == 0
        header = ID_OPEN | (FLAG_A if self.ACK else 0) | (FLAG_T if in_seconds else 0)
        out.append(header | (FLAG_Z if exts else 0))
        write_vle(out, self.lease_ms // 1000 if in_seconds else self.lease_ms)
        write_vle(out, self.initial_sn)
        if not self.ACK:
            write_zbytes(out, self.cookie)
        if exts:
            write_extensions(out, exts)

    def _ack_exts(self, exts: list[Extension]) -> None:
        """OpenAck adds its MultiLink acknowledgement here."""


@dataclass(frozen=True, slots=True)
class OpenAck(OpenSyn):
    multilink_ack: bool = False

    ACK = True

    @override
    def _ack_exts(self, exts: list[Extension]) -> None:
        add_optional(exts, EXT_MULTILINK_ACK, self.multilink_ack)


def _read_open(r: Reader, header: int) -> OpenSyn | OpenAck:
    lease = r.vle(U64_MAX)
    if header & FLAG_T:
        if lease > U64_MAX // 1000:
            raise r.fail("lease overflows milliseconds")
        lease *= 1000
    initial_sn = r.vle(U32_MAX)
    ack = bool(header & FLAG_A)
    cookie = b"" if ack else r.zbytes(MAX_COOKIE_LEN)
    e = KnownExtensions(r, header, _OPEN_EXTS)
    fields = {
        "lease_ms": lease,
        "initial_sn": initial_sn,
        "qos": e.flag(EXT_QOS),
        "shm": e.zbuf(EXT_SHM),
        "auth": e.zbuf(EXT_AUTH),
        "multilink": e.zbuf(EXT_MULTILINK),
        "lowlatency": e.flag(EXT_LOWLATENCY),
        "compression": e.flag(EXT_COMPRESSION),
        "remote_bound": e.z64(EXT_REMOTE_BOUND),
        "extensions": tuple(e.others),
    }
    if ack:
        return OpenAck(multilink_ack=e.flag(EXT_MULTILINK_ACK), **fields)  # type: ignore[arg-type]
    return OpenSyn(cookie=cookie, **fields)  # type: ignore[arg-type]


# --- CLOSE / KEEPALIVE --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Close:
    reason: int = CloseReason.GENERIC
    session: bool = False
    extensions: tuple[Extension, ...] = ()

    def write(self, out: bytearray) -> None:
        check_bound(self.reason, 0xFF, "close reason")
        header = ID_CLOSE | (FLAG_CLOSE_SESSION if self.session else 0) | (FLAG_Z if self.extensions else 0)
        out.append(header)
        out.append(self.reason)
        if self.extensions:
            write_extensions(out, self.extensions)

    @classmethod
    def read(cls, r: Reader, header: int) -> Close:
        reason = r.u8()
        e = KnownExtensions(r, header, frozenset())
        return cls(reason, bool(header & FLAG_CLOSE_SESSION), tuple(e.others))


@dataclass(frozen=True, slots=True)
class KeepAlive:
    extensions: tuple[Extension, ...] = ()

    def write(self, out: bytearray) -> None:
        out.append(ID_KEEPALIVE | (FLAG_Z if self.extensions else 0))
        if self.extensions:
            write_extensions(out, self.extensions)

    @classmethod
    def read(cls, r: Reader, header: int) -> KeepAlive:
        return cls(tuple(KnownExtensions(r, header, frozenset()).others))


# --- FRAME / FRAGMENT ---------------------------------------------------------------------


def _priority_ext(priority: int) -> list[Extension]:
    check_bound(priority, 7, "priority")
    return [] if priority == PRIORITY_DATA else [Extension(EXT_FRAME_QOS, priority)]


def _read_priority(e: KnownExtensions, r: Reader) -> int:
    value = e.z64(EXT_FRAME_QOS)
    if value is None:
        return PRIORITY_DATA
    if value > 7:
        raise DecodeError(f"invalid frame priority {value}", r.pos)
    return value


def _encoded_priority_ext(priority: int) -> bytes:
    out = bytearray()
    exts = _priority_ext(priority)
    if exts:
        write_extensions(out, exts)
    return bytes(out)


#: Each priority's FRAME extension as encoded (none for Data), made once.
_PRIORITY_EXT_BYTES = [_encoded_priority_ext(p) for p in range(8)]


def frame_header_parts(reliable: bool, priority: int) -> tuple[int, bytes]:
    """A FRAME header around its SN: the header byte, and what follows the SN (the
    priority's extension, nothing for Data). With :func:`vle_bytes` (SN) in between, the
    bytes :meth:`Frame.write_header` writes for a FRAME without other extensions: a sender
    frames each batch with them."""
    check_bound(priority, 7, "priority")
    ext = _PRIORITY_EXT_BYTES[priority]
    return ID_FRAME | (FLAG_R if reliable else 0) | (FLAG_Z if ext else 0), ext


def frame_header(reliable: bool, sn: int, priority: int = PRIORITY_DATA) -> bytes:
    """The bytes of ``Frame(reliable, sn, (), priority).write_header``, without the Frame."""
    check_bound(sn, U32_MAX, "sequence number")
    header, ext = frame_header_parts(reliable, priority)
    return _ONE_BYTE[header] + vle_bytes(sn) + ext


_ONE_BYTE = [bytes((b,)) for b in range(256)]


# Not frozen: built for every message routed, and a frozen dataclass's __init__ costs
# three times as much. Treat it as immutable all the same.
@dataclass(slots=True)
class Frame:
    reliable: bool
    sn: int
    messages: tuple[NetworkMessage, ...] = ()
    priority: int = PRIORITY_DATA
    extensions: tuple[Extension, ...] = ()
    #: The encoded bytes of each message as received (empty when built locally);
    #: lets a router forward a message without re-encoding it.
    raw: tuple[bytes, ...] = field(default=(), compare=False, repr=False)

    def write_header(self, out: bytearray) -> None:
        check_bound(self.sn, U32_MAX, "sequence number")
        exts = _priority_ext(self.priority) + list(self.extensions)
        header = ID_FRAME | (FLAG_R if self.reliable else 0) | (FLAG_Z if exts else 0)
        out.append(header)
        write_vle(out, self.sn)
        if exts:
            write_extensions(out, exts)

    def write(self, out: bytearray) -> None:
        self.write_header(out)
        for msg in self.messages:
            msg.write(out)

    @classmethod
    def read(cls, r: Reader, header: int, keep_raw: bool = False) -> Frame:
        sn = r.vle(U32_MAX)
        e = KnownExtensions(r, header, frozenset({EXT_FRAME_QOS}))
        priority = _read_priority(e, r)
        messages: list[NetworkMessage] = []
        raw: list[bytes] = []
        buf = r.buf
        while r.pos < r.end and buf[r.pos] & 0x1F >= FIRST_NETWORK_ID:
            start = r.pos
            messages.append(read_network_message(r))
            if keep_raw:
                raw.append(buf[start : r.pos])
        return cls(bool(header & FLAG_R), sn, tuple(messages), priority, tuple(e.others), tuple(raw))


@dataclass(frozen=True, slots=True)
class Fragment:
    reliable: bool
    sn: int
    payload: bytes
    more: bool = False
    priority: int = PRIORITY_DATA
    first: bool = False
    drop: bool = False
    extensions: tuple[Extension, ...] = ()

    def write(self, out: bytearray) -> None:
        check_bound(self.sn, U32_MAX, "sequence number")
        exts = _priority_ext(self.priority)
        add_optional(exts, EXT_FRAGMENT_FIRST, self.first)
        add_optional(exts, EXT_FRAGMENT_DROP, self.drop)
        exts.extend(self.extensions)
        header = ID_FRAGMENT | (FLAG_R if self.reliable else 0) | (FLAG_M if self.more else 0)
        out.append(header | (FLAG_Z if exts else 0))
        write_vle(out, self.sn)
        if exts:
            write_extensions(out, exts)
        out += self.payload

    @classmethod
    def read(cls, r: Reader, header: int) -> Fragment:
        sn = r.vle(U32_MAX)
        e = KnownExtensions(r, header, frozenset({EXT_FRAME_QOS, EXT_FRAGMENT_FIRST, EXT_FRAGMENT_DROP}))
        priority = _read_priority(e, r)
        payload = r.rest()  # a fragment runs to the end of its batch
        return cls(
            bool(header & FLAG_R),
            sn,
            payload,
            bool(header & FLAG_M),
            priority,
            e.flag(EXT_FRAGMENT_FIRST),
            e.flag(EXT_FRAGMENT_DROP),
            tuple(e.others),
        )


# --- JOIN (multicast) and transport OAM ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Join:
    zid: ZenohId
    whatami: WhatAmI
    lease_ms: int
    next_sn_reliable: int
    next_sn_best_effort: int
    version: int = PROTOCOL_VERSION
    resolution: int = DEFAULT_RESOLUTION
    batch_size: int = DEFAULT_BATCH_SIZE
    qos: bytes | None = None  # 8 x (reliable, best-effort) next SNs, kept raw
    shm: bytes | None = None
    patch: int | None = None
    extensions: tuple[Extension, ...] = ()

    def write(self, out: bytearray) -> None:
        exts: list[Extension] = []
        add_optional(exts, EXT_JOIN_QOS, self.qos)
        add_optional(exts, EXT_JOIN_SHM, self.shm)
        add_optional(exts, EXT_PATCH, self.patch)
        exts.extend(self.extensions)
        sized = self.resolution != DEFAULT_RESOLUTION or self.batch_size != DEFAULT_BATCH_SIZE
        in_seconds = self.lease_ms % 1000 == 0
        header = ID_JOIN | (FLAG_S if sized else 0) | (FLAG_JOIN_T if in_seconds else 0)
        out.append(header | (FLAG_Z if exts else 0))
        out.append(self.version)
        flags, wire = zid_nibble_flags(self.zid)
        out.append(flags | self.whatami.to_code())
        out += wire
        if sized:
            out.append(self.resolution)
            out += self.batch_size.to_bytes(2, "little")
        write_vle(out, self.lease_ms // 1000 if in_seconds else self.lease_ms)
        write_vle(out, self.next_sn_reliable)
        write_vle(out, self.next_sn_best_effort)
        if exts:
            write_extensions(out, exts)

    @classmethod
    def read(cls, r: Reader, header: int) -> Join:
        version = r.u8()
        start = r.pos
        flags = r.u8()
        whatami = WhatAmI.from_code(flags & 0x03, start)
        zid = read_zid_nibble(r, flags)
        resolution = DEFAULT_RESOLUTION
        batch_size = DEFAULT_BATCH_SIZE
        if header & FLAG_S:
            resolution = r.u8()
            batch_size = r.u16_le()
        lease = r.vle(U64_MAX)
        if header & FLAG_JOIN_T:
            if lease > U64_MAX // 1000:
                raise r.fail("lease overflows milliseconds")
            lease *= 1000
        reliable = r.vle(U32_MAX)
        best_effort = r.vle(U32_MAX)
        e = KnownExtensions(r, header, frozenset({EXT_JOIN_QOS, EXT_JOIN_SHM, EXT_PATCH}))
        return cls(
            zid,
            whatami,
            lease,
            reliable,
            best_effort,
            version,
            resolution,
            batch_size,
            e.zbuf(EXT_JOIN_QOS),
            e.zbuf(EXT_JOIN_SHM),
            e.z64(EXT_PATCH),
            tuple(e.others),
        )


@dataclass(frozen=True, slots=True)
class TransportOam:
    oam_id: int
    body: None | int | bytes = None
    priority: int = PRIORITY_DATA
    extensions: tuple[Extension, ...] = ()

    def write(self, out: bytearray) -> None:
        check_bound(self.oam_id, U16_MAX, "OAM id")
        exts = _priority_ext(self.priority) + list(self.extensions)
        out.append(ID_OAM | _oam_encoding(self.body) | (FLAG_Z if exts else 0))
        write_vle(out, self.oam_id)
        if exts:
            write_extensions(out, exts)
        _write_oam_body(out, self.body)

    @classmethod
    def read(cls, r: Reader, header: int) -> TransportOam:
        oam_id = r.vle(U16_MAX)
        e = KnownExtensions(r, header, frozenset({EXT_FRAME_QOS}))
        priority = _read_priority(e, r)
        return cls(oam_id, read_oam_body(r, header), priority, tuple(e.others))


# --- Dispatch -----------------------------------------------------------------------------

TransportMessage = InitSyn | InitAck | OpenSyn | OpenAck | Close | KeepAlive | Frame | Fragment | Join | TransportOam


def read_transport_message(r: Reader, keep_raw: bool = False) -> TransportMessage:
    start = r.pos
    header = r.u8()
    mid = header & 0x1F
    if mid == ID_FRAME:
        return Frame.read(r, header, keep_raw)
    if mid == ID_KEEPALIVE:
        return KeepAlive.read(r, header)
    if mid == ID_FRAGMENT:
        return Fragment.read(r, header)
    if mid == ID_INIT:
        return _read_init(r, header)
    if mid == ID_OPEN:
        return _read_open(r, header)
    if mid == ID_CLOSE:
        return Close.read(r, header)
    if mid == ID_JOIN:
        return Join.read(r, header)
    if mid == ID_OAM:
        return TransportOam.read(r, header)
    raise DecodeError(f"unknown transport message id 0x{mid:02x}", start)
