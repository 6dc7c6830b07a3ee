"""Access control: the decisions zenohd's ``access_control`` makes, for the routing core.

Sans-IO: the routing core asks a face's :class:`FaceAcl` whether a message may enter
(ingress) or leave (egress) that face; nothing here reads a socket or a clock. The
configuration is read by :mod:`.acl_config`; :func:`parse_access_control` adds the
checks zenohd makes at start-up.

The rules are zenohd 1.10.2's (``zenoh/src/net/routing/interceptor/authorization.rs``
and ``access_control.rs``), checked against a real router:

* Each subject of the config stands for the combinations of one value per property it
  lists (an absent property matches anything). A face matches a combination when every
  property the combination names equals the face's (:class:`FaceSubject`).
* For one combination, flow, message and key: a deny rule whose key expression
  *includes* the key denies; else ``default_permission: allow`` allows; else an allow
  rule including the key allows; else it is denied. A combination no policy names gets
  ``default_permission``.
* Over the face's combinations any allow wins; a face matching none gets
  ``default_permission``.
* A flow is filtered at all only when a policy gives it a rule, or the default is deny
  (then both are). A message with no key expression to decide on (an ERR reply with an
  empty key, an unrestricted liveliness interest) is denied on a filtered flow, as
  zenohd's interceptor does.

Misconfigurations zenohd refuses raise :class:`~pyzenoh.errors.UsageError`: its
deserialisation errors always, its semantic checks (unknown or duplicate ids, empty
lists) when ``enabled`` is true.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from typing_extensions import override

from pyzenoh.codec import ZenohId
from pyzenoh.errors import UsageError
from pyzenoh.keyexpr import KeyExprTree
from pyzenoh.routing.acl_config import (
    DECLARE_LIVELINESS_SUBSCRIBER,
    DECLARE_QUERYABLE,
    DECLARE_SUBSCRIBER,
    DELETE,
    EGRESS,
    FLOWS,
    INGRESS,
    LIVELINESS_QUERY,
    LIVELINESS_TOKEN,
    MESSAGES,
    PUT,
    QUERY,
    REPLY,
    AccessControlConfig,
    AclRule,
    AclSubject,
    fail,
    read_access_control,
)
from pyzenoh.scouting.core import Interface

__all__ = [
    "DECLARE_LIVELINESS_SUBSCRIBER",
    "DECLARE_QUERYABLE",
    "DECLARE_SUBSCRIBER",
    "DEFAULT_RULE",
    "DELETE",
    "EGRESS",
    "FLOWS",
    "INGRESS",
    "LIVELINESS_QUERY",
    "LIVELINESS_TOKEN",
    "MESSAGES",
    "NO_KEY_RULE",
    "PUT",
    "QUERY",
    "REPLY",
    "AccessControl",
    "AccessControlConfig",
    "Denial",
    "FaceAcl",
    "FaceSubject",
    "explain",
    "interface_names",
    "parse_access_control",
]

log = logging.getLogger(__name__)

#: The rule a denial is counted under when no deny rule matched (default deny).
DEFAULT_RULE = "<default_permission>"
#: ... and when the message had no key expression to decide on.
NO_KEY_RULE = "<no key expression>"

#: Decisions cached per face, one per (flow, message, key); the cache is emptied when
#: full, so a face flooding distinct keys costs at most this many entries.
MAX_DECISIONS_PER_FACE = 4_096
#: (subject, rule) pairs remembered as already logged; forgotten all at once when full,
#: so a churn of clients cannot grow it without bound (they are then logged again).
MAX_LOGGED_DENIALS = 4_096
#: Distinct (rule, flow, message) deny counters; rule ids come from the config, so this
#: only bounds a config with a huge rule list (further triples count under the rule alone).
MAX_DENY_COUNTERS = 16_384


def parse_access_control(value: Any, path: str = "access_control") -> AccessControlConfig:
    """Read and check an ``access_control`` config object: UsageError names the first
    thing zenohd refuses (its deserialisation errors, then, when ``enabled``, its
    start-up checks in the order zenohd makes them)."""
    config = read_access_control(value, path)
    if config.enabled:
        try:
            _Compiled(config, quiet=True)  # its warnings come when the router compiles it
        except UsageError as exc:
            raise fail(path, str(exc)) from None
    return config


# --- subjects of a face ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FaceSubject:
    """What access control knows of a face's remote: its zid and its link's properties.

    ``interfaces``: the names of the interfaces holding the link's *local* address (as
    zenohd: ``lo`` for 127.0.0.1; none when unknown); ``link_protocol`` ``"tcp"`` or
    ``"tls"``; ``cert_common_name`` the CN of the remote's verified certificate (mTLS);
    ``username`` the usrpwd user it authenticated as.
    """

    zid: ZenohId
    interfaces: tuple[str, ...] = ()
    link_protocol: str | None = None
    cert_common_name: str | None = None
    username: str | None = None

    @override
    def __str__(self) -> str:
        parts = [f"zid {self.zid}"]
        if self.interfaces:
            parts.append(f"interface {'/'.join(self.interfaces)}")
        if self.link_protocol is not None:
            parts.append(self.link_protocol)
        if self.cert_common_name is not None:
            parts.append(f"cert CN {self.cert_common_name!r}")
        if self.username is not None:
            parts.append(f"user {self.username!r}")
        return ", ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {
            "zid": str(self.zid),
            "interfaces": list(self.interfaces),
            "link_protocol": self.link_protocol,
            "cert_common_name": self.cert_common_name,
            "username": self.username,
        }


def interface_names(address: str | None, interfaces: Iterable[Interface]) -> tuple[str, ...]:
    """The interfaces holding ``address`` (a link's local address), as zenohd names them:
    every interface with exactly that address (an IPv4-mapped IPv6 address counts as the
    IPv4 one), every interface for an unspecified address, none when it is not an IP."""
    if not address:
        return ()
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return ()
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_unspecified:
        return tuple(dict.fromkeys(itf.name for itf in interfaces))
    return tuple(dict.fromkeys(itf.name for itf in interfaces if ip in itf.addresses))


# --- decisions ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Denial:
    """Why a message was denied: the rule (or :data:`DEFAULT_RULE`, :data:`NO_KEY_RULE`)
    and the config subjects whose decision it was ("" when the face matched none)."""

    rule: str
    subjects: str


_NO_KEY = Denial(NO_KEY_RULE, "")
_MISSING = Denial("", "")  # a cache miss

# Combination: (interface, cert common name, username, link protocol, zid); None: any.
_Combo = tuple[str | None, str | None, str | None, str | None, ZenohId | None]
# Per combination: [flow][message] -> (deny tree, allow tree); values (rule id, subject id).
_Trees = list[list[tuple[KeyExprTree[tuple[str, str]], KeyExprTree[tuple[str, str]]]]]


class _Compiled:
    """The rule set in the form decisions read; building it makes zenohd's start-up checks."""

    def __init__(self, config: AccessControlConfig, *, quiet: bool = False) -> None:
        self.default_allow = config.default_permission == "allow"
        self.combos: dict[_Combo, int] = {}
        self.combo_subjects: dict[int, list[str]] = {}  # combination -> config subject ids
        self.policy: dict[int, _Trees] = {}
        self.flows = [False, False]  # ingress, egress filtered at all
        rules, subjects, policies = config.rules, config.subjects, config.policies
        if rules is None or subjects is None or policies is None:
            raise UsageError("All ACL rules/subjects/policies config lists must be provided")
        if not rules or not subjects or not policies:
            # zenohd warns and applies the default permission to everything.
            empty = [n for n, v in (("rules", rules), ("subjects", subjects), ("policies", policies)) if not v]
            if not quiet:
                log.warning(
                    "access control: %s list empty: default permission %s for everything",
                    " and ".join(empty),
                    config.default_permission,
                )
            if not self.default_allow:
                self.flows = [True, True]
            return
        for rule in rules:
            if not rule.id.strip():
                raise UsageError("Found empty rule id in rules list")
            if rule.flows is None and not quiet:  # as zenohd warns
                log.warning("access control: rule '%s' flows list is not set: both ingress and egress", rule.id)
        for subject in subjects:
            if not subject.id.strip():
                raise UsageError("Found empty subject id in subjects list")
        rule_map: dict[str, AclRule] = {}
        for rule in rules:
            if rule.id in rule_map:
                raise UsageError(f"Rule id must be unique: id '{rule.id}' is repeated")
            rule_map[rule.id] = rule
        subject_combos: dict[str, list[int]] = {}
        for subject in subjects:
            if subject.id in subject_combos:
                raise UsageError(f"Subject id must be unique: id '{subject.id}' is repeated")
            for name, values in (
                ("interface", subject.interfaces),
                ("cert_common_name", subject.cert_common_names),
                ("username", subject.usernames),
            ):
                if values is not None and any(not v.strip() for v in values):
                    raise UsageError(f"Found empty {name} value in subject '{subject.id}'")
            subject_combos[subject.id] = self._combinations(subject)
        policy_ids: set[str] = set()
        for n, policy in enumerate(policies):
            if policy.id is not None:
                if policy.id in policy_ids:
                    raise UsageError(f"Policy id must be unique: id '{policy.id}' is repeated")
                policy_ids.add(policy.id)
            if not policy.rules or not policy.subjects:
                raise UsageError(f"Policy #{n} is malformed: empty subjects or rules list")
            for sid in policy.subjects:
                if not sid.strip():
                    raise UsageError(f"Found empty subject id in policy #{n}")
                if sid not in subject_combos:
                    raise UsageError(f"Subject '{sid}' in policy #{n} does not exist in subjects list")
            for rid in policy.rules:
                if not rid.strip():
                    raise UsageError(f"Found empty rule id in policy #{n}")
                found = rule_map.get(rid)
                if found is None:
                    raise UsageError(f"Rule '{rid}' in policy #{n} does not exist in rules list")
                self._add(found, policy.subjects, subject_combos)

    def _combinations(self, s: AclSubject) -> list[int]:
        ids: list[int] = []
        for itf in s.interfaces or (None,):
            for cn in s.cert_common_names or (None,):
                for user in s.usernames or (None,):
                    for proto in s.link_protocols or (None,):
                        for zid in s.zids or (None,):
                            # Identical combinations of different subjects are one, as in zenohd.
                            cid = self.combos.setdefault((itf, cn, user, proto, zid), len(self.combos))
                            names = self.combo_subjects.setdefault(cid, [])
                            if s.id not in names:
                                names.append(s.id)
                            ids.append(cid)
        return ids

    def _add(self, rule: AclRule, subject_ids: Sequence[str], subject_combos: Mapping[str, list[int]]) -> None:
        flows = [FLOWS.index(f) for f in (rule.flows or FLOWS)]
        deny = rule.permission == "deny"
        for sid in subject_ids:
            for cid in subject_combos[sid]:
                trees = self.policy.get(cid)
                if trees is None:
                    trees = self.policy[cid] = [[(KeyExprTree(), KeyExprTree()) for _ in MESSAGES] for _ in FLOWS]
                for flow in flows:
                    for message in rule.messages:
                        tree = trees[flow][MESSAGES.index(message)][0 if deny else 1]
                        for key in rule.key_exprs:
                            tree.insert(key, (rule.id, sid))
                    if self.default_allow:
                        self.flows[flow] = True
                if not self.default_allow:
                    self.flows = [True, True]

    def matching_combos(self, s: FaceSubject) -> tuple[int, ...]:
        """The combinations a face matches: each property it names is the face's."""
        out = []
        for (itf, cn, user, proto, zid), cid in self.combos.items():
            if (
                (itf is None or itf in s.interfaces)
                and (cn is None or cn == s.cert_common_name)
                and (user is None or user == s.username)
                and (proto is None or proto == s.link_protocol)
                and (zid is None or zid == s.zid)
            ):
                out.append(cid)
        return tuple(sorted(out))

    def decide(self, combos: Sequence[int], flow: int, message: int, key: str) -> Denial | None:
        """None (allowed) or why not; any allow over the face's combinations wins."""
        if not combos:
            return None if self.default_allow else Denial(DEFAULT_RULE, "")
        first: Denial | None = None
        for cid in combos:
            trees = self.policy.get(cid)
            if trees is None:  # a subject no policy names: the default permission
                if self.default_allow:
                    return None
                first = first or Denial(DEFAULT_RULE, ",".join(self.combo_subjects[cid]))
                continue
            deny, allow = trees[flow][message]
            hit = next(deny.including(key), None) if deny else None
            if hit is not None:
                first = first or Denial(*hit[1])
                continue
            if self.default_allow or (allow and next(allow.including(key), None) is not None):
                return None
            first = first or Denial(DEFAULT_RULE, ",".join(self.combo_subjects[cid]))
        return first


class FaceAcl:
    """Access control for one face: its subject, the combinations it matched, and a cache
    of decisions. ``flows[INGRESS]`` / ``flows[EGRESS]``: whether that flow is filtered."""

    __slots__ = ("_cache", "_engine", "combos", "flows", "subject")

    def __init__(self, engine: AccessControl, subject: FaceSubject, combos: tuple[int, ...]) -> None:
        self._engine = engine
        self.subject = subject
        self.combos = combos
        self.flows = (engine.compiled.flows[0], engine.compiled.flows[1])
        self._cache: dict[tuple[int, int, str], Denial | None] = {}

    @property
    def subject_ids(self) -> list[str]:
        """The config subjects this face matched."""
        names = self._engine.compiled.combo_subjects
        return sorted({sid for cid in self.combos for sid in names[cid]})

    def check(self, flow: int, message: int, key: str | None) -> Denial | None:
        """None when ``message`` on ``key`` may pass ``flow``; else why not (not counted)."""
        if not self.flows[flow]:
            return None
        if not key:
            return _NO_KEY
        ck = (flow, message, key)
        denial = self._cache.get(ck, _MISSING)
        if denial is _MISSING:
            denial = self._engine.compiled.decide(self.combos, flow, message, key)
            if len(self._cache) >= MAX_DECISIONS_PER_FACE:
                self._cache.clear()
            self._cache[ck] = denial
        return denial

    def denies(self, flow: int, message: int, key: str | None) -> bool:
        """Check, and count and log a denial."""
        denial = self.check(flow, message, key)
        if denial is None:
            return False
        self._engine.record(self.subject, flow, message, key, denial)
        return True

    def record(self, flow: int, message: int, key: str | None, denial: Denial) -> None:
        """Count and log a denial decided earlier (a cached route's)."""
        self._engine.record(self.subject, flow, message, key, denial)


class AccessControl:
    """The compiled rule set and its deny counters, shared by every face's :class:`FaceAcl`."""

    def __init__(self, config: AccessControlConfig) -> None:
        self.config = config
        self.compiled = _Compiled(config)
        #: Denials by rule id (:data:`DEFAULT_RULE`, :data:`NO_KEY_RULE` included).
        self.denied_by_rule: dict[str, int] = {}
        #: Denials by (rule, flow, message).
        self.denied: dict[tuple[str, str, str], int] = {}
        self._logged: set[tuple[FaceSubject, str]] = set()
        #: Called with every denial before it is counted (the router's recorder hook).
        self.listener: Callable[[FaceSubject, int, int, str | None, Denial], None] | None = None

    @property
    def filtered_flows(self) -> tuple[bool, bool]:
        return self.compiled.flows[0], self.compiled.flows[1]

    def face(self, subject: FaceSubject) -> FaceAcl | None:
        """The access control of a face with ``subject`` (None: nothing of it is filtered)."""
        if not any(self.compiled.flows):
            return None
        combos = self.compiled.matching_combos(subject)
        if not combos:
            log.info(
                "access control: %s matches no subject; default permission %s applies to all it does",
                subject,
                self.config.default_permission,
            )
        return FaceAcl(self, subject, combos)

    def record(self, subject: FaceSubject, flow: int, message: int, key: str | None, denial: Denial) -> None:
        """Count a denial; log it the first time ``subject`` meets this rule."""
        if self.listener is not None:
            self.listener(subject, flow, message, key, denial)
        rule = denial.rule
        self.denied_by_rule[rule] = self.denied_by_rule.get(rule, 0) + 1
        k = (rule, FLOWS[flow], MESSAGES[message])
        if k in self.denied or len(self.denied) < MAX_DENY_COUNTERS:
            self.denied[k] = self.denied.get(k, 0) + 1
        seen = (subject, rule)
        if seen in self._logged:
            return
        if len(self._logged) >= MAX_LOGGED_DENIALS:
            self._logged.clear()
        self._logged.add(seen)
        log.warning(
            "access control: %s %s on %r denied for %s: %s (logged once per subject and rule)",
            FLOWS[flow],
            MESSAGES[message],
            key or "",
            subject,
            explain(denial, self.config),
        )

    def snapshot(self) -> dict[str, Any]:
        """Counters for the admin space: totals by rule, and by (rule, flow, message)."""
        return {
            "enabled": True,
            "default_permission": self.config.default_permission,
            "denied": dict(sorted(self.denied_by_rule.items())),
            "denials": [
                {"rule": r, "flow": fl, "message": m, "count": n} for (r, fl, m), n in sorted(self.denied.items())
            ],
        }


def explain(denial: Denial, config: AccessControlConfig) -> str:
    """The reason of a denial, in words, for the log."""
    if denial.rule == NO_KEY_RULE:
        return "the message names no key expression"
    if denial.rule == DEFAULT_RULE:
        if not denial.subjects:
            return f"it matches no subject and default_permission is {config.default_permission}"
        return f"no rule of subject(s) {denial.subjects} allows it and default_permission is deny"
    return f"rule '{denial.rule}' (subject '{denial.subjects}') denies it"
