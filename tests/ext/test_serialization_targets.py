"""What ``z_deserialize`` may be asked to build: type parameters (missing, extra,
``typing`` forms, unions, non-types) give zenoh's errors, or a TypeError where zenoh
panics.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable
from typing import Any

import pytest

import pyzenoh.ext as P
from tests.ext.serialization_helpers import PY, REAL, World, _MyInt, outcome

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
