"""``z_serialize`` against ``zenoh.ext``'s: pinned bytes, generated values, float bits, and the
same errors (type, message) for what it refuses.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import pyzenoh.ext as P
from pyzenoh.session.types import ZBytes
from tests.ext.serialization_helpers import (
    DIFF,
    INT_RANGES,
    PY,
    REAL,
    Tree,
    World,
    _MyInt,
    norm,
    outcome,
    typed_values,
)

# Values whose bytes are pinned (checked against zenoh here, and readable as documentation).
PINNED: list[tuple[Callable[[World], Any], str]] = [
    (lambda w: True, "01"),
    (lambda w: 1, "01000000"),  # a Python int is an i32
    (lambda w: -2, "feffffff"),
    (lambda w: 1.5, "000000000000f83f"),
    (lambda w: w.ext.Int8(-1), "ff"),
    (lambda w: w.ext.UInt16(500), "f401"),
    (lambda w: w.ext.Int64(-100), "9cffffffffffffff"),
    (lambda w: w.ext.UInt128(1), "01" + "00" * 15),
    (lambda w: w.ext.Float32(1234.0), "00409a44"),
    (lambda w: w.ext.Float32(1e300), "0000807f"),  # saturates to +inf as Rust's `as f32`
    (lambda w: "test", "0474657374"),
    (lambda w: b"\x00" * 200, "c801" + "00" * 200),
    (lambda w: bytearray(b"xy"), "027879"),
    (lambda w: w.zbytes(b"zz"), "027a7a"),
    (lambda w: (w.ext.UInt16(500), w.ext.Float32(1234.0), "test"), "f40100409a440474657374"),
    (lambda w: (), ""),  # tuples have no length prefix
    (lambda w: [("s1", w.ext.Int16(10)), ("s2", w.ext.Int16(-10000))], "02027331 0a00 027332 f0d8"),
    (lambda w: [[1], ["a"]], "020101000000010161"),  # the item type is list, whatever is inside
    (lambda w: {"a": 1}, "01016101000000"),
    (lambda w: {1, 2}, "020100000002000000"),
    (lambda w: frozenset({"x"}), "010178"),
]


@pytest.mark.parametrize(("make", "hexed"), PINNED)
def test_pinned_bytes(make: Callable[[World], Any], hexed: str) -> None:
    expected = bytes.fromhex(hexed.replace(" ", ""))
    assert REAL.serialize(make(REAL)) == expected
    assert PY.serialize(make(PY)) == expected


def _bad_int(w: World, name: str, value: int) -> Any:
    return int.__new__(getattr(w.ext, name), value)


SERIALIZE_ERRORS: list[Callable[[World], Any]] = [
    lambda w: 1 << 31,
    lambda w: -(1 << 31) - 1,
    lambda w: 1 << 63,
    lambda w: -(1 << 200),
    lambda w: [1, 1 << 40],
    lambda w: [1 << 40, "a"],  # the first item's overflow comes before the type mismatch
    lambda w: [1, "a"],
    lambda w: ["a", 1],
    lambda w: [1, True],  # exact types: bool is not int
    lambda w: [1, object()],  # an unsupported item is a TypeError even after a good one
    lambda w: [1.0, w.ext.Float64(1.0)],
    lambda w: {"a": 1, "b": 2.0},
    lambda w: {"a": 1, 2: 1},
    lambda w: {(1,): [1], (1, 2): ["x"]},  # tuple keys and list values, contents free
    lambda w: {1, "a"},
    lambda w: [w.ext.Int8(1), 2],
    lambda w: object(),
    lambda w: None,
    lambda w: memoryview(b"a"),
    lambda w: _MyInt(1),
    lambda w: [_MyInt(1)],
    lambda w: "\ud800",
    lambda w: ["ok", "\udfff"],
    lambda w: (1, "a", None),
    *(
        (lambda w, n=name, v=value: _bad_int(w, n, v))
        for name in INT_RANGES
        if name != "int"
        for value in (
            -1,
            -(1 << 7) - 1,
            1 << 8,
            1 << 16,
            1 << 32,
            1 << 63,
            -(1 << 63) - 1,
            1 << 64,
            1 << 127,
            1 << 128,
            -(1 << 128),
        )
    ),
]


@pytest.mark.parametrize("make", SERIALIZE_ERRORS)
def test_serialize_errors_match(make: Callable[[World], Any]) -> None:
    theirs = outcome(lambda: REAL.serialize(make(REAL)))
    mine = outcome(lambda: PY.serialize(make(PY)))
    assert mine == theirs
    if theirs[0] == "error" and theirs[1] != "TypeError":
        # Same message too (a TypeError for an unsupported type names it more usefully).
        messages = []
        for world in (REAL, PY):
            try:
                world.serialize(make(world))
            except Exception as exc:  # noqa: BLE001 - compared below
                messages.append(str(exc))
        assert messages[0] == messages[1]


@DIFF
@given(typed_values())
def test_serialize_matches_zenoh(tv: tuple[Tree, Any]) -> None:
    tree, spec = tv
    assert PY.serialize(PY.build(tree, spec)) == REAL.serialize(REAL.build(tree, spec))


@DIFF
@given(st.integers(0, (1 << 64) - 1))
def test_float_bits_match_zenoh(bits: int) -> None:
    value = struct.unpack("<d", bits.to_bytes(8, "little"))[0]
    for name in ("float", "Float32", "Float64"):
        assert PY.serialize(PY.scalar[name](value)) == REAL.serialize(REAL.scalar[name](value))
    raw4 = bits.to_bytes(8, "little")[:4]
    for name in ("float", "Float32", "Float64"):
        data = raw4 if name == "Float32" else bits.to_bytes(8, "little")
        mine = PY.deserialize(PY.scalar[name], data)
        theirs = REAL.deserialize(REAL.scalar[name], data)
        assert norm(mine) == norm(theirs) and type(mine) is PY.scalar[name]


@DIFF
@given(st.lists(st.floats(allow_nan=True) | st.floats(width=32), max_size=6))
def test_float_lists_match_zenoh(values: list[float]) -> None:
    for name in ("float", "Float32", "Float64"):
        assert PY.serialize([PY.scalar[name](v) for v in values]) == REAL.serialize(
            [REAL.scalar[name](v) for v in values]
        )


def test_z_serialize_returns_pyzenoh_zbytes() -> None:
    out = P.z_serialize([1, 2])
    assert type(out) is ZBytes and out.to_bytes() == bytes.fromhex("020100000002000000")
    assert P.z_deserialize(list[int], out) == [1, 2]
