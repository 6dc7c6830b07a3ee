"""BIND 10's msgq for pyzenoh: the "Skan" wire format, a compatible daemon, and a client.

BIND 10 (ISC's successor to BIND 9, 2009-2014) connected its processes through ``msgq``, a small
publish/subscribe daemon on a Unix stream socket. From October 2009 to June 2010 its messages
used the binary "Skan" encoding; this package implements that era (``bind10-20100602-release``)
and the parts of the 2009 design text BIND 10 never built.

Modules
-------
* :mod:`pyzenoh.msgq.skan`: the item codec (``encode``/``decode``, dialects ``"bind10"`` and
  ``"seed"``, :class:`SkanError`, :class:`SkanEncodeError`, limits).
* :mod:`pyzenoh.msgq.frame`: socket framing (4-byte total length, 2-byte header length,
  header, optional body) and the streaming :class:`FrameReader`.
* :mod:`pyzenoh.msgq.protocol`: header vocabulary, subscription subtypes, message helpers.
* :mod:`pyzenoh.msgq.core`: the daemon as a sans-IO state machine (:class:`MsgqCore`),
  with the bridge hook (observer ``on_send`` and ``inject``) and the connection deadlines.
* :mod:`pyzenoh.msgq.flow`: sans-IO per-client output queue (limits, stall detection) and the
  rate-limited log of limit events.
* :mod:`pyzenoh.msgq.server`: asyncio glue (:class:`MsgqDaemon`, :func:`serve_msgq`).
* :mod:`pyzenoh.msgq.client`: the blocking :class:`Session`, like ``isc.cc.Session``.

Quick start::

    import asyncio
    from pyzenoh.msgq import serve_msgq, Session

    asyncio.run(serve_msgq("/tmp/msgq.sock", ["tcp/127.0.0.1:9912"]))   # in one process

    cc = Session("/tmp/msgq.sock")                                      # in another
    cc.group_subscribe("demo")
    cc.group_sendmsg({"hello": "world"}, "demo")

Bridging (e.g. to Zenoh): give the daemon an object with ``on_send(header, body,
sender_lname)`` (``MsgqDaemon(observer=...)`` or ``daemon.set_observer(...)``) to see every
``send`` a local client routes, and call ``daemon.inject(header, body)`` on the daemon's loop to
deliver a message from elsewhere to the local subscribers by the same rules. See
:mod:`pyzenoh.msgq.core` for the exact contract.
"""

from __future__ import annotations

from pyzenoh.msgq.client import ProtocolError, Session, SessionError, SessionTimeout
from pyzenoh.msgq.core import Counters, Deliver, Disconnect, MsgqCore, MsgqObserver
from pyzenoh.msgq.frame import Frame, FrameReader, decode_frame, encode_frame
from pyzenoh.msgq.protocol import MsgType, Subtype, encode_message
from pyzenoh.msgq.server import (
    DEFAULT_SOCKET_FILE,
    SOCKET_FILE_ENV,
    MsgqDaemon,
    SlowReaderPolicy,
    serve_msgq,
)
from pyzenoh.msgq.skan import (
    Dialect,
    SkanEncodeError,
    SkanError,
    SkanValue,
    decode,
    encode,
)

__all__ = [
    "DEFAULT_SOCKET_FILE",
    "SOCKET_FILE_ENV",
    "Counters",
    "Deliver",
    "Dialect",
    "Disconnect",
    "Frame",
    "FrameReader",
    "MsgType",
    "MsgqCore",
    "MsgqDaemon",
    "MsgqObserver",
    "ProtocolError",
    "Session",
    "SessionError",
    "SessionTimeout",
    "SkanEncodeError",
    "SkanError",
    "SkanValue",
    "SlowReaderPolicy",
    "Subtype",
    "decode",
    "decode_frame",
    "encode",
    "encode_frame",
    "encode_message",
    "serve_msgq",
]
