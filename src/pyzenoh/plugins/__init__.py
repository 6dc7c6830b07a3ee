"""Plugins of ``pyzenoh router``, in Python: zenohd's ``plugins/<name>`` sections.

* :mod:`.registry` -- which plugins exist: built in (``rest``, ``storage_manager``) and the
  ``pyzenoh.plugins`` entry points of installed packages;
* :mod:`.host` -- :class:`PluginHost`: zenohd's ``__required__``/``__config__``/``__path__``
  rules, start, stop, live reconfiguration, the plugins' admin-space keys;
* :mod:`.session` -- :class:`LocalSession`: a plugin is a local session of the router
  (a local face, like the admin space; why, in its docstring);
* :mod:`.rest` -- the REST plugin (zenoh-plugin-rest 1.10) on aiohttp;
* :mod:`.storage` -- the storage manager (zenoh's storages_mgt) with the ``memory``,
  ``fs`` and ``rocksdb`` volumes.
"""

from pyzenoh.plugins.host import Plugin, PluginContext, PluginHost
from pyzenoh.plugins.session import LocalSession

__all__ = ["LocalSession", "Plugin", "PluginContext", "PluginHost"]
