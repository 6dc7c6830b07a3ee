"""zenoh's ``CancellationToken``: cancels the gets, querier gets and liveliness gets
it was given to.

``cancel()`` ends each of them at once (a channel handler is closed, a callback gets no
more replies and its ``drop`` runs) and returns only once callbacks already running or
queued for them have finished, as zenoh does. A get started with a token that is
already cancelled raises a :class:`~pyzenoh.errors.UsageError` (a ``ZError``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from typing_extensions import override

from pyzenoh.errors import UsageError

__all__ = ["CancellationToken"]


class CancellationToken:
    """Cancels the operations it is passed to (``cancellation_token=``)."""

    __slots__ = ("_cancelled", "_lock", "_ops")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled = False
        self._ops: list[Callable[[], None]] = []

    @property
    def is_cancelled(self) -> bool:
        return self._cancelled

    def _register(self, cancel: Callable[[], None]) -> None:
        """Called before an operation starts: ``cancel`` will end it."""
        with self._lock:
            if self._cancelled:
                raise UsageError("the cancellation token is already cancelled")
            self._ops.append(cancel)

    def cancel(self) -> None:
        """Interrupt every associated operation (blocking until their callbacks are done)."""
        with self._lock:
            self._cancelled = True
            ops, self._ops = self._ops, []
        for op in ops:
            op()

    @override
    def __repr__(self) -> str:
        return f"CancellationToken(is_cancelled={self._cancelled}, operations={len(self._ops)})"
