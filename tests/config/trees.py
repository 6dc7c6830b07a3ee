"""Configuration trees for the schema tests, and eclipse-zenoh 1.10.2 as the oracle.

* :func:`zenoh_default_tree`: the whole default tree, as ``str(zenoh.Config())`` prints it
  (every key, mode-dependent endpoint dicts included);
* :func:`documented_tree`: a tree setting every key zenohd documents, the commented-out
  examples of its DEFAULT_CONFIG.json5 included (qos, downsampling, access_control,
  low_pass_filter, stats, plugins, per-mode values, endpoint groups ...);
* :func:`mutations`: misspelt keys at every depth, and each value replaced by values of
  every JSON type, out-of-range numbers and strings of every syntax the schema knows.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import zenoh

LINKS = ["tcp", "udp", "tls", "quic", "ws", "serial", "unixsock-stream", "unixpipe", "vsock"]
ALL_MODES = ["router", "peer", "client"]


def zenoh_default_tree() -> dict[str, Any]:
    tree = json.loads(str(zenoh.Config()))
    assert isinstance(tree, dict)
    return tree


def zenoh_accepts(tree: Any) -> bool:
    """Whether ``zenoh.Config.from_json5`` takes the tree."""
    try:
        zenoh.Config.from_json5(json.dumps(tree))
    except Exception:  # noqa: BLE001 - zenoh raises ZError (and ValueError for bad text)
        return False
    return True


def zenoh_inserts(key: str, text: str) -> bool:
    """Whether ``zenoh.Config().insert_json5(key, text)`` takes it."""
    try:
        zenoh.Config().insert_json5(key, text)
    except Exception:  # noqa: BLE001
        return False
    return True


def zenoh_error(tree: Any) -> str:
    try:
        zenoh.Config.from_json5(json.dumps(tree))
    except Exception as exc:  # noqa: BLE001
        return str(exc).split(" at /")[0]
    return ""


def documented_tree() -> dict[str, Any]:
    """Every documented key of zenohd 1.10.2 set (valid, zenoh takes it)."""
    every_kind = {"router": [], "peer": ALL_MODES, "client": ALL_MODES}
    strategy = {"peer": {"to_router": "always", "to_peer": "greater-zid"}}
    return {
        "id": "1234567890abcdef",
        "mode": "peer",
        "metadata": {"name": "strawberry", "location": "Penny Lane"},
        "region_name": "north",
        "gateway": {
            "south": [
                {
                    "filters": [
                        {
                            "modes": ["peer", "client"],
                            "interfaces": ["lo"],
                            "zids": ["38a4829bce9166ee"],
                            "region_names": ["r1"],
                            "negated": False,
                        }
                    ]
                }
            ]
        },
        "connect": {
            "timeout_ms": {"router": -1, "peer": -1, "client": 0},
            "endpoints": {
                "router": ["tcp/10.10.10.10:7447"],
                "peer": [
                    {"strategy": "allOf", "locators": ["tcp/10.10.10.10:7447?rel=0", "tcp/10.10.10.10:7447?rel=1"]},
                    "tcp/11.11.11.11:7447#iface=eth0",
                ],
                "client": ["tcp/192.168.0.1:7447#so_sndbuf=65000;so_rcvbuf=65000"],
            },
            "exit_on_failure": {"router": False, "peer": False, "client": True},
            "retry": {"period_init_ms": 1000, "period_max_ms": 4000, "period_increase_factor": 2},
        },
        "listen": {
            "timeout_ms": 0,
            "endpoints": {"router": ["tcp/[::]:7447"], "peer": ["tcp/[::]:0"], "client": []},
            "exit_on_failure": True,
            "retry": {"period_init_ms": 1000, "period_max_ms": 4000, "period_increase_factor": 2},
        },
        "open": {"return_conditions": {"connect_scouted": True, "declares": True}},
        "scouting": {
            "timeout": 3000,
            "delay": 500,
            "multicast": {
                "enabled": True,
                "address": "224.0.0.224:7446",
                "interface": "auto",
                "ttl": 1,
                "autoconnect": every_kind,
                "autoconnect_strategy": strategy,
                "listen": {"router": True, "peer": True, "client": True},
            },
            "gossip": {
                "enabled": True,
                "multihop": False,
                "target": {"router": ["router", "peer"], "peer": ["router", "peer"]},
                "autoconnect": every_kind,
                "autoconnect_strategy": strategy,
            },
        },
        "timestamping": {"enabled": {"router": True, "peer": False, "client": False}, "drop_future_timestamp": False},
        "queries_default_timeout": 10000,
        "routing": {
            "router": {
                "peers_failover_brokering": True,
                "linkstate": {"transport_weights": [{"dst_zid": "1", "weight": 10}, {"dst_zid": "2", "weight": 200}]},
            },
            "peer": {"mode": "peer_to_peer"},
            "interests": {"timeout": 10000},
        },
        "qos": {
            "publication": [
                {
                    "key_exprs": ["demo/**", "example/key"],
                    "config": {
                        "congestion_control": "block",
                        "priority": "data_high",
                        "express": True,
                        "reliability": "best_effort",
                        "allowed_destination": "remote",
                    },
                }
            ],
            "network": [
                {
                    "id": "lo0_en0_qos_overwrite",
                    "zids": ["38a4829bce9166ee"],
                    "interfaces": ["lo0", "en0"],
                    "link_protocols": LINKS,
                    "messages": ["put", "delete", "query"],
                    "flows": ["egress", "ingress"],
                    "qos": {
                        "congestion_control": "drop",
                        "priority": "data",
                        "express": True,
                        "reliability": "reliable",
                    },
                    "payload_size": "1000000..",
                    "key_exprs": ["test/demo"],
                    "overwrite": {"priority": "real_time", "congestion_control": "block", "express": True},
                }
            ],
        },
        "aggregation": {"subscribers": ["demo/**"], "publishers": ["demo/**"]},
        "namespace": "my/namespace",
        "downsampling": [
            {
                "id": "wlan0egress",
                "interfaces": ["wlan0"],
                "link_protocols": LINKS,
                "flows": ["ingress", "egress"],
                "messages": ["delete", "put", "query", "reply"],
                "rules": [{"key_expr": "demo/example/zenoh-rs-pub", "freq": 0.1}],
            }
        ],
        "access_control": {
            "enabled": False,
            "default_permission": "deny",
            "rules": [
                {
                    "id": "rule1",
                    "messages": [
                        "put",
                        "delete",
                        "declare_subscriber",
                        "query",
                        "reply",
                        "declare_queryable",
                        "liveliness_token",
                        "liveliness_query",
                        "declare_liveliness_subscriber",
                    ],
                    "flows": ["egress", "ingress"],
                    "permission": "allow",
                    "key_exprs": ["test/demo"],
                },
                {"id": "rule2", "messages": ["put"], "flows": ["ingress"], "permission": "allow", "key_exprs": ["**"]},
            ],
            "subjects": [
                {
                    "id": "subject1",
                    "interfaces": ["lo0", "en0"],
                    "cert_common_names": ["example.zenoh.io"],
                    "usernames": ["zenoh-example"],
                },
                {"id": "subject3"},
                {"id": "subject4", "link_protocols": LINKS, "zids": ["38a4829bce9166ee"]},
            ],
            "policies": [
                {"id": "policy1", "rules": ["rule1"], "subjects": ["subject1"]},
                {"rules": ["rule2"], "subjects": ["subject3", "subject4"]},
            ],
        },
        "low_pass_filter": [
            {
                "id": "filter1",
                "interfaces": ["wlan0"],
                "link_protocols": LINKS,
                "flows": ["ingress", "egress"],
                "messages": ["put", "delete", "query", "reply"],
                "key_exprs": ["demo/**"],
                "size_limit": 8192,
            }
        ],
        "stats": {"filters": [{"key": "some/key/expression/**"}]},
        "transport": {
            "unicast": {
                "open_timeout": 10000,
                "accept_timeout": 10000,
                "accept_pending": 100,
                "max_sessions": 1000,
                "max_links": 1,
                "lowlatency": False,
                "qos": {"enabled": True},
                "compression": {"enabled": False},
            },
            "multicast": {
                "join_interval": 2500,
                "max_sessions": 1000,
                "qos": {"enabled": False},
                "compression": {"enabled": False},
            },
            "link": {
                "protocols": ["tcp", "tls"],
                "tx": {
                    "sequence_number_resolution": "32bit",
                    "lease": 10000,
                    "keep_alive": 4,
                    "batch_size": 65535,
                    "queue": {
                        "size": {
                            "control": 2,
                            "real_time": 2,
                            "interactive_high": 2,
                            "interactive_low": 2,
                            "data_high": 2,
                            "data": 2,
                            "data_low": 2,
                            "background": 2,
                        },
                        "congestion_control": {
                            "drop": {"wait_before_drop": 1000, "max_wait_before_drop_fragments": 50000},
                            "block": {"wait_before_close": 5000000},
                        },
                        "batching": {"enabled": True, "time_limit": 1},
                        "allocation": {"mode": "lazy"},
                    },
                    "threads": 1,
                },
                "rx": {"buffer_size": 65535, "max_message_size": 1073741824},
                "tls": {
                    "root_ca_certificate": "ca.pem",
                    "listen_private_key": "key.pem",
                    "listen_certificate": "cert.pem",
                    "enable_mtls": False,
                    "connect_private_key_base64": "a2V5",
                    "connect_certificate_base64": "Y2VydA==",
                    "verify_name_on_connect": True,
                    "close_link_on_expiration": False,
                    "so_rcvbuf": 123456,
                    "so_sndbuf": 123456,
                },
                "tcp": {"so_rcvbuf": 123456, "so_sndbuf": 123456},
                "unixpipe": {"file_access_mask": 0o777},
            },
            "shared_memory": {
                "enabled": True,
                "mode": "lazy",
                "transport_optimization": {
                    "enabled": True,
                    "pool_size": 16777216,
                    "message_size_threshold": 3072,
                    "messages": ["put", "query", "reply"],
                },
            },
            "auth": {
                "usrpwd": {"user": "u", "password": "p", "dictionary_file": "users.txt"},
                "pubkey": {
                    "public_key_pem": "x",
                    "private_key_pem": "y",
                    "public_key_file": "a",
                    "private_key_file": "b",
                    "key_size": 2048,
                    "known_keys_file": "k",
                },
            },
        },
        "adminspace": {"enabled": False, "permissions": {"read": True, "write": False}},
        "plugins_loading": {
            "enabled": False,
            "search_dirs": [{"kind": "current_exe_parent"}, ".", "~/.zenoh/lib", {"kind": "path", "value": "/usr/lib"}],
        },
        "plugins": {
            "rest": {"__required__": True, "__config__": "./plugins/zenoh-plugin-rest/config.json5", "http_port": 8000},
            "storage_manager": {
                "__path__": ["./a.so"],
                "volumes": {"influxdb": {"url": "x", "private": {"username": "u"}}},
            },
        },
    }


# --- mutations -----------------------------------------------------------------------------

#: Values put in place of every value of a tree: every JSON type, numbers at and past the
#: bounds of Rust's integer types, and strings of each syntax the schema checks.
VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    1,
    -1,
    2,
    7,
    -8,
    16,
    17,
    1.5,
    0.0,
    65535,
    65536,
    2**32,
    2**63,
    2**64,
    -(2**63),
    "",
    "x",
    "*",
    "**",
    "a/b",
    "a//b",
    "router",
    "peer",
    "client",
    "router|peer",
    "tcp/1.2.3.4:5",
    "tcp/",
    "tcp/x?",
    "1.2.3.4:5",
    "[::1]:5",
    "1",
    "ABC",
    "0a",
    "1" * 33,
    "always",
    "greater-zid",
    "lazy",
    "init",
    "8bit",
    "64bit",
    "allow",
    "put",
    "reply",
    "egress",
    "data",
    "block",
    "1..2",
    "a..b",
    "remote",
    "path",
    "auto",
    [],
    ["router"],
    ["router", "router"],
    ["x"],
    [1],
    [None],
    ["put"],
    ["tcp"],
    {},
    {"router": 1},
    {"router": None},
    {"peer": ["router"]},
    {"a": 1},
    {"to_peer": "always"},
    {"kind": "path"},
]


def _walk(node: Any, path: tuple[str | int, ...] = ()) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    yield path, node
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _walk(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _walk(v, (*path, i))


def _replace(tree: Any, path: tuple[str | int, ...], value: Any, *, delete: bool = False) -> Any:
    """``tree`` with the value at ``path`` replaced (or deleted): the containers along the
    path are copied, the rest is shared (the result is only read)."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    out = dict(tree) if isinstance(tree, dict) else list(tree)
    if rest:
        out[head] = _replace(tree[head], rest, value, delete=delete)  # type: ignore[index]
    elif delete:
        del out[head]  # type: ignore[arg-type]
    else:
        out[head] = value  # type: ignore[index]
    return out


