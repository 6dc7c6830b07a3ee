"""``plugins/storage_manager``, parsed as zenoh-backend-traits' ``config.rs`` does.

* ``volumes.<name>``: a volume of backend ``backend`` (default: its name): ``memory``
  (always there, undeclared), ``fs`` (:mod:`.volumes.fs`), ``rocksdb``
  (:mod:`.volumes.rocksdb`); other keys are the backend's (none for these three).
* ``storages.<name>``: ``key_expr`` (required), ``volume`` (a volume name, or ``{id,
  ...}`` whose other keys are the storage's options for that volume), ``strip_prefix``
  (a non-wild prefix of key_expr), ``complete`` (bool or "true"/"false"),
  ``garbage_collection`` ``{period, lifespan}`` (seconds; defaults 30 and 86400),
  ``replication`` (refused: not implemented).

Any error names the key, and the whole section is refused (zenohd's storage manager then
fails to start; the host stops the router if it is required).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pyzenoh.errors import UsageError
from pyzenoh.keyexpr import KeyExprError, validate

__all__ = ["BACKENDS", "ManagerConfig", "StorageConfig", "VolumeConfig", "parse_manager_config"]

BACKENDS = ("memory", "fs", "rocksdb")
SECTION_KEYS = ("volumes", "storages", "backend_search_dirs")
STORAGE_KEYS = ("key_expr", "volume", "strip_prefix", "complete", "garbage_collection", "replication")


@dataclass(frozen=True)
class VolumeConfig:
    name: str
    backend: str
    rest: dict[str, Any] = field(default_factory=dict)
    required: bool = False
    paths: list[str] | None = None

    def status_json(self) -> dict[str, Any]:
        """As backend-traits' ``VolumeConfig::to_json_value``: its own keys, ``__path__``
        when given, ``__required__: false`` unless required."""
        out = dict(self.rest)
        if self.paths is not None:
            out["__path__"] = list(self.paths)
        if not self.required:
            out["__required__"] = False
        return out


@dataclass(frozen=True)
class StorageConfig:
    name: str
    key_expr: str
    volume_id: str
    volume_cfg: dict[str, Any] | None
    strip_prefix: str | None = None
    complete: bool = False
    gc_period_s: float = 30.0
    gc_lifespan_s: float = 86_400.0

    def status_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"key_expr": self.key_expr}
        if self.strip_prefix is not None:
            out["strip_prefix"] = self.strip_prefix
        out["volume"] = self.volume_id if self.volume_cfg is None else {**self.volume_cfg, "id": self.volume_id}
        return out


@dataclass(frozen=True)
class ManagerConfig:
    volumes: dict[str, VolumeConfig]
    storages: dict[str, StorageConfig]


def _object(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise UsageError(f"{where}: expected an object, got {value!r}")
    return value


def parse_manager_config(section: dict[str, Any]) -> ManagerConfig:
    where = "plugins/storage_manager"
    unknown = [k for k in section if k not in SECTION_KEYS]
    if unknown:
        raise UsageError(f"{where}/{unknown[0]}: unknown key (expected {', '.join(SECTION_KEYS)})")
    volumes = {"memory": VolumeConfig("memory", "memory")}
    for name, cfg in _object(section.get("volumes"), f"{where}/volumes").items():
        cfg = _object(cfg, f"{where}/volumes/{name}")
        backend = cfg.get("backend", name)
        if not isinstance(backend, str):
            raise UsageError(f"{where}/volumes/{name}/backend: expected a string, got {backend!r}")
        rest = {k: v for k, v in cfg.items() if k not in ("backend", "__path__", "__required__")}
        required = cfg.get("__required__", False)
        if not isinstance(required, bool):
            raise UsageError(f"{where}/volumes/{name}/__required__: expected true or false, got {required!r}")
        paths = cfg.get("__path__")
        if isinstance(paths, str):
            paths = [paths]
        if paths is not None and not (isinstance(paths, list) and all(isinstance(p, str) for p in paths)):
            raise UsageError(f"{where}/volumes/{name}/__path__: expected a string or a list of strings")
        volumes[name] = VolumeConfig(name, backend, rest, required, paths)
    storages = {}
    for name, cfg in _object(section.get("storages"), f"{where}/storages").items():
        storages[name] = parse_storage(name, _object(cfg, f"{where}/storages/{name}"))
    return ManagerConfig(volumes, storages)


def _seconds(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise UsageError(f"{where}: expected a positive number of seconds, got {value!r}")
    return float(value)


def parse_storage(name: str, cfg: dict[str, Any]) -> StorageConfig:
    where = f"plugins/storage_manager/storages/{name}"
    unknown = [k for k in cfg if k not in STORAGE_KEYS]
    if unknown:
        raise UsageError(f"{where}/{unknown[0]}: unknown key (expected {', '.join(STORAGE_KEYS)})")
    key_expr = cfg.get("key_expr")
    if not isinstance(key_expr, str):
        raise UsageError(f"{where}/key_expr: a storage needs a key_expr string")
    try:
        validate(key_expr)
    except KeyExprError as exc:
        raise UsageError(f"{where}/key_expr: '{key_expr}' is not a valid key-expression: {exc}") from None
    complete = cfg.get("complete", False)
    if complete in ("true", "false"):
        complete = complete == "true"
    if not isinstance(complete, bool):
        raise UsageError(f"{where}/complete: only booleans or strings ('true','false') are accepted")
    strip = cfg.get("strip_prefix")
    if strip is not None:
        if not isinstance(strip, str):
            raise UsageError(f"{where}/strip_prefix: only strings are accepted")
        if not key_expr.startswith(strip):
            raise UsageError(f'{where}/strip_prefix: "{strip}" is not a prefix of "key_expr={key_expr}"')
        try:
            validate(strip)
        except KeyExprError as exc:
            raise UsageError(f"{where}/strip_prefix: '{strip}' is not a valid key-expression: {exc}") from None
        if "*" in strip:
            raise UsageError(f'{where}/strip_prefix: "{strip}" contains wildcard characters (it shouldn\'t)')
    volume = cfg.get("volume")
    volume_cfg: dict[str, Any] | None = None
    if isinstance(volume, str):
        volume_id = volume
    elif isinstance(volume, dict):
        volume_id = volume.get("id")  # type: ignore[assignment]
        if not isinstance(volume_id, str):
            raise UsageError(f"{where}/volume: an object volume needs a string `id`")
        volume_cfg = {k: v for k, v in volume.items() if k != "id"}
    elif volume is None:
        raise UsageError(f"{where}/volume: missing (a volume name, or an object with at least `id`)")
    else:
        raise UsageError(f"{where}/volume: only strings or objects with at least the `id` field are accepted")
    gc = _object(cfg.get("garbage_collection"), f"{where}/garbage_collection")
    bad = [k for k in gc if k not in ("period", "lifespan")]
    if bad:
        raise UsageError(f"{where}/garbage_collection/{bad[0]}: unknown key (expected period, lifespan)")
    period = _seconds(gc.get("period", 30), f"{where}/garbage_collection/period")
    lifespan = _seconds(gc.get("lifespan", 86_400), f"{where}/garbage_collection/lifespan")
    if cfg.get("replication") is not None:
        raise UsageError(f"{where}/replication: storage replication is not implemented by pyzenoh")
    return StorageConfig(name, key_expr, volume_id, volume_cfg, strip, complete, period, lifespan)
