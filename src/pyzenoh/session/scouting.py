"""Scouting in zenoh-python's shape, and finding a router for a session without endpoints.

::

    scout = pyzenoh.scout(what="router", config=cfg)   # -> Scout of Hello
    for hello in scout:          # or scout.recv(), scout.try_recv(); callbacks work too
        print(hello.zid, hello.whatami, hello.locators)
        break
    scout.stop()

As in zenoh, scouting runs until ``stop()``, the end of the ``with`` block or the drop of
the Scout object, and reports every HELLO it gets, so a node shows up again at every
SCOUT round (after 1, 2, 4, then every 8 s). ``config`` supplies
``scouting/multicast/{address,interface,ttl}``; after ``stop()``, ``recv`` and
``try_recv`` raise :class:`ChannelClosedError` (zenoh: ``ZError("Stopped scout")``).

A session whose config has no ``connect/endpoints`` scouts (when
``scouting/multicast/enabled``, the default) for the kinds listed in
``scouting/multicast/autoconnect`` (zenoh's default: router, peer, client) and connects
to the first locator that accepts, all within ``scouting/timeout`` (3 s), as a zenoh
client does. pyzenoh then falls back to ``tcp/127.0.0.1:7447`` where zenoh would fail.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
from collections.abc import Awaitable, Callable, Iterator, Sequence
from types import TracebackType
from typing import Any, Generic, Self, TypeVar

from typing_extensions import override

from pyzenoh.codec.primitives import WhatAmI, ZenohId
from pyzenoh.codec.scouting import Hello as HelloMessage
from pyzenoh.codec.scouting import WhatAmIMatcher as WireMatcher
from pyzenoh.errors import PyZenohError, UsageError
from pyzenoh.scouting.core import ScoutingSettings, parse_scouting
from pyzenoh.scouting.udp import UdpScouter
from pyzenoh.session.config import Config, to_config
from pyzenoh.session.handlers import ChannelClosedError, Handler, Sink, make_sink

__all__ = ["Hello", "Scout", "WhatAmI", "WhatAmIMatcher", "connect_scouted", "scout"]

log = logging.getLogger(__name__)

H = TypeVar("H")
T = TypeVar("T")

#: Bound on opening the scouting sockets in the background thread.
START_TIMEOUT_S = 10.0
#: Bound on the background thread ending after stop().
STOP_TIMEOUT_S = 5.0


class Hello:
    """A node found by scouting: its kind, id and locators (zenoh-python's ``Hello``)."""

    __slots__ = ("_locators", "_whatami", "_zid")

    def __init__(self, whatami: WhatAmI, zid: ZenohId, locators: Sequence[str]) -> None:
        self._whatami = whatami
        self._zid = zid
        self._locators = tuple(locators)

    @classmethod
    def from_message(cls, msg: HelloMessage) -> Hello:
        return cls(msg.whatami, msg.zid, msg.locators)

    @property
    def whatami(self) -> WhatAmI:
        return self._whatami

    @property
    def zid(self) -> ZenohId:
        return self._zid

    @property
    def locators(self) -> list[str]:
        return list(self._locators)

    @override
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Hello):
            return NotImplemented
        return (self._whatami, self._zid, self._locators) == (other._whatami, other._zid, other._locators)

    @override
    def __hash__(self) -> int:
        return hash((self._whatami, self._zid, self._locators))

    @override
    def __str__(self) -> str:  # zenoh's text: Hello { zid: abcd, whatami: Router, locators: [...] }
        kind = str(self._whatami).capitalize()
        return f"Hello {{ zid: {self._zid}, whatami: {kind}, locators: [{', '.join(self._locators)}] }}"

    __repr__ = __str__


