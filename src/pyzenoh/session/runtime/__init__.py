"""Runs a :class:`~pyzenoh.session.core.SessionCore` over TCP links in an asyncio loop.

A client has one link, to a router, and reconnects when it is lost; a peer listens on
``listen/endpoints`` and has a link per node it connected to or accepted (each a face of
the core). When links are dialled, retried and given up: :mod:`.connector`.

Both user APIs sit on this: the asyncio API calls it from its own loop, the sync API runs
the loop in a background thread and hands work over with :meth:`Runtime.submit` (ordered,
non-blocking) or :meth:`Runtime.call` (waits for the result). All protocol state is only
ever touched from the loop thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import logging
import os
import threading
from collections import deque
from collections.abc import Callable
from typing import Any, TypeVar

from pyzenoh.codec import Del, Err, NetworkOam, Put, WhatAmI, ZenohId
from pyzenoh.codec.network import OAM_LINKSTATE
from pyzenoh.errors import CloseReason, PyZenohError, SessionOpenError, UsageError
from pyzenoh.session import types as t
from pyzenoh.session.config import Config
from pyzenoh.session.connector import RetryConf, open_timeout_s, retry_conf
from pyzenoh.session.core import END, SampleBatch, SessionCore
from pyzenoh.session.handlers import Dispatcher, Sink
from pyzenoh.session.scouting import connect_scouted
from pyzenoh.transport.link import (
    Established,
    Event,
    LinkClosed,
    LinkConfig,
    Received,
    ReceivedRun,
)
from pyzenoh.transport.tcp import Endpoint, TcpLink, TcpListener, connect, listen

log = logging.getLogger(__name__)

R = TypeVar("R")

#: Operations handed over by other threads and not yet run; a sync publisher blocks
#: (or drops, with congestion control Drop) past this many.
MAX_PENDING_OPS = 10_000
DEFAULT_ENDPOINT = "tcp/127.0.0.1:7447"
#: What a failed dial raises.
DIAL_ERRORS = (OSError, ConnectionError, TimeoutError, PyZenohError)
#: A peer learnt of by gossip is dialled this long after (if it has not connected to us
#: by then: real peers, "always" autoconnecting, usually have).
GOSSIP_DIAL_DELAY_S = 1.0


class Runtime:
    """One session's event-loop side: core, link, timer, delivery and flow control."""

    def __init__(self, config: Config, loop: asyncio.AbstractEventLoop, *, threaded: bool) -> None:
        self.config = config
        self.loop = loop
        self.threaded = threaded
        zid_text = config.zid
        self.zid = ZenohId.from_str(zid_text) if zid_text else ZenohId.random(os.urandom(16))
        self.whatami = WhatAmI.CLIENT if config.mode == "client" else WhatAmI.PEER
        self.core = SessionCore(self.zid, self.whatami, self,
                                query_timeout_s=config.queries_default_timeout_s)  # fmt: skip
        #: the first open link and its peer (flow control; a client's only link)
        self.link: TcpLink | None = None
        self.peer: Established | None = None
        #: every open link and its peer, by face id
        self.links: dict[int, TcpLink] = {}
        self.peers: dict[int, Established] = {}
        self._fids: dict[TcpLink, int] = {}
        self._next_fid = 1
        self._cur_link: TcpLink | None = None  # the link whose face the core has selected
        self._listeners: list[TcpListener] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._link_cfg: LinkConfig | None = None
        #: a client's endpoints, tried in turn when its link is lost
        self._client_eps: list[str] = []
        self._reconnecting = False
        #: peers learnt of by gossip being dialled (their zids)
        self._gossip_dials: set[ZenohId] = set()
        self._autoconnect = self.whatami is WhatAmI.PEER and _gossip_autoconnect(config)
        self.closed = False
        self.close_event: LinkClosed | None = None
        self.loop_thread: int | None = None if threaded else threading.get_ident()
        self._timer: asyncio.TimerHandle | None = None
        self._timer_when = 0.0
        self._pumping = False
        self._pump_scheduled = False
        self._blocked: set[int] = set()
        self._ops: deque[Callable[[], None]] = deque()
        self._wakeup = False
        self._ops_room = threading.Event()
        self._dispatcher: Dispatcher | None = None

    # --- connecting / closing (in the loop) --------------------------------------------------

    async def connect(self) -> None:
        """Open: listen (a peer), then dial ``connect/endpoints`` as zenoh 1.10.2 does
        (:mod:`.connector`); raises SessionOpenError when the session cannot open."""
        if self.loop_thread is None:
            self.loop_thread = threading.get_ident()
        cfg = self.config
        self._link_cfg = LinkConfig(
            self.zid, self.whatami, lease_ms=cfg.lease_ms, keepalives_per_lease=cfg.keep_alive,
            batch_size=cfg.batch_size, resolution=cfg.resolution, qos=cfg.qos,
            handshake_timeout_s=cfg.open_timeout_s,
            usrpwd=cfg.usrpwd,  # a bad usrpwd section (or dictionary) fails open() here
            push_runs=True, stamped_runs=True,  # a FRAME's samples on one key: one batch
        )  # fmt: skip
        try:
            await self._open()
        except BaseException:
            await self._discard()
            raise
        self.pump()

    async def _open(self) -> None:
        cfg = self.config
        peer = cfg.mode == "peer"
        if not peer and cfg.listen:
            log.warning("a pyzenoh client does not listen: listen/endpoints %s ignored", cfg.listen)
        if peer:
            for ep in cfg.listen:
                try:
                    self._listeners.append(await listen(ep, self._link_cfg_(), self._on_link_event,
                                                        max_queue_bytes=cfg.max_queue_bytes, keep_raw=False,
                                                        tls=cfg.tls))  # fmt: skip
                except (OSError, PyZenohError) as exc:
                    if cfg.get("listen/endpoints") is None:  # zenoh's default tcp/[::]:0 (no IPv6 here?)
                        log.warning("could not listen on %s: %s", ep, exc)
                        continue
                    raise SessionOpenError(f"could not listen on {ep}: {exc}") from None  # exit_on_failure
        eps = cfg.connect
        if not eps:
            if peer and self._listeners:
                return  # a listening peer needs nobody to open
            errors: list[str] = []
            # no endpoint: scout for a node first, as zenoh does (scouting.py)
            scouted = await connect_scouted(cfg, self._dial_scouted, errors)
            if scouted is not None:
                return
            eps = [DEFAULT_ENDPOINT]
        if peer:
            await self._open_peer(eps)
        else:
            self._client_eps = eps
            await self._open_client(eps)

    def _link_cfg_(self) -> LinkConfig:
        assert self._link_cfg is not None
        return self._link_cfg

    async def _dial(self, ep: str) -> TcpLink:
        """One attempt at ``ep``; the link's face opens (Established) before it returns."""
        cfg = self.config
        on_event = functools.partial(self._on_dialled_event, ep)
        return await connect(ep, self._link_cfg_(), on_event, max_queue_bytes=cfg.max_queue_bytes,
                             keep_raw=False, tls=cfg.tls)  # fmt: skip

    async def _dial_scouted(self, locator: str) -> TcpLink:
        link = await self._dial(locator)
        self._client_eps = [locator]  # retried if lost, as a configured endpoint
        return link

    async def _try_all(self, eps: list[str], errors: list[str]) -> bool:
        """Each endpoint in turn until one opens."""
        for ep in eps:
            try:
                await self._dial(ep)
                return True
            except DIAL_ERRORS as exc:
                errors.append(f"{ep}: {exc or type(exc).__name__}")
        return False

    async def _retry(self, eps: list[str], conf: RetryConf, errors: list[str] | None = None) -> bool:
        """Try ``eps`` now, then after each wait of the backoff, until one opens (True)
        or the backoff says never again (False)."""
        period = conf.period()
        while not self.closed:
            round_errors: list[str] = []
            if await self._try_all(eps, round_errors):
                return True
            if errors is not None:
                errors[:] = round_errors
            log.debug("could not connect (%s); retrying", "; ".join(round_errors))
            wait = period.next_s()
            if wait is None:
                return False
            await asyncio.sleep(wait)
        return False

    async def _open_client(self, eps: list[str]) -> None:
        cfg = self.config
        timeout = open_timeout_s(cfg)
        conf = retry_conf(cfg, eps[0])
        errors: list[str] = []
        if timeout == 0.0 or conf.period_init_ms == 0:
            # one try per endpoint (exit_on_failure does not apply to a client's open)
            if await self._try_all(eps, errors):
                return
            raise SessionOpenError("could not open a session: " + "; ".join(errors))
        try:
            async with asyncio.timeout(timeout):
                if await self._retry(eps, conf, errors):
                    return
                await asyncio.Future()  # no more retries: wait for the timeout
        except TimeoutError:
            pass
        raise SessionOpenError(f"could not open a session within connect/timeout_ms ({cfg.connect_timeout_ms} ms): "
                               + "; ".join(errors))  # fmt: skip

    async def _open_peer(self, eps: list[str]) -> None:
        cfg = self.config
        timeout = open_timeout_s(cfg)
        started: list[asyncio.Event] = []
        for ep in eps:
            conf = retry_conf(cfg, ep)
            if timeout == 0.0 or conf.period_init_ms == 0:
                errors: list[str] = []
                if not await self._try_all([ep], errors):
                    if conf.exit_on_failure:
                        raise SessionOpenError("could not open a session: " + "; ".join(errors))
                    log.warning("could not connect to %s: %s", ep, "; ".join(errors))
            elif conf.exit_on_failure:
                errors = []
                try:
                    async with asyncio.timeout(timeout):
                        if not await self._retry([ep], conf, errors):
                            await asyncio.Future()
                except TimeoutError:
                    raise SessionOpenError(f"could not connect to {ep} within connect/timeout_ms "
                                           f"({cfg.connect_timeout_ms} ms): " + "; ".join(errors)) from None  # fmt: skip
            else:
                # in the background, as zenoh's peers; open() waits scouting/delay for it
                started.append(self._background(ep, conf))
        if started:
            delay_ms = cfg.get("scouting/delay")
            delay = 0.5 if delay_ms is None else int(delay_ms) / 1000.0
            waits = [asyncio.ensure_future(e.wait()) for e in started]
            await asyncio.wait(waits, timeout=delay)
            for w in waits:
                w.cancel()

    def _background(self, ep: str, conf: RetryConf) -> asyncio.Event:
        connected = asyncio.Event()

        async def run() -> None:
            if await self._retry([ep], conf):
                connected.set()

        self._spawn(run())
        return connected

    def _spawn(self, coro: Any) -> None:
        task: asyncio.Task[None] = self.loop.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("session connector failed: %s", task.exception())

    async def _reconnect(self, eps: list[str], client: bool) -> None:
        conf = retry_conf(self.config, eps[0])
        try:
            if await self._retry(eps, conf):
                log.info("session link re-established (%s)", self.peer.zid if self.peer else "?")
        finally:
            if client:
                self._reconnecting = False

    async def _discard(self) -> None:
        """A failed open: nothing stays (listeners, links, connectors)."""
        self.closed = True
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=1.0)
        for lst in self._listeners:
            lst.server.close()
        for link in list(self.links.values()):
            link.abort()
        self._listeners.clear()

    async def aclose(self) -> None:
        if self.closed:
            return
        self.closed = True
        tasks = [task for task in self._tasks if task is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=1.0)  # let them end before the loop stops
        self.core.close()
        self.pump()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for lst in self._listeners:
            lst.server.close()
        links = list(self.links.values())
        if links:
            await asyncio.gather(*(link.aclose(CloseReason.GENERIC) for link in links), return_exceptions=True)
        for lst in self._listeners:
            await lst.close(close_links=True)  # links accepted but not yet established
        self._listeners.clear()
        if self._dispatcher is not None:
            # never wait here: a callback may be the one closing the session
            self._dispatcher.stop(0)
        self._ops_room.set()

    def abort(self) -> None:
        """Drop the connections without CLOSE (tests: a crashed process)."""
        for link in list(self.links.values()):
            link.abort()

    # --- link events -------------------------------------------------------------------------

    def _on_link_event(self, link: TcpLink, ev: Event) -> None:
        if isinstance(ev, Received | ReceivedRun):
            if link is not self._cur_link:
                fid = self._fids.get(link)
                if fid is None:
                    return
                self._cur_link = link
                self.core.select_face(fid)
            if isinstance(ev, Received):
                msg = ev.message
                self.core.on_message(msg, self.loop.time())
                if msg.__class__ is NetworkOam and self._autoconnect:
                    self._on_gossip(msg)
            else:
                self.core.on_push_run(ev.run)
            if not self._pump_scheduled:
                self._pump_scheduled = True
                self.loop.call_soon(self.pump)
        elif isinstance(ev, Established):
            if self.closed:
                link.close()
                return
            if any(p.zid == ev.zid for p in self.peers.values()):
                # one link per node, as zenoh's transport/unicast/max_links 1
                log.info("a second link to %s refused", ev.zid)
                link.close(CloseReason.MAX_LINKS)
                return
            fid = self._next_fid
            self._next_fid += 1
            self._fids[link] = fid
            self.links[fid] = link
            self.peers[fid] = ev
            if self.link is None:
                self.link, self.peer = link, ev
            self._cur_link = link
            self.core.on_established(ev, fid, self._locators(link))
            if self._blocked:
                link.pause_reading()
            self.pump()
        elif isinstance(ev, LinkClosed):
            self._link_closed(link, ev)

    def _on_gossip(self, msg: NetworkOam) -> None:
        """A link state from a router or peer: peers it names with locators are dialled
        (zenoh's gossip autoconnect), by the node with the greater zid only, so two
        pyzenoh peers dial each other once; a link that comes second is refused."""
        body = msg.body
        if msg.oam_id != OAM_LINKSTATE or not isinstance(body, bytes | bytearray):
            return
        from pyzenoh.routing.linkstate import LinkStateDecodeError, decode_linkstates

        try:
            states = decode_linkstates(bytes(body))
        except LinkStateDecodeError as exc:
            log.debug("undecodable link state: %s", exc)
            return
        for st in states:
            zid = st.zid
            if (zid is None or st.whatami is not WhatAmI.PEER or not st.locators or zid.value >= self.zid.value
                    or zid in self._gossip_dials or any(p.zid == zid for p in self.peers.values())):  # fmt: skip
                continue
            self._gossip_dials.add(zid)
            self._spawn(self._dial_gossiped(zid, [loc for loc in st.locators if loc.startswith(("tcp/", "tls/"))]))

    async def _dial_gossiped(self, zid: ZenohId, locators: list[str]) -> None:
        try:
            await asyncio.sleep(GOSSIP_DIAL_DELAY_S)
            for loc in locators:
                if self.closed or any(p.zid == zid for p in self.peers.values()):
                    return
                try:
                    await connect(loc.split("?", 1)[0], self._link_cfg_(), self._on_link_event,
                                  max_queue_bytes=self.config.max_queue_bytes, keep_raw=False,
                                  tls=self.config.tls)  # fmt: skip
                    log.info("connected to gossiped peer %s at %s", zid, loc)
                    return
                except DIAL_ERRORS as exc:
                    log.debug("gossiped peer %s at %s: %s", zid, loc, exc)
        finally:
            self._gossip_dials.discard(zid)

    def _locators(self, link: TcpLink) -> list[str]:
        """Where this peer listens, as the node at the other end of ``link`` can reach it:
        an unspecified listen address ([::], 0.0.0.0) becomes the link's own address."""
        out: list[str] = []
        local = link.local_address
        for lst in self._listeners:
            for ep in lst.endpoints:
                host = ep.host
                if host in ("::", "0.0.0.0") and local:
                    host = local[0].removeprefix("::ffff:")
                loc = str(Endpoint(host, ep.port, ep.protocol))
                if loc not in out:
                    out.append(loc)
        return out

    def _on_dialled_event(self, endpoint: str, link: TcpLink, ev: Event) -> None:
        """Events of a link this session dialled: when it is lost, it is dialled again."""
        if ev.__class__ is LinkClosed:
            was_open = link in self._fids
            self._link_closed(link, ev, dialled=True)
            if was_open and not self.closed:
                self._link_lost(endpoint)
            return
        self._on_link_event(link, ev)

    def _link_closed(self, link: TcpLink, ev: LinkClosed, dialled: bool = False) -> None:
        fid = self._fids.pop(link, None)
        if fid is None:
            return  # a handshake that failed: the dial or the listener handles it
        if not self.closed:
            # a link we dialled is retried (warning); one a peer accepted just ends
            log.log(logging.WARNING if dialled else logging.INFO, "session link to %s closed: %s",
                    self.peers[fid].zid, ev.detail)  # fmt: skip
        self.close_event = ev
        self.core.face_lost(fid)  # before the face's peer goes: info events are built from it
        del self.links[fid]
        del self.peers[fid]
        if self._cur_link is link:
            self._cur_link = None
        if self.link is link:
            first = next(iter(self.links), None)
            self.link = None if first is None else self.links[first]
            self.peer = None if first is None else self.peers[first]
        if self._blocked and self.link is not None:
            self.link.pause_reading()
        self.pump()

    def _link_lost(self, endpoint: str) -> None:
        """A dialled link is gone: a client dials its endpoints again, a peer that one,
        at once and then with the connect/retry backoff, until the session closes."""
        if self.config.mode == "client":
            if self._reconnecting or self.links:
                return
            self._reconnecting = True
            self._spawn(self._reconnect(self._client_eps or [endpoint], client=True))
        else:
            self._spawn(self._reconnect([endpoint], client=False))

    # --- moving core output to the link and to user sinks --------------------------------------

    def pump(self) -> None:
        self._pump_scheduled = False
        if self._pumping:
            return  # the outer pump picks up whatever this call would have moved
        self._pumping = True
        core = self.core
        try:
            while core.outbox or core.deliveries:
                links = self.links
                one = self.link if len(links) == 1 else None
                for msg, reliable, prio, droppable, express, fid in core.take_outbox():
                    if one is not None:
                        one.send(msg, reliable=reliable, priority=prio, drop_if_full=droppable, express=express)
                    elif fid is None:
                        for link in links.values():
                            link.send(msg, reliable=reliable, priority=prio, drop_if_full=droppable,
                                      express=express)  # fmt: skip
                    else:
                        target = links.get(fid)
                        if target is not None:
                            target.send(msg, reliable=reliable, priority=prio, drop_if_full=droppable,
                                        express=express)  # fmt: skip
                for sink, item in core.take_deliveries():
                    if item is END:
                        sink.close()
                        if sink.flow is sink:
                            self._unblock(sink)
                        continue
                    if item.__class__ is SampleBatch:
                        sink.push_many(item.samples)
                    else:
                        sink.push(item)
                    if sink.full:
                        self._block(sink)
        finally:
            self._pumping = False
        self._rearm()

    def _block(self, sink: Sink) -> None:
        flow = sink.flow
        key = id(flow)
        if key in self._blocked:
            return
        self._blocked.add(key)
        flow.on_space = lambda: self.in_loop(lambda: self._unblock(flow))
        for link in self.links.values():
            link.pause_reading()

    def _unblock(self, flow: Any) -> None:
        self._blocked.discard(id(flow))
        if not self._blocked:
            for link in self.links.values():
                link.resume_reading()

    def dispatcher(self) -> Dispatcher:
        """The thread that runs this session's sync callbacks (started on first use)."""
        if self._dispatcher is None:
            d = Dispatcher(f"pyzenoh-callbacks-{self.zid}")
            self._dispatcher = d
        return self._dispatcher

    # --- timers ------------------------------------------------------------------------------

    def _rearm(self) -> None:
        deadline = self.core.next_deadline()
        if deadline is None or self.closed:
            return
        if self._timer is not None:
            if deadline >= self._timer_when:
                return
            self._timer.cancel()
        self._timer_when = deadline
        self._timer = self.loop.call_at(deadline, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self.core.handle_timer(max(self.loop.time(), self._timer_when))
        self.pump()

    # --- handing work to the loop -------------------------------------------------------------

    def on_loop(self) -> bool:
        return threading.get_ident() == self.loop_thread

    def in_loop(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` in the loop: now if already there, else soon (thread-safe)."""
        if self.on_loop():
            fn()
        else:
            try:
                self.loop.call_soon_threadsafe(fn)
            except RuntimeError:  # the loop is closed: the session is over
                pass

    def submit(self, fn: Callable[[], None]) -> None:
        """Run a core operation in the loop, in submission order, without waiting."""
        if self.on_loop():
            try:
                fn()
            finally:
                self.pump()
            return
        self._ops.append(fn)
        if not self._wakeup:
            self._wakeup = True
            try:
                self.loop.call_soon_threadsafe(self._drain)
            except RuntimeError:
                self._ops.clear()

    def _drain(self) -> None:
        self._wakeup = False  # before draining: a submit racing with us schedules again
        ops = self._ops
        try:
            while ops:
                fn = ops.popleft()
                try:
                    fn()
                except Exception:
                    log.exception("session operation failed")
        finally:
            self._ops_room.set()
            self.pump()

    def call(self, fn: Callable[[], R], timeout: float | None = 30.0) -> R:
        """Run ``fn`` in the loop and return its result (raising its exception)."""
        if self.on_loop():
            try:
                return fn()
            finally:
                self.pump()
        fut: concurrent.futures.Future[R] = concurrent.futures.Future()

        def run() -> None:
            if fut.set_running_or_notify_cancel():
                try:
                    fut.set_result(fn())
                except BaseException as exc:  # noqa: BLE001  (handed to the caller)
                    fut.set_exception(exc)

        self.submit(run)
        return fut.result(timeout)

    def wait_room(self, block: bool, timeout: float = 60.0) -> bool:
        """From another thread, before queueing a message: False means drop it.

        Blocks (Block congestion control) while too many operations wait for the loop or
        the link's outgoing queue is full.
        """
        if self.on_loop():
            return True
        link = self.link
        if len(self._ops) >= MAX_PENDING_OPS:
            if not block:
                return False
            while len(self._ops) >= MAX_PENDING_OPS and not self.closed:
                self._ops_room.clear()
                if len(self._ops) >= MAX_PENDING_OPS:
                    self._ops_room.wait(0.1)
        if link is not None and link.is_full and not self.closed:
            if not block:
                link.dropped += 1
                return False
            fut = asyncio.run_coroutine_threadsafe(link.wait_writable(), self.loop)
            fut.result(timeout)
        return True

    async def await_room(self, block: bool) -> bool:
        """In the loop (asyncio API): wait for room (Block) or report a drop (Drop)."""
        link = self.link
        if link is None or not link.is_full:
            return True
        if not block:
            link.dropped += 1
            return False
        await link.wait_writable()
        return True

    # --- Responder (Query objects call these from any thread) ---------------------------------

    def query_reply(
        self, qref: int, key: str, body: Any, priority: t.Priority | None, express: bool,
        block: bool,
    ) -> None:  # fmt: skip
        if not isinstance(body, Put | Del | Err):
            raise UsageError("bad reply body")
        prio = None if priority is None else priority.value
        self.submit(lambda: self.core.query_reply(qref, key, body, prio, express, block))

    def query_finalize(self, qref: int) -> None:
        if self.closed:
            return
        self.submit(lambda: self.core.query_finalize(qref))


def _gossip_autoconnect(config: Config) -> bool:
    """``scouting/gossip``: enabled (default) and peers among this peer's autoconnect
    kinds (zenoh's default for a peer: router, peer, client)."""
    if config.get("scouting/gossip/enabled") is False:
        return False
    kinds = config.get("scouting/gossip/autoconnect")
    if isinstance(kinds, dict):
        kinds = kinds.get("peer")
    return kinds is None or "peer" in kinds
