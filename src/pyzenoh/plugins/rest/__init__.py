"""The REST plugin (zenoh-plugin-rest 1.10): :mod:`.config` (its section and pyzenoh's
limits), :mod:`.values` (the plugin's rules, pure), :mod:`.plugin` (aiohttp glue)."""
