"""The admin space as a local face of :class:`~pyzenoh.router.daemon.RouterDaemon` (a
client, like the msgq bridge): it declares one queryable, ``@/<zid>/router/**``, exactly
the key zenohd's admin queryable declares, follows the key expressions the router
declares to it, and answers each query on the next loop turn: every reply (responder:
the router's zid, entity 1, as zenohd's), then RESPONSE_FINAL.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

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
from pyzenoh.router.admin.writes import config_path

if TYPE_CHECKING:
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


class AdminSpace(Answers):
    """The admin space of a :class:`RouterDaemon`: a local face answering ``@/<zid>/router/**``."""

    def attach(self) -> None:
        """Add the admin face to the daemon and declare ``@/<zid>/router/**`` on it."""
        if self.face_id is not None:
            return
        daemon = self.daemon
        face_zid = ZenohId((daemon.zid.value ^ ADMIN_FACE_XOR) or 1)
        self.face_id = daemon.add_local_face(face_zid, self._on_send, WhatAmI.CLIENT, name="adminspace")
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
        self.face_id = None
        self.daemon.remove_local_face(face)
        self._key_ids.clear()

    def _on_send(self, send: Send) -> None:
        msg = send.message
        if isinstance(msg, Request):
            face = self.face_id
            if face is None:
                return
            key = self._resolve(msg.wire_expr)
            if key is None:
                self.stats.unresolved += 1
                key = self.daemon.core.key_of(face, msg, incoming=False)
            params = msg.body.parameters
            # Answer on the next loop turn: the daemon is still delivering the request
            # (its other destinations may not have it yet) when it calls this sink.
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                self._answer(face, msg.request_id, msg.qos, key, params)
            else:
                loop.call_soon(self._answer, face, msg.request_id, msg.qos, key, params)
        elif isinstance(msg, Push):
            self._on_write(msg)
        elif isinstance(msg, Declare):
            self._key_ids.on_declare(msg.body)
        # Nothing else is expected: the face declares no subscriber and no interest.

    def _on_write(self, msg: Push) -> None:
        """A PUT or DELETE on ``@/<zid>/router/config/**`` (adminspace.rs's ``send_push``)."""
        key = self._resolve(msg.wire_expr)
        kind = "DELETE" if isinstance(msg.body, Del) else "PUT"
        if key is None:
            log.error("admin space: %s on an unknown key expression %s", kind, msg.wire_expr)
            return
        if not self.daemon.config.adminspace_write or self.on_config is None:
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
        if face not in daemon._faces:
            return  # the face went away; the core finished the query
        replies: list[AdminReply] = []
        if not daemon.config.adminspace_read:  # zenohd: an error log and RESPONSE_FINAL alone
            log.error("Received GET on '%s' but adminspace.permissions.read=false in configuration", key)
        elif key is not None and face == self.face_id:
            self.stats.queries += 1
            try:
                replies = list(self.replies(key, params))
            except Exception:  # a broken payload must not leave the querier waiting
                self.stats.errors += 1
                log.exception("admin space: cannot answer %s", key)
                replies = []
        responder = EntityGlobalId(daemon.zid, RESPONDER_EID)
        for reply_key, encoding, payload in replies:
            body = Reply(Put(payload=payload, encoding=encoding))
            daemon.local_input(face, Response(rid, WireExpr(0, reply_key, True), body, qos=qos, responder=responder))
            self.stats.replies += 1
        daemon.local_input(face, ResponseFinal(rid, qos))
