"""``pyzenoh.ext`` against eclipse-zenoh 1.10.2's ``zenoh.ext`` (z_serialize / z_deserialize).

Values are generated as *type trees* (``("list", ("Int8",))``) and neutral value specs, then
built twice, once with pyzenoh's classes and once with zenoh's, in the same insertion order
(so sets iterate alike). Serialized bytes must be identical; deserialized values must be
equal (compared through :func:`norm`, floats by their bits); errors must be of the same
type. Inputs that would make zenoh-python allocate from a huge length prefix (it aborts the
process) are never given to it: :func:`safe_for_real` vets every fuzzed input first.
"""

from __future__ import annotations

import itertools
import struct
import time
import types
import typing
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import pyzenoh.ext as P
from pyzenoh.errors import PyZenohError
from pyzenoh.ext import ZDeserializeError
from pyzenoh.ext.serialization import ZERO_SIZE_ITEMS_LIMIT
from pyzenoh.session.types import ZBytes
from tests.hyp import FUZZ, ROUNDTRIP, examples

zenoh = pytest.importorskip("zenoh")
R = pytest.importorskip("zenoh.ext")

DIFF = examples(400, 100)
# Mutations of generated values: generating nested values is the cost (10,000 took minutes in
# CI); FUZZ's 10,000 arbitrary inputs still run on the decoder below.
FUZZ_VALUES = examples(1_500, 250)

# --- Two worlds: the same value built with pyzenoh's classes or with zenoh's ------------------

Tree = tuple[Any, ...]

INT_RANGES: dict[str, tuple[int, int]] = {
    "int": (-(1 << 31), (1 << 31) - 1),
    "Int8": (-(1 << 7), (1 << 7) - 1),
    "Int16": (-(1 << 15), (1 << 15) - 1),
    "Int32": (-(1 << 31), (1 << 31) - 1),
    "Int64": (-(1 << 63), (1 << 63) - 1),
    "Int128": (-(1 << 127), (1 << 127) - 1),
    "UInt8": (0, (1 << 8) - 1),
    "UInt16": (0, (1 << 16) - 1),
    "UInt32": (0, (1 << 32) - 1),
    "UInt64": (0, (1 << 64) - 1),
    "UInt128": (0, (1 << 128) - 1),
}
WRAPPERS = [n for n in INT_RANGES if n != "int"] + ["Float32", "Float64"]
HASHABLE_SCALARS = [*INT_RANGES, "bool", "float", "Float32", "Float64", "str", "bytes"]
SCALARS = [*HASHABLE_SCALARS, "bytearray", "ZBytes"]


class World:
    def __init__(self, ext: Any, zbytes: type) -> None:
        self.ext = ext
        self.zbytes = zbytes
        builtin = {"int": int, "bool": bool, "float": float, "str": str, "bytes": bytes}
        self.scalar: dict[str, Any] = {**builtin, "bytearray": bytearray, "ZBytes": zbytes}
        for name in WRAPPERS:
            self.scalar[name] = getattr(ext, name)

    def hint(self, tree: Tree) -> Any:
        head = tree[0]
        if head in self.scalar:
            return self.scalar[head]
        if head == "tuple":
            return types.GenericAlias(tuple, tuple(self.hint(t) for t in tree[1]))
        if head == "dict":
            return dict[self.hint(tree[1]), self.hint(tree[2])]  # type: ignore[misc]
        origin = {"list": list, "set": set, "frozenset": frozenset}[head]
        return types.GenericAlias(origin, (self.hint(tree[1]),))

    def build(self, tree: Tree, spec: Any) -> Any:
        head = tree[0]
        if head in self.scalar:
            return self.scalar[head](spec)
        if head == "tuple":
            return tuple(self.build(t, s) for t, s in zip(tree[1], spec, strict=True))
        if head == "dict":
            return {self.build(tree[1], k): self.build(tree[2], v) for k, v in spec}
        items = [self.build(tree[1], s) for s in spec]
        return {"list": list, "set": set, "frozenset": frozenset}[head](items)

    def serialize(self, obj: Any) -> bytes:
        return bytes(self.ext.z_serialize(obj).to_bytes())

    def deserialize(self, hint: Any, data: bytes) -> Any:
        return self.ext.z_deserialize(hint, self.zbytes(data))


