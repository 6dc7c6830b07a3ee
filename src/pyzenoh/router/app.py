"""The whole ``pyzenoh router`` process: routing daemon, recorder, and msgq bridge.

Everything runs in one asyncio loop, but for the recorder's file work: with ``--record``
the router queues its recording calls to a recorder process of its own
(:class:`~pyzenoh.recording.recorder.RecorderProcess`). SIGINT/SIGTERM close every Zenoh
session with CLOSE, stop the msgq daemon (unlinking its socket) and close the open
recording segment.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import signal
import time
from typing import Any

from pyzenoh.codec import WhatAmI, ZenohId
from pyzenoh.errors import UsageError
from pyzenoh.recording.protocol import RouterRecorder
from pyzenoh.router.config import RouterConfig
from pyzenoh.router.daemon import RouterDaemon
from pyzenoh.routing import Send

log = logging.getLogger(__name__)

RECORDER_TICK_S = 1.0


class RouterApp:
    def __init__(self, config: RouterConfig) -> None:
        self.recorder: RouterRecorder | None = None
        record_dir = config.record.dir
        if record_dir:
            # The recording names its router (a mesh's recordings are joined by it): the
            # zid is fixed here rather than drawn by the daemon.
            zid = ZenohId.from_str(config.id) if config.id else ZenohId.random(os.urandom(16))
            config = dataclasses.replace(config, id=str(zid))
            # Recording runs in a process of its own: the router only queues its calls.
            from pyzenoh.recording.process import RecorderProcess

            self.recorder = RecorderProcess(
                record_dir,
                max_segment_bytes=config.record.max_segment_bytes,
                max_segment_seconds=config.record.max_segment_seconds,
                key_filter=config.record.key_filter,
                zid=str(zid),
            )
        self.config = config
        self.daemon = RouterDaemon(config, recorder=self.recorder)
        self.msgq: Any = None
        self.bridge: Any = None
        self._ticker: asyncio.Task[None] | None = None
        #: The live config tree (admin-space writes edit it) and the plugins it runs.
        self.tree: dict[str, Any] = dict(config.tree) if isinstance(config.tree, dict) else {}
        self.plugins: Any = None
        self._applying: asyncio.Lock | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        # Plugins start once the admin space is up and before the listeners open (zenoh's
        # runtime order): a client that gets in finds the storages there.
        self.daemon.before_listen = self._start_plugins
        try:
            await self.daemon.start()
        except UsageError:
            await self.stop()  # e.g. a required plugin failed: the router stops, naming it
            raise
        if self.config.msgq.enabled:
            await self._start_msgq()
        if self.recorder is not None:
            log.info("recording into %s", self.config.record.dir)
            self._ticker = asyncio.create_task(self._tick_recorder())

    async def _start_plugins(self) -> None:
        from pyzenoh.plugins.host import PluginHost

        self.plugins = PluginHost(self.daemon, self.tree.get("plugins"))
        self._applying = asyncio.Lock()
        admin = self.daemon.admin
        if admin is not None:
            admin.plugins = self.plugins
            admin.on_config = self._on_config_write
        await self.plugins.start()

    def _on_config_write(self, path: str, payload: bytes | None) -> None:
        """An allowed admin-space write: edit the live tree; plugins follow their section."""
        from pyzenoh.router.admin.writes import config_write

        try:
            self.tree = config_write(self.tree, path, payload)
        except UsageError as exc:
            log.error("admin space: cannot %s config %s: %s", "delete" if payload is None else "insert", path, exc)
            return
        log.info("admin space: config %s %s", path, "deleted" if payload is None else "set")
        if path.strip("/").split("/", 1)[0] == "plugins" and self.plugins is not None:
            task = asyncio.get_running_loop().create_task(self._apply_plugins(self.tree.get("plugins")))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _apply_plugins(self, plugins: Any) -> None:
        assert self._applying is not None
        async with self._applying:  # one change after the other, in the order written
            if self.plugins is None:
                return  # stopping
            try:
                await self.plugins.apply(plugins)
            except Exception:
                log.exception("admin space: plugins could not follow the config change")

    async def _tick_recorder(self) -> None:
        """Flush and rotate segments when traffic is idle, so a kill -9 loses at most ~1 s."""
        recorder = self.recorder
        assert recorder is not None
        while True:
            await asyncio.sleep(RECORDER_TICK_S)
            recorder.tick(time.time_ns())

    async def _start_msgq(self) -> None:
        from pyzenoh.msgq import MsgqDaemon
        from pyzenoh.msgq.bridge import MsgqZenohBridge

        self.msgq = MsgqDaemon(self.config.msgq.socket_file or None, self.config.msgq.tcp)
        await self.msgq.start()
        daemon = self.daemon
        face_holder: list[int] = []

        def publish(message: Any) -> None:
            daemon.local_input(face_holder[0], message)

        self.bridge = MsgqZenohBridge(self.msgq, publish)

        def sink(send: Send) -> None:
            self.bridge.on_zenoh(send.message)

        # The bridge is a client of the router with an id derived from the router's own.
        bridge_zid = ZenohId((daemon.zid.value ^ 0x6D7367) or 1)
        face_holder.append(daemon.add_local_face(bridge_zid, sink, WhatAmI.CLIENT, name="msgq-bridge"))
        self.bridge.start()
        log.info("msgq bridged on face %d (key space @msgq/**)", face_holder[0])

    async def stop(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
        for task in self._tasks:
            task.cancel()  # config changes not applied yet
        if self.plugins is not None:
            plugins, self.plugins = self.plugins, None
            await plugins.stop()
        if self.msgq is not None:
            await self.msgq.close()
        await self.daemon.stop()

    async def serve_forever(self) -> None:
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await self.start()
        try:
            await stop.wait()
            log.info("signal received: closing every session")
        finally:
            await self.stop()
