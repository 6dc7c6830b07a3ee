"""The storage manager: :mod:`.config` (its section), :mod:`.semantics` (what a storage
keeps, sans-IO, and the memory volume), :mod:`.volumes` (fs, rocksdb and the data-info
they share), :mod:`.plugin` (the plugin: storages as local sessions)."""