PY = World(P, ZBytes)
REAL = World(R, zenoh.ZBytes)


def norm(value: Any) -> Any:
    """A comparable form of a deserialized value (floats by bits, sets sorted)."""
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int):
        return ("int", int(value))
    if isinstance(value, float):
        return ("float", struct.pack("<d", value))
    if isinstance(value, str):
        return ("str", value)
    if isinstance(value, bytes | bytearray):
        return (type(value).__name__, bytes(value))
    if isinstance(value, ZBytes | zenoh.ZBytes):
        return ("ZBytes", bytes(value.to_bytes()))
    if isinstance(value, tuple):
        return ("tuple", tuple(norm(v) for v in value))
    if isinstance(value, list):
        return ("list", tuple(norm(v) for v in value))
    if isinstance(value, set | frozenset):
        # zenoh-python gives a set for frozenset[Int8]; pyzenoh a frozenset (see module doc).
        return ("set", tuple(sorted((norm(v) for v in value), key=repr)))
    if isinstance(value, dict):
        return ("dict", tuple((norm(k), norm(v)) for k, v in value.items()))
    raise AssertionError(f"unexpected {type(value)}")


def outcome(fn: Callable[[], Any]) -> tuple[str, Any]:
    """("ok", normalized value) or ("error", exception type name), ZDeserializeError unified."""
    try:
        result = fn()
    except (ZDeserializeError, R.ZDeserializeError):
        return ("error", "ZDeserializeError")
    except Exception as exc:  # noqa: BLE001 - any other error is compared by its type
        return ("error", type(exc).__name__)
    return ("ok", norm(result))


def safe_for_real(data: bytes) -> bool:
    """No two bytes in a row with the high bit: every LEB128 length in ``data`` is < 2**14.

    zenoh-python allocates (and fills) what a length says before reading the items.
    """
    return not any(a & b & 0x80 for a, b in itertools.pairwise(data))


def frozenset_quirk(tree: Tree, nested: bool = False) -> bool:
    """Whether zenoh-python's ``frozenset[Int8]``-is-a-``set`` makes ``tree`` fail with it.

    A ``frozenset`` of fixed-width numbers comes back as a ``set`` there; inside anything
    that hashes it (a set, a frozenset, a dict key) that is a TypeError. pyzenoh gives a
    frozenset.
    """
    head = tree[0]
    if head == "frozenset" and tree[1][0] in WRAPPERS and nested:
        return True
    if head == "tuple":
        return any(frozenset_quirk(t, nested) for t in tree[1])
    if head == "dict":
        return frozenset_quirk(tree[1], True) or frozenset_quirk(tree[2], nested)
    if head in ("set", "frozenset"):
        return frozenset_quirk(tree[1], True)
    if head == "list":
        return frozenset_quirk(tree[1], nested)
    return False


def zero_size_items(tree: Tree, value: Any) -> int:
    """How many list items of ``value`` occupy no bytes (empty tuples and tuples of them)."""
    head = tree[0]
    if head == "tuple":
        return sum(zero_size_items(t, v) for t, v in zip(tree[1], value, strict=True))
    if head == "dict":
        return sum(zero_size_items(tree[1], k) + zero_size_items(tree[2], v) for k, v in value.items())
    if head in ("list", "set", "frozenset"):
        own = len(value) if head == "list" and is_zero_size(tree[1]) else 0
        return own + sum(zero_size_items(tree[1], v) for v in value)
    return 0


def is_zero_size(tree: Tree) -> bool:
    return tree[0] == "tuple" and all(is_zero_size(t) for t in tree[1])


def same_outcome(tree: Tree, mine: tuple[str, Any], theirs: tuple[str, Any], real: Any = None) -> bool:
    """``mine == theirs``, but for the two places where pyzenoh deliberately differs."""
    if theirs == ("error", "TypeError") and frozenset_quirk(tree):
        return mine[0] == "ok" or mine[1] == "ZDeserializeError"
    if mine == ("error", "ZDeserializeError") and theirs[0] == "ok" and real is not None:
        return zero_size_items(tree, real) > ZERO_SIZE_ITEMS_LIMIT
    return mine == theirs


