"""Session configuration: zenoh's JSON5 tree, with the keys pyzenoh understands.

Same shape and key names as eclipse-zenoh's configuration, so an existing config file
works; keys pyzenoh does not implement are kept and ignored. Understood keys:

``mode`` (``"client"`` | ``"peer"``), ``connect/endpoints``, ``id``,
``transport/link/tx/lease`` (ms), ``transport/link/tx/keep_alive``,
``transport/link/tx/batch_size``, ``transport/link/tx/sequence_number_resolution``,
``transport/unicast/open_timeout`` (ms), ``transport/unicast/qos/enabled``,
``queries_default_timeout`` (ms), and pyzenoh's own ``transport/link/tx/queue/max_bytes``.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import json5

from pyzenoh.errors import UsageError

_RESOLUTIONS = {"8bit": 0, "16bit": 1, "32bit": 2, "64bit": 3}
#: Config files larger than this are refused (they are hand-written JSON5).
MAX_CONFIG_BYTES = 1 << 20


class Config:
    """A zenoh configuration tree (``Config()``, ``from_json5``, ``from_file``, ``from_dict``)."""

    __slots__ = ("_tree",)

    def __init__(self, tree: dict[str, Any] | None = None) -> None:
        self._tree: dict[str, Any] = {} if tree is None else copy.deepcopy(dict(tree))

    @classmethod
    def from_dict(cls, tree: dict[str, Any]) -> Config:
        return cls(tree)

    @classmethod
    def from_json5(cls, text: str) -> Config:
        try:
            tree = json5.loads(text)
        except ValueError as exc:
            raise UsageError(f"invalid JSON5 config: {exc}") from None
        if not isinstance(tree, dict):
            raise UsageError("a config must be a JSON5 object")
        return cls(tree)

    @classmethod
    def from_file(cls, path: str | Path) -> Config:
        p = Path(path)
        if p.stat().st_size > MAX_CONFIG_BYTES:
            raise UsageError(f"config file {p} is larger than {MAX_CONFIG_BYTES} bytes")
        return cls.from_json5(p.read_text(encoding="utf-8"))

    @classmethod
    def from_env(cls) -> Config:
        path = os.environ.get("ZENOH_CONFIG")
        if not path:
            raise UsageError("ZENOH_CONFIG is not set")
        return cls.from_file(path)

    # --- zenoh-python style access --------------------------------------------------------

    def get_json(self, key: str) -> Any:
        """The value at a ``a/b/c`` path, as JSON text (like zenoh's ``get_json``)."""
        return json.dumps(self.get(key))

    def insert_json5(self, key: str, value: str) -> None:
        try:
            parsed = json5.loads(value)
        except ValueError as exc:
            raise UsageError(f"invalid JSON5 value for {key!r}: {exc}") from None
        self.set(key, parsed)

    def get(self, key: str, default: Any = None) -> Any:
        node: Any = self._tree
        for part in _parts(key):
            if not isinstance(node, dict) or part not in node:
                return default
            node = node[part]
        return node

    def set(self, key: str, value: Any) -> None:
        parts = _parts(key)
        node = self._tree
        for part in parts[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = {}
                node[part] = child
            node = child
        node[parts[-1]] = value

    def to_dict(self) -> dict[str, Any]:
        return copy.deepcopy(self._tree)

    def __str__(self) -> str:
        return json.dumps(self._tree)

    # --- typed views ---------------------------------------------------------------------

    @property
    def mode(self) -> str:
        mode = self.get("mode", "peer")
        if mode not in ("client", "peer"):
            raise UsageError(f"mode {mode!r} is not supported (client or peer)")
        return str(mode)

    @property
    def connect(self) -> list[str]:
        eps = self.get("connect/endpoints", [])
        if isinstance(eps, dict):  # zenoh allows {router: [...], peer: [...]}
            eps = eps.get(self.mode, [])
        if isinstance(eps, str):
            eps = [eps]
        if not isinstance(eps, list) or not all(isinstance(e, str) for e in eps):
            raise UsageError("connect/endpoints must be a list of strings")
        return list(eps)

    def _int(self, key: str, default: int, minimum: int = 0) -> int:
        value = self.get(key, default)
        if value is None:
            return default
        if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
            raise UsageError(f"{key} must be an integer >= {minimum}")
        return value

    @property
    def lease_ms(self) -> int:
        return self._int("transport/link/tx/lease", 10_000, 1)

    @property
    def keep_alive(self) -> int:
        return self._int("transport/link/tx/keep_alive", 4, 1)

    @property
    def batch_size(self) -> int:
        return min(self._int("transport/link/tx/batch_size", 65_535, 64), 65_535)

    @property
    def resolution(self) -> int:
        value = self.get("transport/link/tx/sequence_number_resolution", "32bit")
        if value not in _RESOLUTIONS:
            raise UsageError("sequence_number_resolution must be 8bit, 16bit, 32bit or 64bit")
        return _RESOLUTIONS[value] | 0x08  # request ids stay 32-bit

    @property
    def open_timeout_s(self) -> float:
        return self._int("transport/unicast/open_timeout", 10_000, 1) / 1000.0

    @property
    def qos(self) -> bool:
        return bool(self.get("transport/unicast/qos/enabled", True))

    @property
    def queries_default_timeout_s(self) -> float:
        return self._int("queries_default_timeout", 10_000, 1) / 1000.0

    @property
    def max_queue_bytes(self) -> int:
        return self._int("transport/link/tx/queue/max_bytes", 4 * 1024 * 1024, 1)

    @property
    def zid(self) -> str | None:
        value = self.get("id")
        if value is None:
            return None
        if not isinstance(value, str):
            raise UsageError("id must be a hexadecimal string")
        return value


def _parts(key: str) -> list[str]:
    parts = [p for p in key.strip("/").split("/") if p]
    if not parts:
        raise UsageError("empty config key")
    return parts


def to_config(config: Config | dict[str, Any] | str | None) -> Config:
    """Accept a Config, a dict, or JSON5 text."""
    if config is None:
        return Config()
    if isinstance(config, Config):
        return config
    if isinstance(config, dict):
        return Config(config)
    if isinstance(config, str):
        return Config.from_json5(config)
    raise UsageError(f"unsupported config {type(config).__name__}")