class WhatAmIMatcher:
    """zenoh-python's ``WhatAmIMatcher``: a set of node kinds, from ``"router|peer"``
    or built with ``WhatAmIMatcher.empty().router().peer()``."""

    __slots__ = ("_m",)

    def __init__(self, matcher: str | None = None) -> None:
        self._m = WireMatcher.empty() if matcher is None else WireMatcher.parse(matcher)

    @classmethod
    def _of(cls, wire: WireMatcher) -> WhatAmIMatcher:
        m = object.__new__(cls)
        m._m = wire
        return m

    @classmethod
    def empty(cls) -> WhatAmIMatcher:
        return cls._of(WireMatcher.empty())

    @property
    def wire(self) -> WireMatcher:
        return self._m

    def router(self) -> WhatAmIMatcher:
        return WhatAmIMatcher._of(self._m | WireMatcher.ROUTER)

    def peer(self) -> WhatAmIMatcher:
        return WhatAmIMatcher._of(self._m | WireMatcher.PEER)

    def client(self) -> WhatAmIMatcher:
        return WhatAmIMatcher._of(self._m | WireMatcher.CLIENT)

    def is_empty(self) -> bool:
        return not self._m

    def matches(self, whatami: WhatAmI) -> bool:
        return self._m.matches(whatami)

    @override
    def __eq__(self, other: object) -> bool:
        if isinstance(other, WhatAmIMatcher):
            return self._m == other._m
        return NotImplemented

    @override
    def __hash__(self) -> int:
        return hash(self._m)

    @override
    def __str__(self) -> str:
        return str(self._m)

    @override
    def __repr__(self) -> str:
        return f"WhatAmIMatcher({str(self._m)!r})"


def _matcher(what: Any, default: WireMatcher) -> WireMatcher:
    if what is None:
        return default
    if isinstance(what, WhatAmIMatcher):
        return what.wire
    if isinstance(what, str | WhatAmI | WireMatcher | list | tuple):
        return WireMatcher.parse(what)
    raise UsageError(f"what must be a WhatAmIMatcher, a WhatAmI or a string like 'router|peer', not {what!r}")


def _settings(cfg: Config) -> ScoutingSettings:
    mode = cfg.get("mode", "peer")
    return parse_scouting(cfg.to_dict(), mode if mode in ("router", "peer", "client") else "peer")


class _Runner:
    """The scouting thread and its loop; it holds no reference to the :class:`Scout`, so
    dropping the Scout stops scouting (as in zenoh-python)."""

    def __init__(self, sink: Sink, scouter: UdpScouter) -> None:
        self.sink = sink
        self.scouter = scouter
        self.stopped = False
        self._loop = asyncio.new_event_loop()
        self._task: asyncio.Task[None] | None = None
        self._started: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._thread = threading.Thread(target=self._run, name="pyzenoh-scout", daemon=True)

    def start(self) -> None:
        self._thread.start()
        try:
            self._started.result(START_TIMEOUT_S)
        except BaseException:
            self.stop()
            raise

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._task = self._loop.create_task(self._main())
            with contextlib.suppress(asyncio.CancelledError):
                self._loop.run_until_complete(self._task)
        finally:
            self.sink.close()  # ends a channel, calls a callback's drop
            self._loop.close()

    async def _main(self) -> None:
        try:
            await self.scouter.start()
        except BaseException as exc:  # noqa: BLE001  (handed to the thread that waits)
            self._started.set_exception(exc)
            return
        self._started.set_result(None)
        try:
            async for msg in self.scouter:
                if not self.sink.full:  # a full channel drops: the node answers again
                    self.sink.push(Hello.from_message(msg))
        finally:
            self.scouter.close()

    def stop(self) -> None:
        if self.stopped:
            return
        self.stopped = True

        def cancel() -> None:
            if self._task is not None:
                self._task.cancel()

        with contextlib.suppress(RuntimeError):  # the loop already ended
            self._loop.call_soon_threadsafe(cancel)
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(STOP_TIMEOUT_S)


