"""zenohd 1.10.2's configuration tree as data (:data:`ZENOH_SCHEMA`), pyzenoh's own section
(:data:`OWN_SCHEMA`, under ``pyzenoh/``), and the functions that check a tree against them.

The schema follows ``commons/zenoh-config`` and was measured against eclipse-zenoh 1.10.2's
``zenoh.Config.from_json5`` (tests/config/test_differential.py runs that comparison).
"""

from __future__ import annotations

import os
from typing import Any

import json5

from pyzenoh.config.nodes import (
    I64,
    MODES,
    U16,
    U32,
    U64,
    AnyV,
    BoolV,
    ChoiceV,
    EnumV,
    FloatV,
    IntV,
    ListV,
    MatcherV,
    ModeV,
    Node,
    ObjV,
    PerMode,
    Problem,
    Problems,
    StrV,
    TargetV,
    TextV,
    unknown_key,
)
from pyzenoh.config.syntax import (
    endpoint_why,
    keyexpr_why,
    nonwild_why,
    range_why,
    socket_address_why,
    zid_why,
)
from pyzenoh.errors import UsageError

#: Problems reported in one error message at most (the rest are counted).
MAX_REPORTED = 8


def _u64(default: Any = None, *, null: bool = False) -> IntV:
    return IntV(*U64, null=null, default=default)


def _u32(default: Any = None, *, null: bool = False) -> IntV:
    return IntV(*U32, null=null, default=default)


def _i64(default: Any = None, *, null: bool = False) -> IntV:
    return IntV(*I64, null=null, default=default)


def _positive(default: Any = None) -> IntV:
    return IntV(1, U64[1], null=True, default=default)


def _bool(default: Any = None, *, null: bool = False) -> BoolV:
    return BoolV(null=null, default=default)


def _str(default: Any = None, *, null: bool = True) -> StrV:
    return StrV(null=null, default=default)


def _ne(item: Node) -> ListV:
    """zenoh's NEVec: a non-empty list, or null."""
    return ListV(item, nonempty=True, null=True)


def _user_and_password(conf: dict[str, Any]) -> str | None:
    # zenoh's validator: a user needs a password and a password a user.
    user, password = conf.get("user"), conf.get("password")
    if (user is None) != (password is None):
        return f"{'password' if password is None else 'user'}: missing (user and password go together)"
    return None


ZID = TextV("a ZenohId (1 to 32 lowercase hexadecimal digits, no leading 0)", zid_why)
KEYEXPR = TextV("a key expression", keyexpr_why)
ENDPOINT = TextV("an endpoint", endpoint_why)
WHATAMI = MatcherV()
ALL_KINDS = list(MODES)
LINK_KINDS = EnumV("tcp", "udp", "tls", "quic", "serial", "unixpipe", "unixsock-stream", "vsock", "ws")
FLOWS = EnumV("egress", "ingress")
DATA_MESSAGES = EnumV("put", "delete", "query", "reply")
PRIORITIES = EnumV("real_time", "interactive_high", "interactive_low", "data_high", "data", "data_low", "background")
ACL_MESSAGES = EnumV(
    "put",
    "delete",
    "declare_subscriber",
    "query",
    "declare_queryable",
    "reply",
    "liveliness_token",
    "declare_liveliness_subscriber",
    "liveliness_query",
)
PERMISSION = EnumV("allow", "deny")
REGION_NAME = 32  # bytes


def _retry() -> ObjV:
    return ObjV(
        {
            "period_init_ms": ModeV(_i64(), null=True, default=1000),
            "period_max_ms": ModeV(_i64(), null=True, default=4000),
            "period_increase_factor": ModeV(FloatV(untagged=True), null=True, default=2),
        },
        lax=True,
        null=True,
    )


def _strategy() -> ModeV:
    return ModeV(TargetV(), null=True, default="always")


_LOCATORS = ObjV(
    {"strategy": EnumV("allOf", "oneOf"), "locators": ListV(ENDPOINT)}, required=("strategy", "locators"), lax=True
)
_ENDPOINTS_ITEM = ChoiceV("an endpoint string or {strategy, locators}", text=ENDPOINT, obj=_LOCATORS)

