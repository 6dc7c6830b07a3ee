"""Opening a session as zenoh 1.10.2 does: a peer listens on ``listen/endpoints``, then
``connect/endpoints`` are dialled (a client until one opens, a peer each, in the
background unless it must exit on failure), or, with none configured, a node is scouted
for, else the default endpoint is. A failed open leaves nothing behind.
"""

from __future__ import annotations

import asyncio
import logging
import threading

from pyzenoh.codec import NetworkMessage
from pyzenoh.config.policy import is_group_endpoint
from pyzenoh.errors import PyZenohError, SessionOpenError
from pyzenoh.security.multilink import MultiLinkKey
from pyzenoh.session.connector import open_timeout_s, retry_conf
from pyzenoh.session.runtime.dialling import Dialler
from pyzenoh.session.runtime.discovery import MulticastDiscovery
from pyzenoh.session.runtime.links import LinkFaces
from pyzenoh.session.runtime.multicast import SessionGroup
from pyzenoh.session.runtime.pump import CorePump
from pyzenoh.session.runtime.state import DEFAULT_ENDPOINT, RuntimeState
from pyzenoh.session.scouting import connect_scouted
from pyzenoh.transport.link import LinkConfig
from pyzenoh.transport.listener import listen
from pyzenoh.transport.multicast.state import DEFAULT_JOIN_INTERVAL_S
from pyzenoh.transport.tcp import TcpLink

log = logging.getLogger(__name__)


