"""The ``access_control`` configuration section, read as zenohd 1.10.2 reads it.

Only the shape and values are checked here (zenohd's deserialisation errors: unknown
fields, missing fields, empty lists where zenohd wants a non-empty one, unknown message,
flow, permission or link protocol names, key expressions not in canon form, bad zids).
The semantic checks zenohd makes when ``enabled`` (unique and existing ids, non-empty
values) belong to compiling the rules, in :mod:`.access_control`.

The schema (``commons/zenoh-config``, ``AclConfig``):

* ``rules``: each ``id``, ``permission`` (allow / deny), ``messages`` (see
  :data:`MESSAGES`), ``flows`` (ingress / egress; both when absent) and ``key_exprs``.
* ``subjects``: each ``id`` and optional non-empty lists of ``interfaces``,
  ``cert_common_names``, ``usernames``, ``link_protocols`` and ``zids``; an absent list
  is a wildcard, and a subject stands for every combination of one value from each
  list it has.
* ``policies``: each (optional ``id``) names ``rules`` and the ``subjects`` they apply to.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyzenoh.codec import ZenohId
from pyzenoh.errors import UsageError
from pyzenoh.keyexpr import validate

#: The message kinds rules name, in zenohd's spelling (their index is the message code).
MESSAGES = (
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
(
    PUT,
    DELETE,
    DECLARE_SUBSCRIBER,
    QUERY,
    DECLARE_QUERYABLE,
    REPLY,
    LIVELINESS_TOKEN,
    DECLARE_LIVELINESS_SUBSCRIBER,
    LIVELINESS_QUERY,
) = range(len(MESSAGES))
FLOWS = ("ingress", "egress")
INGRESS, EGRESS = 0, 1
PERMISSIONS = ("allow", "deny")
#: zenohd's ``link_protocols`` values (kebab-case; pyzenoh links are "tcp" or "tls").
LINK_PROTOCOLS = ("tcp", "udp", "tls", "quic", "serial", "unixpipe", "unixsock-stream", "vsock", "ws")
#: Longest ZenohId in a config (16 bytes), as zenohd parses ``zids``.
ZID_MAX_HEX = 32

_ACL_KEYS = ("enabled", "default_permission", "rules", "subjects", "policies")
_RULE_KEYS = ("id", "key_exprs", "messages", "flows", "permission")
_SUBJECT_KEYS = ("id", "interfaces", "cert_common_names", "usernames", "link_protocols", "zids")
_POLICY_KEYS = ("id", "rules", "subjects")


@dataclass(frozen=True, slots=True)
class AclRule:
    id: str
    key_exprs: tuple[str, ...]
    messages: tuple[str, ...]
    flows: tuple[str, ...] | None  # None: both (zenohd's default, with a warning)
    permission: str


@dataclass(frozen=True, slots=True)
class AclSubject:
    """A subject; each property is None (any value) or the values it accepts."""

    id: str
    interfaces: tuple[str, ...] | None = None
    cert_common_names: tuple[str, ...] | None = None
    usernames: tuple[str, ...] | None = None
    link_protocols: tuple[str, ...] | None = None
    zids: tuple[ZenohId, ...] | None = None


@dataclass(frozen=True, slots=True)
class AclPolicy:
    id: str | None
    rules: tuple[str, ...]
    subjects: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class AccessControlConfig:
    """The ``access_control`` section as read by :func:`read_access_control`.

    ``rules``, ``subjects`` and ``policies`` are None when absent (zenohd refuses that
    when enabled). The default is zenohd's: disabled, ``default_permission`` deny.
    """

    enabled: bool = False
    default_permission: str = "deny"
    rules: tuple[AclRule, ...] | None = None
    subjects: tuple[AclSubject, ...] | None = None
    policies: tuple[AclPolicy, ...] | None = None


def fail(path: str, what: str) -> UsageError:
    return UsageError(f"config {path}: {what}")


def _object(value: Any, path: str, known: Sequence[str]) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise fail(path, f"must be an object, got {value!r}")
    for key in value:
        if key not in known:
            raise fail(path, f"unknown field {key!r}, expected one of {', '.join(known)}")
    return value


def _string(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise fail(path, f"must be a string, got {value!r}")
    return value


def _list(value: Any, path: str, *, nonempty: bool) -> list[Any]:
    if not isinstance(value, list):
        raise fail(path, f"must be a list, got {value!r}")
    if nonempty and not value:
        raise fail(path, "must not be an empty list")
    return value


def _choices(value: Any, path: str, allowed: Sequence[str]) -> tuple[str, ...]:
    out = []
    for i, item in enumerate(_list(value, path, nonempty=True)):
        if item not in allowed:
            raise fail(f"{path}/{i}", f"unknown value {item!r}, expected one of {', '.join(allowed)}")
        out.append(item)
    return tuple(out)


def _strings(value: Any, path: str, *, nonempty: bool) -> tuple[str, ...]:
    return tuple(_string(v, f"{path}/{i}") for i, v in enumerate(_list(value, path, nonempty=nonempty)))


def parse_zid(text: Any, path: str) -> ZenohId:
    """A ZenohId as zenohd's config reads one: lowercase hex, 1 to 16 bytes, no leading 0."""
    if not isinstance(text, str):
        raise fail(path, f"must be a hex string of 1-16 bytes, got {text!r}")
    if not text or any(c not in "0123456789abcdef" for c in text):
        raise fail(path, f"invalid id {text!r}: lowercase hexadecimal digits only")
    if text.startswith("0"):
        raise fail(path, f"invalid id {text!r}: leading 0s are not valid")
    if len(text) > ZID_MAX_HEX:
        raise fail(path, f"invalid id {text!r}: more than 16 bytes")
    return ZenohId(int(text, 16))


