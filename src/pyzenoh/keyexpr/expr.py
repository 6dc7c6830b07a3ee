"""The :class:`KeyExpr` value type: a validated, canonical key expression."""

from __future__ import annotations

from enum import Enum
from typing import Any

from pyzenoh.keyexpr.canon import KeyExprError, KeyExprErrorKind, autocanonize, validate
from pyzenoh.keyexpr.relations import includes, intersects


class SetRelation(Enum):
    """How the key set of one expression relates to another's (from the first one's side)."""

    DISJOINT = "disjoint"
    INTERSECTS = "intersects"
    INCLUDES = "includes"  # self includes other
    CONTAINED = "contained"  # other includes self
    EQUALS = "equals"


def relation(a: str, b: str) -> SetRelation:
    """Relation of canonical ``a`` to canonical ``b``.

    Same order of tests as zenoh's ``relation_to`` (intersection first), with CONTAINED
    split out of zenoh's INTERSECTS.
    """
    if not intersects(a, b):
        return SetRelation.DISJOINT
    if a == b:
        return SetRelation.EQUALS
    if includes(a, b):
        return SetRelation.INCLUDES
    if includes(b, a):
        return SetRelation.CONTAINED
    return SetRelation.INTERSECTS


class KeyExpr:
    """An immutable, hashable, canonical key expression.

    ``KeyExpr(s)`` accepts only canonical strings (like ``zenoh.KeyExpr(s)``); use
    :meth:`autocanonize` to rewrite a non-canonical one. Equal sets have equal strings,
    so equality and hashing are those of the string.
    """

    __slots__ = ("_s",)
    _s: str

    def __init__(self, s: str | KeyExpr) -> None:
        value = s._s if isinstance(s, KeyExpr) else validate(s)
        object.__setattr__(self, "_s", value)

    @classmethod
    def _trusted(cls, s: str) -> KeyExpr:
        ke = object.__new__(cls)
        object.__setattr__(ke, "_s", s)
        return ke

    @classmethod
    def autocanonize(cls, s: str) -> KeyExpr:
        """Canonize ``s`` (``**/**`` -> ``**``, ``**/*`` -> ``*/**``, ...) and wrap it."""
        return cls._trusted(autocanonize(s))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("KeyExpr is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("KeyExpr is immutable")

    def __str__(self) -> str:
        return self._s

    def __repr__(self) -> str:
        return f"KeyExpr({self._s!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, KeyExpr):
            return self._s == other._s
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._s)

    def __lt__(self, other: KeyExpr) -> bool:
        if not isinstance(other, KeyExpr):
            return NotImplemented
        return self._s < other._s

    def __reduce__(self) -> tuple[type[KeyExpr], tuple[str]]:
        return (KeyExpr, (self._s,))

    def is_wild(self) -> bool:
        """True if the expression contains a wildcard (``*``, ``**`` or ``$*``)."""
        return "*" in self._s

    def join(self, other: str | KeyExpr) -> KeyExpr:
        """``self/other``, canonized (so ``a/**`` joined with ``*`` is ``a/*/**``)."""
        return KeyExpr.autocanonize(f"{self._s}/{other}")

    def concat(self, suffix: str) -> KeyExpr:
        """``self + suffix`` as a key expression, like zenoh's ``concat``.

        Refuses to glue a trailing ``*`` to a leading ``*``; the result must already be
        canonical.
        """
        if not isinstance(suffix, str):
            raise KeyExprError(repr(suffix), KeyExprErrorKind.NOT_A_STRING)
        if self._s.endswith("*") and suffix.startswith("*"):
            raise KeyExprError(
                self._s + suffix, KeyExprErrorKind.STAR_IN_CHUNK, len(self._s)
            )
        return KeyExpr(self._s + suffix)

    def intersects(self, other: KeyExpr | str) -> bool:
        """True if at least one concrete key matches both."""
        return intersects(self._s, _str(other))

    def includes(self, other: KeyExpr | str) -> bool:
        """True if every key matched by ``other`` is matched by ``self``."""
        return includes(self._s, _str(other))

    def relation_to(self, other: KeyExpr | str) -> SetRelation:
        """See :class:`SetRelation`."""
        return relation(self._s, _str(other))


def _str(other: KeyExpr | str) -> str:
    if isinstance(other, KeyExpr):
        return other._s
    return validate(other)
