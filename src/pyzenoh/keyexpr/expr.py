"""The :class:`KeyExpr` value type: a validated, canonical key expression."""

from __future__ import annotations

from enum import Enum
from typing import Any

from typing_extensions import override

from pyzenoh.keyexpr.canon import KeyExprError, KeyExprErrorKind, autocanonize, validate
from pyzenoh.keyexpr.relations import includes as _includes
from pyzenoh.keyexpr.relations import intersects as _intersects


class SetRelation(Enum):
    """How the key set of one expression relates to another's (from the first one's side)."""

    DISJOINT = "disjoint"
    INTERSECTS = "intersects"
    INCLUDES = "includes"  # self includes other
    CONTAINED = "contained"  # other includes self
    EQUALS = "equals"


class SetIntersectionLevel(Enum):
    """zenoh's ``SetIntersectionLevel``: the relation of a key expression to another,
    from the first one's side (``relation_to``); ``other includes self`` is INTERSECTS.
    Ordered: ``level >= INTERSECTS`` means they intersect, ``>= INCLUDES`` inclusion."""

    DISJOINT = 0
    INTERSECTS = 1
    INCLUDES = 2
    EQUALS = 3

    def __ge__(self, other: object) -> bool:
        if not isinstance(other, SetIntersectionLevel):
            return NotImplemented
        return self.value >= other.value

    def __gt__(self, other: object) -> bool:
        if not isinstance(other, SetIntersectionLevel):
            return NotImplemented
        return self.value > other.value

    def __le__(self, other: object) -> bool:
        if not isinstance(other, SetIntersectionLevel):
            return NotImplemented
        return self.value <= other.value

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, SetIntersectionLevel):
            return NotImplemented
        return self.value < other.value


def relation(a: str, b: str) -> SetRelation:
    """Relation of canonical ``a`` to canonical ``b`` (no validation).

    Same order of tests as zenoh's ``relation_to`` (intersection first), with CONTAINED
    split out of zenoh's INTERSECTS.
    """
    if not _intersects(a, b):
        return SetRelation.DISJOINT
    if a == b:
        return SetRelation.EQUALS
    if _includes(a, b):
        return SetRelation.INCLUDES
    if _includes(b, a):
        return SetRelation.CONTAINED
    return SetRelation.INTERSECTS


_LEVELS = {
    SetRelation.DISJOINT: SetIntersectionLevel.DISJOINT,
    SetRelation.INTERSECTS: SetIntersectionLevel.INTERSECTS,
    SetRelation.CONTAINED: SetIntersectionLevel.INTERSECTS,
    SetRelation.INCLUDES: SetIntersectionLevel.INCLUDES,
    SetRelation.EQUALS: SetIntersectionLevel.EQUALS,
}


def intersects(a: KeyExpr | str, b: KeyExpr | str) -> bool:
    """True if at least one concrete key matches both; strings are validated first
    (:class:`KeyExprError` for one that is not a canonical key expression)."""
    return _intersects(_str(a), _str(b))


def includes(a: KeyExpr | str, b: KeyExpr | str) -> bool:
    """True if every key matched by ``b`` is matched by ``a``; strings are validated
    first (:class:`KeyExprError` for one that is not a canonical key expression)."""
    return _includes(_str(a), _str(b))


class KeyExpr:
    """An immutable, hashable, canonical key expression.

    ``KeyExpr(s)`` accepts only canonical strings (like ``zenoh.KeyExpr(s)``); use
    :meth:`autocanonize` to rewrite a non-canonical one. Equal sets have equal strings,
    so equality and hashing are those of the string.
    """

    __slots__ = ("_s",)
    _s: str

    def __init__(self, key_expr: str | KeyExpr) -> None:
        value = key_expr._s if isinstance(key_expr, KeyExpr) else validate(key_expr)
        object.__setattr__(self, "_s", value)

    @classmethod
    def _trusted(cls, s: str) -> KeyExpr:
        ke = object.__new__(cls)
        object.__setattr__(ke, "_s", s)
        return ke

    @classmethod
    def autocanonize(cls, key_expr: str) -> KeyExpr:
        """Canonize ``key_expr`` (``**/**`` -> ``**``, ``**/*`` -> ``*/**``, ...) and wrap it."""
        return cls._trusted(autocanonize(key_expr))

    @override
    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("KeyExpr is immutable")

    @override
    def __delattr__(self, name: str) -> None:
        raise AttributeError("KeyExpr is immutable")

    @override
    def __str__(self) -> str:
        return self._s

    @override
    def __repr__(self) -> str:
        return f"KeyExpr({self._s!r})"

    @override
    def __eq__(self, other: object) -> bool:
        """Equal to a KeyExpr or a str of the same expression (``KeyExpr("a/b") == "a/b"``)."""
        if isinstance(other, KeyExpr):
            return self._s == other._s
        if isinstance(other, str):
            return self._s == other
        return NotImplemented

    @override
    def __hash__(self) -> int:
        return hash(self._s)  # the string's hash: consistent with == on str

    def __lt__(self, other: KeyExpr) -> bool:
        if not isinstance(other, KeyExpr):
            return NotImplemented
        return self._s < other._s

    @override
    def __reduce__(self) -> tuple[type[KeyExpr], tuple[str]]:
        return (KeyExpr, (self._s,))

    def is_wild(self) -> bool:
        """True if the expression contains a wildcard (``*``, ``**`` or ``$*``)."""
        return "*" in self._s

    def join(self, other: str | KeyExpr) -> KeyExpr:
        """``self/other``, canonized (so ``a/**`` joined with ``*`` is ``a/*/**``)."""
        return KeyExpr.autocanonize(f"{self._s}/{other}")

    def concat(self, other: str) -> KeyExpr:
        """``self + other`` as a key expression, like zenoh's ``concat``.

        Refuses to glue a trailing ``*`` to a leading ``*``; the result must already be
        canonical.
        """
        if not isinstance(other, str):
            raise KeyExprError(repr(other), KeyExprErrorKind.NOT_A_STRING)
        if self._s.endswith("*") and other.startswith("*"):
            raise KeyExprError(self._s + other, KeyExprErrorKind.STAR_IN_CHUNK, len(self._s))
        return KeyExpr(self._s + other)

    def intersects(self, other: KeyExpr | str) -> bool:
        """True if at least one concrete key matches both."""
        return _intersects(self._s, _str(other))

    def includes(self, other: KeyExpr | str) -> bool:
        """True if every key matched by ``other`` is matched by ``self``."""
        return _includes(self._s, _str(other))

    def relation_to(self, other: KeyExpr | str) -> SetIntersectionLevel:
        """zenoh's relation of ``self`` to ``other`` (see :class:`SetIntersectionLevel`);
        :func:`relation` tells CONTAINED apart from INTERSECTS."""
        return _LEVELS[relation(self._s, _str(other))]


def _str(other: KeyExpr | str) -> str:
    if isinstance(other, KeyExpr):
        return other._s
    return validate(other)
