"""The plugin host: starts, stops and reconfigures a router's plugins as zenohd does.

zenohd's rules for ``plugins/<name>`` (``zenoh/src/api/plugins.rs``, ``zenohd``):

* every section names a plugin to start; ``__required__: true`` makes a failure to load
  or start it fatal (the router stops, naming it), otherwise it is logged and the router
  runs without it;
* ``__config__``: a JSON5 file whose keys are merged into the section (the section's own
  keys win);
* ``__path__``: where zenohd loads the plugin's library from. pyzenoh loads plugins from
  Python (:mod:`.registry`), so a ``__path__`` is noted in the plugin's status and a
  warning says it is not used;
* a change under ``plugins/`` (admin-space writes) stops the plugins whose section went,
  starts the new ones, and hands a changed section to the running plugin
  (``reconfigure``), restarting it when it cannot take the change live.

Admin space (``adminspace.rs``): ``@/<zid>/router/plugins/<name>`` is the plugin's status
record, ``@/<zid>/router/status/plugins/<name>/__path__`` its path and
``@/<zid>/router/status/plugins/<name>/**`` what the plugin reports; the ``plugins``
field of ``@/<zid>/router`` maps each started plugin to ``{name, path}``.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pyzenoh.config import loads
from pyzenoh.errors import UsageError
from pyzenoh.keyexpr.relations import intersects
from pyzenoh.plugins import registry
from pyzenoh.plugins.session import LocalSession

if TYPE_CHECKING:
    from pyzenoh.router.daemon import RouterDaemon

log = logging.getLogger(__name__)

__all__ = ["Plugin", "PluginContext", "PluginHost", "PluginRecord"]

#: The keys zenohd reads itself in a plugin's section.
RESERVED = ("__required__", "__config__", "__path__")


class Plugin(Protocol):
    """What a plugin factory returns."""

    async def start(self) -> None: ...
    async def stop(self) -> None: ...
    def status(self) -> dict[str, Any]:
        """Status keys (relative to ``status/plugins/<name>``) and their JSON values."""
        ...


class PluginContext:
    """What a plugin is given: the router (its zid, timestamping), sessions, counters."""

    def __init__(self, daemon: RouterDaemon, name: str) -> None:
        self.daemon = daemon
        self.name = name
        self.zid = daemon.zid
        self.timestamping = daemon.config.timestamping
        self.sessions: list[LocalSession] = []
        #: The plugin's whole section, zenohd's ``__*__`` keys included (the plugin's own
        #: configuration is the factory's argument).
        self.section: dict[str, Any] = {}
        #: Counters the router's metrics show as pyzenoh_plugin_<name>_<counter>.
        self.counters: dict[str, int] = {}

    def session(self, label: str = "") -> LocalSession:
        """A new local session of the router, opened (closed when the plugin stops)."""
        session = LocalSession(self.daemon, f"{self.name}/{label}" if label else self.name)
        session.open()
        self.sessions.append(session)
        return session

    def close_sessions(self) -> None:
        for session in self.sessions:
            session.close()
        self.sessions.clear()

    def count(self, counter: str, n: int = 1) -> None:
        self.counters[counter] = self.counters.get(counter, 0) + n


@dataclass
class PluginRecord:
    name: str
    section: dict[str, Any]
    path: str = ""
    instance: Any = None
    context: PluginContext | None = None
    state: str = "Declared"
    messages: list[str] = field(default_factory=list)

    def status_json(self) -> dict[str, Any]:
        from pyzenoh import __version__

        level = "Normal" if self.state == "Started" else "Error"
        return {
            "id": self.name,
            "name": self.name,
            "path": self.path,
            "state": self.state,
            "version": __version__,
            "long_version": f"pyzenoh {__version__}",
            "report": {"level": level, "messages": list(self.messages)},
        }


def plugin_section(name: str, section: Any) -> dict[str, Any]:
    """The section with its ``__config__`` file merged in (the section's keys win)."""
    if not isinstance(section, dict):
        raise UsageError(f"plugins/{name}: a plugin's configuration must be an object")
    extra = section.get("__config__")
    if extra is None:
        return copy.deepcopy(section)
    if not isinstance(extra, str):
        raise UsageError(f"plugins/{name}/__config__: expected a file name")
    try:
        merged = loads(Path(extra).read_text(encoding="utf-8"))
    except (OSError, UsageError) as exc:
        raise UsageError(f"plugins/{name}/__config__: cannot read {extra}: {exc}") from None
    if not isinstance(merged, dict):
        raise UsageError(f"plugins/{name}/__config__: {extra} must hold an object")
    return {**merged, **copy.deepcopy(section)}


class PluginHost:
    def __init__(self, daemon: RouterDaemon, plugins: Any) -> None:
        self.daemon = daemon
        self.sections: dict[str, Any] = dict(plugins) if isinstance(plugins, dict) else {}
        self.records: dict[str, PluginRecord] = {}

    async def start(self) -> None:
        """Start every configured plugin; UsageError naming the first required one that fails."""
        for name, section in self.sections.items():
            await self._start_one(name, section, at_startup=True)

    async def stop(self) -> None:
        for name in list(self.records):
            await self._stop_one(name)

    async def _start_one(self, name: str, section: Any, *, at_startup: bool) -> None:
        required = isinstance(section, dict) and section.get("__required__") is True
        record = PluginRecord(name, section if isinstance(section, dict) else {})
        try:
            record.section = plugin_section(name, section)
            try:
                factory, record.path = registry.factory_of(name)
            except KeyError:
                raise UsageError(
                    f"plugins/{name}: no built-in plugin or 'pyzenoh.plugins' entry point "
                    f"is named '{name}' (available: {', '.join(registry.available())})"
                ) from None
            if "__path__" in record.section:
                log.warning("plugins/%s/__path__ is not used: pyzenoh plugins are Python packages", name)
            context = PluginContext(self.daemon, name)
            context.section = record.section
            config = {k: v for k, v in record.section.items() if k not in RESERVED}
            record.context = context
            try:
                record.instance = factory(name, config, context)
                await record.instance.start()
            except BaseException:
                context.close_sessions()
                raise
        except Exception as exc:
            record.state = "Failed"
            record.messages.append(str(exc))
            self.records[name] = record
            if required and at_startup:
                raise UsageError(f"required plugin '{name}' failed to start: {exc}") from exc
            log.error("plugin %s failed to start: %s", name, exc)
            return
        record.state = "Started"
        self.records[name] = record
        log.info("plugin %s started (%s)", name, record.path)

    async def _stop_one(self, name: str) -> None:
        record = self.records.pop(name, None)
        if record is None:
            return
        if record.instance is not None and record.state == "Started":
            try:
                await record.instance.stop()
            except Exception:
                log.exception("plugin %s failed to stop cleanly", name)
        if record.context is not None:
            record.context.close_sessions()
        log.info("plugin %s stopped", name)

    async def apply(self, plugins: Any) -> None:
        """The ``plugins`` section changed (an admin-space write): follow it."""
        new = dict(plugins) if isinstance(plugins, dict) else {}
        for name in [n for n in self.records if n not in new]:
            await self._stop_one(name)
        for name, section in new.items():
            old = self.sections.get(name)
            record = self.records.get(name)
            if record is not None and old == section:
                continue
            if record is not None and record.state == "Started":
                reconfigure = getattr(record.instance, "reconfigure", None)
                if reconfigure is not None:
                    try:
                        merged = plugin_section(name, section)
                        config = {k: v for k, v in merged.items() if k not in RESERVED}
                        if await reconfigure(config):
                            record.section = merged
                            continue
                    except Exception as exc:  # noqa: BLE001 - a bad change leaves the plugin running
                        log.error("plugin %s: cannot apply its new configuration: %s", name, exc)
                        continue
                await self._stop_one(name)
            else:
                self.records.pop(name, None)
            await self._start_one(name, section, at_startup=False)
        self.sections = new

    # --- admin space ----------------------------------------------------------------------

    def router_field(self) -> dict[str, Any] | None:
        """The ``plugins`` field of ``@/<zid>/router`` (null when no plugin was asked for, as
        the 1.10.2 runtime without plugins answers)."""
        if not self.records:
            return None
        return {n: {"name": n, "path": r.path} for n, r in self.records.items() if r.state == "Started"}

    def admin_replies(self, root: str, key: str) -> Iterator[tuple[str, Any, bool]]:
        """(key, value, is_text) for the plugin keys ``key`` reaches under ``root``."""
        if intersects(key, f"{root}/plugins/*"):
            for name, record in self.records.items():
                reply_key = f"{root}/plugins/{name}"
                if intersects(key, reply_key):
                    yield reply_key, record.status_json(), False
        if not intersects(key, f"{root}/status/plugins/**"):
            return
        for name, record in self.records.items():
            base = f"{root}/status/plugins/{name}"
            if record.state != "Started" or not intersects(key, f"{base}/**"):
                continue
            if intersects(key, f"{base}/__path__"):
                yield f"{base}/__path__", record.path, True
            try:
                status = record.instance.status()
            except Exception:
                log.exception("plugin %s: status failed", name)
                continue
            for suffix, value in status.items():
                reply_key = f"{base}/{suffix}"
                if intersects(key, reply_key):
                    yield reply_key, value, False

    def counters(self) -> dict[str, dict[str, int]]:
        return {n: dict(r.context.counters) for n, r in self.records.items() if r.context is not None}