def check_types(value: Any, tree: Tree) -> None:
    """pyzenoh gives exactly the classes the type tree names, all the way down."""
    head = tree[0]
    if head in PY.scalar:
        assert type(value) is PY.scalar[head], (value, tree)
    elif head == "tuple":
        assert type(value) is tuple
        for v, t in zip(value, tree[1], strict=True):
            check_types(v, t)
    elif head == "dict":
        assert type(value) is dict
        for k, v in value.items():
            check_types(k, tree[1])
            check_types(v, tree[2])
    else:
        assert type(value) is {"list": list, "set": set, "frozenset": frozenset}[head]
        for v in value:
            check_types(v, tree[1])


# --- Strategies -----------------------------------------------------------------------------


def _trees(scalars: list[str], hashable: bool) -> st.SearchStrategy[Tree]:
    def extend(inner: st.SearchStrategy[Tree]) -> st.SearchStrategy[Tree]:
        tuples = st.lists(inner, max_size=3).map(lambda ts: ("tuple", tuple(ts)))
        frozensets = hashable_trees.map(lambda t: ("frozenset", t))
        if hashable:
            return st.one_of(tuples, frozensets)
        return st.one_of(
            tuples,
            frozensets,
            inner.map(lambda t: ("list", t)),
            hashable_trees.map(lambda t: ("set", t)),
            st.tuples(hashable_trees, inner).map(lambda kv: ("dict", *kv)),
        )

    base = st.sampled_from(scalars).map(lambda s: (s,))
    return st.recursive(base, extend, max_leaves=6)


hashable_trees: st.SearchStrategy[Tree] = st.deferred(lambda: _trees(HASHABLE_SCALARS, True))
trees: st.SearchStrategy[Tree] = _trees(SCALARS, False)


def scalar_specs(name: str, nan: bool) -> st.SearchStrategy[Any]:
    if name in INT_RANGES:
        lo, hi = INT_RANGES[name]
        return st.integers(lo, hi)
    if name == "bool":
        return st.booleans()
    if name == "Float32":
        return st.floats(width=32, allow_nan=nan) | st.floats(allow_nan=nan)
    if name in ("float", "Float64"):
        return st.floats(allow_nan=nan)
    if name == "str":
        return st.text(max_size=8)
    return st.binary(max_size=8)


def specs(tree: Tree, nan: bool = False, exact: bool = False) -> st.SearchStrategy[Any]:
    """Neutral values for ``tree``: scalars as plain Python values, collections as lists."""
    head = tree[0]
    if head in SCALARS:
        if exact and head == "Float32":
            return st.floats(width=32, allow_nan=False)
        return scalar_specs(head, nan)
    if head == "tuple":
        return st.tuples(*(specs(t, nan, exact) for t in tree[1]))
    if head == "dict":
        # Duplicate keys (and set items) collapse when built, alike in both worlds.
        return st.lists(st.tuples(specs(tree[1], False, exact), specs(tree[2], nan, exact)), max_size=4)
    return st.lists(specs(tree[1], nan and head == "list", exact), max_size=4)


@st.composite
def typed_values(draw: st.DrawFn, nan: bool = False, exact: bool = False) -> tuple[Tree, Any]:
    """A type tree and a value spec for it (``exact``: Float32 values need no rounding)."""
    tree = draw(trees)
    return tree, draw(specs(tree, nan, exact))


# --- Public surface ---------------------------------------------------------------------------


def test_public_names_match_the_serialization_part_of_zenoh_ext() -> None:
    advanced = {
        "AdvancedPublisher", "AdvancedSubscriber", "CacheConfig", "HistoryConfig", "Miss",
        "MissDetectionConfig", "RecoveryConfig", "RepliesConfig", "SampleMissListener",
        "declare_advanced_publisher", "declare_advanced_subscriber",
    }  # fmt: skip
    real_names = {n for n in dir(R) if not n.startswith("_")} - advanced
    # the serializer's names, exactly (the advanced ones are tested in test_advanced_interop)
    assert set(P.__all__) - advanced == real_names
    for name in WRAPPERS:
        assert getattr(P, name).__doc__ == getattr(R, name).__doc__, name


