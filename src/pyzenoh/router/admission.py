"""Which accepted connections may start a handshake, and which sessions may open.

zenohd's limits (``transport/unicast/accept_pending``, ``max_sessions``) plus pyzenoh's
``pyzenoh/limits/max_links_per_address``. A connection over a limit is dropped at once,
before any handshake, as zenohd drops links over its accept limits; a session over
``max_sessions`` is closed with CLOSE(MAX_SESSIONS) by the daemon. Every refusal is
counted by limit (``refused``, in the admin space metrics) and logged once per limit:
a flood must not flood the log.
"""

from __future__ import annotations

import logging

from pyzenoh.router.config import RouterConfig

log = logging.getLogger(__name__)


class Admission:
    """Connections in handshake and connections per address, for one listening router."""

    def __init__(self, config: RouterConfig, refused: dict[str, int]) -> None:
        self.config = config
        #: RouterConfig field name of the limit -> connections it refused.
        self.refused = refused
        self._handshaking: set[int] = set()  # id() of accepted connections not established
        self._address_of: dict[int, str] = {}  # id() of every accepted connection -> its IP
        self._per_address: dict[str, int] = {}
        self._logged: set[str] = set()

    def admit(self, key: int, address: str) -> bool:
        """May the connection ``key`` (its ``id()``) from ``address`` start a handshake?"""
        if len(self._handshaking) >= self.config.accept_pending:
            return self.refuse("accept_pending", address)
        if self._per_address.get(address, 0) >= self.config.max_links_per_address:
            return self.refuse("max_links_per_address", address)
        self._handshaking.add(key)
        self._address_of[key] = address
        self._per_address[address] = self._per_address.get(address, 0) + 1
        return True

    def refuse(self, limit: str, address: str) -> bool:
        """Count (and log once) a refusal by ``limit``; always False."""
        self.refused[limit] = self.refused.get(limit, 0) + 1
        if limit not in self._logged:
            self._logged.add(limit)
            log.warning(
                "refusing a connection from %s: %s (%d) reached (logged once; counted in the admin space metrics)",
                address,
                limit,
                getattr(self.config, limit),
            )
        return False

    def established(self, key: int) -> None:
        """The connection finished its handshake."""
        self._handshaking.discard(key)

    def in_handshake(self, key: int) -> bool:
        return key in self._handshaking

    def closed(self, key: int) -> None:
        """The connection is gone (in handshake or not)."""
        self._handshaking.discard(key)
        address = self._address_of.pop(key, None)
        if address is None:
            return
        left = self._per_address[address] - 1
        if left:
            self._per_address[address] = left
        else:
            del self._per_address[address]
