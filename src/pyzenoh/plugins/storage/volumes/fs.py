"""The ``fs`` volume: zenoh-backend-filesystem's configuration and layout.

Storage-level keys (``storages.<name>.volume``): ``dir`` (required, relative, no ``..``),
``read_only`` (false), ``on_closure`` (``do_nothing`` | ``delete_all``), ``follow_links``
(false), ``keep_mime_types`` (true). Each storage is the directory
``${ZENOH_BACKEND_FS_ROOT}/<dir>`` (default ``~/.zenoh/zenoh_backend_fs``); each key is a
file at its stripped key's path holding the raw payload (the strip_prefix itself is the
file ``@root``); a file that would be a directory's name too gets the suffix ``.##z``.
Encoding and timestamp live in a RocksDB database ``.zenoh_datainfo`` in that directory,
keyed by the file's full path (:mod:`.datainfo`). A file without data-info (written by
someone else, or by a process killed between the two writes) is served with an encoding
guessed from its extension and its modification time as timestamp, as upstream does.

Durability: a file is written then renamed into place and the data-info goes through
RocksDB's write-ahead log, so a value stored survives SIGTERM and kill -9 of the router
(not a power cut: neither upstream nor this volume fsyncs each write).
"""

from __future__ import annotations

import mimetypes
import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pyzenoh.codec import Encoding, Timestamp, ZenohId
from pyzenoh.errors import UsageError
from pyzenoh.plugins.storage.semantics import Stored
from pyzenoh.plugins.storage.volumes import datainfo
from pyzenoh.plugins.storage.volumes.options import (
    bool_option,
    open_rocksdb,
    relative_dir,
    root_dir,
)

__all__ = ["FsVolume"]

ROOT_ENV = "ZENOH_BACKEND_FS_ROOT"
DEFAULT_ROOT = "zenoh_backend_fs"
ROOT_KEY = "@root"
CONFLICT_SUFFIX = ".##z"
DB_DIR = ".zenoh_datainfo"
TMP_PREFIX = ".zenoh_tmp_"
KNOWN = ("dir", "read_only", "on_closure", "follow_links", "keep_mime_types")


class FsVolume:
    def __init__(self, storage: str, cfg: dict[str, Any]) -> None:
        where = f"storages/{storage}/volume"
        unknown = [k for k in cfg if k not in KNOWN]
        if unknown:
            raise UsageError(f"{where}/{unknown[0]}: not a filesystem volume option ({', '.join(KNOWN)})")
        self.read_only = bool_option(cfg, "read_only", False, where)
        self.follow_links = bool_option(cfg, "follow_links", False, where)
        self.keep_mime = bool_option(cfg, "keep_mime_types", True, where)
        on_closure = cfg.get("on_closure", "do_nothing")
        if on_closure not in ("do_nothing", "delete_all"):
            raise UsageError(f'{where}/on_closure: must be either "delete_all" or "do_nothing", got {on_closure!r}')
        self.delete_all = on_closure == "delete_all"
        self.base = root_dir(ROOT_ENV, DEFAULT_ROOT) / relative_dir(cfg, where)
        try:
            self.base.mkdir(parents=True, exist_ok=True)
            if not self.read_only:
                with tempfile.TemporaryFile(dir=self.base):
                    pass
        except OSError as exc:
            raise UsageError(
                f'{where}/dir: cannot create File System Storage on "dir"={str(self.base)!r}: {exc.strerror or exc}'
            ) from None
        self.db: Any = open_rocksdb(self.base / DB_DIR, where, create=True, column_families=(), read_only=False)
        self.path = str(self.base)

    # --- paths ----------------------------------------------------------------------------

    def _file(self, key: str | None) -> Path:
        return self.base / (ROOT_KEY if key is None else key)

    def _existing(self, key: str | None) -> Path | None:
        path = self._file(key)
        for candidate in (path, Path(str(path) + CONFLICT_SUFFIX)):
            if candidate.is_file() and (self.follow_links or not self._has_symlink(candidate)):
                return candidate
        return None

    def _has_symlink(self, path: Path) -> bool:
        p = path
        while p != self.base and p != p.parent:
            if p.is_symlink():
                return True
            p = p.parent
        return False

    # --- Volume ---------------------------------------------------------------------------

    def get(self, key: str | None) -> Stored | None:
        path = self._existing(key)
        if path is None:
            return None
        payload = path.read_bytes()
        encoding, timestamp = self._info(path)
        return Stored(payload, encoding, timestamp)

    def _info(self, path: Path) -> tuple[Encoding, Timestamp]:
        raw = self.db.get(str(path).encode())
        if raw is not None:
            encoding, timestamp, _ = datainfo.decode(raw, with_deleted=False)
            return encoding, timestamp
        guessed, _ = mimetypes.guess_type(path.name)
        if guessed is not None and self.keep_mime:
            encoding = Encoding.from_str(guessed)
        else:
            encoding = Encoding.from_str("application/octet-stream")
        return encoding, Timestamp.from_ns(path.stat().st_mtime_ns, ZenohId(1))

    def put(self, key: str | None, value: Stored) -> None:
        if self.read_only:
            raise PermissionError("Received update for read-only File System Storage")
        path = self._file(key)
        for ancestor in reversed(path.parents):  # an ancestor that is a file moves aside
            if ancestor == self.base or self.base not in ancestor.parents:
                continue
            if ancestor.is_file():
                moved = Path(str(ancestor) + CONFLICT_SUFFIX)
                os.replace(ancestor, moved)
                info = self.db.get(str(ancestor).encode())
                if info is not None:
                    self.db[str(moved).encode()] = info
                    self.db.delete(str(ancestor).encode())
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir():
            path = Path(str(path) + CONFLICT_SUFFIX)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=TMP_PREFIX)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(value.payload)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self.db[str(path).encode()] = datainfo.encode(value.encoding, value.timestamp)

    def delete(self, key: str | None, timestamp: Timestamp) -> None:
        if self.read_only:
            raise PermissionError("Received update for read-only File System Storage")
        path = self._existing(key) or self._file(key)
        if path.is_file():
            path.unlink()
            parent = path.parent
            while parent != self.base and self.base in parent.parents:
                try:
                    parent.rmdir()
                except OSError:
                    break
                parent = parent.parent
        self.db.delete(str(path).encode())

    def stored_keys(self) -> Iterable[str | None]:
        out: list[str | None] = []
        for dirpath, dirnames, filenames in os.walk(self.base, followlinks=self.follow_links):
            rel_dir = os.path.relpath(dirpath, self.base)
            if rel_dir == ".":
                dirnames[:] = [d for d in dirnames if d != DB_DIR]
            for name in filenames:
                if name.startswith(TMP_PREFIX):
                    continue
                rel = name if rel_dir == "." else f"{rel_dir}/{name}"
                if rel == ROOT_KEY:
                    out.append(None)
                    continue
                rel = rel.removesuffix(CONFLICT_SUFFIX)
                if rel.startswith("@") or any(c in rel for c in "*$#?"):
                    continue  # not a key this storage could have written
                out.append(rel)
        return out

    def close(self) -> None:
        self.db.close()
        if self.delete_all:
            shutil.rmtree(self.base, ignore_errors=True)
