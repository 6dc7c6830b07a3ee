"""msgq header vocabulary shared by the daemon and the client.

Header fields (all in the Skan-encoded frame header):

========== ========================================================================
``type``   command: ``getlname``, ``subscribe``, ``unsubscribe``, ``send``, ``stats``,
           ``ping`` (answered with ``pong``); anything else is ignored by the daemon
``from``   sender lname (passed through unchanged unless the daemon enforces it)
``to``     ``"*"`` (by subscription) or one lname
``group``  group name
``instance`` instance name, ``"*"`` by default
``seq``    per-sender sequence number (INT)
``reply``  on a reply: the ``seq`` being answered (INT)
``subtype`` on ``subscribe``: ``normal`` (default), ``meonly`` or ``promisc``
``want_answer`` on ``send``: ask the daemon for a "no such recipient" error reply
========== ========================================================================

A seed-dialect peer sends every scalar as DATA, so its headers decode to ``bytes`` values;
:func:`normalize_seed_header` turns those back into the ``str``/``int``/``bool`` a typed peer
would have sent, so the routing code sees one shape.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from pyzenoh.msgq.frame import encode_frame
from pyzenoh.msgq.skan import Dialect, SkanValue, encode

__all__ = [
    "DAEMON_LNAME",
    "NO_RECIPIENT_CODE",
    "NO_RECIPIENT_TEXT",
    "WILDCARD",
    "Header",
    "MsgType",
    "Subtype",
    "encode_message",
    "is_true",
    "normalize_seed_header",
]

Header = dict[str, SkanValue]

WILDCARD = "*"
"""``to`` value meaning "by subscription", and ``instance`` value meaning "every instance"."""
DAEMON_LNAME = "msgq"
"""``from`` of the daemon's own "no such recipient" replies (never a client lname)."""
NO_RECIPIENT_CODE = -1
NO_RECIPIENT_TEXT = "No such recipient"


class MsgType(StrEnum):
    """Values of the ``type`` header field."""

    GETLNAME = "getlname"
    SUBSCRIBE = "subscribe"
    UNSUBSCRIBE = "unsubscribe"
    SEND = "send"
    STATS = "stats"
    PING = "ping"
    PONG = "pong"


class Subtype(StrEnum):
    """Subscription subtypes from the 2009 design text (BIND 10's Python msgq ignored them).

    * ``normal``: receives ``to: "*"`` messages whose (group, instance) matches the
      subscription: the same instance, or any instance when subscribed with ``"*"``.
    * ``meonly``: receives no ``"*"`` traffic, only messages addressed to its own lname. A
      directed message reaches its lname whatever the subscriptions (as in BIND 10), so a
      ``meonly`` subscription only records interest (it shows in ``stats``).
    * ``promisc``: for debugging: receives every message of the matching (group, instance),
      including messages addressed to other lnames. It never receives its own sends.
    """

    NORMAL = "normal"
    MEONLY = "meonly"
    PROMISC = "promisc"


_INT_FIELDS = frozenset({"seq", "reply"})
_BOOL_FIELDS = frozenset({"want_answer"})
_DECIMAL = re.compile(r"-?[0-9]{1,64}")


def normalize_seed_header(header: Mapping[str, SkanValue]) -> Header:
    """Top-level DATA values of a seed header as ``str``, ``seq``/``reply`` as ``int``, flags as ``bool``.

    Values that are not valid UTF-8 stay ``bytes``; nested values are left alone.
    """
    out: Header = {}
    for key, value in header.items():
        if isinstance(value, bytes):
            try:
                text = value.decode("utf-8")
            except UnicodeDecodeError:
                out[key] = value
                continue
            if key in _INT_FIELDS and _DECIMAL.fullmatch(text):
                out[key] = int(text)
            elif key in _BOOL_FIELDS:
                out[key] = is_true(text)
            else:
                out[key] = text
        else:
            out[key] = value
    return out


def is_true(value: object) -> bool:
    """Truth of a flag as either dialect sends it (BOOL, or the text ``True``/``1``)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes")
    if isinstance(value, int):
        return value != 0
    return False


def encode_message(
    header: Mapping[str, Any],
    body: Mapping[str, Any] | bytes | None = None,
    *,
    dialect: Dialect = Dialect.BIND10,
) -> bytes:
    """A whole socket frame: ``header`` Skan-encoded in ``dialect``, ``body`` encoded the same
    way if it is a mapping, sent as it is if it is bytes, absent if ``None``."""
    encoded_header = encode(header, dialect=dialect)
    if body is None or isinstance(body, (bytes, bytearray, memoryview)):
        encoded_body = bytes(body) if body is not None else None
    else:
        encoded_body = encode(body, dialect=dialect)
    return encode_frame(encoded_header, encoded_body)
