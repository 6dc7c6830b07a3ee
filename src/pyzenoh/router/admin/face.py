"""The admin space as a local face of :class:`~pyzenoh.router.daemon.RouterDaemon` (a
client, like the msgq bridge): it declares one queryable, ``@/<zid>/router/**``, exactly
the key zenohd's admin queryable declares, follows the key expressions the router
declares to it, and answers each query on the next loop turn: every reply (responder:
the router's zid, entity 1, as zenohd's), then RESPONSE_FINAL.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from pyzenoh.codec import (
    Declare,
    DeclareQueryable,
    DeclareSubscriber,
    Del,
    EntityGlobalId,
    Push,
    Put,
    Reply,
    Request,
    Response,
    ResponseFinal,
    WhatAmI,
    WireExpr,
    ZenohId,
)
from pyzenoh.router.admin.answers import AdminReply, Answers
from pyzenoh.router.admin.state import AdminStats
from pyzenoh.router.admin.writes import config_path
from pyzenoh.router.key_ids import KeyIds

if TYPE_CHECKING:
    from pyzenoh.router.daemon import RouterDaemon
    from pyzenoh.routing import Send

log = logging.getLogger(__name__)


#: Entity id of the admin queryable on the admin face.
ADMIN_QUERYABLE_ID = 1
#: Entity id of the admin face's subscriber on ``@/<zid>/router/config/**`` (writes).
ADMIN_CONFIG_SUBSCRIBER_ID = 2
#: Entity id in the replies' responder id: zenohd's admin space answers as entity 1.
RESPONDER_EID = 1
#: The admin face's zid is the router's, xor this ("adm"): a face of its own, never the
#: router's own zid, so the routing core cannot mistake it for the router.
ADMIN_FACE_XOR = 0x61646D


class AdminSpace:
    """The admin space of a :class:`RouterDaemon`: a local face answering ``@/<zid>/router/**``.

    It reads the router only through ``daemon.view`` (:class:`Answers`); what it does to
    the daemon is what any local face does: add itself, send messages, go away.
    """

    def __init__(self, daemon: RouterDaemon) -> None:
        self.daemon = daemon
        self.view = daemon.view
        self.face_id: int | None = None
        self.stats = AdminStats()
        self.answers = Answers(self.view, self.stats)
        self.root = self.answers.root
        self._key_ids = KeyIds()  # key ids the router declared to our face
        #: Called with (config path, JSON5 payload or None for a DELETE) on an admin-space
        #: write the router's permissions allow (set by the router app).
        self.on_config: Callable[[str, bytes | None], None] | None = None

    @property
    def plugins(self) -> Any:
        """The plugin host (pyzenoh.plugins.PluginHost) when the router runs plugins."""
        return self.answers.plugins

    @plugins.setter
    def plugins(self, host: Any) -> None:
        self.answers.plugins = host

    def replies(self, key: str, parameters: str = "") -> Iterator[AdminReply]:
        """Every admin key intersecting ``key``, with its encoding and payload."""
        return self.answers.replies(key, parameters)

    def attach(self) -> None:
        """Add the admin face to the daemon and declare ``@/<zid>/router/**`` on it."""
        if self.face_id is not None:
            return
        daemon = self.daemon
        face_zid = ZenohId((self.view.zid.value ^ ADMIN_FACE_XOR) or 1)
        self.face_id = self.answers.own_face = daemon.add_local_face(
            face_zid, self._on_send, WhatAmI.CLIENT, name="adminspace"
        )
        # zenohd's admin queryable: not complete, distance 0 (QueryableInfoType::DEFAULT).
        decl = DeclareQueryable(ADMIN_QUERYABLE_ID, WireExpr(0, f"{self.root}/**", True))
        daemon.local_input(self.face_id, Declare(decl))
        # zenohd's admin space also subscribes to its config, for admin-space writes.
        sub = DeclareSubscriber(ADMIN_CONFIG_SUBSCRIBER_ID, WireExpr(0, f"{self.root}/config/**", True))
        daemon.local_input(self.face_id, Declare(sub))
        log.info("admin space on %s/** (face %d)", self.root, self.face_id)

    def detach(self) -> None:
        """Withdraw the admin face, and its queryable with it."""
        face = self.face_id
        if face is None:
            return
        self.face_id = self.answers.own_face = None
        self.daemon.remove_local_face(face)
        self._key_ids.clear()

    def _on_send(self, send: Send) -> None:
        match send.message:
            case Request() as msg:
                self._on_query(msg)
            case Push() as msg:
                self._on_write(msg)
            case Declare() as msg:
                self._key_ids.on_declare(msg.body)
            case _:
                pass  # nothing else is expected: the face declares no subscriber and no interest

    def _on_query(self, msg: Request) -> None:
        face = self.face_id
        if face is None:
            return
        key = self._resolve(msg.wire_expr)
        if key is None:
            self.stats.unresolved += 1
            key = self.view.key_of(face, msg, incoming=False)
        params = msg.body.parameters
        # Answer on the next loop turn: the daemon is still delivering the request
        # (its other destinations may not have it yet) when it calls this sink.
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._answer(face, msg.request_id, msg.qos, key, params)
        else:
            loop.call_soon(self._answer, face, msg.request_id, msg.qos, key, params)

    def _on_write(self, msg: Push) -> None:
        """A PUT or DELETE on ``@/<zid>/router/config/**`` (adminspace.rs's ``send_push``)."""
        key = self._resolve(msg.wire_expr)
        kind = "DELETE" if isinstance(msg.body, Del) else "PUT"
        if key is None:
            log.error("admin space: %s on an unknown key expression %s", kind, msg.wire_expr)
            return
        if not self.view.config.adminspace_write or self.on_config is None:
            log.error("Received %s on '%s' but adminspace.permissions.write=false in configuration", kind, key)
            self.stats.writes_refused += 1
            return
        path = config_path(self.root, key)
        if path is None:
            log.error("admin space: %s on '%s': not a config key of this router", kind, key)
            return
        payload = None if isinstance(msg.body, Del) else bytes(msg.body.payload)
        self.stats.writes += 1
        self.on_config(path, payload)

    def _resolve(self, wire_expr: WireExpr) -> str | None:
        return self._key_ids.resolve(wire_expr)

    def _answer(self, face: int, rid: int, qos: int, key: str | None, params: str) -> None:
        daemon = self.daemon
        if face not in self.view.faces():
            return  # the face went away; the core finished the query
        replies: list[AdminReply] = []
        if not self.view.config.adminspace_read:  # zenohd: an error log and RESPONSE_FINAL alone
            log.error("Received GET on '%s' but adminspace.permissions.read=false in configuration", key)
        elif key is not None and face == self.face_id:
            self.stats.queries += 1
            try:
                replies = list(self.replies(key, params))
            except Exception:  # a broken payload must not leave the querier waiting
                self.stats.errors += 1
                log.exception("admin space: cannot answer %s", key)
                replies = []
        responder = EntityGlobalId(self.view.zid, RESPONDER_EID)
        for reply_key, encoding, payload in replies:
            body = Reply(Put(payload=payload, encoding=encoding))
            daemon.local_input(face, Response(rid, WireExpr(0, reply_key, True), body, qos=qos, responder=responder))
            self.stats.replies += 1
        daemon.local_input(face, ResponseFinal(rid, qos))
