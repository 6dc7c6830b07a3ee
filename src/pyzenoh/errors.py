"""The error families of pyzenoh, all under :class:`ZError` (zenoh-python's error type).

* :class:`PeerError` and its subclasses: the remote side sent something bad. They carry
  the CLOSE reason a link should send before it closes. Only that link is affected.
* :class:`UsageError` (a ``ValueError``): our own API was misused.
"""

from __future__ import annotations

from enum import IntEnum


class CloseReason(IntEnum):
    """Reasons carried by a transport CLOSE message (zenoh-wire.md 2.8)."""

    GENERIC = 0
    UNSUPPORTED = 1
    INVALID = 2
    MAX_SESSIONS = 3
    MAX_LINKS = 4
    EXPIRED = 5
    UNRESPONSIVE = 6
    CONNECTION_TO_SELF = 7


class ZError(Exception):
    """zenoh-python's ``zenoh.ZError``: the base of every exception pyzenoh raises, so
    ``except zenoh.ZError`` catches them all. Concrete errors also keep their Python
    base (a :class:`UsageError` is a ``ValueError``, a failed open a ``ConnectionError``)."""


class PyZenohError(ZError):
    """Base of every exception raised by pyzenoh (a :class:`ZError`)."""


class PeerError(PyZenohError):
    """The peer's input was bad; the link must be closed with :attr:`close_reason`."""

    close_reason: CloseReason = CloseReason.INVALID


class DecodeError(PeerError):
    """Bytes that do not decode: malformed, truncated, over a limit, or unsupported.

    ``offset`` is the position in the buffer being decoded where the problem was found.
    """

    def __init__(
        self,
        reason: str,
        offset: int = -1,
        close_reason: CloseReason = CloseReason.INVALID,
    ) -> None:
        self.reason = reason
        self.offset = offset
        self.close_reason = close_reason
        super().__init__(f"{reason} (at offset {offset})" if offset >= 0 else reason)


class UsageError(PyZenohError, ValueError):
    """Our API was called with arguments that cannot work."""


class SessionOpenError(PyZenohError, ConnectionError):
    """No endpoint accepted the session (zenoh raises ``ZError`` there too)."""
