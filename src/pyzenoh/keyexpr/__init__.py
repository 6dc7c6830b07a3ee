"""Zenoh key expressions: validation, canonization, set relations and an index.

Behaviour matches eclipse-zenoh 1.10.2 (see zenoh-wire.md section 5 and the
differential tests under ``tests/keyexpr``).

:func:`intersects` and :func:`includes` take :class:`KeyExpr` objects or strings and
validate strings (:class:`KeyExprError` when invalid). Hot paths that hold canonical
strings already use :mod:`pyzenoh.keyexpr.relations`'s unchecked functions.
"""

from pyzenoh.keyexpr.canon import (
    KeyExprError,
    KeyExprErrorKind,
    autocanonize,
    is_canonical,
    validate,
)
from pyzenoh.keyexpr.expr import (
    KeyExpr,
    SetIntersectionLevel,
    SetRelation,
    includes,
    intersects,
    relation,
)
from pyzenoh.keyexpr.tree import KeyExprTree

__all__ = [
    "KeyExpr",
    "KeyExprError",
    "KeyExprErrorKind",
    "KeyExprTree",
    "SetIntersectionLevel",
    "SetRelation",
    "autocanonize",
    "includes",
    "intersects",
    "is_canonical",
    "relation",
    "validate",
]
