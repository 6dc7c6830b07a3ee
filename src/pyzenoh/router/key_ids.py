"""The key-expression ids a router declares to one of its local faces (the admin space, a
plugin's session): what a wire expression the router writes to that face means."""

from __future__ import annotations

from pyzenoh.codec import DeclareKeyExpr, UndeclareKeyExpr, WireExpr
from pyzenoh.codec.network.declare import DeclarationBody


class KeyIds:
    """D_KEYEXPR / U_KEYEXPR received on a local face, and the keys they resolve."""

    __slots__ = ("_scopes",)

    def __init__(self) -> None:
        self._scopes: dict[int, str] = {}

    def resolve(self, wire_expr: WireExpr) -> str | None:
        """The key ``wire_expr`` names; None for an id the router never declared."""
        if wire_expr.scope == 0:
            return wire_expr.suffix
        prefix = self._scopes.get(wire_expr.scope)
        return None if prefix is None else prefix + wire_expr.suffix

    def on_declare(self, body: DeclarationBody) -> bool:
        """Take note of a key-id declaration; False for any other declaration."""
        match body:
            case DeclareKeyExpr():
                prefix = self.resolve(body.wire_expr)
                if prefix is not None:
                    self._scopes[body.expr_id] = prefix
            case UndeclareKeyExpr():
                self._scopes.pop(body.expr_id, None)
            case _:
                return False
        return True

    def clear(self) -> None:
        self._scopes.clear()
