"""What a dropped session or entity does, as zenoh-python 1.10's (measured with the real
binding against a real router, ``tests/session/test_lifetime.py``):

* a session no longer referenced is closed (CLOSE sent, its declarations gone, its threads
  ended), even while some of its entities are still referenced: entities do not keep it
  alive; one held only in a reference cycle is closed when the collector frees it;
* a publisher, a querier or a liveliness token no longer referenced is undeclared;
* a subscriber, queryable or listener is undeclared when dropped if it delivers to a
  channel, and stays declared (in the background, until the session closes) if it
  delivers to a callback.

Finalizers run wherever the collector runs, the session's own loop thread included and
in the middle of a core operation: they never call into the core, they hand the work to
the loop (``call_soon_threadsafe``), and an explicit ``undeclare()``/``close()`` detaches
them, so neither ever runs twice.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyzenoh.session.runtime import Runtime

#: Closings started by finalizers on an event loop, held until they finish (a task that
#: nothing references may be collected before it runs).
_closing: set[asyncio.Future[None]] = set()


class Undeclaration:
    """An entity's undeclaration (``fn``, a core call run in the loop): run once, by
    :meth:`run` or, unless ``background``, when ``owner`` is garbage-collected."""

    __slots__ = ("_finalizer", "_fn", "_rt")

    def __init__(self, owner: object, rt: Runtime, fn: Callable[[], None], *, background: bool) -> None:
        self._rt = rt
        self._fn: Callable[[], None] | None = fn
        self._finalizer: weakref.finalize[[], object] | None = None
        if not background:
            self._finalizer = weakref.finalize(owner, self._dropped)
            self._finalizer.atexit = False  # at exit the session's close does it

    @property
    def done(self) -> bool:
        """Undeclared already (or being undeclared)."""
        return self._fn is None

    def run(self) -> None:
        """Undeclare now (a no-op once done, or once the session is closed)."""
        fn, self._fn = self._fn, None
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        if fn is not None and not self._rt.closed:
            self._rt.submit(fn)

    def _dropped(self) -> None:
        fn, self._fn = self._fn, None
        rt = self._rt
        if fn is None or rt.closed:
            return
        try:
            rt.loop.call_soon_threadsafe(rt.submit, fn)
        except RuntimeError:  # the loop is closed: so is the session
            pass


def close_on_drop(owner: object, close: Callable[[], None]) -> weakref.finalize[[], object]:
    """Run ``close`` once when ``owner`` (a session) is garbage-collected, or at exit; the
    returned finalizer, called, closes now (and never again)."""
    return weakref.finalize(owner, close)


def aclose_on_loop(rt: Runtime, then: Callable[[], None] | None = None) -> None:
    """Start closing ``rt`` on its own loop, from any thread, without waiting for it;
    ``then`` runs once it is closed."""

    def start() -> None:
        if rt.closed and not rt.links:
            if then is not None:
                then()
            return
        task = asyncio.ensure_future(rt.aclose())
        _closing.add(task)
        task.add_done_callback(_closing.discard)
        if then is not None:
            task.add_done_callback(lambda _: then())

    try:
        rt.loop.call_soon_threadsafe(start)
    except RuntimeError:  # the loop is closed already
        pass
