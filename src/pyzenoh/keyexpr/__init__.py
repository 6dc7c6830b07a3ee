"""Zenoh key expressions: validation, canonization, set relations and an index.

Behaviour matches eclipse-zenoh 1.10.2 (see zenoh-wire.md section 5 and the
differential tests under ``tests/keyexpr``).
"""

from pyzenoh.keyexpr.canon import (
    KeyExprError,
    KeyExprErrorKind,
    autocanonize,
    is_canonical,
    validate,
)
from pyzenoh.keyexpr.expr import KeyExpr, SetRelation, relation
from pyzenoh.keyexpr.relations import includes, intersects
from pyzenoh.keyexpr.tree import KeyExprTree

__all__ = [
    "KeyExpr",
    "KeyExprError",
    "KeyExprErrorKind",
    "KeyExprTree",
    "SetRelation",
    "autocanonize",
    "includes",
    "intersects",
    "is_canonical",
    "relation",
    "validate",
]
