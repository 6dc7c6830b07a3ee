"""Replies and the end of a query, from the :class:`~pyzenoh.session.types.Query`
objects that user code answers on any thread, handed to the loop: what the core's
:class:`~pyzenoh.session.types.Responder` does.
"""

from __future__ import annotations

from typing import Any

from pyzenoh.codec import Del, Err, Put
from pyzenoh.errors import UsageError
from pyzenoh.session import types as t
from pyzenoh.session.core import SessionCore
from pyzenoh.session.runtime.handoff import Handoff
from pyzenoh.session.runtime.state import RuntimeState


class QueryResponder:
    """Replies to a query, and its end, run by ``core`` in the loop through ``handoff``
    (none once the state is closed)."""

    def __init__(self, s: RuntimeState, core: SessionCore, handoff: Handoff) -> None:
        self.s = s
        self.core = core
        self.handoff = handoff

    def query_reply(
        self,
        qref: int,
        key: str,
        body: Any,
        priority: t.Priority | None,
        express: bool,
        block: bool,
    ) -> None:
        if not isinstance(body, Put | Del | Err):
            raise UsageError("bad reply body")
        prio = None if priority is None else priority.value
        core = self.core
        self.handoff.submit(lambda: core.query_reply(qref, key, body, prio, express, block))

    def query_finalize(self, qref: int) -> None:
        if self.s.closed:
            return
        core = self.core
        self.handoff.submit(lambda: core.query_finalize(qref))
