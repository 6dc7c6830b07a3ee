"""Liveliness tokens: who hears of a token, and when it is undeclared.

Tokens differ from subscribers in two ways real routers show on the wire: a client is
told about its own tokens (a peer is not), and the last holder of a key is told a token
went when the leaving holder closed or was in the other region.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyzenoh.codec import Declare, DeclareToken, InterestOptions, UndeclareToken
from pyzenoh.routing.faces import NORTH, Face
from pyzenoh.routing.tables import Tables

if TYPE_CHECKING:
    from pyzenoh.routing.routers import RouterMesh

_T = InterestOptions.TOKENS


class Tokens:
    """Token tables and their propagation."""

    def __init__(self, tables: Tables, mesh: RouterMesh) -> None:
        """``mesh``: what is told when the south starts or stops holding a token."""
        self.tables = tables
        self.mesh = mesh

    def on_declare_token(self, f: Face, body: DeclareToken, msg: Declare) -> None:
        key = self.tables.new_entity(f, f.tokens, body, msg, "token")
        if key is not None:
            self.change_token_holder(f, key, +1)

    def _token_visible(self, d: Face, holders: dict[int, int]) -> bool:
        for h in holders:
            if h == d.fid:
                if d.region.echoes_own_tokens():
                    return True
            elif h in self.tables.faces and self.tables.sees(d, self.tables.faces[h]):
                return True
        return False

    def change_token_holder(self, f: Face, key: str, delta: int) -> None:
        counted = self.tables.count_holder(self.tables.token_holders, self.tables.token_tree, f, key, delta)
        if counted is None:
            return
        before, holders = counted
        declared = f.fid in holders
        if f.fid != NORTH:
            south = any(h != NORTH for h in holders)
            if south != any(h != NORTH for h in before):
                self.mesh.south_tokens_changed(key, south)
        for d in self.tables.live_faces():
            if not d.interests and key not in d.local_tokens:
                continue  # nothing to tell it or to take back (a face without interests)
            now = self._token_visible(d, holders)
            if declared:
                # Every face that should see it and was not told (or was told it went,
                # see below) hears of it: real routers propagate each new holder.
                if now:
                    self._propagate_token(d, key)
            elif not now and self._token_visible(d, before):
                self._unpropagate_token(d, key)
        if len(holders) == 1 and not declared:
            # Real routers tell the last holder the token went when the leaving holder
            # closed, or was in the other region (clients / peers) -- even a client that
            # still holds it itself and so still "sees" it (checked on the wire).
            (last,) = holders
            h = self.tables.faces[last]
            if (
                h is not self.tables.closing
                and self._token_visible(h, holders)
                and (f is self.tables.closing or f.region.group != h.region.group)
            ):
                self._unpropagate_token(h, key)

    def _propagate_token(self, d: Face, key: str) -> None:
        if key in d.local_tokens or not self.tables.matching_interests(d, _T, key):
            return
        ident = self.tables.new_id(d)
        d.local_tokens[key] = ident
        self.tables.declare(d, DeclareToken(ident, self.tables.decl_key(d, key)), key=key)

    def _unpropagate_token(self, d: Face, key: str) -> None:
        ident = d.local_tokens.pop(key, None)
        if ident is not None:
            self.tables.declare(d, UndeclareToken(ident), key=key)
        elif self.tables.matching_interests(d, _T, key):
            # A token d never heard of (it predates a no-history liveliness subscriber):
            # real routers undeclare it with id 0 and its key in the WireExpr extension.
            self.tables.declare(d, UndeclareToken(0, self.tables.best_key(d, key)), key=key)