@pytest.mark.parametrize("name", [n for n in WRAPPERS if n in INT_RANGES])
def test_int_wrappers_check_their_range_like_zenoh(name: str) -> None:
    lo, hi = INT_RANGES[name]
    mine, theirs = getattr(P, name), getattr(R, name)
    for value in (lo, hi, 0):
        assert mine(value) == theirs(value) == value
        assert type(mine(value)) is mine and isinstance(mine(value), int)
    for value in (lo - 1, hi + 1):
        with pytest.raises(AssertionError) as mine_err:
            mine(value)
        with pytest.raises(AssertionError) as their_err:
            theirs(value)
        assert str(mine_err.value) == str(their_err.value)
    assert type(mine(1) + mine(1)) is int
    assert mine(3.9) == theirs(3.9) == 3


def test_float_wrappers() -> None:
    assert type(P.Float32(1.5)) is P.Float32 and P.Float32(1.5) == 1.5
    assert type(P.Float64("2.5")) is P.Float64 and P.Float64("2.5") == 2.5


# --- Serialization ----------------------------------------------------------------------------

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


class _MyInt(int):
    pass


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
        for value in (-1, -(1 << 7) - 1, 1 << 8, 1 << 16, 1 << 32, 1 << 63, -(1 << 63) - 1, 1 << 64, 1 << 127, 1 << 128, -(1 << 128))
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


# --- Deserialization of valid data --------------------------------------------------------------


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


# --- Malformed data -----------------------------------------------------------------------------


def _compare(tree: Tree, data: bytes) -> tuple[str, Any]:
    mine = outcome(lambda: PY.deserialize(PY.hint(tree), data))
    if mine[0] == "error":
        assert mine[1] == "ZDeserializeError", (tree, data.hex(), mine)
    if safe_for_real(data):
        real: list[Any] = []
        theirs = outcome(lambda: real.append(REAL.deserialize(REAL.hint(tree), data)) or real[0])
        assert same_outcome(tree, mine, theirs, real[0] if real else None), (tree, data.hex(), mine, theirs)
    return mine


@FUZZ
@given(trees, st.binary(max_size=40))
def test_random_bytes_only_raise_zdeserializeerror(tree: Tree, data: bytes) -> None:
    _compare(tree, data)


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


@FUZZ_VALUES
@given(typed_values(), st.lists(st.tuples(st.integers(0, 2), st.integers(0, 1 << 16), st.integers(0, 255)), min_size=1, max_size=4))
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
    (("int",), "01000000"), (("int",), "010000"), (("int",), ""),
    (("bool",), "00"), (("bool",), "01"), (("bool",), "02"), (("bool",), "ff"),
    (("str",), "00"), (("str",), "01ff"), (("str",), "03eda080"),  # a UTF-8 surrogate
    (("str",), "02c0af"), (("str",), "0261"), (("str",), "810061"),  # non-minimal length
    (("bytes",), "8000"), (("bytes",), "80"), (("bytes",), "80808080808080808000"),
    (("list", ("str",)), "80808080808080808001"),  # 2**63 items: the first one is missing
    (("list", ("str",)), "ffffffffffffffffff01"),  # 2**64 - 1
    (("list", ("str",)), "ffffffffffffffffff02"),  # a tenth byte above 1 overflows u64
    (("list", ("str",)), "8080808080808080807f"),
    (("list", ("str",)), "808080808080808080800100"),  # eleven bytes
    (("list", ("bool",)), "020100"), (("list", ("bool",)), "020102"), (("list", ("bool",)), "0301"),
    (("list", ("int",)), "02010000000200"), (("set", ("float",)), "01000000000000f03f"),
    (("list", ("Int8",)), "0201ff"), (("list", ("Int8",)), "0301ff"),
    (("list", ("UInt128",)), "01" + "ff" * 16), (("list", ("Int128",)), "02" + "ff" * 16),
    (("frozenset", ("Int8",)), "020101"), (("set", ("UInt8",)), "03010203"),
    (("list", ("Float32",)), "020000c03f0000807f"), (("set", ("float",)), "0100000000000000f8ff"),
    (("tuple", ()), ""), (("tuple", ()), "00"), (("list", ("tuple", ())), "05"),
    (("set", ("tuple", ())), "05"), (("frozenset", ("tuple", (("tuple", ()),))), "00"),
    (("dict", ("tuple", ()), ("tuple", ())), "03"),
    (("dict", ("tuple", ()), ("int",)), "020100000002000000"),  # the last value wins
    (("dict", ("str",), ("int",)), "02016101000000016102000000"),
    (("dict", ("int",), ("dict", ("str",), ("bool",))), "010100000001016102"),
    (("tuple", (("int",), ("str",))), "0100000000"), (("tuple", (("int",), ("str",))), "01000000"),
    (("list", ("list", ("int",))), "0100"), (("list", ("list", ("int",))), "0101"),
]  # fmt: skip


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


