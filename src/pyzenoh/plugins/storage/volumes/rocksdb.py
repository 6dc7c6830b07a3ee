"""The ``rocksdb`` volume: zenoh-backend-rocksdb's configuration and layout, on RocksDB
through ``rocksdict``.

Storage-level keys: ``dir`` (required, under ``${ZENOH_BACKEND_ROCKSDB_ROOT}``, default
``~/.zenoh/zenoh_backend_rocksdb``), ``create_db`` (false: the database must exist),
``read_only`` (false), ``on_closure`` (``do_nothing`` | ``destroy_db``). Payloads are in
the ``default`` column family and ``(time, id, deleted, encoding)`` in ``data_info``
(:mod:`.datainfo`), both written in one batch; the strip_prefix itself is the key
``@@none_key@@``; a delete removes the key from both.

Durability: every write goes through RocksDB's write-ahead log before the call returns,
so what was stored survives SIGTERM and kill -9 (not a power cut: no fsync per write,
as upstream).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from typing import Any

from pyzenoh.codec import Timestamp
from pyzenoh.errors import UsageError
from pyzenoh.plugins.storage.semantics import Stored
from pyzenoh.plugins.storage.volumes import datainfo
from pyzenoh.plugins.storage.volumes.options import (
    bool_option,
    open_rocksdb,
    relative_dir,
    root_dir,
)

__all__ = ["RocksdbVolume"]

ROOT_ENV = "ZENOH_BACKEND_ROCKSDB_ROOT"
DEFAULT_ROOT = "zenoh_backend_rocksdb"
NONE_KEY = b"@@none_key@@"
CF_DATA_INFO = "data_info"
KNOWN = ("dir", "create_db", "read_only", "on_closure")


def _key(key: str | None) -> bytes:
    return NONE_KEY if key is None else key.encode()


class RocksdbVolume:
    def __init__(self, storage: str, cfg: dict[str, Any]) -> None:
        where = f"storages/{storage}/volume"
        unknown = [k for k in cfg if k not in KNOWN]
        if unknown:
            raise UsageError(f"{where}/{unknown[0]}: not a rocksdb volume option ({', '.join(KNOWN)})")
        self.read_only = bool_option(cfg, "read_only", False, where)
        create = bool_option(cfg, "create_db", False, where)
        on_closure = cfg.get("on_closure", "do_nothing")
        if on_closure not in ("do_nothing", "destroy_db"):
            raise UsageError(
                f'{where}/on_closure: must be either "do_nothing" (default) or "destroy_db", got {on_closure!r}'
            )
        self.destroy = on_closure == "destroy_db"
        self.path = root_dir(ROOT_ENV, DEFAULT_ROOT) / relative_dir(cfg, where)
        self.db: Any = open_rocksdb(
            self.path, where, create=create, column_families=(CF_DATA_INFO,), read_only=self.read_only
        )
        self.info: Any = self.db.get_column_family(CF_DATA_INFO)
        self.info_handle: Any = self.db.get_column_family_handle(CF_DATA_INFO)

    def get(self, key: str | None) -> Stored | None:
        k = _key(key)
        payload = self.db.get(k)
        if payload is None:
            return None
        raw = self.info.get(k)
        if raw is None:
            raise ValueError(f"no data_info for key {key!r} (a legacy or damaged database)")
        encoding, timestamp, deleted = datainfo.decode(raw, with_deleted=True)
        if deleted:
            return None
        return Stored(bytes(payload), encoding, timestamp)

    def put(self, key: str | None, value: Stored) -> None:
        if self.read_only:
            raise PermissionError("Received PUT for read-only DB")
        from rocksdict import WriteBatch

        k = _key(key)
        batch = WriteBatch(raw_mode=True)
        batch.put(k, value.payload)
        batch.put(k, datainfo.encode(value.encoding, value.timestamp, deleted=False), self.info_handle)
        self.db.write(batch)

    def delete(self, key: str | None, timestamp: Timestamp) -> None:
        if self.read_only:
            raise PermissionError("Received DELETE for read-only DB")
        from rocksdict import WriteBatch

        k = _key(key)
        batch = WriteBatch(raw_mode=True)
        batch.delete(k)
        batch.delete(k, self.info_handle)
        self.db.write(batch)

    def stored_keys(self) -> Iterable[str | None]:
        out: list[str | None] = []
        for k in self.db.keys():  # noqa: SIM118 - an Rdict, not a dict
            raw = bytes(k)
            out.append(None if raw == NONE_KEY else raw.decode("utf-8", "replace"))
        return out

    def close(self) -> None:
        self.info.close()
        self.db.close()
        if self.destroy:
            shutil.rmtree(self.path, ignore_errors=True)