def misspellings(key: str, siblings: list[str]) -> list[str]:
    """Keys a hand could have typed for ``key`` (none of them a sibling)."""
    candidates = [key + "x", key[:-1], key.upper(), key[1:] + key[0], "zzz"]
    return [c for c in dict.fromkeys(candidates) if c and c not in siblings]


#: Sections whose content is free-form JSON (any key goes).
FREE_FORM: tuple[tuple[str | int, ...], ...] = (("metadata",), ("plugins",), ("routing", "peer"))


def mutations(tree: dict[str, Any]) -> Iterator[tuple[str, str, Any]]:
    """(key path, what changed, mutated tree) for every value and object of ``tree``:
    each value replaced by each of :data:`VALUES` or deleted, each object given a
    misspelt key. Free-form sections (metadata, plugins) are left alone."""
    for path, node in list(_walk(tree)):
        if any(path[: len(f)] == f and len(path) > len(f) for f in FREE_FORM):
            continue
        where = "/".join(map(str, path))
        if path:
            for value in VALUES:
                yield where, f"= {json.dumps(value)}", _replace(tree, path, value)
            if isinstance(path[-1], str):
                yield where, "deleted", _replace(tree, path, None, delete=True)
        if isinstance(node, dict) and path not in FREE_FORM:
            keys = list(node)
            for key in misspellings(keys[0] if keys else "key", keys) + (
                misspellings(keys[-1], keys)[:2] if len(keys) > 1 else []
            ):
                yield f"{where}/{key}" if where else key, "misspelt key", _replace(tree, (*path, key), 1)
