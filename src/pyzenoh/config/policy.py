"""What a pyzenoh router or session does with each key of a valid configuration.

:func:`check_config` is the start-up gate. After the schema (:mod:`pyzenoh.config.schema`)
it sorts every setting present in the tree:

* implemented by this role: nothing to say;
* refused (:data:`REFUSED`): a security setting, or a filter, pyzenoh does not implement,
  set to anything but its default: start-up stops naming the key (never start with
  security half applied); endpoints pyzenoh cannot serve (quic/, ws/ ...) and a required
  plugin stop it too;
* ignored: a harmless zenohd setting pyzenoh does not implement; set to a non-default
  value, it is named in ONE warning.
"""

from __future__ import annotations

import ipaddress
import json
import logging
from collections.abc import Iterator, Mapping
from typing import Any, Literal

from pyzenoh.config.nodes import ModeV, Node, ObjV, PerMode, join, show
from pyzenoh.config.schema import SCHEMA, ZENOH_SCHEMA, check_tree
from pyzenoh.errors import UsageError

log = logging.getLogger(__name__)

Role = Literal["router", "session"]
#: The link protocols pyzenoh implements (``pyzenoh.transport.dial`` and ``listener``).
LINK_PROTOCOLS = ("tcp", "tls", "unixsock-stream", "udp", "quic", "ws")
TLS_KEY = "transport/link/tls"

#: Keys (and key prefixes) each role implements. TLS, usrpwd and access control have
#: their own modules (pyzenoh.security, pyzenoh.routing.access_control).
IMPLEMENTED: dict[Role, frozenset[str]] = {
    "router": frozenset(
        {
            "id",
            "mode",
            "metadata",
            "listen/endpoints",
            "connect/endpoints",
            "connect/retry",
            "scouting/timeout",
            "scouting/delay",
            "scouting/multicast/enabled",
            "scouting/multicast/address",
            "scouting/multicast/interface",
            "scouting/multicast/ttl",
            "scouting/multicast/listen",
            "scouting/multicast/autoconnect",
            "scouting/multicast/autoconnect_strategy",
            "scouting/gossip/enabled",
            "timestamping/enabled",
            "queries_default_timeout",
            "routing/interests/timeout",
            "transport/unicast/accept_timeout",
            "transport/unicast/accept_pending",
            "transport/unicast/max_sessions",
            "transport/unicast/max_links",
            "transport/unicast/qos/enabled",
            "transport/unicast/compression/enabled",
            "transport/link/tx/lease",
            "transport/multicast/join_interval",  # a router's udp/<group> listeners
            "transport/link/tx/keep_alive",
            "transport/link/tx/batch_size",
            "transport/link/tx/queue/congestion_control/block/wait_before_close",
            "transport/link/tx/queue/congestion_control/drop/wait_before_drop",
            "transport/link/rx/max_message_size",
            "transport/link/protocols",
            TLS_KEY,
            "transport/auth/usrpwd",
            "access_control",
            "downsampling",
            "low_pass_filter",
            "qos/network",
            "adminspace/enabled",
            "adminspace/permissions/read",
            "adminspace/permissions/write",
            "pyzenoh",
        }
    ),
    "session": frozenset(
        {
            "id",
            "mode",
            "connect/endpoints",
            "connect/timeout_ms",
            "connect/exit_on_failure",
            "connect/retry",
            "listen/endpoints",
            "scouting/delay",
            "scouting/gossip/enabled",
            "scouting/gossip/autoconnect",
            "scouting/timeout",
            "scouting/multicast/enabled",
            "scouting/multicast/address",
            "scouting/multicast/interface",
            "scouting/multicast/ttl",
            "scouting/multicast/autoconnect",
            "queries_default_timeout",
            "transport/unicast/open_timeout",
            "transport/unicast/max_links",
            "transport/unicast/qos/enabled",
            "transport/unicast/compression/enabled",
            "transport/link/tx/lease",
            "transport/multicast/join_interval",  # a peer's udp/<group> listeners
            "downsampling",  # session/runtime/intercepting.py
            "low_pass_filter",
            "qos/network",
            "transport/link/tx/keep_alive",
            "transport/link/tx/batch_size",
            "transport/link/tx/sequence_number_resolution",
            "transport/link/protocols",
            TLS_KEY,
            "transport/auth/usrpwd",
            "pyzenoh/limits/send_queue_max_bytes",
            "access_control",  # inert unless enabled, which REFUSED stops
        }
    ),
}

#: Settings pyzenoh honours by lacking the feature (its value when so set: no warning).
AS_IF: dict[str, Any] = {
    "transport/shared_memory/enabled": False,  # pyzenoh has no shared memory
    "adminspace/permissions/write": False,  # a session has no admin space writes
}

