"""The session API's declared entities: subscribers, queryables, listeners, tokens.

An :class:`Entity` has a key expression, a global id and the core call that undeclares
it (run once, in the loop); a :class:`Receiver` also delivers items to its handler (a
channel is read with ``recv``/``try_recv``/iteration). Declared entities live until they
are undeclared, dropped (as zenoh-python: :mod:`pyzenoh.session.lifetime`) or the
session closes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, Self, TypeVar

from pyzenoh.errors import UsageError
from pyzenoh.keyexpr import KeyExpr
from pyzenoh.session import types as t
from pyzenoh.session.handlers import Handler
from pyzenoh.session.lifetime import Undeclaration
from pyzenoh.session.runtime import Runtime

H = TypeVar("H")


class Entity:
    """A declared entity: its key expression, global id and undeclaration (also when it
    is dropped, unless ``background``)."""

    def __init__(
        self, rt: Runtime, key_expr: KeyExpr, undeclare: Callable[[], None], eid: int = 0, *, background: bool = False
    ) -> None:
        self._rt = rt
        self._key_expr = key_expr
        self._undeclaration = Undeclaration(self, rt, undeclare, background=background)
        self._eid = eid

    @property
    def key_expr(self) -> KeyExpr:
        return self._key_expr

    @property
    def id(self) -> t.EntityGlobalId:
        """This entity's global id: its session's zid and its entity id."""
        return t.EntityGlobalId(self._rt.zid, self._eid)

    @property
    def _undeclared(self) -> bool:
        return self._undeclaration.done

    def _undeclare(self) -> None:
        self._undeclaration.run()


class Receiver(Entity, Generic[H]):
    """An entity that delivers items to a handler (channel or callback); one with a
    callback (no handler object) stays declared when dropped, as zenoh-python's."""

    def __init__(self, rt: Runtime, key_expr: KeyExpr, undeclare: Callable[[], None], handler: H, eid: int = 0) -> None:
        super().__init__(rt, key_expr, undeclare, eid, background=handler is None)
        self._handler = handler

    @property
    def handler(self) -> H:
        return self._handler

    def _channel(self) -> Any:
        if not isinstance(self._handler, Handler):
            raise UsageError("this entity has a callback, not a channel")
        return self._handler

    def try_recv(self) -> Any:
        return self._channel().try_recv()

    def recv(self, timeout: float | None = None) -> Any:
        return self._channel().recv(timeout)

    def __iter__(self) -> Any:
        return iter(self._channel())

    def undeclare(self) -> None:
        self._undeclare()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.undeclare()


class Subscriber(Receiver[H]):
    """Samples matching a key expression, to a callback or a channel."""


class Queryable(Receiver[H]):
    """Queries matching a key expression, to a callback or a channel."""


class MatchingListener(Receiver[H]):
    """Changes of a publisher's or querier's matching status, to a callback or a channel."""


class TransportEventsListener(Receiver[H]):
    """The session's transport opening (history) and closing, as TransportEvents."""


class LinkEventsListener(Receiver[H]):
    """The session's link added (history) and removed, as LinkEvents."""


class LivelinessToken(Entity):
    def undeclare(self) -> None:
        self._undeclare()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.undeclare()
