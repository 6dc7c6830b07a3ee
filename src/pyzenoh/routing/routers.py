"""The router region ("north"): router neighbours, as zenohd 1.10.2 runs them.

* Routers exchange LINKSTATE (:mod:`.network`) and each computes one shortest-path tree
  rooted at every router.
* Declarations between routers are pushed, never asked for: entity id 0, one per (owner
  router, key), sent to the children of the *owner's* tree with NodeId = the owner's
  index in the sender's numbering (0, omitted, means the sender). Undeclarations name
  their key (WireExpr extension). When trees change, entities are re-sent to new
  children. No INTEREST and no D_FINAL travel between routers.
* This router owns a key in the region when anything south of it (clients, peers, local
  faces) holds an entity there; queryables carry the merged info of those.
* Data and requests follow the tree of the router where they entered the mesh (their
  NodeId) towards every router owning a match; a router receives each one once per tree,
  so no topology (cycles included) makes duplicates.
* Every entity of a router that becomes unreachable is removed.

The region takes part in the south's tables through the pseudo-face :data:`NORTH`: it
holds a key whenever another router does, so the south rules (interests, aggregation,
current answers) treat remote routers like one more face; data and queries for
``NORTH`` are expanded here into router neighbours.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from pyzenoh.codec import (
    Declare,
    DeclareKeyExpr,
    DeclareQueryable,
    DeclareSubscriber,
    DeclareToken,
    NetworkOam,
    UndeclareQueryable,
    UndeclareSubscriber,
    UndeclareToken,
    WhatAmI,
    WireExpr,
    ZenohId,
)
from pyzenoh.codec.network import OAM_LINKSTATE, QOS_DECLARE, DeclarationBody
from pyzenoh.errors import CloseReason, PeerError
from pyzenoh.keyexpr import is_canonical
from pyzenoh.routing.access_control import EGRESS, INGRESS
from pyzenoh.routing.declared import QueryableInfo
from pyzenoh.routing.faces import MAX_KEY_LEN, NORTH, Face
from pyzenoh.routing.network import Network
from pyzenoh.routing.queries import merge_all
from pyzenoh.routing.regions import Region
from pyzenoh.routing.tables import Tables

if TYPE_CHECKING:
    from pyzenoh.routing.declarations import Declarations
    from pyzenoh.routing.pubsub import PubSub
    from pyzenoh.routing.queries import Queries
    from pyzenoh.routing.tokens import Tokens

log = logging.getLogger(__name__)


class RouterInputError(PeerError):
    """A router neighbour sent something that cannot belong to the mesh (a NodeId it never
    announced, an entity of ours): its link is closed."""

    close_reason = CloseReason.INVALID


class RouterMesh:
    """Router neighbours, the router graph and the entities of remote routers."""

    _pubsub: PubSub
    _queries: Queries
    _tokens: Tokens
    _declarations: Declarations

    def __init__(self, tables: Tables, locators: Callable[[], Sequence[str]]) -> None:
        """The south's rules the mesh changes (the NORTH face's holders) are given by
        :meth:`connect`: they are built with the mesh."""
        self.tables = tables
        self._net = Network(
            self.tables.zid,
            WhatAmI.ROUTER,
            full_linkstate=True,
            gossip=self.tables.config.gossip,
            locators=locators,
            max_nodes=self.tables.config.max_routers,
        )
        # key -> routers owning an entity there (this router included when the south does)
        self._router_subs: dict[str, set[ZenohId]] = {}
        self._router_qabls: dict[str, dict[ZenohId, QueryableInfo]] = {}
        self._router_tokens: dict[str, set[ZenohId]] = {}
        self._north_ids: dict[tuple[str, str], int] = {}  # (kind, key) -> the NORTH face's entity id

    def connect(self, pubsub: PubSub, queries: Queries, tokens: Tokens, declarations: Declarations) -> None:
        """The south's rules: holders of the NORTH face change through them, and router
        neighbours' D_KEYEXPR, U_KEYEXPR and D_FINAL are the south's declaration rules."""
        self._pubsub = pubsub
        self._queries = queries
        self._tokens = tokens
        self._declarations = declarations

    def init_north(self, region: Region) -> None:
        """The pseudo-face standing for remote routers' entities (in the router region,
        which is built with :attr:`network`)."""
        self._north = Face(NORTH, self.tables.zid, WhatAmI.ROUTER, region)
        self.tables.faces[NORTH] = self._north

    @property
    def network(self) -> Network:
        """The router graph (for the admin space and diagnostics)."""
        return self._net

    def router_entities(self, kind: str) -> dict[str, list[ZenohId]]:
        """key -> routers owning a ``kind`` ("subscriber", "queryable", "token") there."""
        if kind == "queryable":
            return {key: sorted(owners, key=str) for key, owners in sorted(self._router_qabls.items())}
        table = self._router_subs if kind == "subscriber" else self._router_tokens
        return {key: sorted(owners, key=str) for key, owners in sorted(table.items())}

    # -- links ----------------------------------------------------------------------------

    def router_face_added(self, f: Face) -> None:
        for link, body in self._net.add_link(f.fid, f.zid, f.whatami):
            self._send_linkstate(link, body)
        self._recompute_trees()

    def router_face_removed(self, f: Face) -> None:
        removed, sends = self._net.remove_link(f.fid)
        for link, body in sends:
            if link != f.fid:
                self._send_linkstate(link, body)
        self._forget_routers(removed)
        self._recompute_trees()

    def on_router_linkstate(self, f: Face, body: bytes) -> None:
        self.tables.stats.linkstates_received += 1
        removed, sends = self._net.link_states(f.fid, body)
        for link, out in sends:
            self._send_linkstate(link, out)
        self._forget_routers(removed)
        self._recompute_trees()

    def _send_linkstate(self, link: int, body: bytes) -> None:
        if self.tables.can_send(link):
            self.tables.emit(link, NetworkOam(OAM_LINKSTATE, body, QOS_DECLARE), QOS_DECLARE)

    def _router_face(self, index: int | None) -> Face | None:
        """Our face to the neighbour with node index ``index``."""
        if index is None:
            return None
        zid = self._net.zid_of(index)
        link = None if zid is None else self._net.link_of(zid)
        f = None if link is None else self.tables.faces.get(link)
        return f if f is not None and f.region.links_routers() and f is not self.tables.closing else None

    def compact(self) -> None:
        self._router_subs = dict(self._router_subs)
        self._router_qabls = dict(self._router_qabls)
        self._router_tokens = dict(self._router_tokens)

    def _recompute_trees(self) -> None:
        self.tables.stats.tree_computations += 1
        new_children = self._net.compute_trees()
        self.tables.invalidate_routes()
        trees: list[tuple[int, ZenohId, list[Face]]] = []
        for root, children in new_children.items():
            owner = self._net.zid_of(root)
            if owner is not None and children:
                trees.append((root, owner, [f for f in map(self._router_face, children) if f is not None]))
        # New tree children learn the entities of each tree's owner. Like zenohd: every
        # tree's subscribers, then every tree's queryables, then tokens (checked on the wire).
        for root, owner, faces in trees:
            for key, subs in self._router_subs.items():
                if owner in subs:
                    for d in faces:
                        self._send_north(d, DeclareSubscriber(0, self.tables.decl_key(d, key)), root, key)
        for root, owner, faces in trees:
            for key, qabls in self._router_qabls.items():
                info = qabls.get(owner)
                if info is not None:
                    for d in faces:
                        self._send_north(
                            d,
                            DeclareQueryable(0, self.tables.decl_key(d, key), info.complete, info.distance),
                            root,
                            key,
                        )
        for root, owner, faces in trees:
            for key, tokens in self._router_tokens.items():
                if owner in tokens:
                    for d in faces:
                        self._send_north(d, DeclareToken(0, self.tables.decl_key(d, key)), root, key)

    def _forget_routers(self, removed: Sequence[ZenohId]) -> None:
        """Routers that became unreachable: every entity they owned goes. So do those of
        owners the graph no longer holds at all (a neighbour may name a node no link
        reaches, and declare for it: nothing else would ever remove those)."""
        gone = set(removed)
        net = self._net
        for table in (self._router_subs, self._router_tokens, self._router_qabls):
            for owners in table.values():
                gone.update(o for o in owners if net.index_of(o) is None)
        if not gone:
            return
        for key in [k for k, owners in self._router_subs.items() if owners & gone]:
            for owner in self._router_subs[key] & gone:
                self._set_router_sub(key, owner, False)
        for key in [k for k, owners in self._router_qabls.items() if owners.keys() & gone]:
            for owner in self._router_qabls[key].keys() & gone:
                self._set_router_qabl(key, owner, None)
        for key in [k for k, owners in self._router_tokens.items() if owners & gone]:
            for owner in self._router_tokens[key] & gone:
                self._set_router_token(key, owner, False)

    # -- sending along trees ----------------------------------------------------------------

    def _send_north(self, d: Face, body: DeclarationBody, node: int, key: str) -> None:
        if d.acl is not None and self.tables.declaration_denied(d, EGRESS, body, key):
            return  # access control applies to router links too, as in zenohd
        self.tables.emit(d.fid, Declare(body, None, QOS_DECLARE, node_id=node or None), QOS_DECLARE)

    def _tree_children(self, owner: ZenohId, exclude: Face | None) -> tuple[int, list[Face]]:
        root = self._net.index_of(owner)
        if root is None:
            return 0, []
        tree = self._net.trees.get(root)
        if tree is None:
            return root, []
        faces = [f for f in map(self._router_face, tree.children) if f is not None and f is not exclude]
        return root, faces

    def _propagate_north(
        self,
        kind: str,
        key: str,
        owner: ZenohId,
        declared: bool,
        info: QueryableInfo | None = None,
        exclude: Face | None = None,
    ) -> None:
        root, faces = self._tree_children(owner, exclude)
        for d in faces:
            body: DeclarationBody
            if kind == "subscriber":
                body = (
                    DeclareSubscriber(0, self.tables.decl_key(d, key))
                    if declared
                    else UndeclareSubscriber(0, self.tables.decl_key(d, key))
                )
            elif kind == "queryable":
                if declared:
                    assert info is not None
                    body = DeclareQueryable(0, self.tables.decl_key(d, key), info.complete, info.distance)
                else:
                    body = UndeclareQueryable(0, self.tables.decl_key(d, key))
            else:
                body = (
                    DeclareToken(0, self.tables.decl_key(d, key))
                    if declared
                    else UndeclareToken(0, self.tables.decl_key(d, key))
                )
            self._send_north(d, body, root, key)

    # -- the router-owned tables ------------------------------------------------------------

    def _north_entity(self, kind: str, key: str, present: bool) -> int | None:
        """The NORTH face's entity id for (kind, key): allocated when ``present``, released
        otherwise. Returns the id (None when there was none to release)."""
        ident = self._north_ids.get((kind, key))
        if present and ident is None:
            ident = self._north_ids[(kind, key)] = self.tables.new_id(self._north)
        elif not present and ident is not None:
            del self._north_ids[(kind, key)]
        return ident

    def _set_router_sub(self, key: str, owner: ZenohId, present: bool, exclude: Face | None = None) -> None:
        self._set_router_owner("subscriber", self._router_subs, key, owner, present, exclude)

    def _set_router_token(self, key: str, owner: ZenohId, present: bool, exclude: Face | None = None) -> None:
        self._set_router_owner("token", self._router_tokens, key, owner, present, exclude)

    def _set_router_owner(
        self, kind: str, table: dict[str, set[ZenohId]], key: str, owner: ZenohId, present: bool, exclude: Face | None
    ) -> None:
        """Router ``owner`` starts (or stops) owning a subscriber or token on ``key``: tell
        the children of its tree, and the south when the first (last) remote owner came."""
        owners = table.setdefault(key, set())
        if (owner in owners) == present:
            if not owners:
                del table[key]
            return
        remote_before = bool(owners - {self.tables.zid})
        if present:
            owners.add(owner)
        else:
            owners.discard(owner)
        remote_after = bool(owners - {self.tables.zid})
        if not owners:
            del table[key]
        self.tables.invalidate_routes()
        self._propagate_north(kind, key, owner, present, exclude=exclude)
        if remote_before != remote_after:
            ident = self._north_entity(kind, key, remote_after)
            assert ident is not None
            entities = self._north.subs if kind == "subscriber" else self._north.tokens
            if remote_after:
                entities[ident] = key
            else:
                del entities[ident]
            change = self._pubsub.change_sub_holder if kind == "subscriber" else self._tokens.change_token_holder
            change(self._north, key, +1 if remote_after else -1)

    def _set_router_qabl(
        self, key: str, owner: ZenohId, info: QueryableInfo | None, exclude: Face | None = None
    ) -> None:
        owners = self._router_qabls.setdefault(key, {})
        old = owners.get(owner)
        if old == info:
            if not owners:
                del self._router_qabls[key]
            return
        remote_before = merge_all(i for r, i in owners.items() if r != self.tables.zid)
        if info is None:
            del owners[owner]
        else:
            owners[owner] = info
        remote_after = merge_all(i for r, i in owners.items() if r != self.tables.zid)
        if not owners:
            del self._router_qabls[key]
        self.tables.invalidate_routes()
        self._propagate_north("queryable", key, owner, info is not None, info, exclude)
        if remote_before != remote_after:
            ident = self._north_entity("queryable", key, remote_after is not None)
            assert ident is not None
            if remote_after is None:
                del self._north.qabls[ident]
                # The last remote owner went (remote_before is set here): like a face closing.
                self._queries.set_qabl_holder(self._north, key, None, "close")
            else:
                self._north.qabls[ident] = (key, remote_after)
                self._queries.set_qabl_holder(self._north, key, remote_after, "declare")

    # -- hooks from the south rules -----------------------------------------------------------

    def south_subs_changed(self, key: str, held: bool) -> None:
        """Something south of us started (or stopped) holding a subscriber on ``key``."""
        self._set_router_sub(key, self.tables.zid, held)

    def south_tokens_changed(self, key: str, held: bool) -> None:
        self._set_router_token(key, self.tables.zid, held)

    def south_qabls_changed(self, key: str) -> None:
        holders = self.tables.qabl_holders.get(key, {})
        info = merge_all(i for fid, i in holders.items() if fid != NORTH)
        self._set_router_qabl(key, self.tables.zid, info)

    # -- declarations from router neighbours ----------------------------------------------------

    def _router_owner(self, f: Face, node_id: int | None) -> ZenohId:
        owner = self._net.node_of_psid(f.fid, node_id or 0)
        if owner is None:
            raise RouterInputError(f"router {f.zid} named unknown node id {node_id}")
        return owner

    def _router_key(self, f: Face, we: WireExpr | None) -> str | None:
        if we is None:
            return None
        key = self.tables.resolve(f, we)
        if key is None or len(key) > MAX_KEY_LEN or not is_canonical(key):
            return None
        return key

    def on_router_declare(self, f: Face, msg: Declare) -> None:
        body = msg.body
        if isinstance(body, DeclareKeyExpr):
            self._declarations.on_declare_keyexpr(f, body, msg)
            return
        owner = self._router_owner(f, msg.node_id)
        if owner == self.tables.zid:
            # Our own entity came back around a cycle of a stale tree: ignore it.
            self.tables.drop(f.fid, "own entity from a router", msg)
            return
        match body:
            case DeclareSubscriber() | DeclareToken() | DeclareQueryable():
                key = self._router_key(f, body.wire_expr)
            case UndeclareSubscriber() | UndeclareToken() | UndeclareQueryable():
                key = self._router_key(f, body.ext_wire_expr)
            case _:
                self._declarations.on_declare(f, msg)  # U_KEYEXPR, D_FINAL: the south rules handle them
                return
        if key is None:
            self.tables.drop(f.fid, "unknown key in router declaration", msg)
            return
        if f.acl is not None and self.tables.declaration_denied(f, INGRESS, body, key):
            return  # not registered (an undeclaration: nothing was), as zenohd
        match body:
            case DeclareSubscriber():
                self._set_router_sub(key, owner, True, f)
            case UndeclareSubscriber():
                self._set_router_sub(key, owner, False, f)
            case DeclareToken():
                self._set_router_token(key, owner, True, f)
            case UndeclareToken():
                self._set_router_token(key, owner, False, f)
            case DeclareQueryable():
                self._set_router_qabl(key, owner, QueryableInfo(body.complete, body.distance), f)
            case _:  # UndeclareQueryable
                self._set_router_qabl(key, owner, None, f)

    # -- routing data and queries north ---------------------------------------------------------

    def north_hops(self, source: int, owners: list[ZenohId], src: Face) -> dict[int, ZenohId]:
        """The neighbour faces a message from tree ``source`` goes to, to reach ``owners``
        (face id -> the first owner it serves), never back to ``src``."""
        hops: dict[int, ZenohId] = {}
        for owner in owners:
            if owner == self.tables.zid:
                continue
            dest = self._net.index_of(owner)
            if dest is None:
                continue
            d = self._router_face(self._net.direction(source, dest))
            if d is not None and d is not src and d.fid not in hops:
                hops[d.fid] = owner
        return hops

    def north_sub_owners(self, key: str) -> list[ZenohId]:
        return sorted(self._router_subs.get(key, ()), key=str)

    def north_qabl_owners(self, key: str) -> dict[ZenohId, QueryableInfo]:
        return self._router_qabls.get(key, {})

    def router_distance(self, owner: ZenohId) -> float:
        index = self._net.index_of(owner)
        return self._net.distance(index) if index is not None else float("inf")
