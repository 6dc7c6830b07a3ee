"""Decoding a batch, faster on publication traffic.

:func:`decode_batch` gives the same messages as :func:`pyzenoh.codec.decode_batch`: the
FRAMEs whose only extension is their priority are read here, their common-shape PUSHes
by :func:`~pyzenoh.dataplane.scan.scan_push` (and, with ``runs``, whole
:class:`~pyzenoh.dataplane.runs.PushRun` items), and anything else (other messages,
other shapes, anything malformed) by the codec at the same offset, so the codec remains
the one definition of the format and the only place errors are raised.
"""

from __future__ import annotations

from pyzenoh.codec import Frame, TransportMessage
from pyzenoh.codec.network import read_network_message
from pyzenoh.codec.primitives import Reader
from pyzenoh.codec.transport import FLAG_R, read_transport_message
from pyzenoh.dataplane.runs import scan_run
from pyzenoh.dataplane.scan import (
    FIRST_NETWORK_ID,
    ID_FRAME,
    ID_PUSH,
    frame_head,
    push_of,
    scan_push,
)
from pyzenoh.errors import DecodeError


def _frame(
    buf: bytes, pos: int, end: int, r: Reader, keep_raw: bool, runs: bool, stamped: bool
) -> tuple[Frame, int] | None:
    """A FRAME with no extension other than its priority, decoded message by message
    (with ``runs``, a :class:`PushRun` stands for each run of same-shape PUSHes)."""
    head = frame_head(buf, pos, end)
    if head is None:
        return None
    sn, priority, p = head
    messages: list[object] = []
    raws: list[bytes] = []
    while p < end and buf[p] & 0x1F >= FIRST_NETWORK_ID:
        start = p
        f = scan_push(buf, p, end) if buf[p] & 0x1F == ID_PUSH else None
        if f is None:
            r.pos = p
            messages.append(read_network_message(r))
            p = r.pos
        else:
            # one scan of the first message serves the run and the message alone
            run = scan_run(buf, p, end, stamped, f) if runs and f.after < end else None
            if run is not None:
                messages.append(run)
                p += len(run.data)
                if keep_raw:
                    raws.append(run.data)
                continue
            messages.append(push_of(f, buf))
            p = f.after
        if keep_raw:
            raws.append(buf[start:p])
    frame = Frame(bool(buf[pos] & FLAG_R), sn, tuple(messages), priority, (), tuple(raws))  # type: ignore[arg-type]
    return frame, p


def decode_batch(
    payload: bytes, keep_raw: bool = False, runs: bool = False, stamped: bool = False
) -> list[TransportMessage]:
    """Same result as :func:`pyzenoh.codec.decode_batch`, faster on publication traffic.

    With ``runs``, a FRAME's messages may include :class:`PushRun` items, each standing
    for several PUSHes (the raw bytes of a run are its ``data``).
    """
    end = len(payload)
    if end == 0:
        raise DecodeError("empty batch", 0)
    r = Reader(payload)
    out: list[TransportMessage] = []
    pos = 0
    while pos < end:
        res = _frame(payload, pos, end, r, keep_raw, runs, stamped) if payload[pos] & 0x1F == ID_FRAME else None
        if res is None:
            r.pos = pos
            out.append(read_transport_message(r, keep_raw))
            pos = r.pos
        else:
            out.append(res[0])
            pos = res[1]
    return out
