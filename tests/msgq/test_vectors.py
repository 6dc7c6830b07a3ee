"""All 106 vectors produced by BIND 10's own code (tests/vectors/msgq-vectors.json).

Where BIND 10 failed with an accidental exception (UnboundLocalError, NameError,
UnicodeDecodeError, ValueError, TypeError, AttributeError) we raise our own typed error instead;
the two "empty hash" vectors are checked with ``allow_empty=False`` (BIND 10's behaviour) and
the default decision (``b"Skan"`` is ``{}``) is checked separately.
"""

from __future__ import annotations

import collections
import math
from typing import Any

import pytest

from pyzenoh.errors import DecodeError, UsageError
from pyzenoh.msgq.frame import decode_frame, encode_frame
from pyzenoh.msgq.protocol import encode_message
from pyzenoh.msgq.skan import SkanEncodeError, SkanError, decode, encode
from tests.msgq.support import load_vectors

VECTORS = load_vectors()
BY_ID = {v["id"]: v for v in VECTORS}
# Exceptions BIND 10 raised only because of bugs; ours is the typed error.
BIND10_ACCIDENTS = {"UnboundLocalError", "NameError", "UnicodeDecodeError", "ValueError"}


def _eval(expr: str) -> Any:
    return eval(expr, {"__builtins__": {"bytearray": bytearray, "float": float}})


def _same(a: Any, b: Any) -> bool:
    """Equality that treats bytearray as bytes and nan as nan."""
    if isinstance(a, (bytes, bytearray)) and isinstance(b, (bytes, bytearray)):
        return bytes(a) == bytes(b)
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def test_inventory() -> None:
    kinds = collections.Counter(v["kind"] for v in VECTORS)
    assert len(VECTORS) == 106
    assert kinds == {
        "item": 38,
        "decode_error": 24,
        "decode": 18,
        "frame_decode": 11,
        "frame": 8,
        "encode_error": 4,
        "encode_only": 3,
    }


@pytest.mark.parametrize("vec", VECTORS, ids=[v["id"] for v in VECTORS])
def test_vector(vec: dict[str, Any]) -> None:
    kind = vec["kind"]
    data = bytes.fromhex(vec["hex"])
    if kind == "item":
        value = _eval(vec["python_value"])
        assert encode(value) == data
        assert _same(decode(data), _eval(vec.get("decoded", vec["python_value"])))
    elif kind == "encode_only":
        value = _eval(vec["python_value"])
        # BIND 10 sent str(x) for types it did not know; default=str reproduces that.
        assert encode(value, default=str) == data
        if vec["decoded"] == "DecodeError":
            with pytest.raises(SkanError):
                decode(data, allow_empty=False)
        else:
            assert _same(decode(data), _eval(vec["decoded"]))
    elif kind == "decode":
        assert _same(decode(data), _eval(vec["python_value"]))
    elif kind == "decode_error":
        assert vec["error"] == "DecodeError" or vec["error"] in BIND10_ACCIDENTS
        with pytest.raises(SkanError) as info:
            if vec["id"] == "st_truncated_body":  # a frame-level vector
                decode_frame(data)
            else:
                decode(data, allow_empty=False)
        assert isinstance(info.value, DecodeError)
        if vec["error"] == "DecodeError" and vec.get("error_message"):
            # Same wording as BIND 10 for the errors it raised on purpose.
            assert info.value.reason == vec["error_message"]
    elif kind == "encode_error":
        value = _eval(vec["python_value"])
        with pytest.raises(SkanEncodeError) as enc_info:
            encode(value)
        assert isinstance(enc_info.value, UsageError)
    elif kind in ("frame", "frame_decode"):
        header, body = _eval(vec["python_value"])
        frame = decode_frame(data)
        # Compare decoded dicts: frame_decode bytes are in Python 3.1 dict order.
        assert _same(decode(frame.header), header)
        assert _same(decode(frame.body) if frame.body is not None else None, body)
        if kind == "frame":
            assert encode_message(header, body) == data
            assert encode_frame(frame.header, frame.body) == data
    else:  # pragma: no cover - the inventory test pins the kinds
        pytest.fail(f"unknown kind {kind}")


def test_empty_hash_decision() -> None:
    """Default: b"Skan" is the empty hash, so decode inverts encode; BIND 10 rejected it."""
    assert encode({}) == b"Skan"
    assert decode(b"Skan") == {}
    with pytest.raises(SkanError, match="too short"):
        decode(b"Skan", allow_empty=False)
    with pytest.raises(SkanError, match="too short"):
        decode(b"Ska")
    assert decode(bytes.fromhex(BY_ID["map_empty_dict"]["hex"])) == {"d": {}}


def test_zero_length_tag_decision() -> None:
    """Read liberally; bind10 dialect writes it as BIND 10 did; seed dialect refuses it."""
    data = bytes.fromhex(BY_ID["decode_zero_length_tag"]["hex"])
    assert decode(data) == {"": "x"}
    assert encode({"": "x"}) == data
    with pytest.raises(SkanEncodeError):
        encode({"": "x"}, dialect="seed")


def test_gen1_doc_example_encodes_in_seed_dialect() -> None:
    """The seed dialect reproduces the Oct 2009 encoder byte for byte (bools aside)."""
    vec = BY_ID["doc_example_gen1"]
    value = _eval(BY_ID["doc_example_gen2"]["python_value"])
    assert encode(value, dialect="seed") == bytes.fromhex(vec["hex"])
    assert encode(value, dialect="bind10") == bytes.fromhex(BY_ID["doc_example_gen2"]["hex"])