class Scout(Generic[H]):
    """Running scouting (zenoh-python's ``Scout``); ``stop()`` or dropping it ends it."""

    def __init__(self, runner: _Runner, handler: H) -> None:
        self._runner = runner
        self._handler = handler

    @property
    def handler(self) -> H:
        return self._handler

    def stop(self) -> None:
        """Stop scouting (idempotent); a channel handler then reports the end."""
        self._runner.stop()

    def _channel(self) -> Handler[Hello]:
        if self._runner.stopped:
            raise ChannelClosedError("Stopped scout")
        sink = self._runner.sink
        if not isinstance(sink, Handler):
            raise UsageError("this Scout has a callback, not a channel")
        return sink

    def try_recv(self) -> Hello | None:
        return self._channel().try_recv()

    def recv(self, timeout: float | None = None) -> Hello:
        return self._channel().recv(timeout)

    def __iter__(self) -> Iterator[Hello]:
        return self

    def __next__(self) -> Hello:
        try:
            return self._channel().recv()
        except ChannelClosedError:
            raise StopIteration from None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self._runner.stop()

    @override
    def __repr__(self) -> str:
        return f"Scout(what={self._runner.scouter.what}, stopped={self._runner.stopped})"


def scout(handler: Any = None, what: Any = None, config: Any = None) -> Scout[Any]:
    """Scout for Zenoh nodes (zenoh-python's ``zenoh.scout``).

    ``handler``: None / a channel (returns a :class:`Scout` to iterate) or a callback
    (called in the scouting thread); ``what``: ``"router|peer"``, a WhatAmI or a
    WhatAmIMatcher (default: every kind); ``config``: a :class:`Config`, dict or JSON5.
    """
    cfg = to_config(config)
    settings = _settings(cfg)
    matcher = _matcher(what, WireMatcher.all())
    sink, returned = make_sink(handler, asynchronous=False)
    scouter = UdpScouter(matcher, address=settings.address, interface=settings.interface, ttl=settings.ttl)
    runner = _Runner(sink, scouter)
    runner.start()
    return Scout(runner, returned)


# --- sessions without endpoints ------------------------------------------------------------


def scouting_budget_s(cfg: Config) -> float:
    """Seconds that opening ``cfg`` may spend scouting (0 when it has endpoints)."""
    if cfg.connect:
        return 0.0
    settings = _settings(cfg)
    return settings.timeout_s if settings.enabled else 0.0


async def connect_scouted(
    cfg: Config, attempt: Callable[[str], Awaitable[T]], errors: list[str] | None = None
) -> T | None:
    """Scout as zenoh's client does and return ``attempt(locator)`` of the first locator
    that connects; None when scouting is off or found nothing within ``scouting/timeout``
    (the caller then falls back; why is appended to ``errors``). Only ``tcp/`` and
    ``tls/`` locators are tried."""
    settings = _settings(cfg)
    if not settings.enabled:
        return None
    what = settings.autoconnect or WireMatcher.all()
    tried: set[str] = set()
    reason = "scouting ended"
    try:
        async with asyncio.timeout(settings.timeout_s):
            async with UdpScouter(
                what, address=settings.address, interface=settings.interface, ttl=settings.ttl
            ) as scouter:
                async for hello in scouter:
                    for loc in hello.locators:
                        if not loc.startswith(("tcp/", "tls/", "ws/")) or loc in tried:
                            continue
                        tried.add(loc)
                        try:
                            result = await attempt(loc)
                        except (OSError, ConnectionError, TimeoutError, PyZenohError) as exc:
                            log.info("scouted %s %s: %s failed: %s", hello.whatami, hello.zid, loc, exc)
                            continue
                        log.info("connected to scouted %s %s at %s", hello.whatami, hello.zid, loc)
                        return result
    except TimeoutError:
        reason = (
            f"scouting found no {what} within {settings.timeout_s:g} s (tried: {', '.join(sorted(tried)) or 'none'})"
        )
    except OSError as exc:
        reason = f"scouting unavailable: {exc}"
    log.warning("%s; trying the default endpoint", reason)
    if errors is not None:
        errors.append(reason)
    return None