class Opening:
    """A session opened, or nothing left of it: sets the state's link configuration and
    loop thread, adds its listeners; dials through ``dialler``; accepted links' events
    go to ``faces``."""

    def __init__(
        self,
        s: RuntimeState,
        faces: LinkFaces,
        dialler: Dialler,
        pump: CorePump,
        discovery: MulticastDiscovery | None = None,
    ) -> None:
        """``discovery``: a peer's multicast scouting, started once it listens."""
        self.s = s
        self.faces = faces
        self.dialler = dialler
        self.pump = pump
        self.discovery = discovery

    async def connect(self) -> None:
        """Open: listen (a peer), then dial ``connect/endpoints`` as zenoh 1.10.2 does
        (:mod:`.connector`); raises SessionOpenError when the session cannot open."""
        s = self.s
        if s.loop_thread is None:
            s.loop_thread = threading.get_ident()
        cfg = s.config
        s.link_config = LinkConfig(
            s.zid,
            s.whatami,
            lease_ms=cfg.lease_ms,
            keepalives_per_lease=cfg.keep_alive,
            batch_size=cfg.batch_size,
            resolution=cfg.resolution,
            qos=cfg.qos,
            compression=cfg.compression,
            handshake_timeout_s=cfg.open_timeout_s,
            usrpwd=cfg.usrpwd,  # a bad usrpwd section (or dictionary) fails open() here
            # a FRAME's samples on one key: one batch (not where interceptors look at each)
            push_runs=not (s.policies is not None and s.policies.has_ingress),
            stamped_runs=True,
            # one session per node, refused before the OpenAck as zenoh does; with
            # max_links above 1 a session's other links join it (zenoh's multilink)
            open_gate=lambda zid, _, key: s.refusal(zid, key),
            multilink=MultiLinkKey() if cfg.max_links > 1 else None,
        )
        try:
            await self._open()
        except BaseException:
            await self._discard()
            raise
        self.pump.pump()

    async def _open(self) -> None:
        s = self.s
        cfg = s.config
        peer = cfg.mode == "peer"
        if not peer and cfg.listen:
            log.warning("a pyzenoh client does not listen: listen/endpoints %s ignored", cfg.listen)
        if peer:
            for ep in cfg.listen:
                if is_group_endpoint(ep):
                    await self._join(ep)
                    continue
                try:
                    s.listeners.append(
                        await listen(
                            ep,
                            s.link_config,
                            self.faces.on_link_event,
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
        if peer and s.listeners and self.discovery is not None:
            self.discovery.start()  # as zenoh's peers: answer SCOUTs, scout, autoconnect
        eps = cfg.connect
        if not eps:
            if peer and (s.listeners or s.groups):
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
            self.dialler.client_endpoints = eps
            await self._open_client(eps)

    async def _join(self, ep: str) -> None:
        """A multicast group (a peer's ``udp/<group>`` listen endpoint): joined, its face
        made (see :mod:`.multicast`); failing to join fails the open, as a listener."""
        s = self.s
        cfg = s.config
        core = self.faces.core
        fid: list[int] = []  # known once the face is made; earlier datagrams are dropped

        def on_message(msg: NetworkMessage) -> None:
            if fid:
                self.faces.on_group_message(fid[0], msg)

        interval = cfg.get("transport/multicast/join_interval")
        group = SessionGroup(
            ep,
            s.zid,
            cfg.lease_ms,
            DEFAULT_JOIN_INTERVAL_S if interval is None else int(interval) / 1000,
            s.loop.time(),
            on_message,
            core.local_key,
        )
        try:
            await group.start()
        except OSError as exc:
            group.link.abort()
            raise SessionOpenError(f"could not join the multicast group {ep}: {exc}") from None
        fid.append(self.faces.add_group(group))

    async def _dial_scouted(self, locator: str) -> TcpLink:
        link = await self.dialler.dial(locator)
        self.dialler.client_endpoints = [locator]  # retried if lost, as a configured endpoint
        return link

    async def _open_client(self, eps: list[str]) -> None:
        cfg = self.s.config
        timeout = open_timeout_s(cfg)
        conf = retry_conf(cfg, eps[0])
        errors: list[str] = []
        if timeout == 0.0 or conf.period_init_ms == 0:
            # one try per endpoint (exit_on_failure does not apply to a client's open)
            if await self.dialler.try_all(eps, errors):
                return
            raise SessionOpenError("could not open a session: " + "; ".join(errors))
        try:
            async with asyncio.timeout(timeout):
                if await self.dialler.retry(eps, conf, errors):
                    return
                await asyncio.Future()  # no more retries: wait for the timeout
        except TimeoutError:
            pass
        raise SessionOpenError(
            f"could not open a session within connect/timeout_ms ({cfg.connect_timeout_ms} ms): " + "; ".join(errors)
        )

    async def _open_peer(self, eps: list[str]) -> None:
        cfg = self.s.config
        timeout = open_timeout_s(cfg)
        started: list[asyncio.Event] = []
        for ep in eps:
            conf = retry_conf(cfg, ep)
            if timeout == 0.0 or conf.period_init_ms == 0:
                errors: list[str] = []
                if not await self.dialler.try_all([ep], errors):
                    if conf.exit_on_failure:
                        raise SessionOpenError("could not open a session: " + "; ".join(errors))
                    log.warning("could not connect to %s: %s", ep, "; ".join(errors))
            elif conf.exit_on_failure:
                errors = []
                try:
                    async with asyncio.timeout(timeout):
                        if not await self.dialler.retry([ep], conf, errors):
                            await asyncio.Future()
                except TimeoutError:
                    raise SessionOpenError(
                        f"could not connect to {ep} within connect/timeout_ms "
                        f"({cfg.connect_timeout_ms} ms): " + "; ".join(errors)
                    ) from None
            else:
                # in the background, as zenoh's peers; open() waits scouting/delay for it
                started.append(self.dialler.background(ep, conf))
        if started:
            delay_ms = cfg.get("scouting/delay")
            delay = 0.5 if delay_ms is None else int(delay_ms) / 1000.0
            waits = [asyncio.ensure_future(e.wait()) for e in started]
            await asyncio.wait(waits, timeout=delay)
            for w in waits:
                w.cancel()

    async def _discard(self) -> None:
        """A failed open: nothing stays (listeners, links, connectors)."""
        s = self.s
        s.closed = True
        await s.cancel_tasks()
        for lst in s.listeners:
            lst.server.close()
        for link in s.all_links():
            link.abort()
        s.listeners.clear()
        s.groups.clear()
