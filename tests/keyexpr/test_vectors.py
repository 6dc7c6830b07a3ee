"""Every case of tests/vectors/keyexpr-cases.txt (results of the real zenoh 1.10.2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pyzenoh.keyexpr import (
    KeyExpr,
    KeyExprError,
    autocanonize,
    includes,
    intersects,
    is_canonical,
    validate,
)
from tests.keyexpr.support import parse_zenoh_error

CASES_FILE = Path(__file__).resolve().parents[1] / "vectors" / "keyexpr-cases.txt"


def _load() -> list[tuple[int, list[str]]]:
    out = []
    for lineno, line in enumerate(CASES_FILE.read_text(encoding="utf-8").splitlines(), 1):
        if not line or line.startswith("#"):
            continue
        out.append((lineno, line.split("\t")))
    return out


CASES = _load()


def _ids() -> list[str]:
    return [f"L{n}:{'|'.join(f)}" for n, f in CASES]


def test_file_has_every_kind() -> None:
    kinds = {f[0] for _, f in CASES}
    assert kinds == {"valid", "canon", "rel"}
    assert len(CASES) >= 50


def _check_error(err: KeyExprError, message: str) -> None:
    # The file's messages are copied from zenoh (one recorded truncated with an ellipsis).
    expr, kinds = parse_zenoh_error(message.replace("…", ""))
    assert err.expr == expr
    assert err.kind in kinds, (err.kind, message)


@pytest.mark.parametrize(("lineno", "fields"), CASES, ids=_ids())
def test_case(lineno: int, fields: list[str]) -> None:
    kind = fields[0]
    if kind == "valid":
        expr, verdict = fields[1], fields[2]
        if verdict == "ok":
            assert is_canonical(expr)
            assert validate(expr) == expr
            assert str(KeyExpr(expr)) == expr
        else:
            assert verdict == "invalid"
            assert not is_canonical(expr)
            with pytest.raises(KeyExprError) as ei:
                validate(expr)
            _check_error(ei.value, fields[3])
            with pytest.raises(KeyExprError):
                KeyExpr(expr)
    elif kind == "canon":
        src, result = fields[1], fields[2]
        if result == "error":
            with pytest.raises(KeyExprError) as ei:
                autocanonize(src)
            _check_error(ei.value, fields[3])
        else:
            assert autocanonize(src) == result
            assert str(KeyExpr.autocanonize(src)) == result
            assert is_canonical(result)
    else:
        a, b = fields[1], fields[2]
        inter, a_inc_b, b_inc_a = (f == "true" for f in fields[3:6])
        assert intersects(a, b) is inter
        assert intersects(b, a) is inter
        assert includes(a, b) is a_inc_b
        assert includes(b, a) is b_inc_a
        ka, kb = KeyExpr(a), KeyExpr(b)
        assert ka.intersects(kb) is inter
        assert ka.includes(kb) is a_inc_b
        assert kb.includes(ka) is b_inc_a