# --- What zenoh-python would allocate or loop for, and refuses here -------------------------------

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


# --- Type parameters ------------------------------------------------------------------------------

HINT_ERRORS: list[tuple[Callable[[World], Any], str]] = [
    (lambda w: list, "00"),
    (lambda w: tuple, ""),
    (lambda w: dict, "00"),
    (lambda w: set, "00"),
    (lambda w: list[int], "00"),
    (lambda w: typing.List[int], "00"),  # noqa: UP006
    (lambda w: typing.Optional[int], "01000000"),  # noqa: UP045
    (lambda w: int | None, "01000000"),
    (lambda w: list[int | None], "00"),
    (lambda w: None, "00"),
    (lambda w: object, "00"),
    (lambda w: "int", "01000000"),
    (lambda w: _MyInt, "01000000"),
    (lambda w: tuple[int, ...], "01000000"),
    (lambda w: tuple[int, ..., str], ""),
    (lambda w: list[tuple[int, ...]], "00"),  # never reached: no items
    (lambda w: list[tuple[int, ...]], "0101000000"),
    (lambda w: list[list], "00"),  # type: ignore[type-arg]
    (lambda w: list[list], "0100"),  # type: ignore[type-arg]
    (lambda w: dict[str, list], "00"),  # type: ignore[type-arg]
    (lambda w: dict[str, list], "01016100"),  # type: ignore[type-arg]
    (lambda w: dict[str, object], ""),  # resolved before the length is read
    (lambda w: list[object], ""),
    (lambda w: tuple[int, object], ""),  # the int is missing first
    (lambda w: tuple[int, object], "01000000"),
    (lambda w: set[list[int]], "0100"),
    (lambda w: set[list[int]], "0201"),  # truncated before the set is built
    (lambda w: dict[list[int], int], "02000000000000ff"),  # unhashable at the first pair
    (lambda w: set[bytearray], "0100"),
    (lambda w: list[w.ext.Int8, str], "0101"),
    (lambda w: dict[str, int, int], "00"),
    (lambda w: w.zbytes, "0161"),
    (lambda w: list[w.zbytes], "020161"),
    (lambda w: list[[1]], "00"),  # type: ignore[misc]
    (lambda w: types.GenericAlias(3, (int,)), "00"),
]


@pytest.mark.parametrize(("make", "hexed"), HINT_ERRORS)
def test_type_parameters_match_zenoh(make: Callable[[World], Any], hexed: str) -> None:
    data = bytes.fromhex(hexed)
    theirs = outcome(lambda: REAL.deserialize(make(REAL), data))
    assert outcome(lambda: PY.deserialize(make(PY), data)) == theirs


@pytest.mark.parametrize("hint", [dict[str], dict[()], list[()], set[()], frozenset[()]])  # type: ignore[misc]
def test_missing_type_parameters_are_a_type_error(hint: Any) -> None:
    # zenoh-python panics here (pyo3_runtime.PanicException, a BaseException).
    with pytest.raises(TypeError):
        P.z_deserialize(hint, b"\x00")


@pytest.mark.parametrize("data", [memoryview(b"\x00"), "\x00", None, [0]])
def test_z_deserialize_takes_zbytes_bytes_or_bytearray(data: Any) -> None:
    with pytest.raises(TypeError):
        P.z_deserialize(bool, data)
    assert P.z_deserialize(bool, b"\x01") is True
    assert P.z_deserialize(bool, bytearray(b"\x00")) is False
    assert P.z_deserialize(bool, ZBytes(b"\x01")) is True


def test_z_serialize_returns_pyzenoh_zbytes() -> None:
    out = P.z_serialize([1, 2])
    assert type(out) is ZBytes and out.to_bytes() == bytes.fromhex("020100000002000000")
    assert P.z_deserialize(list[int], out) == [1, 2]
