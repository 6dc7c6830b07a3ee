"""Network OAM: operations and management messages between nodes; zenoh uses one, the
routers' LINKSTATE (:mod:`pyzenoh.routing.linkstate`). Its body (unit, integer or bytes)
is read and written as the transport OAM's is.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyzenoh.codec.extensions import (
    ENC_MASK,
    ENC_UNIT,
    ENC_Z64,
    ENC_ZBUF,
    Extension,
    write_extensions,
)
from pyzenoh.codec.network.header import (
    _NO_EXTS,
    ID_OAM,
    _common_exts,
    _finish,
    _NetExts,
)
from pyzenoh.codec.network.qos import QOS_DEFAULT
from pyzenoh.codec.primitives import (
    MAX_PAYLOAD_LEN,
    U16_MAX,
    U64_MAX,
    Reader,
    Timestamp,
    check_bound,
    write_vle,
    write_zbytes,
)
from pyzenoh.errors import DecodeError

OAM_LINKSTATE = 0x0001


@dataclass(frozen=True, slots=True)
class NetworkOam:
    oam_id: int
    body: None | int | bytes = None
    qos: int = QOS_DEFAULT
    timestamp: Timestamp | None = None
    extensions: tuple[Extension, ...] = ()

    def write(self, out: bytearray) -> None:
        check_bound(self.oam_id, U16_MAX, "OAM id")
        exts = _common_exts(self.qos, self.timestamp)
        exts.extend(self.extensions)
        _finish(out, ID_OAM | _oam_encoding(self.body), exts)
        write_vle(out, self.oam_id)
        if exts:
            write_extensions(out, exts)
        _write_oam_body(out, self.body)

    @classmethod
    def read(cls, r: Reader, header: int) -> NetworkOam:
        oam_id = r.vle(U16_MAX)
        e = _NetExts(r, header, _NO_EXTS)
        body = read_oam_body(r, header)
        return cls(oam_id, body, e.qos, e.timestamp, tuple(e.others))


def _oam_encoding(body: None | int | bytes) -> int:
    if body is None:
        return ENC_UNIT
    if isinstance(body, int):
        return ENC_Z64
    return ENC_ZBUF


def _write_oam_body(out: bytearray, body: None | int | bytes) -> None:
    if isinstance(body, int):
        write_vle(out, body)
    elif body is not None:
        write_zbytes(out, body)


def read_oam_body(r: Reader, header: int) -> None | int | bytes:
    """The body of a network or transport OAM, whose type is in header bits 5-6."""
    enc = header & ENC_MASK
    if enc == ENC_UNIT:
        return None
    if enc == ENC_Z64:
        return r.vle(U64_MAX)
    if enc == ENC_ZBUF:
        return r.zbytes(MAX_PAYLOAD_LEN)
    raise DecodeError("reserved OAM body encoding", r.pos)
