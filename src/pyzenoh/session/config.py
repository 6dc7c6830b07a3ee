"""Session configuration: zenoh's JSON5 tree, as strict as zenoh-python's ``zenoh.Config``.

Same shape and key names as eclipse-zenoh's configuration, so an existing config file
works. As zenoh-python does, ``Config.from_json5``, ``from_file``, ``from_env`` and
``insert_json5`` (and pyzenoh's ``Config(dict)``, ``from_dict``, ``set``) refuse any key or
value outside zenoh 1.10.2's schema, naming it (:mod:`pyzenoh.config`); pyzenoh's own
keys live under ``pyzenoh/``. Opening a session then runs the start-up gate
(:meth:`Config.check_open`): security settings a session does not implement stop it,
and the harmless zenoh settings it ignores are named in one warning. Understood keys:

``mode`` (``"client"`` | ``"peer"``), ``connect/endpoints``, ``connect/timeout_ms``,
``connect/exit_on_failure``, ``connect/retry/*`` (reconnection, see
:mod:`pyzenoh.session.connector`), ``listen/endpoints`` (peer mode), ``id``,
``transport/link/tx/lease`` (ms), ``transport/link/tx/keep_alive``,
``transport/link/tx/batch_size``, ``transport/link/tx/sequence_number_resolution``,
``transport/unicast/open_timeout`` (ms), ``transport/unicast/qos/enabled``,
``queries_default_timeout`` (ms), ``scouting/...`` (see :mod:`pyzenoh.session.scouting`),
``transport/link/protocols``, ``transport/link/tls/*`` (for ``tls/`` endpoints, see
:mod:`pyzenoh.security.tls`), ``transport/auth/usrpwd/{user,password,dictionary_file}``
(see :mod:`pyzenoh.security.usrpwd`), and pyzenoh's own
``pyzenoh/limits/send_queue_max_bytes`` (per-link send queue cap, default 4 MiB).
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

from typing_extensions import override

from pyzenoh.config import (
    check_config,
    endpoints_for,
    insert_problems,
    loads,
    node_at,
    problems,
    raise_problems,
    split_key,
)
from pyzenoh.config.nodes import ModeV
from pyzenoh.config.schema import node_at as schema_node
from pyzenoh.errors import UsageError
from pyzenoh.security.tls import TlsConfig, tls_config
from pyzenoh.security.usrpwd import UsrPwd, usrpwd_from_config

_RESOLUTIONS = {"8bit": 0, "16bit": 1, "32bit": 2, "64bit": 3}
#: Config files larger than this are refused (they are hand-written JSON5).
MAX_CONFIG_BYTES = 1 << 20
#: A session's per-link send queue cap when ``pyzenoh/limits/send_queue_max_bytes`` is unset.
DEFAULT_SEND_QUEUE_MAX_BYTES = 4 << 20


def _checked(tree: Any, what: str = "config") -> dict[str, Any]:
    if not isinstance(tree, dict):
        raise UsageError(f"a config must be a JSON5 object, got {type(tree).__name__}")
    raise_problems(problems(tree), what)
    return tree


class Config:
    """A zenoh configuration tree (``Config()``, ``from_json5``, ``from_file``, ``from_dict``).

    Every way in refuses keys and values outside the schema with a UsageError naming them.
    """

    __slots__ = ("_tree",)

    def __init__(self, tree: dict[str, Any] | None = None) -> None:
        self._tree: dict[str, Any] = {} if tree is None else _checked(copy.deepcopy(tree))

    @classmethod
    def from_dict(cls, tree: dict[str, Any]) -> Config:
        return cls(tree)

    @classmethod
    def from_json5(cls, json: str) -> Config:  # zenoh-python's parameter name
        tree = loads(json)
        config = cls()
        config._tree = _checked(tree)
        return config

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> Config:
        p = Path(path)
        try:
            if p.stat().st_size > MAX_CONFIG_BYTES:
                raise UsageError(f"config file {p} is larger than {MAX_CONFIG_BYTES} bytes")
            text = p.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read config file {p}: {exc}") from None
        try:
            return cls.from_json5(text)
        except UsageError as exc:
            raise UsageError(f"config file {p}: {exc}") from None

    @classmethod
    def from_env(cls) -> Config:
        path = os.environ.get("ZENOH_CONFIG")
        if not path:
            raise UsageError("ZENOH_CONFIG is not set")
        return cls.from_file(path)

    # --- zenoh-python style access --------------------------------------------------------

    def get_json(self, key: str) -> str:
        """The value at a ``a/b/c`` path as JSON text (null when unset), like zenoh's
        ``get_json``; a key outside the schema is refused."""
        parts = split_key(key)
        if not parts or (parts[0] not in ("plugins", "metadata") and node_at(key) is None):
            raise UsageError(f"unknown config key {key!r}")
        return json.dumps(self.get(key))

    def insert_json5(self, key: str, value: str) -> None:
        """Set the value at ``key`` from JSON5 text, refusing (and changing nothing) where
        zenoh-python's ``insert_json5`` refuses: a key outside the schema or a bad value."""
        try:
            parsed = loads(value)
        except UsageError as exc:
            raise UsageError(f"config {key}: {exc}") from None
        self.set(key, parsed)

    def get(self, key: str, default: Any = None) -> Any:
        node: Any = self._tree
        for part in _parts(key):
            if not isinstance(node, dict) or part not in node:
                return default
            node = node[part]
        return node

    def set(self, key: str, value: Any) -> None:
        """Set the value at ``key`` (a Python value), checked as :meth:`insert_json5` does."""
        parts = _parts(key)
        raise_problems(insert_problems(key, value))
        node = self._tree
        for part in parts[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = {}
                node[part] = child
            node = child
        node[parts[-1]] = copy.deepcopy(value)

    def to_dict(self) -> dict[str, Any]:
        return copy.deepcopy(self._tree)

    @override
    def __str__(self) -> str:
        return json.dumps(self._tree)

    def check_open(self) -> list[str]:
        """The start-up gate of a session (``open()``): the whole tree against the schema
        (zenoh's cross-key rules included), then refusals of what a session must not start
        with (security it does not implement, unservable endpoints); returns the ignored
        settings it warned about. The usrpwd dictionary_file and TLS files are read when
        the session builds its link configuration, before anything is sent."""
        return check_config(self._tree, "session", self.mode)

    # --- typed views ---------------------------------------------------------------------

    @property
    def mode(self) -> str:
        mode = self.get("mode") or "peer"  # null: zenoh's default
        if mode not in ("client", "peer"):
            raise UsageError(f"mode {mode!r} is not supported (client or peer)")
        return str(mode)

    @property
    def connect(self) -> list[str]:
        # One list, or zenoh's {router: [...], peer: [...], client: [...]} (null: none).
        eps = endpoints_for(self._tree, "connect/endpoints", self.mode)
        if not all(isinstance(e, str) for e in eps):
            raise UsageError("connect/endpoints: endpoint groups {strategy, locators} are not implemented")
        return eps

    @property
    def listen(self) -> list[str]:
        """``listen/endpoints`` for this mode (a peer's default: ``tcp/[::]:0``; a client
        listens on nothing unless told)."""
        return [str(e) for e in endpoints_for(self._tree, "listen/endpoints", self.mode)]

    def _mode_value(self, key: str) -> Any:
        """A mode-dependent value (``{router: .., peer: .., client: ..}`` or one value)
        for this session's mode, zenoh's per-mode default when unset."""
        node = schema_node(key)
        assert isinstance(node, ModeV), key
        return node.for_mode(self.get(key), self.mode)

    @property
    def connect_timeout_ms(self) -> int:
        """``connect/timeout_ms``: how long open() retries the connect endpoints (0: one
        try each, -1: forever); zenoh's defaults: client 0, peer -1."""
        return int(self._mode_value("connect/timeout_ms"))

    @property
    def connect_exit_on_failure(self) -> bool:
        """``connect/exit_on_failure`` (zenoh's defaults: client true, peer false)."""
        return bool(self._mode_value("connect/exit_on_failure"))

    @property
    def connect_retry(self) -> tuple[int, int, float]:
        """``connect/retry``: (period_init_ms, period_max_ms, period_increase_factor),
        zenoh's defaults (1000, 4000, 2)."""
        out: list[Any] = []
        for name in ("period_init_ms", "period_max_ms", "period_increase_factor"):
            node = schema_node(f"connect/retry/{name}")
            assert isinstance(node, ModeV)
            out.append(node.for_mode(self.get(f"connect/retry/{name}"), self.mode))
        return int(out[0]), int(out[1]), float(out[2])

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
    def compression(self) -> bool:
        return bool(self.get("transport/unicast/compression/enabled", False))

    @property
    def max_links(self) -> int:
        """Links per session (above 1: zenoh's multilink, transport/multilink.py)."""
        return self._int("transport/unicast/max_links", 1, 1)

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
        return self._int("pyzenoh/limits/send_queue_max_bytes", DEFAULT_SEND_QUEUE_MAX_BYTES, 1)

    @property
    def tls(self) -> TlsConfig:
        """``transport/link/tls``: certificates are read when a tls/ endpoint is opened."""
        return tls_config(self._tree)

    @property
    def usrpwd(self) -> UsrPwd | None:
        """``transport/auth/usrpwd``: the user/password presented when connecting, the
        users required from peers connecting to a listening peer (dictionary_file)."""
        return usrpwd_from_config(self.get("transport/auth/usrpwd"))

    @property
    def zid(self) -> str | None:
        value = self.get("id")
        if value is None:
            return None
        if not isinstance(value, str):
            raise UsageError("id must be a hexadecimal string")
        return value


def _parts(key: str) -> list[str]:
    parts = split_key(key)
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
