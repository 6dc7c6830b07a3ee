"""zenoh's interceptors in a session (``downsampling``, ``low_pass_filter``, ``qos/network``),
per link and flow, as a zenoh 1.10.2 session applies them: measured, a real client with
an egress downsampling rule of 10 Hz on ``ds/**`` let 11 of 200 puts (5 ms apart) reach
the router in 1.1 s, and an egress low-pass filter of 100 bytes kept a 50-byte put and
dropped a 500-byte one.

The policy is :mod:`pyzenoh.interceptors` (the router's); this module only asks it, for
the data messages the session sends on a link (egress: what the pump takes from the
core) and receives from one (ingress: before the core sees them). A link's policies are
made when it opens (fresh downsampling state per link, as zenoh's per transport) and
dropped when it closes. Nothing here when no interceptor is configured.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable

from pyzenoh.codec import Del, NetworkMessage, Push, Put, Request, Response, decode_network_message
from pyzenoh.errors import DecodeError
from pyzenoh.interceptors import Drop, FaceAttrs, FacePolicy, Flow, Interceptors, Kind, Message, Rewrite
from pyzenoh.routing.intercepted import query_seen, reply_seen, rewritten_qos
from pyzenoh.session.core import SessionCore

log = logging.getLogger(__name__)

#: How a message's key is found: (face id, its wire expression's scope and suffix) -> key.
KeyOf = Callable[[int, int, str], str | None]


def link_policies(tree: dict[str, object], core: SessionCore) -> LinkPolicies | None:
    """The session's interceptors from its configuration (``downsampling``,
    ``low_pass_filter``, ``qos``), None when there are none."""
    interceptors = Interceptors.from_config(tree)
    if interceptors.empty:
        return None
    interceptors.check_supported()

    def local_key(fid: int, scope: int, suffix: str) -> str | None:
        prefix = core.local_key(scope)
        return None if prefix is None else prefix + suffix

    def remote_key(fid: int, scope: int, suffix: str) -> str | None:
        face = core.faces.get(fid)
        prefix = None if face is None else face.remote_exprs.get(scope)
        return None if prefix is None else prefix + suffix

    return LinkPolicies(interceptors, local_key, remote_key)


class LinkPolicies:
    """The session's interceptors per link (face id): ingress and egress."""

    def __init__(self, interceptors: Interceptors, local_key: KeyOf, remote_key: KeyOf) -> None:
        self.interceptors = interceptors
        self._local_key = local_key  # keys of the session's own expression ids (egress)
        self._remote_key = remote_key  # keys of a face's expression ids (ingress)
        self._egress: dict[int, FacePolicy] = {}
        self._ingress: dict[int, FacePolicy] = {}

    @property
    def has_ingress(self) -> bool:
        """Whether some item could apply to received messages (then a link delivers them
        one by one, not in runs)."""
        ic = self.interceptors
        subjects = [d.subjects for d in ic.downsampling]
        subjects += [lp.subjects for lp in ic.low_pass] + [q.subjects for q in ic.qos]
        return any(Flow.INGRESS in s.flows for s in subjects)

    def opened(self, fid: int, link_protocol: str, interfaces: tuple[str, ...]) -> None:
        face = FaceAttrs(fid, link_protocol, interfaces)
        egress = self.interceptors.for_face(face, Flow.EGRESS).or_none()
        ingress = self.interceptors.for_face(face, Flow.INGRESS).or_none()
        if egress is not None:
            self._egress[fid] = egress
        if ingress is not None:
            self._ingress[fid] = ingress

    def closed(self, fid: int) -> None:
        self._egress.pop(fid, None)
        self._ingress.pop(fid, None)

    def egress(
        self, fid: int, msg: NetworkMessage | bytes, priority: int, now: float
    ) -> tuple[NetworkMessage | bytes, int] | None:
        """``msg`` as it leaves on link ``fid`` and its priority lane, or None: dropped."""
        policy = self._egress.get(fid)
        if policy is None:
            return msg, priority
        if isinstance(msg, bytes):
            try:
                msg = decode_network_message(msg)
            except DecodeError:  # our own encoding: never expected
                log.exception("a message could not be read back")
                return None
        return self._apply(policy, fid, msg, priority, now, self._local_key)

    def ingress(self, fid: int, msg: NetworkMessage, now: float) -> NetworkMessage | None:
        """``msg`` received on link ``fid`` as the core should see it, or None: dropped."""
        policy = self._ingress.get(fid)
        if policy is None:
            return msg
        out = self._apply(policy, fid, msg, 0, now, self._remote_key)
        return None if out is None else out[0]

    @staticmethod
    def _apply(
        policy: FacePolicy, fid: int, msg: NetworkMessage, priority: int, now: float, key_of: KeyOf
    ) -> tuple[NetworkMessage, int] | None:
        seen = _seen(fid, msg, key_of)
        if seen is None:
            return msg, priority
        decision = policy.apply(seen, now)
        if isinstance(decision, Drop):
            log.debug("interceptor %s/%s dropped a %s on %s", decision.interceptor, decision.item, seen.kind, seen.key)
            return None
        if isinstance(decision, Rewrite) and isinstance(msg, Push | Request | Response):
            msg = dataclasses.replace(msg, qos=rewritten_qos(msg.qos, decision))
            if decision.priority is not None:
                priority = decision.priority
        return msg, priority


def _seen(fid: int, msg: NetworkMessage, key_of: KeyOf) -> Message | None:
    """The message as the interceptors see it; None for what they do not look at."""
    if isinstance(msg, Push | Request | Response):
        we = msg.wire_expr
        key = we.suffix if we.scope == 0 else key_of(fid, we.scope, we.suffix)
        if key is None:
            return None
        if isinstance(msg, Push):
            body = msg.body
            if isinstance(body, Put):
                return Message(Kind.PUT, key, len(body.payload), len(body.attachment or b""))
            if isinstance(body, Del):
                return Message(Kind.DELETE, key, 0, len(body.attachment or b""))
            return None
        if isinstance(msg, Request):
            return query_seen(key, msg)
        return reply_seen(key, msg)
    return None
