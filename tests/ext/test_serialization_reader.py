"""What zenoh-python would allocate or loop for, and ``pyzenoh.ext`` refuses or bounds: a
length prefix larger than the input, collections of zero-size items.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

import pyzenoh.ext as P
from pyzenoh.ext import ZDeserializeError
from pyzenoh.ext.serialization import ZERO_SIZE_ITEMS_LIMIT
from pyzenoh.session.types import ZBytes

HUGE = ["ffffffff0f", "ffffffffffffffff7f", "ffffffffffffffffff01", "8080808080808080800100"]


@pytest.mark.parametrize("hexed", HUGE)
@pytest.mark.parametrize(
    "hint", [bytes, bytearray, str, ZBytes, list[P.Int64], set[P.UInt128], frozenset[P.Float32], list[P.UInt8]]
)
def test_huge_length_prefix_is_refused_before_allocating(hint: Any, hexed: str) -> None:
    # zenoh-python aborts the process (allocation failure) or panics on these.
    start = time.perf_counter()
    with pytest.raises(ZDeserializeError):
        P.z_deserialize(hint, bytes.fromhex(hexed) + b"\x00" * 64)
    assert time.perf_counter() - start < 0.5


@pytest.mark.parametrize("hexed", HUGE[:3])
def test_zero_size_items_are_bounded(hexed: str) -> None:
    data = bytes.fromhex(hexed)
    # zenoh-python would loop for as long as the prefix says.
    with pytest.raises(ZDeserializeError):
        P.z_deserialize(list[tuple[()]], data)
    with pytest.raises(ZDeserializeError):
        P.z_deserialize(list[list[tuple[()]]], b"\x02\x80\x80\x03\x80\x80\x03")  # the budget is per call
    assert P.z_deserialize(set[tuple[()]], data) == {()}
    assert P.z_deserialize(frozenset[tuple[tuple[()]]], data) == frozenset({((),)})
    assert P.z_deserialize(dict[tuple[()], tuple[()]], data) == {(): ()}
    limit = ZERO_SIZE_ITEMS_LIMIT
    assert len(P.z_deserialize(list[tuple[()]], bytes([0x80, 0x80, 0x04]))) == limit
    assert len(P.z_deserialize(list[list[tuple[()]]], b"\x02\x80\x80\x02\x00")) == 2
