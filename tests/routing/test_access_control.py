"""Access control (zenohd's ``access_control``): parsing and start-up refusals, decisions
(against a model written from zenohd's algorithm), bounds, and its place in the routing
core: what each message kind does when denied on the way in or out of a face."""

from __future__ import annotations

import logging
from ipaddress import ip_address
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyzenoh.codec import (
    Del,
    EntityGlobalId,
    Err,
    Push,
    Put,
    Response,
    ResponseFinal,
    UndeclareQueryable,
    UndeclareSubscriber,
    UndeclareToken,
    WhatAmI,
    ZenohId,
    decode_network_message,
    encode_network_message,
)
from pyzenoh.codec.network import (
    Declare,
    DeclareFinal,
    DeclareSubscriber,
    DeclareToken,
)
from pyzenoh.errors import UsageError
from pyzenoh.keyexpr import includes
from pyzenoh.routing import RoutingCore, Send
from pyzenoh.routing import access_control as acl_mod
from pyzenoh.routing.access_control import (
    DEFAULT_RULE,
    EGRESS,
    FLOWS,
    INGRESS,
    MESSAGES,
    NO_KEY_RULE,
    PUT,
    AccessControl,
    Denial,
    FaceSubject,
    explain,
    interface_names,
    parse_access_control,
)
from pyzenoh.routing.acl_config import AccessControlConfig
from pyzenoh.scouting.core import Interface
from tests.hyp import examples
from tests.routing.support import (
    CF,
    CURRENT,
    QOS_DECL,
    ROUTER_ZID,
    Q,
    S,
    T,
    d_qabl,
    d_sub,
    d_token,
    delete,
    final,
    interest,
    put,
    reply,
    request,
    u_sub,
    u_token,
    we,
)

Z1, Z2, Z3 = ZenohId(0xA1), ZenohId(0xA2), ZenohId(0xA3)
NOW = 1000.0


def acl(
    rules: list[dict[str, Any]],
    subjects: list[dict[str, Any]],
    policies: list[dict[str, Any]],
    default: str = "deny",
    enabled: bool = True,
) -> dict[str, Any]:
    return {
        "enabled": enabled,
        "default_permission": default,
        "rules": rules,
        "subjects": subjects,
        "policies": policies,
    }


