"""The Skan codec: round trips, dialects, limits, and fuzzing (only SkanError escapes)."""

from __future__ import annotations

import struct
from collections import OrderedDict
from enum import IntEnum
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyzenoh.msgq import skan
from pyzenoh.msgq.skan import (
    MAX_DEPTH,
    MAX_NUMBER_TEXT,
    Dialect,
    SkanEncodeError,
    SkanError,
    decode,
    decode_ex,
    detect_dialect,
    encode,
)
from tests.hyp import FUZZ, ROUNDTRIP
from tests.msgq import strategies as s
from tests.msgq.support import load_vectors

VECTOR_BYTES = [
    bytes.fromhex(v["hex"])
    for v in load_vectors()
    if v["hex"] and v["kind"] not in ("frame", "frame_decode") and len(v["hex"]) < 2000
]


# -- round trips --------------------------------------------------------------------------


@pytest.mark.slow
@ROUNDTRIP
@given(s.messages())
def test_bind10_round_trip(value: dict[str, Any]) -> None:
    data = encode(value)
    assert decode(data) == value
    assert list(decode(data)) == list(value)  # hash order preserved
    # Minimal length forms: re-encoding the decoded value gives the same bytes.
    assert encode(decode(data)) == data


@pytest.mark.slow
@ROUNDTRIP
@given(s.messages(s.seed_keys))
def test_seed_round_trip(value: dict[str, Any]) -> None:
    data = encode(value, dialect=Dialect.SEED)
    decoded = decode_ex(data)
    assert decoded.value == s.seedify(value)
    assert decoded.dialect in (Dialect.SEED, None)
    # Seed bytes are stable under decode -> seed encode.
    assert encode(decoded.value, dialect="seed") == data


@pytest.mark.parametrize(
    ("length", "tylen"),
    [(0, 0x28), (255, 0x28), (256, 0x18), (65535, 0x18), (65536, 0x08)],
)
def test_smallest_length_form(length: int, tylen: int) -> None:
    data = encode({"s": "x" * length})
    assert data[6] == tylen
    assert decode(data) == {"s": "x" * length}


def test_every_length_form_decodes() -> None:
    for prefix in (b"\x28\x01", b"\x18\x00\x01", b"\x08\x00\x00\x00\x01", b"\xe8\x01"):
        assert decode(b"Skan\x01a" + prefix + b"x") == {"a": "x"}  # high bits ignored


def test_length_form_0x30_is_a_decode_error() -> None:
    with pytest.raises(SkanError, match="0x30"):
        decode(b"Skan\x01a\x38\x01x")


def test_bool_and_number_texts() -> None:
    assert decode(b"Skan\x01b\x25\x011") == {"b": True}
    assert decode(b"Skan\x01b\x25\x01\x01") == {"b": False}
    assert decode(b"Skan\x01n\x26\x03 7 ") == {"n": 7}
    assert decode(b"Skan\x01f\x27\x03nan")["f"] != decode(b"Skan\x01f\x27\x03nan")["f"]
    with pytest.raises(SkanError):
        decode("Skan\x01n\x26\x02\u0663".encode())  # Arabic-Indic digit: not ASCII
    with pytest.raises(SkanError):
        decode(b"Skan\x01n\x26\x00")


def test_nested_containers_and_blob_types() -> None:
    value = {"a": [1, [2, {"b": (b"\x00" * 3)}]], "m": bytearray(b"x"), "v": memoryview(b"y")}
    assert decode(encode(value)) == {"a": [1, [2, {"b": b"\x00\x00\x00"}]], "m": b"x", "v": b"y"}


# -- encoder rules ------------------------------------------------------------------------


class Color(IntEnum):
    RED = 3


def test_encoder_uses_isinstance() -> None:
    assert decode(encode({"c": Color.RED})) == {"c": 3}
    assert decode(encode({"o": OrderedDict([("z", 1), ("a", 2)])})) == {"o": {"z": 1, "a": 2}}


@pytest.mark.parametrize("value", [(1, 2), {1}, object(), 1j, frozenset()])
def test_unknown_types_need_default(value: object) -> None:
    with pytest.raises(SkanEncodeError):
        encode({"v": value})
    assert decode(encode({"v": value}, default=str)) == {"v": str(value)}


def test_default_is_applied_once() -> None:
    with pytest.raises(SkanEncodeError):
        encode({"v": (1,)}, default=lambda x: {x})


@pytest.mark.parametrize(
    "value",
    [
        {1: "a"},
        {"k" * 256: 1},
        {"é" * 128: 1},  # 256 UTF-8 bytes
        {"\ud800": 1},
        {"v": "\udcff"},
        {"v": 10 ** (MAX_NUMBER_TEXT + 5)},
    ],
)
def test_encode_errors(value: dict[Any, Any]) -> None:
    with pytest.raises(SkanEncodeError):
        encode(value)


