"""The runtime as the core's :class:`~pyzenoh.session.types.Responder`: replies and the
end of a query, from the :class:`~pyzenoh.session.types.Query` objects that user code
answers on any thread, handed to the loop.
"""

from __future__ import annotations

from typing import Any

from typing_extensions import override

from pyzenoh.codec import Del, Err, Put
from pyzenoh.errors import UsageError
from pyzenoh.session import types as t
from pyzenoh.session.runtime.handoff import Handoff


class Responding(Handoff):
    """Replies to a query, and its end."""

    @override
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
        self.submit(lambda: self.core.query_reply(qref, key, body, prio, express, block))

    @override
    def query_finalize(self, qref: int) -> None:
        if self.closed:
            return
        self.submit(lambda: self.core.query_finalize(qref))