_QOS_FIELDS: dict[str, Node] = {
    "congestion_control": EnumV("drop", "block", "block_first", null=True),
    "priority": EnumV(*PRIORITIES.values, null=True),
    "express": _bool(null=True),
    "reliability": EnumV("best_effort", "reliable", null=True),
}
_PRIORITY_UPDATE = ChoiceV(
    "a priority name or an increment from -7 to 7", text=PRIORITIES, number=IntV(-7, 7), null=True
)
_QOS_NETWORK_ITEM = ObjV(
    {
        "id": _str(),
        "zids": _ne(ZID),
        "interfaces": _ne(StrV()),
        "link_protocols": _ne(LINK_KINDS),
        "messages": ListV(EnumV("put", "delete", "query"), nonempty=True),
        "key_exprs": _ne(KEYEXPR),
        "overwrite": ObjV(
            {
                "congestion_control": _QOS_FIELDS["congestion_control"],
                "priority": _PRIORITY_UPDATE,
                "express": _bool(null=True),
            },
            lax=True,
        ),
        "flows": _ne(FLOWS),
        "qos": ObjV(_QOS_FIELDS, lax=True, null=True),
        "payload_size": TextV("a range START..END", range_why, null=True),
    },
    required=("messages", "overwrite"),
)
_QOS_PUBLICATION_ITEM = ObjV(
    {
        "key_exprs": ListV(KEYEXPR),
        "config": ObjV(
            {**_QOS_FIELDS, "allowed_destination": EnumV("session_local", "remote", "any", null=True)}, lax=True
        ),
    },
    required=("key_exprs", "config"),
    lax=True,
)
_DOWNSAMPLING_ITEM = ObjV(
    {
        "id": _str(),
        "interfaces": _ne(StrV()),
        "link_protocols": _ne(LINK_KINDS),
        "messages": ListV(DATA_MESSAGES, nonempty=True),
        "rules": ListV(ObjV({"key_expr": KEYEXPR, "freq": FloatV()}, required=("key_expr", "freq")), nonempty=True),
        "flows": _ne(FLOWS),
    },
    required=("messages", "rules"),
)
_LOW_PASS_ITEM = ObjV(
    {
        "id": _str(),
        "interfaces": _ne(StrV()),
        "link_protocols": _ne(LINK_KINDS),
        "flows": _ne(FLOWS),
        "messages": ListV(DATA_MESSAGES, nonempty=True),
        "key_exprs": ListV(KEYEXPR, nonempty=True),
        "size_limit": _u64(),
    },
    required=("messages", "key_exprs", "size_limit"),
)
# access_control: its shape only; pyzenoh.routing.access_control makes zenohd's semantic
# checks (unique ids, known references) when the router starts.
_ACL_RULE = ObjV(
    {
        "id": StrV(),
        "key_exprs": ListV(KEYEXPR, nonempty=True),
        "messages": ListV(ACL_MESSAGES, nonempty=True),
        "flows": _ne(FLOWS),
        "permission": PERMISSION,
    },
    required=("id", "key_exprs", "messages", "permission"),
)
_ACL_SUBJECT = ObjV(
    {
        "id": StrV(),
        "interfaces": _ne(StrV()),
        "cert_common_names": _ne(StrV()),
        "usernames": _ne(StrV()),
        "link_protocols": _ne(LINK_KINDS),
        "zids": _ne(ZID),
    },
    required=("id",),
)
_ACL_POLICY = ObjV({"id": _str(), "rules": ListV(StrV()), "subjects": ListV(StrV())}, required=("rules", "subjects"))
_GATEWAY_FILTER = ObjV(
    {
        "modes": ListV(EnumV(*MODES), null=True),
        "interfaces": _ne(StrV()),
        "zids": _ne(ZID),
        "region_names": _ne(StrV(nonempty=True, max_bytes=REGION_NAME)),
        "negated": _bool(),
    }
)
_SEARCH_DIR = ChoiceV(
    "a path or {kind, value}",
    text=StrV(),
    obj=ObjV({"kind": EnumV("path", "current_exe_parent"), "value": _str()}, required=("kind",), lax=True),
)
DEFAULT_SEARCH_DIRS = [
    {"kind": "current_exe_parent", "value": None},
    ".",
    "~/.zenoh/lib",
    "/opt/homebrew/lib",
    "/usr/local/lib",
    "/usr/lib",
]

