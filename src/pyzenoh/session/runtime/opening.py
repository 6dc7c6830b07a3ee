"""Opening a session as zenoh 1.10.2 does: a peer listens on ``listen/endpoints``, then
``connect/endpoints`` are dialled (a client until one opens, a peer each, in the
background unless it must exit on failure), or, with none configured, a node is scouted
for, else the default endpoint is. A failed open leaves nothing behind.
"""

from __future__ import annotations

import asyncio
import logging
import threading

from pyzenoh.errors import PyZenohError, SessionOpenError
from pyzenoh.session.connector import open_timeout_s, retry_conf
from pyzenoh.session.runtime.dialling import Dialling
from pyzenoh.session.runtime.state import DEFAULT_ENDPOINT
from pyzenoh.session.scouting import connect_scouted
from pyzenoh.transport.link import LinkConfig
from pyzenoh.transport.tcp import TcpLink, listen

log = logging.getLogger(__name__)


class Opening(Dialling):
    """A session opened, or nothing left of it."""

    async def connect(self) -> None:
        """Open: listen (a peer), then dial ``connect/endpoints`` as zenoh 1.10.2 does
        (:mod:`.connector`); raises SessionOpenError when the session cannot open."""
        if self.loop_thread is None:
            self.loop_thread = threading.get_ident()
        cfg = self.config
        self._link_cfg = LinkConfig(
            self.zid,
            self.whatami,
            lease_ms=cfg.lease_ms,
            keepalives_per_lease=cfg.keep_alive,
            batch_size=cfg.batch_size,
            resolution=cfg.resolution,
            qos=cfg.qos,
            compression=cfg.compression,
            handshake_timeout_s=cfg.open_timeout_s,
            usrpwd=cfg.usrpwd,  # a bad usrpwd section (or dictionary) fails open() here
            push_runs=True,
            stamped_runs=True,  # a FRAME's samples on one key: one batch
        )
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
                    self._listeners.append(
                        await listen(
                            ep,
                            self._link_cfg_(),
                            self._on_link_event,
                            max_queue_bytes=cfg.max_queue_bytes,
                            keep_raw=False,
                            tls=cfg.tls,
                        )
                    )
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

    async def _dial_scouted(self, locator: str) -> TcpLink:
        link = await self._dial(locator)
        self._client_eps = [locator]  # retried if lost, as a configured endpoint
        return link

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
        raise SessionOpenError(
            f"could not open a session within connect/timeout_ms ({cfg.connect_timeout_ms} ms): " + "; ".join(errors)
        )

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
                    raise SessionOpenError(
                        f"could not connect to {ep} within connect/timeout_ms "
                        f"({cfg.connect_timeout_ms} ms): " + "; ".join(errors)
                    ) from None
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