#: Settings pyzenoh does not implement and must not ignore: set to anything but their
#: default they stop start-up. Why, per key prefix.
_PUBKEY = "zenohd's pubkey authentication is not implemented"
_NAMESPACE = "key expression namespaces are not implemented"
REFUSED: dict[Role, dict[str, str]] = {
    "router": {
        "transport/auth/pubkey": _PUBKEY,
        "namespace": _NAMESPACE,
    },
    "session": {
        "transport/auth/pubkey": _PUBKEY,
        "namespace": _NAMESPACE,
        "access_control/enabled": "a pyzenoh session does not enforce access control (a pyzenoh router does)",
    },
}


def classify(path: str, role: Role) -> tuple[str, str]:
    """("implemented" | "refused" | "ignored", why) for a setting of ``role``."""
    for prefix, why in REFUSED[role].items():
        if path == prefix or path.startswith(prefix + "/"):
            return "refused", why
    for prefix in IMPLEMENTED[role]:
        if path == prefix or path.startswith(prefix + "/"):
            return "implemented", ""
    return "ignored", ""


def _leaves(node: ObjV, tree: Mapping[str, Any], path: str = "") -> Iterator[tuple[str, Node, Any]]:
    """(path, node, value) of every non-object setting present in ``tree`` (a valid tree)."""
    for key, value in tree.items():
        child = node.fields[key]
        sub = join(path, key)
        if isinstance(child, ObjV):
            if isinstance(value, dict):
                yield from _leaves(child, value, sub)
        elif key != "plugins" or path:
            yield sub, child, value


def _effective(node: Node, value: Any, mode: str) -> Any:
    if isinstance(node, ModeV):
        return node.canon(node.for_mode(value, mode))
    if value is None:
        d = node.default
        value = d.values[mode] if isinstance(d, PerMode) else d
    return node.canon(value)


def get(tree: Mapping[str, Any], path: str, default: Any = None) -> Any:
    """The value at a key path (``default`` when absent)."""
    node: Any = tree
    for part in path.split("/"):
        if not isinstance(node, Mapping) or part not in node:
            return default
        node = node[part]
    return node


def endpoints_for(tree: Mapping[str, Any], key: str, mode: str) -> list[Any]:
    """``listen/endpoints`` or ``connect/endpoints`` for ``mode`` (per-mode dicts read)."""
    section = ZENOH_SCHEMA.fields[key.split("/")[0]]
    assert isinstance(section, ObjV)
    node = section.fields["endpoints"]
    assert isinstance(node, ModeV)
    value = node.for_mode(get(tree, key), mode)
    return list(value) if isinstance(value, list) else []


def _plugin_problems(plugins: Any, role: Role, refusals: list[str], warnings: list[str]) -> None:
    """zenohd's plugin rules: each ``plugins/<name>`` is an object whose ``__required__`` is
    a boolean and ``__config__`` a file name. A router starts the ones it has (built in or
    a ``pyzenoh.plugins`` entry point, :mod:`pyzenoh.plugins.registry`); a required one it
    does not have stops start-up (zenohd exits when it cannot load it), another is named
    in the warning. A session loads no plugin (zenohd's plugins run in routers)."""
    if plugins is None:
        return
    if not isinstance(plugins, dict):
        refusals.append(f"plugins: expected an object of plugin configurations, got {show(plugins)}")
        return
    from pyzenoh.plugins.registry import known

    for name, conf in plugins.items():
        path = f"plugins/{name}"
        if not isinstance(conf, dict):
            refusals.append(f"{path}: a plugin's configuration must be an object, got {show(conf)}")
            continue
        required = conf.get("__required__", False)
        extra = conf.get("__config__")
        if extra is not None and not isinstance(extra, str):
            refusals.append(f"{path}/__config__: expected a file name, got {show(extra)}")
        if not isinstance(required, bool):
            refusals.append(f"{path}/__required__: expected true or false, got {show(required)}")
        elif role == "router" and known(name):
            continue
        elif required:
            why = (
                "a session loads no plugins"
                if role == "session"
                else "no built-in plugin or 'pyzenoh.plugins' entry point has that name"
            )
            refusals.append(f"{path}: plugin '{name}' is required (__required__: true) but {why}")
        else:
            warnings.append(f"{path} (no such plugin)" if role == "router" else f"{path} (a session loads no plugins)")


