"""The interceptors' pure decisions, with the numbers measured on zenohd 1.10.2
(docs/interceptors.md)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyzenoh.errors import UsageError
from pyzenoh.interceptors import KEEP, Drop, FaceAttrs, Flow, Interceptors, Kind, Message, Rewrite

TCP = FaceAttrs(1, "tcp", ("lo",))


DS = {
    "downsampling": [
        {"id": "ds", "messages": ["put"], "flows": ["egress"], "rules": [{"key_expr": "ds/a/**", "freq": 10.0}]}
    ]
}


def test_downsampling_state_is_shared_by_the_rules_keys() -> None:
    """zenohd: 200 Hz alternating on two keys for 2 s under 10 Hz -> 20 (12 + 8)."""
    p = Interceptors.from_config(DS).for_face(TCP, Flow.EGRESS)
    kept = [
        k
        for i in range(400)
        if (k := "ds/a/x" if i % 2 == 0 else "ds/a/y") and p.apply(Message(Kind.PUT, k), i / 200) is KEEP
    ]
    assert len(kept) == 20
    assert p.drops == 380
    # a message on ds/** is under no rule (zenohd: the rule must include the key)
    assert p.restricts("ds/a/x") and not p.restricts("ds/**") and not p.restricts("other/x")


def test_downsampling_burst_gives_one_and_other_kinds_flows_faces_pass() -> None:
    ic = Interceptors.from_config(DS)
    p = ic.for_face(TCP, Flow.EGRESS)
    assert sum(p.apply(Message(Kind.PUT, "ds/a/z"), 5.0) is KEEP for _ in range(50)) == 1
    assert p.apply(Message(Kind.DELETE, "ds/a/z"), 5.0) is KEEP
    assert ic.for_face(TCP, Flow.INGRESS).empty
    # another transport has its own state
    assert ic.for_face(FaceAttrs(2), Flow.EGRESS).apply(Message(Kind.PUT, "ds/a/z"), 5.0) is KEEP
    assert ic.counts["downsampling/ds"] == 49


LP = {"low_pass_filter": [{"messages": ["put"], "key_exprs": ["lp/**"], "size_limit": 100}]}


@pytest.mark.parametrize(
    ("payload", "attachment", "kept"),
    [(99, 0, True), (100, 0, True), (101, 0, False), (50, 50, True), (50, 51, False), (0, 100, True), (0, 101, False)],
)
def test_low_pass_boundary_as_zenohd(payload: int, attachment: int, kept: bool) -> None:
    p = Interceptors.from_config(LP).for_face(TCP, Flow.EGRESS)
    d = p.apply(Message(Kind.PUT, "lp/k", payload, attachment), 0.0)
    assert (d is KEEP) is kept
    assert p.apply(Message(Kind.DELETE, "lp/k", 1000), 0.0) is KEEP  # kinds not listed pass
    assert p.apply(Message(Kind.PUT, "other", 1000), 0.0) is KEEP


QOS = {
    "qos": {
        "network": [
            {
                "id": "q",
                "messages": ["put"],
                "key_exprs": ["q/**"],
                "payload_size": "10..",
                "overwrite": {"priority": "real_time", "congestion_control": "block", "express": True},
            }
        ]
    }
}


def test_qos_rewrite() -> None:
    p = Interceptors.from_config(QOS).for_face(TCP, Flow.EGRESS)
    assert p.apply(Message(Kind.PUT, "q/k", 10), 0.0) == Rewrite("q", 1, 1, True)
    assert p.apply(Message(Kind.PUT, "q/k", 9), 0.0) is KEEP
    assert p.apply(Message(Kind.PUT, "n/k", 10), 0.0) is KEEP
    assert p.rewrites == 1


def test_subjects() -> None:
    tree = {
        "low_pass_filter": [
            {
                "messages": ["put"],
                "key_exprs": ["**"],
                "size_limit": 0,
                "interfaces": ["eth0"],
                "link_protocols": ["tls"],
            }
        ]
    }
    ic = Interceptors.from_config(tree)
    assert ic.for_face(TCP, Flow.EGRESS).empty
    assert ic.for_face(FaceAttrs(1, "tls", ("lo",)), Flow.EGRESS).empty
    assert not ic.for_face(FaceAttrs(1, "tls", ("eth0",)), Flow.INGRESS).empty


@pytest.mark.parametrize(
    "tree",
    [
        {"downsampling": [{"rules": [{"key_expr": "a/**", "freq": 1}]}]},  # missing messages
        {"downsampling": [{"messages": ["push"], "rules": [{"key_expr": "a/**", "freq": 1}]}]},
        {"downsampling": [{"messages": ["put"], "rules": []}]},
        {"downsampling": [{"messages": ["put"], "rules": [{"key_expr": "a", "freq": 1}], "flows": []}]},
        {"downsampling": [{"id": "x", "messages": ["put"], "rules": [{"key_expr": "a", "freq": 1}]}] * 2},
        {"low_pass_filter": [{"messages": ["put"], "key_exprs": ["a/**"]}]},
        {"low_pass_filter": [{"messages": ["put"], "key_exprs": [], "size_limit": 1}]},
        {"qos": {"network": [{"messages": ["reply"], "overwrite": {}}]}},
        {"qos": {"network": [{"messages": ["put"], "overwrite": {"priority": "control"}}]}},
        {"qos": {"network": [{"messages": ["put"], "overwrite": {}, "payload_size": "x"}]}},
        {"qos": {"network": [{"messages": ["put"], "overwrite": {}, "bogus": 1}]}},
    ],
)
def test_config_refused_as_zenohd_refuses_it(tree: dict[str, object]) -> None:
    with pytest.raises(UsageError):
        Interceptors.from_config(tree)


@given(
    st.lists(st.floats(0, 100, allow_nan=False).map(lambda x: round(x, 3)), min_size=1, max_size=200).map(sorted),
    st.sampled_from([1.0, 5.0, 10.0, 50.0]),
)
def test_downsampling_never_exceeds_its_rate(times: list[float], freq: float) -> None:
    tree = {"downsampling": [{"messages": ["put"], "rules": [{"key_expr": "k/**", "freq": freq}]}]}
    p = Interceptors.from_config(tree).for_face(TCP, Flow.EGRESS)
    passed = [t for t in times if p.apply(Message(Kind.PUT, "k/a"), t) is KEEP]
    assert passed[0] == times[0]
    assert all(b - a >= 1 / freq for a, b in itertools.pairwise(passed))
    assert len(passed) + p.drops == len(times)


@given(st.integers(0, 300), st.integers(0, 300), st.integers(0, 400))
def test_low_pass_is_payload_plus_attachment_at_most_the_limit(pl: int, att: int, limit: int) -> None:
    tree = {"low_pass_filter": [{"messages": ["put", "reply"], "key_exprs": ["**"], "size_limit": limit}]}
    p = Interceptors.from_config(tree).for_face(TCP, Flow.INGRESS)
    d = p.apply(Message(Kind.REPLY, "a/b", pl, att), 0.0)
    assert (d is KEEP) == (pl + att <= limit)
    assert isinstance(d, Drop) or d is KEEP
