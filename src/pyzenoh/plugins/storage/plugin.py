"""The storage manager plugin (zenoh's ``zenoh-plugin-storage-manager`` 1.10).

Refuses to start when the router's timestamping is off (``lib.rs``: no HLC, no storage).
Each storage is a local session of its own with a subscriber and a queryable on its
``key_expr`` (the queryable ``complete`` as configured); samples go to its
:class:`~.semantics.StorageState`, stamped by the storage's HLC when they come without a
timestamp. A storage or volume that cannot start (bad volume options, a damaged or foreign
database, a directory it cannot write) is logged and reported in the plugin's status and
the others keep serving, as zenohd's manager does. Configuration changes (admin-space
writes) start, stop or restart exactly the storages whose configuration changed.

The memory volume is called in the router's loop (a dict); a persistent volume runs in a
thread of its own per storage, samples and the queries after them in arrival order, so a
slow disk delays that storage's replies, never routing. Samples received and not written
yet are written before the volume closes on a stop (SIGTERM); a kill -9 loses them, and
only them.

Status keys (``@/<zid>/router/status/plugins/storage_manager/``):
``volumes/<name>`` and ``storages/<name>`` (the storage's ``key_expr``, ``strip_prefix``
and ``volume`` as zenohd shows them).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pyzenoh.errors import UsageError
from pyzenoh.plugins.host import PluginContext
from pyzenoh.plugins.session import (
    Answer,
    LocalQuery,
    LocalSample,
    LocalSession,
    QueryAnswers,
)
from pyzenoh.plugins.storage.config import (
    BACKENDS,
    ManagerConfig,
    StorageConfig,
    VolumeConfig,
    parse_manager_config,
)
from pyzenoh.plugins.storage.semantics import MemoryVolume, StorageState, Stored, Volume
from pyzenoh.routing.hlc import Hlc

log = logging.getLogger(__name__)

__all__ = ["StorageManagerPlugin", "make_volume"]


def make_volume(storage: StorageConfig, volume: VolumeConfig) -> Volume:
    cfg = dict(storage.volume_cfg or {})
    if volume.backend == "memory":
        if cfg:
            raise UsageError(f"storages/{storage.name}/volume: the memory volume takes no options ({', '.join(cfg)})")
        return MemoryVolume()
    if volume.backend == "fs":
        from pyzenoh.plugins.storage.volumes.fs import FsVolume

        return FsVolume(storage.name, cfg)
    if volume.backend == "rocksdb":
        from pyzenoh.plugins.storage.volumes.rocksdb import RocksdbVolume

        return RocksdbVolume(storage.name, cfg)
    raise UsageError(f"volumes/{volume.name}: no backend '{volume.backend}' (pyzenoh has {', '.join(BACKENDS)})")


class _Running:
    """A started storage. A persistent volume's calls run in a thread of its own, one after
    the other in arrival order (updates, then the queries that follow them), so a disk
    never blocks the router's loop; the memory volume is called inline."""

    def __init__(self, config: StorageConfig, state: StorageState, session: LocalSession, threaded: bool) -> None:
        self.config = config
        self.state = state
        self.session = session
        self.gc: asyncio.TimerHandle | None = None
        self.worker = ThreadPoolExecutor(1, thread_name_prefix=f"storage-{config.name}") if threaded else None

    def close(self) -> None:
        if self.worker is not None:
            self.worker.shutdown(wait=True)  # what was received is written before the volume closes
        self.state.close()