def rule(
    ident: str, messages: list[str], keys: list[str], permission: str = "allow", flows: list[str] | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {"id": ident, "messages": messages, "key_exprs": keys, "permission": permission}
    if flows is not None:
        out["flows"] = flows
    return out


def engine(tree: dict[str, Any]) -> AccessControl:
    return AccessControl(parse_access_control(tree))


# --- parsing ---------------------------------------------------------------------------------


def test_absent_or_disabled_is_off() -> None:
    assert parse_access_control(None) == AccessControlConfig()
    assert not parse_access_control({}).enabled
    # Disabled: zenohd does not make its semantic checks (duplicate ids pass).
    dup = acl([rule("r", ["put"], ["a"]), rule("r", ["put"], ["b"])], [], [], enabled=False)
    assert parse_access_control(dup).rules is not None


def test_a_full_config_is_read() -> None:
    config = parse_access_control(
        acl(
            [rule("r1", ["put", "delete"], ["demo/**"], flows=["ingress"]), rule("r2", list(MESSAGES), ["**"], "deny")],
            [
                {
                    "id": "s1",
                    "interfaces": ["lo"],
                    "usernames": ["alice", "bob"],
                    "zids": ["a1", "b2"],
                    "link_protocols": ["tcp", "unixsock-stream"],
                    "cert_common_names": ["cn"],
                }
            ],
            [{"id": "p", "rules": ["r1", "r2"], "subjects": ["s1"]}],
            default="allow",
        )
    )
    assert config.enabled and config.default_permission == "allow"
    assert config.rules is not None and config.rules[0].flows == ("ingress",) and config.rules[1].flows is None
    assert config.subjects is not None and config.subjects[0].zids == (ZenohId(0xA1), ZenohId(0xB2))
    assert config.policies is not None and config.policies[0].id == "p"


GOOD_RULE = rule("r", ["put"], ["a/**"])
GOOD_SUBJECT = {"id": "s", "usernames": ["u"]}
GOOD_POLICY = {"rules": ["r"], "subjects": ["s"]}


@pytest.mark.parametrize(
    ("tree", "message"),
    [
        ({"enabled": "yes"}, "enabled: must be true or false"),
        ({"default_permission": "maybe"}, "must be allow or deny"),
        ({"enabeld": True}, "unknown field 'enabeld'"),
        (acl([{**GOOD_RULE, "permission": "perhaps"}], [GOOD_SUBJECT], [GOOD_POLICY]), "rules/0/permission"),
        (acl([{**GOOD_RULE, "messages": ["publish"]}], [GOOD_SUBJECT], [GOOD_POLICY]), "unknown value 'publish'"),
        (acl([{**GOOD_RULE, "messages": []}], [GOOD_SUBJECT], [GOOD_POLICY]), "messages: must not be an empty list"),
        (acl([{**GOOD_RULE, "flows": ["inbound"]}], [GOOD_SUBJECT], [GOOD_POLICY]), "unknown value 'inbound'"),
        (acl([{**GOOD_RULE, "flows": []}], [GOOD_SUBJECT], [GOOD_POLICY]), "flows: must not be an empty list"),
        (acl([{**GOOD_RULE, "key_exprs": []}], [GOOD_SUBJECT], [GOOD_POLICY]), "key_exprs: must not be an empty"),
        (acl([{**GOOD_RULE, "key_exprs": ["a/**/**"]}], [GOOD_SUBJECT], [GOOD_POLICY]), "key_exprs/0"),
        (acl([{**GOOD_RULE, "key_exprs": ["a//b"]}], [GOOD_SUBJECT], [GOOD_POLICY]), "key_exprs/0"),
        (acl([{k: v for k, v in GOOD_RULE.items() if k != "id"}], [GOOD_SUBJECT], [GOOD_POLICY]), "missing field 'id'"),
        (acl([{**GOOD_RULE, "extra": 1}], [GOOD_SUBJECT], [GOOD_POLICY]), "unknown field 'extra'"),
        (acl([GOOD_RULE], [{"id": "s", "usernames": []}], [GOOD_POLICY]), "usernames: must not be an empty list"),
        (acl([GOOD_RULE], [{"id": "s", "link_protocols": ["http"]}], [GOOD_POLICY]), "unknown value 'http'"),
        (acl([GOOD_RULE], [{"id": "s", "zids": ["A1"]}], [GOOD_POLICY]), "lowercase hexadecimal"),
        (acl([GOOD_RULE], [{"id": "s", "zids": ["0a1"]}], [GOOD_POLICY]), "leading 0s"),
        (acl([GOOD_RULE], [{"id": "s", "zids": ["1" * 33]}], [GOOD_POLICY]), "more than 16 bytes"),
        (acl([GOOD_RULE], [{"id": "s", "names": ["x"]}], [GOOD_POLICY]), "unknown field 'names'"),
        (acl([GOOD_RULE], [GOOD_SUBJECT], [{"rules": ["r"]}]), "missing field 'subjects'"),
    ],
)
def test_values_zenohd_does_not_deserialise_are_refused(tree: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_access_control(tree)
    # ... enabled or not (these are parse errors in zenohd)
    if "enabled" in tree and tree["enabled"] is True:
        with pytest.raises(UsageError, match=message):
            parse_access_control({**tree, "enabled": False})


@pytest.mark.parametrize(
    ("tree", "message"),
    [
        ({"enabled": True}, "All ACL rules/subjects/policies config lists must be provided"),
        (acl([GOOD_RULE], [GOOD_SUBJECT], None), "must be provided"),  # type: ignore[arg-type]
        (acl([rule(" ", ["put"], ["a"])], [GOOD_SUBJECT], [GOOD_POLICY]), "Found empty rule id in rules list"),
        (acl([GOOD_RULE], [{"id": ""}], [GOOD_POLICY]), "Found empty subject id in subjects list"),
        (acl([GOOD_RULE, GOOD_RULE], [GOOD_SUBJECT], [GOOD_POLICY]), "Rule id must be unique: id 'r' is repeated"),
        (acl([GOOD_RULE], [GOOD_SUBJECT, GOOD_SUBJECT], [GOOD_POLICY]), "Subject id must be unique"),
        (acl([GOOD_RULE], [{"id": "s", "interfaces": [" "]}], [GOOD_POLICY]), "Found empty interface value"),
        (acl([GOOD_RULE], [{"id": "s", "cert_common_names": [""]}], [GOOD_POLICY]), "empty cert_common_name value"),
        (acl([GOOD_RULE], [{"id": "s", "usernames": [""]}], [GOOD_POLICY]), "Found empty username value"),
        (
            acl([GOOD_RULE], [GOOD_SUBJECT], [{**GOOD_POLICY, "id": "p"}, {**GOOD_POLICY, "id": "p"}]),
            "Policy id must be unique: id 'p' is repeated",
        ),
        (acl([GOOD_RULE], [GOOD_SUBJECT], [{"rules": [], "subjects": ["s"]}]), "Policy #0 is malformed"),
        (acl([GOOD_RULE], [GOOD_SUBJECT], [{"rules": ["r"], "subjects": []}]), "Policy #0 is malformed"),
        (acl([GOOD_RULE], [GOOD_SUBJECT], [{"rules": ["r"], "subjects": [" "]}]), "empty subject id in policy #0"),
        (acl([GOOD_RULE], [GOOD_SUBJECT], [{"rules": [""], "subjects": ["s"]}]), "empty rule id in policy #0"),
        (
            acl([GOOD_RULE], [GOOD_SUBJECT], [GOOD_POLICY, {"rules": ["r"], "subjects": ["t"]}]),
            "Subject 't' in policy #1 does not exist in subjects list",
        ),
        (
            acl([GOOD_RULE], [GOOD_SUBJECT], [{"rules": ["x"], "subjects": ["s"]}]),
            "Rule 'x' in policy #0 does not exist in rules list",
        ),
    ],
)
def test_start_up_checks_of_an_enabled_config(tree: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_access_control(tree)
    parse_access_control({**tree, "enabled": False})  # zenohd checks these only when enabled


@pytest.mark.parametrize("empty", ["rules", "subjects", "policies"])
@pytest.mark.parametrize("default", ["allow", "deny"])
def test_an_empty_list_applies_the_default_to_everything(
    empty: str, default: str, caplog: pytest.LogCaptureFixture
) -> None:
    tree = acl([GOOD_RULE], [GOOD_SUBJECT], [GOOD_POLICY], default=default)
    tree[empty] = []
    with caplog.at_level(logging.WARNING):
        e = engine(tree)
    assert f"{empty} list empty" in caplog.text
    face = e.face(FaceSubject(Z1, username="u"))
    if default == "allow":
        assert face is None  # nothing is filtered at all
    else:
        assert face is not None and face.flows == (True, True)
        assert face.check(INGRESS, PUT, "a/b") == Denial(DEFAULT_RULE, "")


def test_flows_filtered_only_where_rules_are() -> None:
    # default allow: only the flows some policy's rule names are filtered (zenohd's interface_enabled)
    e = engine(
        acl(
            [rule("r", ["put"], ["a"], "deny", ["egress"]), rule("unused", ["put"], ["a"], "deny", ["ingress"])],
            [GOOD_SUBJECT],
            [GOOD_POLICY | {"rules": ["r"]}],
            default="allow",
        )
    )
    assert e.filtered_flows == (False, True)
    # default deny: both, whatever the rules
    e = engine(
        acl([rule("r", ["put"], ["a"], flows=["egress"])], [GOOD_SUBJECT], [{"rules": ["r"], "subjects": ["s"]}])
    )
    assert e.filtered_flows == (True, True)


# --- decisions ---------------------------------------------------------------------------------


def test_any_allow_wins_across_subjects() -> None:
    e = engine(
        acl(
            [rule("deny-put", ["put"], ["a/**"], "deny"), rule("allow-put", ["put"], ["a/**"])],
            [{"id": "by-user", "usernames": ["alice"]}, {"id": "by-itf", "interfaces": ["lo"]}],
            [{"rules": ["deny-put"], "subjects": ["by-user"]}, {"rules": ["allow-put"], "subjects": ["by-itf"]}],
        )
    )
    both = e.face(FaceSubject(Z1, ("lo",), "tcp", None, "alice"))
    user_only = e.face(FaceSubject(Z1, ("eth0",), "tcp", None, "alice"))
    assert both is not None and user_only is not None
    assert both.subject_ids == ["by-itf", "by-user"]
    assert both.check(INGRESS, PUT, "a/b") is None
    assert user_only.check(INGRESS, PUT, "a/b") == Denial("deny-put", "by-user")


def test_default_allow_subject_without_a_rule_for_the_message_allows() -> None:
    e = engine(
        acl(
            [rule("no-put", ["put"], ["a/**"], "deny")],
            [{"id": "s1", "zids": ["a1"]}, {"id": "s2", "zids": ["a1"], "link_protocols": ["tcp"]}],
            [{"rules": ["no-put"], "subjects": ["s1"]}],
            default="allow",
        )
    )
    face = e.face(FaceSubject(Z1, link_protocol="tcp"))
    assert face is not None
    # s1 denies, s2 (named by no policy) takes default allow: any allow wins
    assert face.check(INGRESS, PUT, "a/b") is None
    alone = e.face(FaceSubject(Z1, link_protocol="tls"))
    assert alone is not None and alone.check(INGRESS, PUT, "a/b") == Denial("no-put", "s1")
    assert alone.check(INGRESS, acl_mod.DELETE, "a/b") is None  # no rule for delete: default allow
    assert alone.check(EGRESS, PUT, "a/b") == Denial("no-put", "s1")  # no flows: both


def test_default_deny_needs_an_allow_rule_including_the_key() -> None:
    e = engine(
        acl(
            [
                rule("sub", ["declare_subscriber"], ["a/*"]),
                rule("no-secret", ["declare_subscriber"], ["a/secret"], "deny"),
            ],
            [{"id": "all"}],
            [{"rules": ["sub", "no-secret"], "subjects": ["all"]}],
        )
    )
    face = e.face(FaceSubject(Z2))
    assert face is not None
    m = acl_mod.DECLARE_SUBSCRIBER
    assert face.check(INGRESS, m, "a/x") is None
    assert face.check(INGRESS, m, "a/*") is None  # a/* includes itself
    assert face.check(INGRESS, m, "a/**") == Denial(DEFAULT_RULE, "all")  # a/* does not include a/**
    assert face.check(INGRESS, m, "a/secret") == Denial("no-secret", "all")  # deny wins for one subject
    assert face.check(INGRESS, m, "a/x/y") == Denial(DEFAULT_RULE, "all")
    assert face.check(INGRESS, PUT, "a/x") == Denial(DEFAULT_RULE, "all")
    assert face.check(INGRESS, m, None) == Denial(NO_KEY_RULE, "")
    assert face.check(INGRESS, m, "") == Denial(NO_KEY_RULE, "")


def test_a_face_matching_no_subject_gets_the_default(caplog: pytest.LogCaptureFixture) -> None:
    e = engine(acl([GOOD_RULE], [GOOD_SUBJECT], [GOOD_POLICY]))
    with caplog.at_level(logging.INFO):
        face = e.face(FaceSubject(Z1, username="other"))
    assert "matches no subject" in caplog.text
    assert face is not None and face.combos == ()
    assert face.check(INGRESS, PUT, "a/b") == Denial(DEFAULT_RULE, "")
    assert "matches no subject and default_permission is deny" in explain(Denial(DEFAULT_RULE, ""), e.config)


@pytest.mark.parametrize(
    ("subject", "face", "matches"),
    [
        ({"interfaces": ["lo"]}, FaceSubject(Z1, ("lo",)), True),
        ({"interfaces": ["lo"]}, FaceSubject(Z1, ("eth0", "lo")), True),
        ({"interfaces": ["lo"]}, FaceSubject(Z1, ()), False),
        ({"zids": ["a1", "a2"]}, FaceSubject(Z2), True),
        ({"zids": ["a1"]}, FaceSubject(Z3), False),
        ({"link_protocols": ["tls"]}, FaceSubject(Z1, link_protocol="tls"), True),
        ({"link_protocols": ["tls"]}, FaceSubject(Z1, link_protocol="tcp"), False),
        ({"cert_common_names": ["alice"]}, FaceSubject(Z1, cert_common_name="alice"), True),
        ({"cert_common_names": ["alice"]}, FaceSubject(Z1), False),
        ({"usernames": ["bob"]}, FaceSubject(Z1, username="bob"), True),
        (
            {"usernames": ["bob"], "link_protocols": ["tls"]},
            FaceSubject(Z1, link_protocol="tcp", username="bob"),
            False,
        ),
        ({}, FaceSubject(Z1), True),
    ],
)
def test_subject_properties(subject: dict[str, Any], face: FaceSubject, matches: bool) -> None:
    e = engine(acl([GOOD_RULE], [{"id": "s", **subject}], [GOOD_POLICY]))
    f = e.face(face)
    assert f is not None
    assert (f.check(INGRESS, PUT, "a/b") is None) == matches


def test_interface_names_of_a_local_address() -> None:
    lo = Interface("lo", (ip_address("127.0.0.1"), ip_address("::1")))
    eth = Interface("eth0", (ip_address("192.0.2.7"),))
    both = Interface("br0", (ip_address("192.0.2.7"),))
    assert interface_names("127.0.0.1", [lo, eth]) == ("lo",)
    assert interface_names("::ffff:127.0.0.1", [lo, eth]) == ("lo",)
    assert interface_names("::1", [lo, eth]) == ("lo",)
    assert interface_names("fe80::1%eth0", [lo, eth]) == ()
    assert interface_names("192.0.2.7", [lo, eth, both]) == ("eth0", "br0")
    assert interface_names("0.0.0.0", [lo, eth]) == ("lo", "eth0")
    assert interface_names(None, [lo]) == () and interface_names("not-an-ip", [lo]) == ()


def reference_decision(tree: dict[str, Any], face: FaceSubject, flow: str, message: str, key: str) -> bool:
    """zenohd's decision, written from its source: True when allowed."""
    default_allow = tree["default_permission"] == "allow"
    rules = {r["id"]: r for r in tree["rules"]}
    combos: dict[tuple[Any, ...], None] = {}
    by_subject: dict[str, list[tuple[Any, ...]]] = {}
    for s in tree["subjects"]:
        cs = [
            (i, c, u, p, z)
            for i in s.get("interfaces", [None])
            for c in s.get("cert_common_names", [None])
            for u in s.get("usernames", [None])
            for p in s.get("link_protocols", [None])
            for z in s.get("zids", [None])
        ]
        by_subject[s["id"]] = cs
        combos.update(dict.fromkeys(cs))
    policy: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for p in tree["policies"]:
        for sid in p["subjects"]:
            for c in by_subject[sid]:
                policy.setdefault(c, []).extend(rules[r] for r in p["rules"])
    zid = None if face.zid is None else f"{face.zid}"
    matched = [
        c
        for c in combos
        if (c[0] is None or c[0] in face.interfaces)
        and (c[1] is None or c[1] == face.cert_common_name)
        and (c[2] is None or c[2] == face.username)
        and (c[3] is None or c[3] == face.link_protocol)
        and (c[4] is None or c[4] == zid)
    ]
    decision = default_allow
    for c in matched:
        applying = [
            r
            for r in policy.get(c, ())
            if message in r["messages"]
            and flow in r.get("flows", FLOWS)
            and any(includes(k, key) for k in r["key_exprs"])
        ]
        if c not in policy:
            allowed = default_allow
        elif any(r["permission"] == "deny" for r in applying):
            allowed = False
        else:
            allowed = default_allow or any(r["permission"] == "allow" for r in applying)
        if allowed:
            return True
        decision = False
    return decision


KEYS = ["a", "a/b", "a/*", "a/**", "b/c", "**", "a/b/c", "b/*"]
VALUES = {
    "interfaces": ["lo", "eth0"],
    "usernames": ["alice", "bob"],
    "link_protocols": ["tcp", "tls"],
    "zids": ["a1", "a2"],
    "cert_common_names": ["cn1", "cn2"],
}


@st.composite
def configs(draw: st.DrawFn) -> dict[str, Any]:
    n_rules = draw(st.integers(1, 5))
    rules = [
        {
            "id": f"r{i}",
            "permission": draw(st.sampled_from(["allow", "deny"])),
            "messages": draw(st.lists(st.sampled_from(MESSAGES[:4]), min_size=1, max_size=3, unique=True)),
            "key_exprs": draw(st.lists(st.sampled_from(KEYS), min_size=1, max_size=2, unique=True)),
            **(
                {"flows": draw(st.lists(st.sampled_from(FLOWS), min_size=1, max_size=2, unique=True))}
                if draw(st.booleans())
                else {}
            ),
        }
        for i in range(n_rules)
    ]
    subjects = []
    for i in range(draw(st.integers(1, 4))):
        props = draw(st.lists(st.sampled_from(sorted(VALUES)), max_size=2, unique=True))
        subjects.append(
            {
                "id": f"s{i}",
                **{p: draw(st.lists(st.sampled_from(VALUES[p]), min_size=1, max_size=2, unique=True)) for p in props},
            }
        )
    policies = [
        {
            "rules": draw(st.lists(st.sampled_from([r["id"] for r in rules]), min_size=1, max_size=3, unique=True)),
            "subjects": draw(
                st.lists(st.sampled_from([s["id"] for s in subjects]), min_size=1, max_size=2, unique=True)
            ),
        }
        for _ in range(draw(st.integers(1, 3)))
    ]
    return acl(rules, subjects, policies, default=draw(st.sampled_from(["allow", "deny"])))


faces = st.builds(
    FaceSubject,
    st.sampled_from([Z1, Z2, Z3]),
    st.lists(st.sampled_from(VALUES["interfaces"]), max_size=2).map(tuple),
    st.sampled_from(["tcp", "tls"]),
    st.sampled_from([None, "cn1", "cn2"]),
    st.sampled_from([None, "alice", "bob"]),
)


@pytest.mark.slow
@examples(1_000, 200)
@given(configs(), faces, st.sampled_from(FLOWS), st.sampled_from(MESSAGES[:4]), st.sampled_from(KEYS))
def test_decisions_match_zenohds_algorithm(
    tree: dict[str, Any], face: FaceSubject, flow: str, message: str, key: str
) -> None:
    e = engine(tree)
    f = e.face(face)
    fl, m = FLOWS.index(flow), MESSAGES.index(message)
    allowed = f is None or f.check(fl, m, key) is None
    if f is not None and not f.flows[fl]:
        # an unfiltered flow lets everything through: zenohd then has no interceptor at all,
        # which only happens when no rule can deny on it
        assert reference_decision(tree, face, flow, message, key)
    assert allowed == reference_decision(tree, face, flow, message, key)


# --- bounds and observability --------------------------------------------------------------------


def test_decision_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(acl_mod, "MAX_DECISIONS_PER_FACE", 8)
    face = engine(acl([GOOD_RULE], [GOOD_SUBJECT], [GOOD_POLICY])).face(FaceSubject(Z1, username="u"))
    assert face is not None
    for i in range(50):
        assert face.check(INGRESS, PUT, f"a/{i}") is None
        assert len(face._cache) <= 8
    assert face.check(INGRESS, PUT, "b/1") is not None  # decided again after a flush


def test_denials_counted_per_rule_and_logged_once(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    e = engine(
        acl(
            [GOOD_RULE, rule("no-b", ["put"], ["b/**"], "deny")],
            [{"id": "s"}],
            [{"rules": ["r", "no-b"], "subjects": ["s"]}],
        )
    )
    f1, f2 = e.face(FaceSubject(Z1)), e.face(FaceSubject(Z2))
    assert f1 is not None and f2 is not None
    with caplog.at_level(logging.WARNING, logger=acl_mod.__name__):
        for _ in range(3):
            assert f1.denies(INGRESS, PUT, "b/x")
            assert f1.denies(EGRESS, PUT, "c")
            assert not f1.denies(INGRESS, PUT, "a/x")
        assert f2.denies(INGRESS, PUT, "b/y")
    assert e.denied_by_rule == {"no-b": 4, DEFAULT_RULE: 3}
    assert e.denied[("no-b", "ingress", "put")] == 4
    lines = [r.getMessage() for r in caplog.records if "denied for" in r.getMessage()]
    assert len(lines) == 3  # (Z1, no-b), (Z1, default), (Z2, no-b)
    assert any("rule 'no-b' (subject 's') denies it" in line and "zid a1" in line for line in lines)
    snap = e.snapshot()
    assert snap["denied"] == {DEFAULT_RULE: 3, "no-b": 4}
    assert {"rule": "no-b", "flow": "ingress", "message": "put", "count": 4} in snap["denials"]
    # the memory of what was logged is bounded: when full it is forgotten, then logs again
    monkeypatch.setattr(acl_mod, "MAX_LOGGED_DENIALS", 2)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger=acl_mod.__name__):
        for z in range(10):
            face = e.face(FaceSubject(ZenohId(0x100 + z)))
            assert face is not None and face.denies(INGRESS, PUT, "b/1")
            assert len(e._logged) <= 2
    assert len([r for r in caplog.records if "denied for" in r.getMessage()]) == 10
    monkeypatch.setattr(acl_mod, "MAX_DENY_COUNTERS", len(e.denied))
    assert f1.denies(INGRESS, acl_mod.QUERY, "zz")
    assert ("<default_permission>", "ingress", "query") not in e.denied and e.denied_by_rule[DEFAULT_RULE] == 4


# --- in the routing core ---------------------------------------------------------------------


class AclRouter:
    """A routing core with access control; faces 1.. are clients with a subject each."""

    def __init__(self, tree: dict[str, Any]) -> None:
        self.acl = engine(tree)
        self.core = RoutingCore(ROUTER_ZID, access_control=self.acl)

    def open(self, face: int, subject: FaceSubject | None, whatami: WhatAmI = WhatAmI.CLIENT) -> None:
        zid = subject.zid if subject is not None else ZenohId(0xF00 + face)
        self.core.add_face(face, zid, whatami, NOW, subject=subject)

    def send(self, face: int, *messages: Any) -> list[Send]:
        out: list[Send] = []
        for m in messages:
            out += self.core.handle(face, m, NOW)
        return out


def to(sends: list[Send], face: int) -> list[Any]:
    return [s.message for s in sends if s.face == face]


USERS = [{"id": "alice", "usernames": ["alice"]}, {"id": "bob", "usernames": ["bob"]}]
ALICE, BOB = FaceSubject(Z1, ("lo",), "tcp", None, "alice"), FaceSubject(Z2, ("lo",), "tcp", None, "bob")


def two_clients(rules: list[dict[str, Any]], policies: list[dict[str, Any]], default: str = "deny") -> AclRouter:
    r = AclRouter(acl(rules, USERS, policies, default=default))
    r.open(1, ALICE)
    r.open(2, BOB)
    return r


def test_push_ingress_and_egress() -> None:
    r = two_clients(
        [
            rule("pub", ["put"], ["demo/**"], flows=["ingress"]),
            rule("sub", ["declare_subscriber"], ["demo/**"]),
            rule("recv", ["put"], ["demo/**"], flows=["egress"]),
        ],
        [{"rules": ["pub"], "subjects": ["alice"]}, {"rules": ["sub", "recv"], "subjects": ["bob"]}],
    )
    r.send(2, interest(1, CF, S, "demo/**"), d_sub(1, "demo/**"))
    out = r.send(1, put("demo/x"))
    assert [type(m) for m in to(out, 2)] == [Push]
    route = next(iter(r.core._tables.data_routes.values()))
    # delete is denied on the way in: the route keeps that; a put pays nothing for it
    assert route.acl is not None and route.acl.put is None and route.acl.delete is not None
    # delete: denied at ingress (no rule allows alice to delete), silently
    assert r.send(1, delete("demo/x")) == []
    assert r.acl.denied_by_rule == {DEFAULT_RULE: 1}
    # bob may not publish: his put is dropped before routing
    r.send(1, interest(2, CF, S, "demo/**"), d_sub(2, "demo/**"))
    assert r.send(2, put("demo/y")) == []
    assert r.acl.denied[(DEFAULT_RULE, "ingress", "put")] == 1


def test_an_allowed_route_carries_no_access_control() -> None:
    r = two_clients(
        [rule("all", ["put", "delete", "declare_subscriber"], ["demo/**"])],
        [{"rules": ["all"], "subjects": ["alice", "bob"]}],
    )
    r.send(2, d_sub(1, "demo/**"))
    for _ in range(3):
        assert [type(m) for m in to(r.send(1, put("demo/x")), 2)] == [Push]
    assert [r.acl is None for r in r.core._tables.data_routes.values()] == [True]
    assert to(r.send(1, delete("demo/x")), 2)[0].body == Del()
    assert r.acl.denied_by_rule == {}


def test_push_egress_denied_to_one_subscriber_only() -> None:
    r = AclRouter(
        acl(
            [rule("no-out", ["put"], ["demo/secret/**"], "deny", ["egress"])],
            USERS,
            [{"rules": ["no-out"], "subjects": ["bob"]}],
            default="allow",
        )
    )
    r.open(1, ALICE)
    r.open(2, BOB)
    r.open(3, None)  # a local face: never filtered
    r.send(2, d_sub(1, "demo/**"))
    r.send(3, d_sub(1, "demo/**"))
    out = r.send(1, put("demo/secret/a"), put("demo/open"), delete("demo/secret/a"))
    assert [m.wire_expr.suffix for m in to(out, 2)] == ["demo/open", "demo/secret/a"]  # the delete passes
    assert [m.wire_expr.suffix for m in to(out, 3)] == ["demo/secret/a", "demo/open", "demo/secret/a"]
    assert r.acl.denied == {("no-out", "egress", "put"): 1}


def test_declarations_ingress_denied_are_not_registered() -> None:
    r = two_clients(
        [rule("ok", ["declare_subscriber", "declare_queryable", "liveliness_token"], ["ok/**"])],
        [{"rules": ["ok"], "subjects": ["alice", "bob"]}],
        default="deny",
    )
    r.send(1, d_sub(1, "no/x"), d_qabl(2, "no/x"), d_token(3, "no/x"), d_sub(4, "ok/x"), d_token(5, "ok/t"))
    state = r.core.face_state(1)
    assert state["subscribers"] == {4: "ok/x"} and state["queryables"] == {} and state["tokens"] == {5: "ok/t"}
    # undeclarations: with no key they pass to the tables (which know nothing of the denied ones)
    r.send(1, u_sub(1), u_token(3))
    assert r.acl.denied_by_rule[DEFAULT_RULE] == 3
    # an undeclaration naming a denied key is itself denied
    r.send(1, Declare(UndeclareToken(5, we("no/t")), qos=QOS_DECL))
    assert r.core.face_state(1)["tokens"] == {5: "ok/t"}
    r.send(1, Declare(UndeclareToken(5, we("ok/t")), qos=QOS_DECL))
    assert r.core.face_state(1)["tokens"] == {}
    r.core.check_invariants()


def test_egress_hidden_declarations_are_never_undeclared_either() -> None:
    r = AclRouter(
        acl(
            [
                rule(
                    "hide",
                    ["declare_subscriber", "declare_queryable", "liveliness_token"],
                    ["secret/**"],
                    "deny",
                    ["egress"],
                )
            ],
            USERS,
            [{"rules": ["hide"], "subjects": ["bob"]}],
            default="allow",
        )
    )
    r.open(1, ALICE)
    r.open(2, BOB)
    out = r.send(2, interest(1, CF, S | Q | T, None))
    assert to(out, 2) == [Declare(DeclareFinal(), 1, QOS_DECL)]
    out = r.send(1, d_sub(1, "secret/a"), d_qabl(2, "secret/a"), d_token(3, "secret/a"), d_sub(4, "open/a"))
    kinds = [type(m.body) for m in to(out, 2)]
    assert kinds == [DeclareSubscriber]  # only open/a
    out = r.send(1, u_sub(1), Declare(UndeclareQueryable(2), qos=QOS_DECL), u_token(3), u_sub(4))
    assert [type(m.body) for m in to(out, 2)] == [UndeclareSubscriber]
    assert r.acl.denied == {
        ("hide", "egress", "declare_subscriber"): 2,
        ("hide", "egress", "declare_queryable"): 2,
        ("hide", "egress", "liveliness_token"): 2,
    }
    # alice still routes to bob's subscriber and bob's data still reaches alice: declarations only
    r.send(2, d_sub(9, "secret/**"))
    assert to(r.send(1, put("secret/b")), 2)


def test_denied_query_ends_at_once_with_no_reply() -> None:
    r = two_clients(
        [rule("q", ["query", "reply"], ["q/**"]), rule("d", ["declare_queryable"], ["**"])],
        [{"rules": ["q", "d"], "subjects": ["alice", "bob"]}],
    )
    r.send(2, d_qabl(1, "**"))
    # ingress: a query on a key alice may not query gets its final alone
    out = r.send(1, request(7, "x/y"))
    assert to(out, 1) == [final(7)] and to(out, 2) == []
    # allowed: routed, the reply comes back
    out = r.send(1, request(8, "q/a"))
    (fwd,) = to(out, 2)
    out = r.send(2, reply(fwd.request_id, "q/a"), ResponseFinal(fwd.request_id, fwd.qos))
    assert [type(m) for m in to(out, 1)] == [Response, ResponseFinal]
    # a reply on a key outside what bob may reply on is dropped (ingress) and so is one
    # alice may not receive (egress); the final still comes
    out = r.send(1, request(9, "q/b"))
    (fwd,) = to(out, 2)
    out = r.send(2, reply(fwd.request_id, "x/z"), reply(fwd.request_id, "q/b"), ResponseFinal(fwd.request_id))
    assert [type(m) for m in to(out, 1)] == [Response, ResponseFinal]
    assert r.acl.denied[(DEFAULT_RULE, "ingress", "reply")] == 1
    assert r.acl.denied[(DEFAULT_RULE, "ingress", "query")] == 1


def test_query_egress_denied_finishes_that_destination_at_once() -> None:
    r = AclRouter(
        acl(
            [rule("no-q", ["query"], ["**"], "deny", ["egress"])],
            USERS,
            [{"rules": ["no-q"], "subjects": ["bob"]}],
            default="allow",
        )
    )
    r.open(1, ALICE)
    r.open(2, BOB)
    r.open(3, FaceSubject(Z3, ("lo",), "tcp", None, "carol"))
    r.send(2, d_qabl(1, "q/**", complete=True))
    # BestMatching picks bob's complete queryable, then egress control drops it: the final at once
    out = r.send(1, request(1, "q/a"))
    assert to(out, 1) == [final(1)] and to(out, 2) == []
    r.send(3, d_qabl(1, "q/**"))
    out = r.send(1, request(2, "q/a", target=1))  # All: carol only
    assert [type(m) for m in to(out, 3)] == [type(request(0, "x"))] and to(out, 2) == []
    assert r.core.face_state(1)["outgoing_queries"] == 1
    assert r.acl.denied == {("no-q", "egress", "query"): 2}


def test_router_errors_without_a_key_are_denied_on_a_filtered_flow() -> None:
    r = two_clients(
        [rule("q", ["query", "declare_queryable", "reply"], ["q/**"])], [{"rules": ["q"], "subjects": ["alice", "bob"]}]
    )
    r.send(2, d_qabl(1, "q/**"))
    r.send(1, request(1, "q/a", timeout_ms=100))
    deadline = r.core.next_deadline()
    assert deadline is not None
    out = r.core.handle_timer(deadline)
    assert to(out, 1) == [final(1)]  # no "Timeout" ERR: it names no key
    assert r.acl.denied[(NO_KEY_RULE, "egress", "reply")] == 1
    # an ERR reply from a queryable names the query's key: allowed like any reply
    r.send(1, request(2, "q/b"))
    fwd = r.core.face_state(2)["pending_queries"]
    assert fwd == 1
    rid = max(r.core._tables.faces[2].pending)
    err = Response(rid, we("q/b"), Err(b"no"), responder=EntityGlobalId(Z2, 1))
    assert [type(m.body) for m in to(r.send(2, err), 1)] == [Err]


def test_liveliness_interests_and_tokens() -> None:
    r = two_clients(
        [rule("live", ["liveliness_token", "liveliness_query", "declare_liveliness_subscriber"], ["live/**"])],
        [{"rules": ["live"], "subjects": ["alice", "bob"]}],
    )
    r.send(1, d_token(1, "live/a"), d_token(2, "dead/a"))
    # a liveliness get on a denied key: D_FINAL alone
    out = r.send(2, interest(5, CURRENT, T, "dead/**"))
    assert to(out, 2) == [Declare(DeclareFinal(), 5, QOS_DECL)]
    out = r.send(2, interest(6, CURRENT, T, "live/**"))
    assert [type(m.body) for m in to(out, 2)] == [DeclareToken, DeclareFinal]
    # an unrestricted liveliness subscriber names no key: denied, not registered
    out = r.send(2, interest(7, CF, T, None))
    assert to(out, 2) == [Declare(DeclareFinal(), 7, QOS_DECL)]
    assert 7 not in r.core.face_state(2)["interests"]
    out = r.send(2, interest(8, CF, T, "live/**"))
    assert 8 in r.core.face_state(2)["interests"]
    out = r.send(1, d_token(3, "live/b"))
    assert [type(m.body) for m in to(out, 2)] == [DeclareToken]
    assert r.acl.denied[(DEFAULT_RULE, "ingress", "liveliness_query")] == 1
    assert r.acl.denied[(NO_KEY_RULE, "ingress", "declare_liveliness_subscriber")] == 1


def test_declarations_of_router_neighbours_are_filtered_too() -> None:
    """Router A (access control) linked to router B (none): B's declarations on a denied
    key are not registered at A, and A does not push its own on a denied key to B."""
    b_zid = ZenohId(0xB1)
    r = AclRouter(
        acl(
            [rule("no-r", ["declare_subscriber"], ["secret/**"], "deny")],
            [{"id": "r", "zids": ["b1"]}],
            [{"rules": ["no-r"], "subjects": ["r"]}],
            default="allow",
        )
    )
    b = RoutingCore(b_zid)
    a_out: list[Send] = []  # what A sends to its client (face 2)
    b_out: list[Send] = []  # what B sends to its client (face 2)

    def pump(from_a: list[Send], from_b: list[Send]) -> None:
        while from_a or from_b:
            nxt_a: list[Send] = []
            nxt_b: list[Send] = []
            for s_ in from_a:
                if s_.face == 1:
                    nxt_b += b.handle(1, decode_network_message(encode_network_message(s_.message)), NOW)
                else:
                    a_out.append(s_)
            for s_ in from_b:
                if s_.face == 1:
                    nxt_a += r.core.handle(1, decode_network_message(encode_network_message(s_.message)), NOW)
                else:
                    b_out.append(s_)
            from_a, from_b = nxt_a, nxt_b

    sa = r.core.add_face(1, b_zid, WhatAmI.ROUTER, NOW, subject=FaceSubject(b_zid, ("lo",), "tcp"))
    sb = b.add_face(1, ROUTER_ZID, WhatAmI.ROUTER, NOW)
    pump(sa, sb)
    r.open(2, ALICE)
    pump([], b.add_face(2, ZenohId(0xC2), WhatAmI.CLIENT, NOW))
    pump(r.send(2, interest(1, CF, S, None)), b.handle(2, interest(1, CF, S, None), NOW))
    a_out.clear()
    b_out.clear()
    pump([], b.handle(2, d_sub(1, "secret/a"), NOW) + b.handle(2, d_sub(2, "open/a"), NOW))
    assert [to([x], 2)[0].body.wire_expr.suffix for x in a_out] == ["open/a"]
    assert r.core.router_entities("subscriber") == {"open/a": [b_zid]}
    assert r.acl.denied == {("no-r", "ingress", "declare_subscriber"): 1}
    # egress: alice's subscriber on secret/b is not pushed to B
    pump(r.send(2, d_sub(1, "secret/b"), d_sub(2, "open/b")), [])
    assert [m.body.wire_expr.suffix for m in to(b_out, 2)] == ["open/b"]
    assert r.acl.denied[("no-r", "egress", "declare_subscriber")] == 1


def test_ingress_denied_put_with_a_body_of_each_kind() -> None:
    r = two_clients([rule("d", ["delete"], ["**"])], [{"rules": ["d"], "subjects": ["alice"]}], default="deny")
    r.send(2, d_sub(1, "**"))
    assert r.send(1, Push(we("k"), Put(b"p"))) == []
    assert r.acl.denied[(DEFAULT_RULE, "ingress", "put")] == 1


# --- wiring: the router's config and the subject of a link -------------------------------------------


def test_router_config_reads_and_checks_access_control() -> None:
    from pyzenoh.router.config import RouterConfig, config_from_dict

    assert RouterConfig().access_control == AccessControlConfig()
    tree = acl([GOOD_RULE], [GOOD_SUBJECT], [GOOD_POLICY])
    assert config_from_dict({"access_control": tree}).access_control.enabled
    bad = acl([GOOD_RULE], [GOOD_SUBJECT], [{"rules": ["x"], "subjects": ["s"]}])
    with pytest.raises(UsageError, match="access_control: Rule 'x' in policy #0 does not exist"):
        config_from_dict({"access_control": bad})


def test_the_daemon_builds_each_links_subject() -> None:
    from types import SimpleNamespace

    from pyzenoh.router.config import RouterConfig
    from pyzenoh.router.daemon import RouterDaemon
    from pyzenoh.transport.link import Established

    ev = Established(Z1, WhatAmI.CLIENT, 10_000, 65_535, 0, True, 0, 0, 0, username="alice")
    link: Any = SimpleNamespace(local_address=("127.0.0.1", 7447), protocol="tls", cert_common_name="carol")
    off = RouterDaemon(RouterConfig(listen=()))
    assert off.access_control is None and off._subject(link, ev) is None
    on = RouterDaemon(
        RouterConfig(listen=(), access_control=parse_access_control(acl([GOOD_RULE], [GOOD_SUBJECT], [GOOD_POLICY])))
    )
    assert on.access_control is not None and on.core.access_control is on.access_control
    assert on._subject(link, ev) == FaceSubject(Z1, ("lo",), "tls", "carol", "alice")
    assert on.stats.access_control_denied is on.access_control.denied_by_rule
