"""Which plugins a router can start, by name: the built-in ones and the ``pyzenoh.plugins``
entry points of installed packages. Light on purpose (no plugin is imported here), so the
config policy can name unknown plugins without loading aiohttp or RocksDB.

A plugin is a class (or factory) called as ``factory(name, config_section, context)``
returning an object with ``async start()``, ``async stop()`` and ``status(prefix)`` (see
:class:`pyzenoh.plugins.host.Plugin`). A third-party package declares one with::

    [project.entry-points."pyzenoh.plugins"]
    my_plugin = "my_package.plugin:MyPlugin"
"""

from __future__ import annotations

from importlib import import_module
from importlib.metadata import entry_points
from typing import Any

ENTRY_POINT_GROUP = "pyzenoh.plugins"

#: Built-in plugins: name -> "module:attribute" (imported only when started).
BUILTIN: dict[str, str] = {
    "rest": "pyzenoh.plugins.rest.plugin:RestPlugin",
    "storage_manager": "pyzenoh.plugins.storage.plugin:StorageManagerPlugin",
}


def _entry_points() -> dict[str, Any]:
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def known(name: str) -> bool:
    """A plugin of this name can be started (built in, or an installed entry point)."""
    return name in BUILTIN or name in _entry_points()


def available() -> list[str]:
    return sorted({*BUILTIN, *_entry_points()})


def factory_of(name: str) -> tuple[Any, str]:
    """The plugin's factory and where it comes from ("builtin" or the entry point's value).
    KeyError when there is no such plugin; ImportError when it cannot be loaded."""
    target = BUILTIN.get(name)
    if target is not None:
        module, _, attr = target.partition(":")
        return getattr(import_module(module), attr), "builtin"
    ep = _entry_points()[name]
    return ep.load(), str(ep.value)