@pytest.mark.parametrize("top", [[1, 2], "abc", None, 5, b"Skan"])
def test_top_level_must_be_a_mapping(top: Any) -> None:
    with pytest.raises(SkanEncodeError):
        encode(top)


def test_unknown_dialect() -> None:
    with pytest.raises(SkanEncodeError):
        encode({}, dialect="json")


def test_self_reference_hits_the_depth_limit() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(SkanEncodeError, match="deeper"):
        encode({"l": loop})


def test_depth_limit() -> None:
    def nest(levels: int) -> Any:
        value: Any = None
        for _ in range(levels):
            value = [value]
        return value

    ok = encode({"l": nest(MAX_DEPTH)})
    assert decode(ok) == {"l": nest(MAX_DEPTH)}
    with pytest.raises(SkanEncodeError):
        encode({"l": nest(MAX_DEPTH + 1)})
    # Hand-built: MAX_DEPTH + 1 nested LISTs.
    inner = b""
    for _ in range(MAX_DEPTH + 1):
        inner = (
            bytes((0x23, len(inner))) + inner if len(inner) < 256 else b"\x13" + struct.pack(">H", len(inner)) + inner
        )
    with pytest.raises(SkanError, match="deeper"):
        decode(b"Skan\x01l" + inner)
    assert decode(b"Skan\x01l" + inner, max_depth=MAX_DEPTH + 1)["l"] is not None


def test_size_limit() -> None:
    data = encode({"s": "x" * 1000})
    with pytest.raises(SkanError, match="limit"):
        decode(data, max_size=999)
    assert decode(memoryview(data)) == {"s": "x" * 1000}


def test_number_text_limit() -> None:
    digits = b"1" * (MAX_NUMBER_TEXT + 1)
    with pytest.raises(SkanError):
        decode(b"Skan\x01n\x16" + struct.pack(">H", len(digits)) + digits)
    assert decode(encode({"n": 10 ** (MAX_NUMBER_TEXT - 1)})) == {"n": 10 ** (MAX_NUMBER_TEXT - 1)}


# -- dialect detection --------------------------------------------------------------------


def test_dialect_detection() -> None:
    assert detect_dialect(encode({"type": "getlname"})) == Dialect.BIND10
    assert detect_dialect(encode({"type": "getlname"}, dialect="seed")) == Dialect.SEED
    assert detect_dialect(encode({"n": None, "l": [], "d": {}})) is None
    assert detect_dialect(encode({"b": b"raw"})) == Dialect.SEED
    assert detect_dialect(encode({"b": b"raw", "n": 1})) == Dialect.BIND10
    assert detect_dialect(b"garbage") is None


def test_seed_scalar_texts() -> None:
    value = {"t": True, "f": False, "i": -12, "r": 2.5, "s": "é", "n": None}
    assert decode(encode(value, dialect="seed")) == {
        "t": b"True",
        "f": b"False",
        "i": b"-12",
        "r": b"2.5",
        "s": "é".encode(),
        "n": None,
    }


# -- fuzz ---------------------------------------------------------------------------------


def _only_skan_errors(data: bytes, **kwargs: Any) -> None:
    try:
        decode(data, **kwargs)
    except SkanError:
        pass


@FUZZ
@given(st.binary(max_size=400))
def test_fuzz_arbitrary_bytes(data: bytes) -> None:
    _only_skan_errors(data)


@FUZZ
@given(st.binary(max_size=400))
def test_fuzz_after_magic(data: bytes) -> None:
    _only_skan_errors(skan.MAGIC + data)
    _only_skan_errors(skan.MAGIC + data, max_depth=2, allow_empty=False)


@pytest.mark.slow
@FUZZ
@given(st.sampled_from(VECTOR_BYTES), st.data())
def test_fuzz_mutated_vectors(base: bytes, data: st.DataObject) -> None:
    buf = bytearray(base)
    for _ in range(data.draw(st.integers(1, 4))):
        op = data.draw(st.sampled_from(["flip", "insert", "delete", "truncate"]))
        pos = data.draw(st.integers(0, max(0, len(buf) - 1)))
        if op == "flip" and buf:
            buf[pos] ^= data.draw(st.integers(1, 255))
        elif op == "insert":
            buf[pos:pos] = data.draw(st.binary(min_size=1, max_size=4))
        elif op == "delete" and buf:
            del buf[pos]
        else:
            del buf[pos:]
    _only_skan_errors(bytes(buf))


@pytest.mark.slow
@ROUNDTRIP
@given(s.messages())
def test_fuzz_truncations_of_valid_messages(value: dict[str, Any]) -> None:
    data = encode(value)
    for cut in {len(data) // 2, len(data) - 1, 5}:
        if 0 <= cut < len(data):
            _only_skan_errors(data[:cut])