def _endpoint_problems(tree: Mapping[str, Any], role: Role, mode: str, refusals: list[str]) -> None:
    """Endpoints pyzenoh cannot serve stop start-up (zenohd's listeners exit on failure),
    and ``transport/link/protocols`` (a whitelist) is enforced on every configured one."""
    keys = ["listen/endpoints", "connect/endpoints"] if role == "router" or mode == "peer" else ["connect/endpoints"]
    allowed = get(tree, "transport/link/protocols")
    for key in keys:
        for ep in endpoints_for(tree, key, mode):
            if isinstance(ep, dict):
                refusals.append(f"{key}: endpoint groups {{strategy, locators}} are not implemented")
                continue
            proto = ep.split("/", 1)[0]
            if proto not in LINK_PROTOCOLS:
                refusals.append(
                    f"{key}: {show(ep)}: pyzenoh implements only tcp/, tls/, udp/, quic/, ws/ and unixsock-stream/ links"
                )
            elif proto == "udp" and is_group_endpoint(ep) and (problem := _group_problem(role, mode, key, ep)):
                refusals.append(f"{key}: {show(ep)}: {problem}")
            elif allowed is not None and proto not in allowed:
                refusals.append(f"transport/link/protocols {show(allowed)} does not allow {key} {show(ep)}")
    if role == "session" and mode == "client":  # a client listens on nothing, but a group is refused
        for ep in endpoints_for(tree, "listen/endpoints", mode):
            if isinstance(ep, str) and is_group_endpoint(ep):
                refusals.append(f"listen/endpoints: {show(ep)}: {_group_problem(role, mode, 'listen/endpoints', ep)}")
    # Without connect endpoints a session dials scouted tcp/ and tls/ locators, then
    # tcp/127.0.0.1:7447: the whitelist must allow both for that to stay within it.
    if (
        role == "session"
        and allowed is not None
        and not endpoints_for(tree, "connect/endpoints", mode)
        and not {"tcp", "tls"} <= set(allowed)
    ):
        refusals.append(
            f"transport/link/protocols {show(allowed)} needs connect/endpoints: without them a "
            "pyzenoh session dials scouted tcp/ and tls/ locators"
        )


def _group_problem(role: Role, mode: str, key: str, endpoint: str) -> str | None:
    """Why a multicast group endpoint cannot be used there (zenoh 1.10.2's refusals,
    measured), None where it can: a router's or a peer's listen/endpoints."""
    if key == "connect/endpoints":
        return "forbidden multicast endpoint in connect list (a group is joined by listening on it)"
    if ":" in _host(endpoint):
        return "IPv6 multicast groups are not implemented (IPv4 groups are)"
    if role == "session" and mode == "client":
        return "multicast is for peers and routers only (a client cannot join a group)"
    return None


def _host(endpoint: str) -> str:
    return endpoint.split("/", 1)[1].split("#", 1)[0].split("?", 1)[0].rsplit(":", 1)[0].strip("[]")


def is_group_endpoint(endpoint: str) -> bool:
    """``udp/<multicast group>:<port>``: zenoh's multicast transport, not a unicast link
    (the one rule: the router, sessions and this policy ask it)."""
    if not endpoint.startswith("udp/"):
        return False
    try:
        return ipaddress.ip_address(_host(endpoint)).is_multicast
    except ValueError:
        return False


def check_config(tree: Any, role: Role, mode: str | None = None) -> list[str]:
    """The start-up gate: raise UsageError (one line, naming the keys) on anything outside
    the schema or on a setting this ``role`` must not start with; log ONE warning naming
    the harmless zenohd settings it ignores although they are set, and return them.

    Security files are read by their own modules, before anything listens or connects:
    ``transport/auth/usrpwd/dictionary_file`` when the config is read
    (:func:`pyzenoh.security.usrpwd.usrpwd_from_config`), TLS certificates, keys and CAs
    when a router starts (for its tls/ endpoints) or a session opens a tls/ link
    (:mod:`pyzenoh.security.tls`); each failure is a UsageError naming the key and file.

    ``mode`` is the node's mode (router: "router"; session: "peer" or "client"), used to
    read mode-dependent values ``{router: .., peer: .., client: ..}``.
    """
    check_tree(tree)
    assert isinstance(tree, dict)
    mode = mode or ("router" if role == "router" else "peer")
    refusals: list[str] = []
    warnings: list[str] = []
    for path, node, value in _leaves(SCHEMA, tree):
        kind, why = classify(path, role)
        if kind == "implemented":
            continue
        effective = _effective(node, value, mode)
        if effective == _effective(node, None, mode):
            continue
        if path in AS_IF and effective == AS_IF[path]:
            continue
        if kind == "refused":
            refusals.append(f"{path}: {why}")
        else:
            warnings.append(f"{path}={json.dumps(value, separators=(',', ':'))[:60]}")
    _plugin_problems(tree.get("plugins"), role, refusals, warnings)
    _endpoint_problems(tree, role, mode, refusals)
    if refusals:
        raise UsageError("refusing to start: " + "; ".join(refusals))
    if warnings:
        log.warning("pyzenoh %s ignores these settings (not implemented): %s", role, ", ".join(warnings))
    return warnings
