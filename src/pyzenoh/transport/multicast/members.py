"""What a group member's wire expressions name: its D_KEYEXPR ids, kept per member (a
member's ids are its own, as a face's are), bounded. Used by the router's and the
session's group glue alike."""

from __future__ import annotations

from pyzenoh.codec import DeclareKeyExpr, UndeclareKeyExpr, WireExpr


class MemberKeys:
    """One member's key-expression ids; at most ``limit`` (more are refused)."""

    __slots__ = ("_ids", "limit")

    def __init__(self, limit: int) -> None:
        self._ids: dict[int, str] = {}
        self.limit = limit

    def full(self, we: WireExpr) -> str | None:
        """The key ``we`` names in full; None when its scope is no id of this member's."""
        if we.scope == 0:
            return we.suffix
        prefix = self._ids.get(we.scope)
        return None if prefix is None else prefix + we.suffix

    def learn(self, body: DeclareKeyExpr | UndeclareKeyExpr) -> bool:
        """A member's (un)declaration of an id; False when refused (unknown scope, full)."""
        if isinstance(body, UndeclareKeyExpr):
            self._ids.pop(body.expr_id, None)
            return True
        key = self.full(body.wire_expr)
        if key is None or len(self._ids) >= self.limit:
            return False
        self._ids[body.expr_id] = key
        return True

    def __len__(self) -> int:
        return len(self._ids)
