"""``z_deserialize`` against ``zenoh.ext``'s: valid data (generated values, round trips,
trailing bytes ignored), then malformed data (random, truncated, mutated and hand-picked
inputs) that must only ever raise ZDeserializeError, as zenoh does.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import pyzenoh.ext as P
from pyzenoh.errors import PyZenohError
from pyzenoh.ext import ZDeserializeError
from pyzenoh.session.types import ZBytes
from tests.ext.serialization_helpers import (
    DIFF,
    FUZZ_VALUES,
    PY,
    REAL,
    Tree,
    check_types,
    norm,
    outcome,
    safe_for_real,
    same_outcome,
    trees,
    typed_values,
)
from tests.hyp import FUZZ, ROUNDTRIP


@DIFF
@given(typed_values(nan=True))
def test_deserialize_matches_zenoh(tv: tuple[Tree, Any]) -> None:
    tree, spec = tv
    data = REAL.serialize(REAL.build(tree, spec))
    mine = PY.deserialize(PY.hint(tree), data)
    assert same_outcome(tree, ("ok", norm(mine)), outcome(lambda: REAL.deserialize(REAL.hint(tree), data)))
    check_types(mine, tree)


@ROUNDTRIP
@given(typed_values(exact=True))
def test_round_trip(tv: tuple[Tree, Any]) -> None:
    tree, spec = tv
    value = PY.build(tree, spec)
    data = PY.serialize(value)
    back = P.z_deserialize(PY.hint(tree), data)
    assert norm(back) == norm(value)
    assert P.z_deserialize(PY.hint(tree), bytearray(data)) == back
    assert P.z_deserialize(PY.hint(tree), ZBytes(data)) == back
    if "set" not in repr(tree):  # sets may iterate in another order once rebuilt
        assert PY.serialize(back) == data


@ROUNDTRIP
@given(typed_values(exact=True), st.binary(min_size=1, max_size=8))
def test_trailing_bytes_are_ignored_as_by_zenoh(tv: tuple[Tree, Any], tail: bytes) -> None:
    tree, spec = tv
    data = REAL.serialize(REAL.build(tree, spec)) + tail
    mine = outcome(lambda: PY.deserialize(PY.hint(tree), data))
    assert mine == ("ok", norm(PY.build(tree, spec)))
    assert same_outcome(tree, mine, outcome(lambda: REAL.deserialize(REAL.hint(tree), data)))


def _compare(tree: Tree, data: bytes) -> tuple[str, Any]:
    mine = outcome(lambda: PY.deserialize(PY.hint(tree), data))
    if mine[0] == "error":
        assert mine[1] == "ZDeserializeError", (tree, data.hex(), mine)
    if safe_for_real(data):
        real: list[Any] = []
        theirs = outcome(lambda: real.append(REAL.deserialize(REAL.hint(tree), data)) or real[0])
        assert same_outcome(tree, mine, theirs, real[0] if real else None), (tree, data.hex(), mine, theirs)
    return mine


@pytest.mark.slow
@FUZZ
@given(trees, st.binary(max_size=40))
def test_random_bytes_only_raise_zdeserializeerror(tree: Tree, data: bytes) -> None:
    _compare(tree, data)


@pytest.mark.slow
@FUZZ_VALUES
@given(typed_values(), st.data())
def test_truncated_input_matches_zenoh(tv: tuple[Tree, Any], data: st.DataObject) -> None:
    tree, spec = tv
    raw = REAL.serialize(REAL.build(tree, spec))
    assume(raw)
    cut = data.draw(st.integers(0, len(raw) - 1))
    mine = outcome(lambda: PY.deserialize(PY.hint(tree), raw[:cut]))
    # Shorter valid data keeps its genuine lengths: always safe to hand to zenoh.
    assert same_outcome(tree, mine, outcome(lambda: REAL.deserialize(REAL.hint(tree), raw[:cut])))
    assert mine[0] == "ok" or mine[1] == "ZDeserializeError"


@pytest.mark.slow
@FUZZ_VALUES
@given(
    typed_values(),
    st.lists(st.tuples(st.integers(0, 2), st.integers(0, 1 << 16), st.integers(0, 255)), min_size=1, max_size=4),
)
def test_mutated_input_matches_zenoh(tv: tuple[Tree, Any], ops: list[tuple[int, int, int]]) -> None:
    tree, spec = tv
    buf = bytearray(REAL.serialize(REAL.build(tree, spec)))
    for kind, pos, value in ops:
        if not buf or kind == 0:
            buf.insert(pos % (len(buf) + 1), value)
        elif kind == 1:
            buf[pos % len(buf)] = value
        else:
            del buf[pos % len(buf)]
    _compare(tree, bytes(buf))


# Hand-picked inputs (hint built per world from a tree, hex data) checked against zenoh.
CASES: list[tuple[Tree, str]] = [
    (("int",), "01000000"),
    (("int",), "010000"),
    (("int",), ""),
    (("bool",), "00"),
    (("bool",), "01"),
    (("bool",), "02"),
    (("bool",), "ff"),
    (("str",), "00"),
    (("str",), "01ff"),
    (("str",), "03eda080"),  # a UTF-8 surrogate
    (("str",), "02c0af"),
    (("str",), "0261"),
    (("str",), "810061"),  # non-minimal length
    (("bytes",), "8000"),
    (("bytes",), "80"),
    (("bytes",), "80808080808080808000"),
    (("list", ("str",)), "80808080808080808001"),  # 2**63 items: the first one is missing
    (("list", ("str",)), "ffffffffffffffffff01"),  # 2**64 - 1
    (("list", ("str",)), "ffffffffffffffffff02"),  # a tenth byte above 1 overflows u64
    (("list", ("str",)), "8080808080808080807f"),
    (("list", ("str",)), "808080808080808080800100"),  # eleven bytes
    (("list", ("bool",)), "020100"),
    (("list", ("bool",)), "020102"),
    (("list", ("bool",)), "0301"),
    (("list", ("int",)), "02010000000200"),
    (("set", ("float",)), "01000000000000f03f"),
    (("list", ("Int8",)), "0201ff"),
    (("list", ("Int8",)), "0301ff"),
    (("list", ("UInt128",)), "01" + "ff" * 16),
    (("list", ("Int128",)), "02" + "ff" * 16),
    (("frozenset", ("Int8",)), "020101"),
    (("set", ("UInt8",)), "03010203"),
    (("list", ("Float32",)), "020000c03f0000807f"),
    (("set", ("float",)), "0100000000000000f8ff"),
    (("tuple", ()), ""),
    (("tuple", ()), "00"),
    (("list", ("tuple", ())), "05"),
    (("set", ("tuple", ())), "05"),
    (("frozenset", ("tuple", (("tuple", ()),))), "00"),
    (("dict", ("tuple", ()), ("tuple", ())), "03"),
    (("dict", ("tuple", ()), ("int",)), "020100000002000000"),  # the last value wins
    (("dict", ("str",), ("int",)), "02016101000000016102000000"),
    (("dict", ("int",), ("dict", ("str",), ("bool",))), "010100000001016102"),
    (("tuple", (("int",), ("str",))), "0100000000"),
    (("tuple", (("int",), ("str",))), "01000000"),
    (("list", ("list", ("int",))), "0100"),
    (("list", ("list", ("int",))), "0101"),
]


@pytest.mark.parametrize(("tree", "hexed"), CASES)
def test_hand_picked_inputs_match_zenoh(tree: Tree, hexed: str) -> None:
    _compare(tree, bytes.fromhex(hexed))


def test_facts_pinned() -> None:
    """What zenoh.ext does that one might not expect (all re-checked above against it)."""
    assert P.z_deserialize(int, b"\x01\x00\x00\x00\xff") == 1  # trailing bytes ignored
    assert P.z_deserialize(str, b"\x81\x00a") == "a"  # non-minimal LEB128 accepted
    assert P.z_deserialize(list[tuple[()]], b"\x03") == [(), (), ()]
    assert P.z_deserialize(dict[str, list], b"\x00") == {}
    with pytest.raises(ZDeserializeError):
        P.z_deserialize(bool, b"\x02")
    assert issubclass(ZDeserializeError, PyZenohError) and str(ZDeserializeError("deserialization error"))


@pytest.mark.parametrize("data", [memoryview(b"\x00"), "\x00", None, [0]])
def test_z_deserialize_takes_zbytes_bytes_or_bytearray(data: Any) -> None:
    with pytest.raises(TypeError):
        P.z_deserialize(bool, data)
    assert P.z_deserialize(bool, b"\x01") is True
    assert P.z_deserialize(bool, bytearray(b"\x00")) is False
    assert P.z_deserialize(bool, ZBytes(b"\x01")) is True
