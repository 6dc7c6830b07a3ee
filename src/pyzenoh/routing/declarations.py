"""Declarations from a client or peer face: key-expression ids (D_KEYEXPR, U_KEYEXPR),
and each entity (un)declaration handed to the rule of its kind (:mod:`.pubsub`,
:mod:`.queries`, :mod:`.tokens`). Router neighbours' entity declarations go to the mesh
(:mod:`.routers`), which hands its key ids and D_FINAL back here.
"""

from __future__ import annotations

from pyzenoh.codec import (
    Declare,
    DeclareKeyExpr,
    DeclareQueryable,
    DeclareSubscriber,
    DeclareToken,
    UndeclareKeyExpr,
    UndeclareQueryable,
    UndeclareSubscriber,
    UndeclareToken,
)
from pyzenoh.routing.access_control import INGRESS
from pyzenoh.routing.faces import MAX_KEY_LEN, Face
from pyzenoh.routing.pubsub import PubSub
from pyzenoh.routing.queries import Queries
from pyzenoh.routing.tables import Tables
from pyzenoh.routing.tokens import Tokens


class Declarations:
    """The DECLARE dispatch of the south, and the face's key-expression ids."""

    def __init__(self, tables: Tables, pubsub: PubSub, queries: Queries, tokens: Tokens) -> None:
        self.tables = tables
        self._pubsub = pubsub
        self._queries = queries
        self._tokens = tokens

    def on_declare(self, f: Face, msg: Declare) -> None:
        t = self.tables
        body = msg.body
        match body:
            case DeclareKeyExpr():
                self.on_declare_keyexpr(f, body, msg)
            case UndeclareKeyExpr():
                key = f.remote_ids.pop(body.expr_id, None)
                if key is None:
                    t.drop(f.fid, "unknown key id", msg)
                    return
                if f.remote_id_of.get(key) == body.expr_id:
                    del f.remote_id_of[key]
                t.unref(key)
                t.invalidate_routes()
            case DeclareSubscriber():
                self._pubsub.on_declare_subscriber(f, body, msg)
            case UndeclareSubscriber() | UndeclareQueryable() | UndeclareToken() if (
                f.acl is not None and t.declaration_denied(f, INGRESS, body, t.undeclared_key(f, body))
            ):
                return  # an undeclaration naming a key its subject may not (un)declare
            case UndeclareSubscriber():
                key = f.subs.pop(body.entity_id, None)
                if key is None:
                    t.drop(f.fid, "unknown subscriber id", msg)
                    return
                self._pubsub.change_sub_holder(f, key, -1)
            case DeclareQueryable():
                self._queries.on_declare_queryable(f, body, msg)
            case UndeclareQueryable():
                entry = f.qabls.pop(body.entity_id, None)
                if entry is None:
                    t.drop(f.fid, "unknown queryable id", msg)
                    return
                self._queries.on_undeclare_queryable(f, entry[0], entry[1])
            case DeclareToken():
                if msg.interest_id is not None:
                    # Tokens answering an interest flow only north-to-south.
                    t.drop(f.fid, "token with interest id", msg)
                    return
                self._tokens.on_declare_token(f, body, msg)
            case UndeclareToken():
                key = f.tokens.pop(body.entity_id, None)
                if key is None:
                    t.drop(f.fid, "unknown token id", msg)
                    return
                self._tokens.change_token_holder(f, key, -1)
            case _:  # DeclareFinal: only meaningful from north of us
                t.drop(f.fid, "unexpected declare final", msg)

    def on_declare_keyexpr(self, f: Face, body: DeclareKeyExpr, msg: Declare) -> None:
        t = self.tables
        we = body.wire_expr
        # Real routers read the D_KEYEXPR scope with the receiver mapping (the ids *we*
        # declared to this face), whatever the codec's default flag says.
        prefix = "" if we.scope == 0 else f.local_ids.get(we.scope)
        if prefix is None:
            t.drop(f.fid, "unknown key id", msg)
            return
        key = prefix + we.suffix
        if len(key) > MAX_KEY_LEN:
            t.drop(f.fid, "invalid key expression", msg)
            return
        old = f.remote_ids.get(body.expr_id)
        if old is not None:
            if old != key:
                t.drop(f.fid, "key id remapped", msg)
            return
        if len(f.remote_ids) >= t.config.max_keyexpr_ids_per_face:
            t.limit_hit(f, "max_keyexpr_ids_per_face", msg)
            return
        f.remote_ids[body.expr_id] = key
        f.remote_id_of[key] = body.expr_id
        t.ref(key)
        t.invalidate_routes()
