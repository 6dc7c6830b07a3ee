"""The msgq <-> Zenoh bridge inside ``pyzenoh router --msgq``.

Key space: a msgq ``send`` to (group, instance) is published as a Zenoh PUT on
``@msgq/<group>/<instance>``, and Zenoh PUTs on that key space reach msgq subscribers by
msgq's own rules. ``@msgq`` is a verbatim chunk, so plain wildcards such as ``**`` never
match it by accident; subscribe to ``@msgq/**`` (or ``@msgq/Boss/*``) to see msgq traffic.

Group and instance become single key chunks by percent-encoding every character a key
chunk cannot hold (``/ * $ # ? %`` and a leading ``@``) and the empty string as ``%``;
msgq's instance ``"*"`` ("every instance") is therefore the chunk ``%2A``.

The PUT carries:

* payload: the msgq body exactly as the client sent it (Skan bytes, opaque);
* encoding: ``application/x-bind10-skan``;
* attachment: the Skan-encoded msgq routing header (``from``, ``to``, ``seq``, ``reply``,
  ``group``, ``instance``, ``want_answer``), so a Zenoh program can answer with
  ``group_reply`` semantics by putting back a header with ``reply`` set.

A Zenoh PUT on ``@msgq/G/I`` is injected into the daemon as a ``send``: with a Skan
header in its attachment that header is used (its group/instance are taken from the key);
without one, the header is ``{type: send, from: "zenoh", to: "*", group: G, instance: I,
seq: 0}``. A payload that is not a Skan message is wrapped as ``{"zenoh_payload": bytes}``
so msgq clients always receive a decodable body. Messages the bridge publishes never come
back to it: the routing core never returns data to the face it came from.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from pyzenoh.codec import (
    Declare,
    DeclareKeyExpr,
    DeclareSubscriber,
    Encoding,
    Push,
    Put,
    WireExpr,
)
from pyzenoh.errors import PyZenohError
from pyzenoh.msgq.skan import SkanError, decode, encode

log = logging.getLogger(__name__)

KEY_PREFIX = "@msgq"
SKAN_ENCODING = Encoding.from_str("application/x-bind10-skan")
#: Header fields carried across the bridge (the rest of a header is daemon-internal).
CARRIED_FIELDS = ("type", "from", "to", "seq", "reply", "group", "instance", "want_answer")
#: The subscriber id the bridge's local face uses for ``@msgq/**``.
BRIDGE_SUBSCRIBER_ID = 1

_ESCAPED = set("/*$#?%")


def escape_chunk(text: str) -> str:
    if not text:
        return "%"
    out = []
    for i, ch in enumerate(text):
        if ch in _ESCAPED or (i == 0 and ch == "@"):
            out.append("".join(f"%{b:02X}" for b in ch.encode("utf-8")))
        else:
            out.append(ch)
    return "".join(out)


def unescape_chunk(chunk: str) -> str:
    if chunk == "%":
        return ""
    raw = bytearray()
    i = 0
    data = chunk.encode("utf-8")
    while i < len(data):
        if data[i] == 0x25 and i + 2 < len(data) and _is_hex(data[i + 1 : i + 3]):
            raw.append(int(data[i + 1 : i + 3], 16))
            i += 3
        else:
            raw.append(data[i])
            i += 1
    return raw.decode("utf-8", "replace")


def _is_hex(pair: bytes) -> bool:
    return len(pair) == 2 and all(c in b"0123456789abcdefABCDEF" for c in pair)


def msgq_key(group: str, instance: str) -> str:
    return f"{KEY_PREFIX}/{escape_chunk(group)}/{escape_chunk(instance)}"


def parse_msgq_key(key: str) -> tuple[str, str] | None:
    parts = key.split("/")
    if len(parts) != 3 or parts[0] != KEY_PREFIX:
        return None
    return unescape_chunk(parts[1]), unescape_chunk(parts[2])


class MsgqZenohBridge:
    """Connects a :class:`~pyzenoh.msgq.MsgqDaemon` to a router's local face.

    ``publish(message)`` hands a network message to the router as coming from the
    bridge's face; the router calls :meth:`on_zenoh` with what it routes to that face.
    """

    def __init__(self, daemon: Any, publish: Callable[[Any], None]) -> None:
        self.daemon = daemon
        self.publish = publish
        self._scopes: dict[int, str] = {}  # key ids the router declared to our face
        self.to_zenoh = 0
        self.from_zenoh = 0
        self.rejected = 0

    def start(self) -> None:
        """Declare the bridge's subscriber on the whole msgq key space."""
        self.publish(Declare(DeclareSubscriber(BRIDGE_SUBSCRIBER_ID, WireExpr(0, f"{KEY_PREFIX}/**", True))))
        self.daemon.set_observer(self)

    # --- msgq -> Zenoh -----------------------------------------------------------------

    def on_send(self, header: Mapping[str, Any], body: bytes | None, sender_lname: str) -> bool | None:
        group = header.get("group")
        instance = header.get("instance", "*")
        if not isinstance(group, str) or not isinstance(instance, str):
            return None
        carried = {k: header[k] for k in CARRIED_FIELDS if k in header}
        carried.setdefault("from", sender_lname)
        put = Put(payload=body or b"", encoding=SKAN_ENCODING, attachment=encode(carried))
        self.publish(Push(WireExpr(0, msgq_key(group, instance), True), put))
        self.to_zenoh += 1
        return None  # local delivery (and "no such recipient" answers) stay the daemon's

    # --- Zenoh -> msgq -----------------------------------------------------------------

    def on_zenoh(self, message: Any) -> None:
        if isinstance(message, Declare) and isinstance(message.body, DeclareKeyExpr):
            decl = message.body
            self._scopes[decl.expr_id] = self._resolve(decl.wire_expr) or ""
            return
        if not isinstance(message, Push) or not isinstance(message.body, Put):
            return
        key = self._resolve(message.wire_expr)
        target = parse_msgq_key(key) if key else None
        if target is None:
            self.rejected += 1
            return
        group, instance = target
        put = message.body
        header: dict[str, Any] = {"type": "send", "from": "zenoh", "to": "*", "seq": 0}
        if put.attachment:
            try:
                carried = decode(put.attachment)
                header.update({k: v for k, v in carried.items() if k in CARRIED_FIELDS})
            except SkanError:
                log.debug("attachment on %s is not a Skan header; using defaults", key)
        header["group"], header["instance"], header["type"] = group, instance, "send"
        payload = put.payload
        try:
            decode(payload)
        except SkanError:
            payload = encode({"zenoh_payload": bytes(payload)})
        try:
            self.daemon.inject(header, payload)
            self.from_zenoh += 1
        except PyZenohError as exc:
            self.rejected += 1
            log.warning("cannot inject %s into msgq: %s", key, exc)

    def _resolve(self, wire_expr: WireExpr) -> str | None:
        if wire_expr.scope == 0:
            return wire_expr.suffix
        prefix = self._scopes.get(wire_expr.scope)
        return None if prefix is None else prefix + wire_expr.suffix
