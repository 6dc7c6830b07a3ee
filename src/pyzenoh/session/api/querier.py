"""Queriers: gets on one key expression with settings fixed at declaration.

:class:`QuerierSettings` checks them once (the same checks as a session's ``get``); a
:class:`Querier` knows whether queryables match it (a CurrentFuture K|Q interest in the
core) and tells its matching listeners.
"""

from __future__ import annotations

import functools
from typing import Any, Self

from pyzenoh.errors import UsageError
from pyzenoh.keyexpr import KeyExpr
from pyzenoh.session import instrumentation as ins
from pyzenoh.session import types as t
from pyzenoh.session.api.arguments import (
    CALL_TIMEOUT_S,
    attach_token,
    block_of,
    check_token,
    consolidation_of,
    locality_of,
    prio_of,
    target_of,
    timeout_of,
)
from pyzenoh.session.api.entities import Entity, MatchingListener
from pyzenoh.session.api.operations import matching_registration, querier_get
from pyzenoh.session.cancel import CancellationToken
from pyzenoh.session.handlers import make_sink
from pyzenoh.session.runtime import Runtime


class QuerierSettings:
    """What a querier was declared with; its gets use it."""

    __slots__ = ("accept", "block", "consolidation", "destination", "express", "priority", "target", "timeout")

    def __init__(
        self,
        target: t.QueryTarget | None,
        consolidation: Any,
        accept_replies: t.ReplyKeyExpr | None,
        timeout: float | None,
        congestion_control: t.CongestionControl | None,
        priority: t.Priority | None,
        express: bool | None,
        allowed_destination: t.Locality | None,
    ) -> None:
        self.target = target if target is not None else t.QueryTarget.BEST_MATCHING
        target_of(self.target)
        consolidation_of(consolidation)
        self.consolidation = consolidation
        if accept_replies is not None and not isinstance(accept_replies, t.ReplyKeyExpr):
            raise UsageError(f"accept_replies must be a ReplyKeyExpr, not {accept_replies!r}")
        self.accept = accept_replies if accept_replies is not None else t.ReplyKeyExpr.MATCHING_QUERY
        self.timeout = timeout_of(timeout)
        block_of(congestion_control, default=True)
        self.block = congestion_control
        prio_of(priority)
        self.priority = priority
        self.express = express
        self.destination = allowed_destination
        locality_of(allowed_destination, "allowed_destination")


class Querier(Entity):
    """Queries on one key expression with settings fixed at declaration (``get``), and
    whether queryables match them (``matching_status``, matching listeners)."""

    def __init__(self, rt: Runtime, key_expr: KeyExpr, local: int, settings: QuerierSettings) -> None:
        super().__init__(rt, key_expr, functools.partial(rt.core.undeclare_querier, local), local)
        self._local = local
        self._settings = settings

    @property
    def accept_replies(self) -> t.ReplyKeyExpr:
        return self._settings.accept

    @property
    def matching_status(self) -> t.MatchingStatus:
        local = self._local
        return t.MatchingStatus(self._rt.call(lambda: self._rt.core.querier_matching(local), CALL_TIMEOUT_S))

    def get(
        self,
        handler: Any = None,
        *,
        parameters: t.Parameters | dict[str, str] | str | None = None,
        payload: Any = None,
        encoding: t.Encoding | str | None = None,
        attachment: Any = None,
        source_info: t.SourceInfo | None = None,
        cancellation_token: CancellationToken | None = None,
        timestamp_instrumentation: ins.TimestampInstrumentation | None = None,
    ) -> Any:
        """Query the querier's key expression; returns the handler (a channel of
        :class:`Reply` by default)."""
        rt = self._rt
        if rt.closed or self._undeclared:
            raise UsageError("the querier is undeclared or its session closed")
        check_token(cancellation_token)
        sink, returned = make_sink(handler, asynchronous=False, dispatcher=rt.dispatcher)
        call = querier_get(
            rt,
            self.key_expr,
            self._settings,
            sink,
            parameters,
            payload,
            encoding,
            attachment,
            source_info,
            timestamp_instrumentation,
        )
        rid = rt.call(call, CALL_TIMEOUT_S)
        attach_token(rt, cancellation_token, functools.partial(rt.core.cancel_get, rid))
        return returned

    def declare_matching_listener(self, handler: Any = None) -> MatchingListener[Any]:
        rt = self._rt
        sink, returned = make_sink(handler, asynchronous=False, dispatcher=rt.dispatcher)
        registration = matching_registration(rt, self._local, sink, querier=True)
        rt.call(registration.add, CALL_TIMEOUT_S)
        return MatchingListener(rt, self.key_expr, registration.remove, returned)

    def undeclare(self) -> None:
        self._undeclare()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.undeclare()
