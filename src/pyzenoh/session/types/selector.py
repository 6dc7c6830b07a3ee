"""Selectors: a key expression plus :class:`Parameters` (``a/b?x=1;y=2``).

``to_key_expr`` turns an API key expression argument (a KeyExpr or its text) into a
KeyExpr.
"""

from __future__ import annotations

from typing import Any

from typing_extensions import override

from pyzenoh.errors import UsageError
from pyzenoh.keyexpr import KeyExpr


class Parameters:
    """``key=value`` pairs separated by ``;`` (a selector's part after ``?``)."""

    __slots__ = ("_pairs",)

    def __init__(self, parameters: Parameters | dict[str, str] | str | None = None) -> None:
        self._pairs: list[tuple[str, str]] = []
        if parameters is None:
            return
        if isinstance(parameters, Parameters):
            self._pairs = list(parameters._pairs)
        elif isinstance(parameters, dict):
            self._pairs = [(str(k), str(v)) for k, v in parameters.items()]
        else:
            for part in parameters.split(";"):
                if part:
                    k, _, v = part.partition("=")
                    self._pairs.append((k, v))

    def is_empty(self) -> bool:
        return not self._pairs

    def get(self, key: str, default: str | None = None) -> str | None:
        for k, v in self._pairs:
            if k == key:
                return v
        return default

    def values(self, key: str) -> list[str]:
        value = self.get(key)
        return [] if value is None else value.split("|")

    def insert(self, key: str, value: str) -> str | None:
        """Set ``key`` to ``value``; returns the value it replaced (None if new)."""
        old = self.remove(key)
        self._pairs.append((key, value))
        return old

    def remove(self, key: str) -> str | None:
        """Remove ``key``; returns its value (None if it was not there)."""
        old = self.get(key)
        self._pairs = [(k, v) for k, v in self._pairs if k != key]
        return old

    def extend(self, parameters: Parameters | dict[str, str] | str) -> None:
        for k, v in Parameters(parameters)._pairs:
            self.insert(k, v)

    def is_ordered(self) -> bool:
        """True if the keys are in alphabetical order."""
        keys = [k for k, _ in self._pairs]
        return keys == sorted(keys)

    def __bool__(self) -> bool:
        return bool(self._pairs)

    def __contains__(self, item: str) -> bool:
        return any(k == item for k, _ in self._pairs)

    def __getitem__(self, item: str) -> str | None:
        return self.get(item)

    def __iter__(self) -> Any:
        return iter(list(self._pairs))

    @override
    def __str__(self) -> str:
        return ";".join(f"{k}={v}" if v else k for k, v in self._pairs)

    @override
    def __repr__(self) -> str:
        return f"Parameters({str(self)!r})"

    @override
    def __eq__(self, other: object) -> bool:
        if isinstance(other, Parameters):
            return self._pairs == other._pairs
        if isinstance(other, str):
            return str(self) == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


class Selector:
    """A key expression plus parameters: ``"a/b?x=1;y=2"``."""

    __slots__ = ("_key_expr", "_parameters")

    def __init__(
        self,
        arg: Selector | KeyExpr | str,
        /,
        parameters: Parameters | dict[str, str] | str | None = None,
    ) -> None:
        if isinstance(arg, Selector):
            self._key_expr: KeyExpr = arg.key_expr
            self._parameters: Parameters = Parameters(arg.parameters)
        elif isinstance(arg, KeyExpr):
            self._key_expr = arg
            self._parameters = Parameters()
        elif isinstance(arg, str):
            key, _, params = arg.partition("?")
            self._key_expr = KeyExpr(key)
            self._parameters = Parameters(params)
        else:
            raise UsageError(f"a selector is a str, KeyExpr or Selector, not {type(arg).__name__}")
        if parameters is not None:
            self._parameters = Parameters(parameters)

    @property
    def key_expr(self) -> KeyExpr:
        return self._key_expr

    @key_expr.setter
    def key_expr(self, key_expr: KeyExpr | str) -> None:
        self._key_expr = to_key_expr(key_expr)

    @property
    def parameters(self) -> Parameters:
        return self._parameters

    @parameters.setter
    def parameters(self, parameters: Parameters | dict[str, str] | str) -> None:
        self._parameters = Parameters(parameters)

    @override
    def __str__(self) -> str:
        params = str(self.parameters)
        return f"{self.key_expr}?{params}" if params else str(self.key_expr)

    @override
    def __repr__(self) -> str:
        return f"Selector({str(self)!r})"


def to_key_expr(value: KeyExpr | str) -> KeyExpr:
    if isinstance(value, KeyExpr):
        return value
    if isinstance(value, str):
        return KeyExpr(value)
    raise UsageError(f"expected a key expression, got {type(value).__name__}")
