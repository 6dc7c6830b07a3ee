"""What the persistent volumes share: their option checks, their root directory
(``ZENOH_BACKEND_*_ROOT``, else ``${ZENOH_HOME:-~/.zenoh}/<default>``) and opening a
RocksDB database (through ``rocksdict``, an optional dependency: ``pip install
pyzenoh[rocksdb]``), with errors that name the storage.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from pyzenoh.errors import UsageError

__all__ = ["bool_option", "open_rocksdb", "relative_dir", "root_dir"]


def bool_option(cfg: dict[str, Any], key: str, default: bool, where: str) -> bool:
    value = cfg.get(key, default)
    if not isinstance(value, bool):
        raise UsageError(f"{where}/{key}: must be a boolean, got {value!r}")
    return value


def root_dir(env: str, default: str) -> Path:
    root = os.environ.get(env)
    if root:
        return Path(root)
    home = os.environ.get("ZENOH_HOME") or os.path.join(os.path.expanduser("~"), ".zenoh")
    return Path(home) / default


def relative_dir(cfg: dict[str, Any], where: str) -> str:
    value = cfg.get("dir")
    if not isinstance(value, str) or not value:
        raise UsageError(f'{where}/dir: missing required property "dir" (a string)')
    path = PurePosixPath(value)
    if path.is_absolute():
        raise UsageError(f'{where}/dir: invalid property "dir"="{value}": the path must be relative')
    if ".." in path.parts:
        raise UsageError(f'{where}/dir: invalid property "dir"="{value}": the path must not contain any \'..\'')
    return value


def open_rocksdb(path: Path, where: str, *, create: bool, column_families: Sequence[str], read_only: bool) -> Any:
    try:
        from rocksdict import AccessType, Options, Rdict
    except ImportError:
        raise UsageError(f"{where}: this volume needs RocksDB: pip install 'pyzenoh[rocksdb]' (rocksdict)") from None
    opts = Options(raw_mode=True)
    opts.create_if_missing(create)
    opts.create_missing_column_families(True)
    families = {name: Options(raw_mode=True) for name in column_families}
    try:
        if read_only:
            return Rdict(str(path), options=opts, column_families=families, access_type=AccessType.read_only())
        return Rdict(str(path), options=opts, column_families=families)
    except Exception as exc:  # noqa: BLE001 - rocksdict raises plain Exception
        raise UsageError(f"{where}: failed to open the database {path}: {exc}") from None
