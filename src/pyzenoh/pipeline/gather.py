"""numpy -> Arrow gathers shared by the columnar decoders (:mod:`.columnar`,
:mod:`.push_vector`). Callers check every range against their buffer first."""

from __future__ import annotations

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped,unused-ignore]

_I32_MAX = 0x7FFF_FFFF


def byte_ranges(
    buf: np.ndarray,
    starts: np.ndarray,
    lengths: np.ndarray,
    valid: np.ndarray | None = None,
    typ: pa.DataType | None = None,
) -> pa.Array:
    """``buf[starts[i] : starts[i] + lengths[i]]`` as one Arrow binary (or ``typ``: string)
    array, null where ``valid`` is False; the large variant past 2 GiB of data."""
    typ = pa.binary() if typ is None else typ
    n = len(lengths)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    total = int(offsets[-1])
    index = np.arange(total, dtype=np.int64) - np.repeat(offsets[:-1] - starts, lengths)
    data = buf[index] if total else np.zeros(0, dtype=np.uint8)
    if total > _I32_MAX:
        typ = pa.large_binary() if typ == pa.binary() else pa.large_string()
    else:
        offsets = offsets.astype(np.int32)
    return with_nulls(
        pa.Array.from_buffers(typ, n, [None, pa.py_buffer(offsets), pa.py_buffer(data)]),
        valid,
    )


def with_nulls(values: pa.Array, valid: np.ndarray | None) -> pa.Array:
    """``values`` (an array without nulls) with a null wherever ``valid`` is False."""
    if valid is None or valid.all():
        return values
    return pa.Array.from_buffers(
        values.type,
        len(values),
        [pa.py_buffer(np.packbits(valid, bitorder="little")), *values.buffers()[1:]],
        null_count=int(len(valid) - valid.sum()),
    )