def read_access_control(value: Any, path: str = "access_control") -> AccessControlConfig:
    """Read an ``access_control`` object; raise UsageError naming the first value zenohd
    would not deserialise. ``null`` lists are absent lists, as in zenohd."""
    if value is None:
        return AccessControlConfig()
    tree = _object(value, path, _ACL_KEYS)
    enabled = tree.get("enabled")
    enabled = False if enabled is None else enabled
    if not isinstance(enabled, bool):
        raise fail(f"{path}/enabled", f"must be true or false, got {enabled!r}")
    default = tree.get("default_permission")
    default = "deny" if default is None else default
    if default not in PERMISSIONS:
        raise fail(f"{path}/default_permission", f"must be allow or deny, got {default!r}")
    rules = subjects = policies = None
    if tree.get("rules") is not None:
        rules = tuple(
            _read_rule(r, f"{path}/rules/{i}")
            for i, r in enumerate(_list(tree["rules"], f"{path}/rules", nonempty=False))
        )
    if tree.get("subjects") is not None:
        subjects = tuple(
            _read_subject(s, f"{path}/subjects/{i}")
            for i, s in enumerate(_list(tree["subjects"], f"{path}/subjects", nonempty=False))
        )
    if tree.get("policies") is not None:
        policies = tuple(
            _read_policy(p, f"{path}/policies/{i}")
            for i, p in enumerate(_list(tree["policies"], f"{path}/policies", nonempty=False))
        )
    return AccessControlConfig(enabled, default, rules, subjects, policies)


def _required(tree: Mapping[str, Any], path: str, keys: Sequence[str]) -> None:
    for key in keys:
        if tree.get(key) is None:
            raise fail(path, f"missing field {key!r}")


def _read_rule(value: Any, path: str) -> AclRule:
    tree = _object(value, path, _RULE_KEYS)
    _required(tree, path, ("id", "key_exprs", "messages", "permission"))
    keys = []
    for i, k in enumerate(_list(tree["key_exprs"], f"{path}/key_exprs", nonempty=True)):
        try:
            keys.append(validate(_string(k, f"{path}/key_exprs/{i}")))
        except UsageError as exc:  # zenohd's OwnedKeyExpr: canon form only
            raise fail(f"{path}/key_exprs/{i}", str(exc)) from None
    flows = None if tree.get("flows") is None else _choices(tree["flows"], f"{path}/flows", FLOWS)
    permission = tree["permission"]
    if permission not in PERMISSIONS:
        raise fail(f"{path}/permission", f"must be allow or deny, got {permission!r}")
    return AclRule(
        _string(tree["id"], f"{path}/id"),
        tuple(keys),
        _choices(tree["messages"], f"{path}/messages", MESSAGES),
        flows,
        permission,
    )


def _read_subject(value: Any, path: str) -> AclSubject:
    tree = _object(value, path, _SUBJECT_KEYS)
    _required(tree, path, ("id",))

    def strings(key: str) -> tuple[str, ...] | None:
        return None if tree.get(key) is None else _strings(tree[key], f"{path}/{key}", nonempty=True)

    protocols = None
    if tree.get("link_protocols") is not None:
        protocols = _choices(tree["link_protocols"], f"{path}/link_protocols", LINK_PROTOCOLS)
    zids = None
    if tree.get("zids") is not None:
        zids = tuple(
            parse_zid(z, f"{path}/zids/{i}") for i, z in enumerate(_list(tree["zids"], f"{path}/zids", nonempty=True))
        )
    return AclSubject(
        _string(tree["id"], f"{path}/id"),
        strings("interfaces"),
        strings("cert_common_names"),
        strings("usernames"),
        protocols,
        zids,
    )


def _read_policy(value: Any, path: str) -> AclPolicy:
    tree = _object(value, path, _POLICY_KEYS)
    _required(tree, path, ("rules", "subjects"))
    ident = None if tree.get("id") is None else _string(tree["id"], f"{path}/id")
    # Empty lists deserialise; zenohd refuses them later, as a malformed policy.
    return AclPolicy(
        ident,
        _strings(tree["rules"], f"{path}/rules", nonempty=False),
        _strings(tree["subjects"], f"{path}/subjects", nonempty=False),
    )
