"""Helpers of the ``pyzenoh.ext`` serialization tests (``test_serialization_*``), which
check it against eclipse-zenoh 1.10.2's ``zenoh.ext`` (z_serialize / z_deserialize).

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
import types
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import strategies as st

import pyzenoh.ext as P
from pyzenoh.ext import ZDeserializeError
from pyzenoh.ext.serialization import ZERO_SIZE_ITEMS_LIMIT
from pyzenoh.session.types import ZBytes
from tests.hyp import examples

zenoh = pytest.importorskip("zenoh")
R = pytest.importorskip("zenoh.ext")

DIFF = examples(400, 100)
# Mutations of generated values: generating nested values is the cost (10,000 took minutes in
# CI); FUZZ's arbitrary inputs (2,000 in CI, 500 locally) still run on the decoder (test_serialization_deserialize.py).
FUZZ_VALUES = examples(1_500, 250)

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


class _MyInt(int):
    pass
