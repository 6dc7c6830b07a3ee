"""Router configuration: JSON5 files using zenohd's key names where they exist.

Recognised keys (zenohd 1.x spelling)::

    {
      mode: "router",
      id: "a1b2...",                                  // hex ZenohId; random if absent
      listen:  { endpoints: ["tcp/[::]:7447"] },       // or { router: [...], ... }
      connect: { endpoints: [],                        // other routers (or { router: [...] })
                 retry: { period_init_ms: 1000, period_max_ms: 4000,
                          period_increase_factor: 2 } },
      scouting: { gossip: { enabled: true } },         // tell peers each other's locators
      queries_default_timeout: 10000,                 // ms
      timestamping: { enabled: { router: true } },
      routing: { interests: { timeout: 10000 } },
      transport: {
        unicast: { accept_timeout: 10000, accept_pending: 100, max_sessions: 1000,
                   qos: { enabled: true } },
        link: { tx: { lease: 10000, keep_alive: 4, batch_size: 65535,
                      queue: { congestion_control: { block: { wait_before_close: 5000000 },
                                                     drop: { wait_before_drop: 1000 } } },
                // tls/ endpoints: zenohd's keys, see pyzenoh.security.tls
                tls: { root_ca_certificate: "ca.pem", listen_certificate: "cert.pem",
                       listen_private_key: "key.pem", enable_mtls: false } },
        // usrpwd authentication, see pyzenoh.security.usrpwd (user and password go together)
        auth: { usrpwd: { user: "me", password: "secret", dictionary_file: "users.txt" } },
      },
      // zenohd's access control, see pyzenoh.routing.access_control
      access_control: { enabled: true, default_permission: "deny",
                        rules: [{ id: "r", messages: ["put"], flows: ["ingress"],
                                  permission: "allow", key_exprs: ["demo/**"] }],
                        subjects: [{ id: "s", usernames: ["me"] }],
                        policies: [{ rules: ["r"], subjects: ["s"] }] },
      pyzenoh: {                                      // settings zenohd does not have
        limits: { send_queue_max_bytes: 8388608,      // per-link send queue cap
                  max_declarations_per_face: 10000, max_declarations_total: 1000000,
                  max_pending_queries_per_face: 1000, max_pending_queries_total: 100000,
                  max_keyexpr_ids_per_face: 10000, max_links_per_address: 1000,
                  max_route_cache: 65536,
                  max_fragmented_message: 1073741824, max_reassembly_bytes: 268435456,
                  reassembly_timeout_ms: 10000 },
        record: { dir: null, max_segment_bytes: 67108864, max_segment_seconds: 300,
                  key_filter: null },
        msgq: { socket_file: null, tcp: [] },
        // Real routers only forward a query's Budget; true also stops replies past it.
        routing: { enforce_budget: false },
        // Long-lived objects frozen out of the garbage collector's scans every 1 s (0: never).
        memory: { gc_freeze_interval_ms: 1000 },
        // The REST plugin's limits (pyzenoh.plugins.rest.config).
        rest: { max_request_body_bytes: 16777216, max_header_bytes: 8190,
                max_sse_streams: 1000, sse_queue_samples: 10000 },
      },
      adminspace: { permissions: { read: true, write: false } },  // write: config edits
      // zenohd's plugins, in Python (pyzenoh.plugins; docs/zenohd.md)
      plugins: { rest: { http_port: 8000 },
                 storage_manager: { storages: { demo: { key_expr: "demo/**", volume: "memory" } } } },
    }

The tree itself is kept (``RouterConfig.tree``): plugins read their sections from it and
admin-space writes edit it. Files may also be YAML (``.yaml``/``.yml``, with PyYAML).

As zenohd, start-up stops on any key or value outside zenohd 1.10.2's schema (or
pyzenoh's own section), on security settings pyzenoh does not implement, and on
endpoints it cannot serve; other zenohd settings it ignores are named in one warning
(pyzenoh.config).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pyzenoh.config import check_config, loads
from pyzenoh.errors import UsageError
from pyzenoh.interceptors import Interceptors
from pyzenoh.router.admin import admin_enabled
from pyzenoh.router.admin.config import admin_readable
from pyzenoh.router.memory import GC_FREEZE_INTERVAL_MS
from pyzenoh.router.scouting import ScoutingSettings, scouting_settings
from pyzenoh.routing.access_control import AccessControlConfig, parse_access_control
from pyzenoh.routing.types import MAX_ROUTE_CACHE
from pyzenoh.security.tls import TlsConfig, tls_config
from pyzenoh.security.usrpwd import UsrPwd, usrpwd_from_config

log = logging.getLogger(__name__)

DEFAULT_LISTEN = "tcp/[::]:7447"
FACTOR_KEY = "connect/retry/period_increase_factor"


DROP_WAIT_KEY = "transport/link/tx/queue/congestion_control/drop/wait_before_drop"
#: zenohd's default wait_before_drop, µs.
DROP_WAIT_BEFORE_DROP_US = 1_000


@dataclass(frozen=True, slots=True)
class RecordSettings:
    dir: str | None = None
    max_segment_bytes: int = 64 << 20
    max_segment_seconds: float = 300.0
    key_filter: str | None = None


@dataclass(frozen=True, slots=True)
class MsgqSettings:
    socket_file: str | None = None
    tcp: tuple[str, ...] = ()
    enabled: bool = False


@dataclass(frozen=True, slots=True)
class RouterConfig:
    id: str | None = None
    listen: tuple[str, ...] = (DEFAULT_LISTEN,)
    connect: tuple[str, ...] = ()
    lease_ms: int = 10_000
    #: How often the router JOINs its multicast groups (transport/multicast/join_interval).
    multicast_join_interval_ms: int = 2_500
    keep_alive: int = 4
    batch_size: int = 65_535
    accept_timeout_ms: int = 10_000
    max_sessions: int = 1_000
    #: Links one session may have (transport/unicast/max_links; above 1, the MultiLink
    #: handshake extension, as zenohd).
    max_links: int = 1
    #: Accepted connections still in their handshake; more are dropped at once (zenohd).
    accept_pending: int = 100
    #: Connections from one IP address, in handshake or open (pyzenoh's own limit).
    max_links_per_address: int = 1_000
    qos: bool = True
    #: lz4 batch compression offered and accepted (transport/unicast/compression/enabled).
    compression: bool = False
    queries_default_timeout_ms: int = 10_000
    interests_timeout_ms: int = 10_000
    timestamping: bool = True
    send_queue_max_bytes: int = 8 << 20
    #: How long a Block message may wait for room before its link is closed (zenohd's
    #: transport/link/tx/queue/congestion_control/block/wait_before_close, in µs).
    block_wait_before_close_us: int = 5_000_000
    #: How long a Drop message may wait for room in a full queue before it is dropped
    #: (zenohd's .../congestion_control/drop/wait_before_drop, in µs): the face it came
    #: from pauses meanwhile. 0: dropped at once.
    drop_wait_before_drop_us: int = DROP_WAIT_BEFORE_DROP_US
    max_declarations_per_face: int = 10_000
    max_declarations_total: int = 1_000_000
    max_pending_queries_per_face: int = 1_000
    max_pending_queries_total: int = 100_000
    max_keyexpr_ids_per_face: int = 10_000
    #: Entries of each route cache before it is emptied (see pyzenoh.routing.types).
    max_route_cache: int = MAX_ROUTE_CACHE
    max_fragmented_message: int = 1 << 30
    #: Unfinished fragmented messages, over every link (the link going over is closed).
    max_reassembly_bytes: int = 256 << 20
    reassembly_timeout_ms: int = 10_000
    #: Long-lived objects frozen out of the collector's scans this often; 0: never
    #: (pyzenoh/memory/gc_freeze_interval_ms, router/memory.py).
    gc_freeze_interval_ms: int = GC_FREEZE_INTERVAL_MS
    enforce_budget: bool = False
    gossip: bool = True
    adminspace: bool = True
    #: The run and lone lanes (routing/lanes.py). Off, every PUSH takes the message lane:
    #: the reference the equivalence tests hold the lanes to, and a way to rule them out
    #: when a delivery looks wrong (``PYZENOH_FAST_LANES=0`` in the environment).
    fast_lanes: bool = field(default_factory=lambda: os.environ.get("PYZENOH_FAST_LANES", "1") != "0")
    scouting: ScoutingSettings = field(default_factory=ScoutingSettings)
    metadata: Any = None
    retry_period_init_ms: int = 1_000
    retry_period_max_ms: int = 4_000
    retry_period_increase_factor: float = 2.0
    record: RecordSettings = field(default_factory=RecordSettings)
    msgq: MsgqSettings = field(default_factory=MsgqSettings)
    #: transport/link/tls (files are read when the router starts).
    tls: TlsConfig = field(default_factory=TlsConfig)
    #: transport/auth/usrpwd: user/password presented on links this router opens, the
    #: dictionary_file users required on every link it accepts (read when parsed).
    usrpwd: UsrPwd | None = None
    #: access_control (zenohd's schema and checks, see pyzenoh.routing.access_control).
    access_control: AccessControlConfig = field(default_factory=AccessControlConfig)
    #: adminspace/permissions/read: queries on the admin space are answered.
    adminspace_read: bool = True
    #: adminspace/permissions/write: PUT/DELETE on @/<zid>/router/config/** edit the config.
    adminspace_write: bool = False
    #: downsampling, low_pass_filter and qos/network (None: none configured). Each face
    #: gets its own state from it (:meth:`Interceptors.for_face`).
    interceptors: Interceptors | None = None
    #: SO_REUSEPORT on the TCP listeners (``pyzenoh/listen/reuse_port``): one of
    #: ``--workers`` router processes sharing the endpoints.
    reuse_port: bool = False
    #: The whole config tree this was read from (plugins read their sections from it;
    #: admin-space writes edit it). None: built in code, no plugins.
    tree: Any = None

    def with_overrides(self, **changes: Any) -> RouterConfig:
        return replace(self, **{k: v for k, v in changes.items() if v is not None})


def _get(tree: dict[str, Any], path: str, default: Any) -> Any:
    node: Any = tree
    for part in path.split("/"):
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    return default if node is None else node


def _positive_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise UsageError(f"config {name} must be a positive integer, got {value!r}")
    return value


def _count(tree: dict[str, Any], path: str, default: int) -> int:
    """A non-negative integer setting (0 is meaningful: off)."""
    value = _get(tree, path, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UsageError(f"config {path} must be a non-negative integer, got {value!r}")
    return value


def _endpoints(value: Any, name: str) -> tuple[str, ...]:
    if isinstance(value, dict):
        # zenohd's per-mode form: { router: [...], peer: [...], client: [...] }
        value = value.get("router") or []  # null: none for this mode
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UsageError(f"config {name} must be a list of endpoint strings")
    return tuple(value)


def config_from_dict(tree: dict[str, Any]) -> RouterConfig:
    if not isinstance(tree, dict):
        raise UsageError("a router config must be a JSON5 object")
    check_config(tree, "router")  # every key and value first, each named
    mode = tree.get("mode") or "router"
    if mode != "router":
        # zenohd would run this config as a peer or client; pyzenoh router has no such mode.
        # Like other settings it cannot honour harmlessly, it is named, not refused, so that
        # zenohd's own DEFAULT_CONFIG.json5 (mode: "peer") starts a router; the per-mode
        # values read are the router's.
        log.warning(
            "mode: %r is ignored: pyzenoh router runs as a router (per-mode values are read for mode 'router')", mode
        )
    zid = tree.get("id")
    if zid is not None and not isinstance(zid, str):
        raise UsageError("config id must be a hex string")
    ints = {
        "lease_ms": "transport/link/tx/lease",
        "multicast_join_interval_ms": "transport/multicast/join_interval",
        "keep_alive": "transport/link/tx/keep_alive",
        "batch_size": "transport/link/tx/batch_size",
        "accept_timeout_ms": "transport/unicast/accept_timeout",
        "max_sessions": "transport/unicast/max_sessions",
        "max_links": "transport/unicast/max_links",
        "accept_pending": "transport/unicast/accept_pending",
        "max_links_per_address": "pyzenoh/limits/max_links_per_address",
        "max_declarations_total": "pyzenoh/limits/max_declarations_total",
        "max_pending_queries_total": "pyzenoh/limits/max_pending_queries_total",
        "queries_default_timeout_ms": "queries_default_timeout",
        "interests_timeout_ms": "routing/interests/timeout",
        "send_queue_max_bytes": "pyzenoh/limits/send_queue_max_bytes",
        "block_wait_before_close_us": "transport/link/tx/queue/congestion_control/block/wait_before_close",
        "max_declarations_per_face": "pyzenoh/limits/max_declarations_per_face",
        "max_pending_queries_per_face": "pyzenoh/limits/max_pending_queries_per_face",
        "max_keyexpr_ids_per_face": "pyzenoh/limits/max_keyexpr_ids_per_face",
        "max_route_cache": "pyzenoh/limits/max_route_cache",
        "max_fragmented_message": "pyzenoh/limits/max_fragmented_message",
        "max_reassembly_bytes": "pyzenoh/limits/max_reassembly_bytes",
        "reassembly_timeout_ms": "pyzenoh/limits/reassembly_timeout_ms",
        "retry_period_init_ms": "connect/retry/period_init_ms",
        "retry_period_max_ms": "connect/retry/period_max_ms",
    }
    base = RouterConfig()
    values: dict[str, Any] = {}
    for attr, path in ints.items():
        raw = _for_router(_get(tree, path, None), path)
        if raw is not None:
            values[attr] = _positive_int(raw, path)
    rx_max = _get(tree, "transport/link/rx/max_message_size", None)
    if rx_max is not None and "max_fragmented_message" not in values:  # zenohd's name for it
        values["max_fragmented_message"] = _positive_int(rx_max, "transport/link/rx/max_message_size")
    if values.get("batch_size", 0) > 65_535:
        raise UsageError("transport/link/tx/batch_size cannot exceed 65535")
    listen = _endpoints(_get(tree, "listen/endpoints", list(base.listen)), "listen/endpoints")
    connect = _endpoints(_get(tree, "connect/endpoints", []), "connect/endpoints")
    timestamping = _get(tree, "timestamping/enabled", True)
    if isinstance(timestamping, dict):
        timestamping = timestamping.get("router")
        timestamping = True if timestamping is None else timestamping
    qos = _get(tree, "transport/unicast/qos/enabled", True)
    compression = _get(tree, "transport/unicast/compression/enabled", False)
    rec = _get(tree, "pyzenoh/record", {})
    record = RecordSettings(
        dir=rec.get("dir"),
        max_segment_bytes=_positive_int(rec.get("max_segment_bytes", 64 << 20), "record/max_segment_bytes"),
        max_segment_seconds=float(rec.get("max_segment_seconds", 300.0)),
        key_filter=rec.get("key_filter"),
    )
    mq = _get(tree, "pyzenoh/msgq", {})
    msgq = MsgqSettings(
        socket_file=mq.get("socket_file"),
        tcp=_endpoints(mq.get("tcp", []), "pyzenoh/msgq/tcp"),
        enabled=bool(mq.get("socket_file") or mq.get("tcp") or mq.get("enabled", False)),
    )
    return replace(
        base,
        id=zid,
        listen=listen,
        connect=connect,
        timestamping=bool(timestamping),
        qos=bool(qos),
        compression=bool(compression),
        record=record,
        msgq=msgq,
        enforce_budget=bool(_get(tree, "pyzenoh/routing/enforce_budget", False)),
        gc_freeze_interval_ms=_count(tree, "pyzenoh/memory/gc_freeze_interval_ms", GC_FREEZE_INTERVAL_MS),
        drop_wait_before_drop_us=_count(tree, DROP_WAIT_KEY, DROP_WAIT_BEFORE_DROP_US),
        reuse_port=bool(_get(tree, "pyzenoh/listen/reuse_port", False)),
        gossip=bool(_get(tree, "scouting/gossip/enabled", True)),
        adminspace=admin_enabled(tree),
        metadata=tree.get("metadata"),
        adminspace_read=admin_readable(tree),
        adminspace_write=_get(tree, "adminspace/permissions/write", False) is True,
        tree=tree,
        scouting=scouting_settings(tree),
        tls=tls_config(tree),
        usrpwd=usrpwd_from_config(_get(tree, "transport/auth/usrpwd", None)),
        access_control=parse_access_control(tree.get("access_control")),
        interceptors=_interceptors(tree),
        retry_period_increase_factor=_factor(_for_router(_get(tree, FACTOR_KEY, None), FACTOR_KEY)),
        **values,
    )


def _interceptors(tree: dict[str, Any]) -> Interceptors | None:
    """zenohd's downsampling, low_pass_filter and qos/network items (None: none), each
    checked now; what pyzenoh would not apply is refused."""
    interceptors = Interceptors.from_config(tree)
    interceptors.check_supported()
    return None if interceptors.empty else interceptors


def _for_router(value: Any, path: str) -> Any:
    """A connect/retry value for this router: zenohd's keys there also take a per-mode
    object {router: .., peer: .., client: ..} (null: the default)."""
    if path.startswith("connect/retry/") and isinstance(value, dict):
        return value.get("router")
    return value


def _factor(value: Any) -> float:
    if value is None:
        return 2.0  # zenohd's default
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 1:
        raise UsageError(f"config connect/retry/period_increase_factor must be >= 1, got {value!r}")
    return float(value)


def load_config(path: str | os.PathLike[str]) -> RouterConfig:
    return config_from_dict(load_tree(path))


def load_tree(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A config file's tree: JSON5, or YAML when the file's name ends in .yaml/.yml (as
    zenohd, which picks the format by extension)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read config {path}: {exc}") from exc
    try:
        tree = _yaml(text) if str(path).endswith((".yaml", ".yml")) else loads(text)
    except UsageError as exc:
        raise UsageError(f"config {path}: {exc}") from exc
    if not isinstance(tree, dict):
        raise UsageError(f"config {path}: a router config must be an object")
    return tree


def _yaml(text: str) -> Any:
    try:
        import yaml  # type: ignore[import-untyped]
    except ImportError:
        raise UsageError("a YAML config needs PyYAML (pip install pyyaml); JSON5 needs nothing") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise UsageError(f"invalid YAML: {exc}") from None