_SIZES = ("control", "real_time", "interactive_high", "interactive_low", "data_high", "data", "data_low", "background")
TLS_FILES = (
    "root_ca_certificate",
    "listen_private_key",
    "listen_certificate",
    "connect_private_key",
    "connect_certificate",
)

#: zenohd 1.10.2's configuration tree (``zenoh.Config``, ``deny_unknown_fields`` almost everywhere).
ZENOH_SCHEMA = ObjV(
    {
        "id": TextV(ZID.expect, zid_why, null=True),
        "metadata": AnyV(null=True),
        "mode": EnumV(*MODES, null=True, default="peer"),
        "region_name": StrV(nonempty=True, max_bytes=REGION_NAME, null=True),
        "gateway": ObjV(
            {
                "south": ChoiceV(
                    '"auto" or a list of {filters}',
                    text=EnumV("auto"),
                    array=ListV(ObjV({"filters": ListV(_GATEWAY_FILTER, null=True)})),
                    null=True,
                    default="auto",
                )
            }
        ),
        "connect": ObjV(
            {
                "timeout_ms": ModeV(_i64(), null=True, default=PerMode(-1, -1, 0)),
                "endpoints": ModeV(ListV(_ENDPOINTS_ITEM), default=[]),
                "exit_on_failure": ModeV(_bool(), null=True, default=PerMode(False, False, True)),
                "retry": _retry(),
            }
        ),
        "listen": ObjV(
            {
                "timeout_ms": ModeV(_i64(), null=True, default=0),
                "endpoints": ModeV(ListV(ENDPOINT), default=PerMode(["tcp/[::]:7447"], ["tcp/[::]:0"], [])),
                "exit_on_failure": ModeV(_bool(), null=True, default=True),
                "retry": _retry(),
            }
        ),
        "open": ObjV(
            {"return_conditions": ObjV({"connect_scouted": _bool(True, null=True), "declares": _bool(True, null=True)})}
        ),
        "scouting": ObjV(
            {
                "timeout": _u64(3000, null=True),
                "delay": _u64(500, null=True),
                "multicast": ObjV(
                    {
                        "enabled": _bool(True, null=True),
                        "address": TextV(
                            "a socket address IP:PORT", socket_address_why, null=True, default="224.0.0.224:7446"
                        ),
                        "interface": _str("auto"),
                        "ttl": _u32(1, null=True),
                        "autoconnect": ModeV(WHATAMI, null=True, default=PerMode([], ALL_KINDS, ALL_KINDS)),
                        "autoconnect_strategy": _strategy(),
                        "listen": ModeV(_bool(), null=True, default=True),
                    }
                ),
                "gossip": ObjV(
                    {
                        "enabled": _bool(True, null=True),
                        "multihop": _bool(False, null=True),
                        "target": ModeV(
                            WHATAMI, null=True, default=PerMode(["router", "peer"], ["router", "peer"], [])
                        ),
                        "autoconnect": ModeV(WHATAMI, null=True, default=PerMode([], ALL_KINDS, ALL_KINDS)),
                        "autoconnect_strategy": _strategy(),
                    }
                ),
            }
        ),
        "timestamping": ObjV(
            {
                "enabled": ModeV(_bool(), null=True, default=PerMode(True, False, False)),
                "drop_future_timestamp": _bool(False, null=True),
            }
        ),
        "queries_default_timeout": _u64(10000, null=True),
        "routing": ObjV(
            {
                "router": ObjV(
                    {
                        "peers_failover_brokering": _bool(null=True),  # deprecated, no effect in zenohd
                        "linkstate": ObjV(
                            {
                                "transport_weights": ListV(
                                    ObjV(
                                        {"dst_zid": ZID, "weight": IntV(1, U16[1], typ=U16)},
                                        required=("dst_zid", "weight"),
                                        lax=True,
                                    )
                                )
                            }
                        ),
                    }
                ),
                "peer": AnyV(null=True),  # deprecated, any value, no effect in zenohd
                "interests": ObjV({"timeout": _u64(10000, null=True)}),
            }
        ),
        "aggregation": ObjV({"subscribers": ListV(KEYEXPR), "publishers": ListV(KEYEXPR)}),
        "qos": ObjV({"publication": ListV(_QOS_PUBLICATION_ITEM), "network": ListV(_QOS_NETWORK_ITEM)}),
        "transport": ObjV(
            {
                "unicast": ObjV(
                    {
                        "open_timeout": _u64(10000),
                        "accept_timeout": _u64(10000),
                        "accept_pending": _u64(100),
                        "max_sessions": _u64(1000),
                        "max_links": _u64(1),
                        "lowlatency": _bool(False),
                        "qos": ObjV({"enabled": _bool(True)}),
                        "compression": ObjV({"enabled": _bool(False)}),
                    }
                ),
                "multicast": ObjV(
                    {
                        "join_interval": _u64(2500, null=True),
                        "max_sessions": _u64(1000, null=True),
                        "qos": ObjV({"enabled": _bool(False)}),
                        "compression": ObjV({"enabled": _bool(False)}),
                    }
                ),
                "link": ObjV(
                    {
                        "protocols": ListV(StrV(), null=True),
                        "tx": ObjV(
                            {
                                # 64bit parses but zenoh's validator refuses it (sequence numbers are u32).
                                "sequence_number_resolution": EnumV(
                                    "8bit", "16bit", "32bit", default="32bit", note=" (zenoh refuses 64bit)"
                                ),
                                "lease": _u64(10000),
                                "keep_alive": _u64(4),
                                "batch_size": IntV(*U16, default=U16[1]),
                                "queue": ObjV(
                                    {
                                        "size": ObjV({k: IntV(1, 16, typ=U64, default=2) for k in _SIZES}),
                                        "congestion_control": ObjV(
                                            {
                                                "drop": ObjV(
                                                    {
                                                        "wait_before_drop": _i64(1000),
                                                        "max_wait_before_drop_fragments": _i64(50000),
                                                    }
                                                ),
                                                "block": ObjV({"wait_before_close": _i64(5000000)}),
                                            }
                                        ),
                                        "batching": ObjV({"enabled": _bool(True), "time_limit": _u64(1)}),
                                        "allocation": ObjV({"mode": EnumV("init", "lazy", default="lazy")}),
                                    }
                                ),
                                "threads": _u64(1 + ((os.cpu_count() or 1) - 1) // 4),  # zenohd's default, by CPU count
                            }
                        ),
                        "rx": ObjV({"buffer_size": _u64(65535), "max_message_size": _u64(1 << 30)}),
                        "tls": ObjV(
                            {
                                **{k: _str() for k in TLS_FILES},
                                **{f"{k}_base64": _str() for k in TLS_FILES},
                                "enable_mtls": _bool(False, null=True),
                                "verify_name_on_connect": _bool(True, null=True),
                                "close_link_on_expiration": _bool(False, null=True),
                                "so_sndbuf": _u32(null=True),
                                "so_rcvbuf": _u32(null=True),
                            }
                        ),
                        "tcp": ObjV({"so_sndbuf": _u32(null=True), "so_rcvbuf": _u32(null=True)}),
                        "unixpipe": ObjV({"file_access_mask": _u32(null=True)}),
                    }
                ),
                "shared_memory": ObjV(
                    {
                        "enabled": _bool(True),
                        "mode": EnumV("init", "lazy", default="lazy"),
                        "transport_optimization": ObjV(
                            {
                                "enabled": _bool(True),
                                "pool_size": IntV(1, U64[1], default=16 << 20),
                                "message_size_threshold": _u64(3072),
                                "messages": ListV(DATA_MESSAGES, unordered=True, default=["put", "query", "reply"]),
                            }
                        ),
                    }
                ),
                "auth": ObjV(
                    {
                        "usrpwd": ObjV(
                            {"user": _str(), "password": _str(), "dictionary_file": _str()}, rule=_user_and_password
                        ),
                        "pubkey": ObjV(
                            {
                                "public_key_pem": _str(),
                                "private_key_pem": _str(),
                                "public_key_file": _str(),
                                "private_key_file": _str(),
                                "key_size": _u64(null=True),
                                "known_keys_file": _str(),
                            }
                        ),
                    }
                ),
            }
        ),
        "adminspace": ObjV(
            {
                "enabled": _bool(False),
                "permissions": ObjV({"read": _bool(True), "write": _bool(False)}),
            }
        ),
        "namespace": TextV("a key expression without wildcards", nonwild_why, null=True),
        "downsampling": ListV(_DOWNSAMPLING_ITEM),
        "access_control": ObjV(
            {
                "enabled": _bool(False),
                "default_permission": EnumV("allow", "deny", default="deny"),
                "rules": ListV(_ACL_RULE, null=True),
                "subjects": ListV(_ACL_SUBJECT, null=True),
                "policies": ListV(_ACL_POLICY, null=True),
            }
        ),
        "low_pass_filter": ListV(_LOW_PASS_ITEM),
        "stats": ObjV({"filters": ListV(ObjV({"key": KEYEXPR}, required=("key",), lax=True))}),
        "plugins_loading": ObjV(
            {
                "enabled": _bool(False),
                "search_dirs": ListV(_SEARCH_DIR, default=DEFAULT_SEARCH_DIRS),
            }
        ),
        "plugins": AnyV(null=True),  # free-form per plugin; see policy.plugin_problems
    }
)

#: pyzenoh's own settings, under ``pyzenoh/`` (zenoh has no such section and refuses it).
OWN_SCHEMA = ObjV(
    {
        "limits": ObjV(
            {
                "max_declarations_per_face": _positive(10_000),
                "max_declarations_total": _positive(1_000_000),
                "max_pending_queries_per_face": _positive(1_000),
                "max_pending_queries_total": _positive(100_000),
                "max_keyexpr_ids_per_face": _positive(10_000),
                "max_route_cache": _positive(65_536),
                "max_links_per_address": _positive(1_000),
                "max_fragmented_message": _positive(1 << 30),
                "max_reassembly_bytes": _positive(256 << 20),
                "reassembly_timeout_ms": _positive(10_000),
                # Per-link send queue cap, bytes (zenohd bounds its queues by batch counts instead);
                # the default is 8 MiB on a router's links, 4 MiB on a session's.
                "send_queue_max_bytes": _positive(),
            },
            null=True,
        ),
        "record": ObjV(
            {
                "dir": _str(),
                "max_segment_bytes": _positive(64 << 20),
                "max_segment_seconds": FloatV(lo=0, null=True, default=300),
                "key_filter": TextV("a key expression", keyexpr_why, null=True),
            },
            null=True,
        ),
        "msgq": ObjV(
            {
                "socket_file": _str(),
                "tcp": ChoiceV(
                    "an endpoint or a list of endpoints", text=ENDPOINT, array=ListV(ENDPOINT), null=True, default=[]
                ),
                "enabled": _bool(False, null=True),
            },
            null=True,
        ),
        "routing": ObjV({"enforce_budget": _bool(False, null=True)}, null=True),
        "memory": ObjV({"gc_freeze_interval_ms": _u64(1_000)}, null=True),
        # SO_REUSEPORT on the TCP listeners: set by `pyzenoh router --workers N` in each
        # worker's config (router/workers.py), so the workers share the endpoints.
        "listen": ObjV({"reuse_port": _bool(False, null=True)}, null=True),
        # The REST plugin's limits (pyzenoh.plugins.rest.config; zenoh's plugins/rest takes
        # only its own keys, so pyzenoh's go here).
        "rest": ObjV(
            {
                "max_request_body_bytes": _positive(16 << 20),
                "max_header_bytes": _positive(8190),
                "max_sse_streams": _positive(1_000),
                "sse_queue_samples": _positive(10_000),
            },
            null=True,
        ),
        "scouting": ObjV(
            {
                "unicast": TextV("a socket address IP:PORT", socket_address_why, null=True),
            },
            null=True,
        ),
    },
    null=True,
)

#: The whole tree pyzenoh reads: zenohd's keys plus ``pyzenoh/``.
SCHEMA = ObjV({**ZENOH_SCHEMA.fields, "pyzenoh": OWN_SCHEMA})


# --- checking trees ------------------------------------------------------------------------


def problems(tree: Any, *, own: bool = True) -> Problems:
    """Every :class:`Problem` of ``tree`` against the schema (empty: valid).

    ``own=False`` checks zenohd's schema alone (``pyzenoh/`` is then an unknown key).
    """
    out: Problems = []
    (SCHEMA if own else ZENOH_SCHEMA).check(tree, "", out)
    return out


def validate(tree: Any, *, own: bool = True) -> list[str]:
    """Every problem of ``tree`` as a message naming its key path (empty: valid)."""
    return [p.text for p in problems(tree, own=own)]


def raise_problems(found: list[str] | Problems, what: str = "config") -> None:
    """One UsageError line for ``found`` (nothing when there are none)."""
    if not found:
        return
    texts = [str(p) for p in found]
    shown = "; ".join(texts[:MAX_REPORTED])
    more = f" (and {len(texts) - MAX_REPORTED} more)" if len(texts) > MAX_REPORTED else ""
    raise UsageError(f"invalid {what}: {shown}{more}")


def check_tree(tree: Any) -> None:
    """Raise UsageError naming the key unless ``tree`` fits the schema."""
    raise_problems(problems(tree))


def loads(text: str) -> Any:
    """JSON5 text -> tree; duplicate keys are refused everywhere (zenoh refuses them in its
    own structs, not inside ``metadata`` or ``plugins``)."""
    try:
        return json5.loads(text, allow_duplicate_keys=False)
    except ValueError as exc:
        raise UsageError(f"invalid JSON5: {exc}") from None


# --- key paths -----------------------------------------------------------------------------


def split_key(key: str) -> list[str]:
    """A ``a/b/c`` key path as zenoh reads one: empty parts (``/a//b/``) are dropped."""
    return [p for p in key.split("/") if p]


def node_at(key: str) -> Node | None:
    """The schema node of a key path through objects (None: no such key)."""
    node: Node = SCHEMA
    for part in split_key(key):
        if not isinstance(node, ObjV) or part not in node.fields:
            return None
        node = node.fields[part]
    return node


#: Sections zenoh-python's ``insert_json5`` only takes as a whole (their keys are not
#: reachable one by one).
WHOLE_ONLY = ("gateway/south", "connect/retry", "listen/retry")


def insert_problems(key: str, value: Any) -> Problems:
    """Why zenoh-python's ``insert_json5(key, value)`` would refuse this (empty: it takes it).

    zenoh inserts through its structs' fields only (not into mode dicts, lists,
    ``metadata`` or the sections of :data:`WHOLE_ONLY`; under ``plugins/`` anything goes),
    and checks the value it inserts (the rules of the sections above it are checked when
    the session opens: a user, then a password, may be inserted one at a time)."""
    parts = split_key(key)
    out: Problems = []
    if not parts:
        return [Problem("unknown config key '' (an empty path)")]
    path = "/".join(parts)
    if parts[0] == "plugins":
        AnyV(null=True).check(value, path, out)
        return out
    for whole in WHOLE_ONLY:
        if path.startswith(whole + "/") or (path == whole and whole == "gateway/south"):
            section = whole if path != whole else whole.rsplit("/", 1)[0]
            return [Problem(f"unknown config key '{path}' (zenoh inserts {section} as a whole)")]
    node: Node = SCHEMA
    for i, part in enumerate(parts):
        if not isinstance(node, ObjV) or part not in node.fields:
            known = node.fields if isinstance(node, ObjV) else ()
            return [Problem(unknown_key("/".join(parts[: i + 1]), known))]
        node = node.fields[part]
    node.check(value, path, out)
    return out


__all__ = [
    "MAX_REPORTED",
    "OWN_SCHEMA",
    "SCHEMA",
    "WHOLE_ONLY",
    "ZENOH_SCHEMA",
    "Problem",
    "check_tree",
    "insert_problems",
    "loads",
    "node_at",
    "problems",
    "raise_problems",
    "split_key",
    "validate",
]