class StorageManagerPlugin:
    def __init__(self, name: str, section: dict[str, Any], context: PluginContext) -> None:
        if not context.timestamping:
            raise UsageError("Cannot start storage manager, 'timestamping' is disabled in the configuration")
        self.name = name
        self.context = context
        self.config: ManagerConfig = parse_manager_config(section)
        self.hlc = Hlc(context.zid)
        self.storages: dict[str, _Running] = {}
        self.failed: dict[str, str] = {}

    async def start(self) -> None:
        for storage in self.config.storages.values():
            self._spawn(storage)

    async def stop(self) -> None:
        for name in list(self.storages):
            self._kill(name)

    def status(self) -> dict[str, Any]:
        from pyzenoh import __version__

        out: dict[str, Any] = {"version": __version__}
        for name, volume in self.config.volumes.items():
            out[f"volumes/{name}/__path__"] = "builtin"
            out[f"volumes/{name}"] = volume.status_json()
        for name, running in self.storages.items():
            out[f"storages/{name}"] = running.config.status_json()
        for name, error in self.failed.items():  # pyzenoh adds why a storage is not running
            storage = self.config.storages.get(name)
            out[f"storages/{name}"] = {**(storage.status_json() if storage else {}), "error": error}
        return out

    async def reconfigure(self, section: dict[str, Any]) -> bool:
        """Apply a new section live: storages whose config (or volume) changed restart."""
        new = parse_manager_config(section)
        old = self.config
        self.config = new
        for name in list(self.storages):
            storage = new.storages.get(name)
            running = self.storages[name]
            if storage != running.config or new.volumes.get(storage.volume_id) != old.volumes.get(storage.volume_id):
                self._kill(name)
        for name in list(self.failed):
            if new.storages.get(name) is None:
                del self.failed[name]
        for name, storage in new.storages.items():
            if name not in self.storages:
                self._spawn(storage)
        return True

    # --- storages -------------------------------------------------------------------------

    def _spawn(self, config: StorageConfig) -> None:
        self.failed.pop(config.name, None)
        volume_config = self.config.volumes.get(config.volume_id)
        try:
            if volume_config is None:
                raise UsageError(
                    f"storages/{config.name}/volume: no volume named '{config.volume_id}' "
                    f"(declare it under plugins/storage_manager/volumes)"
                )
            volume = make_volume(config, volume_config)
        except UsageError as exc:
            self.failed[config.name] = str(exc)
            self.context.count("storages_failed")
            log.error("Cannot spawn storage '%s': %s", config.name, exc)
            return
        state = StorageState(config.key_expr, volume, config.strip_prefix, config.gc_lifespan_s)
        session = self.context.session(f"storage/{config.name}")
        running = _Running(config, state, session, threaded=not isinstance(volume, MemoryVolume))
        self.storages[config.name] = running
        session.declare_subscriber(config.key_expr, lambda sample: self._on_sample(running, sample))
        session.declare_queryable(
            config.key_expr, lambda query: self._on_query(running, query), complete=config.complete
        )
        self._schedule_gc(running)
        log.info("storage %s on %s (volume %s)", config.name, config.key_expr, config.volume_id)

    def _kill(self, name: str) -> None:
        running = self.storages.pop(name, None)
        if running is None:
            return
        if running.gc is not None:
            running.gc.cancel()
        running.session.close()
        if running.session in self.context.sessions:
            self.context.sessions.remove(running.session)
        try:
            running.close()
        except Exception:
            log.exception("storage %s: closing its volume failed", name)
        log.info("storage %s stopped", name)

    def _schedule_gc(self, running: _Running) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return

        def collect() -> None:
            if running.worker is not None:
                running.worker.submit(running.state.collect_garbage, time.time())
            else:
                running.state.collect_garbage(time.time())
            self._schedule_gc(running)

        running.gc = loop.call_later(running.config.gc_period_s, collect)

    def _on_sample(self, running: _Running, sample: LocalSample) -> None:
        timestamp = sample.timestamp or self.hlc.new_timestamp(time.time())
        self.context.count("samples")
        args = (sample.kind, sample.key, sample.payload, sample.encoding, timestamp)
        if running.worker is None:
            running.state.on_sample(*args)
            return
        running.worker.submit(running.state.on_sample, *args)

    def _on_query(self, running: _Running, query: LocalQuery) -> QueryAnswers:
        self.context.count("queries")
        if running.worker is None:
            return _answers(running.state.query(query.key))
        loop = asyncio.get_running_loop()
        return _answers_later(loop.run_in_executor(running.worker, running.state.query, query.key))


def _answers(found: list[tuple[str, Stored]]) -> list[Answer]:
    return [(key, v.payload, v.encoding, v.timestamp) for key, v in found]


async def _answers_later(found: Awaitable[list[tuple[str, Stored]]]) -> list[Answer]:
    return _answers(await found)
