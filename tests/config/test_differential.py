"""pyzenoh's configuration schema against eclipse-zenoh 1.10.2's own (the oracle).

``zenoh.Config.from_json5`` (and ``insert_json5``) refuse unknown keys and bad values at
any depth. For every tree here: when zenoh refuses, pyzenoh must refuse; when pyzenoh
refuses what zenoh takes, every problem it names must carry a documented
:data:`~pyzenoh.config.nodes.STRICTER` tag (numbers zenoh would cast, lists for objects,
keys zenoh drops silently). Trees: zenoh's default tree and a tree setting every
documented key, each mutated at every depth (misspelt keys, every JSON type, values past
the bounds of Rust's integer types, strings of every syntax), random trees built from the
schema, strings of each syntax, and ``insert_json5`` on every key.

Locally half of the default tree's mutations run and an eighth of the documented tree's;
under CI=true every one of the default tree's and half of the documented tree's.
"""

from __future__ import annotations

import json
import logging
import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyzenoh.config import SCHEMA, ZENOH_SCHEMA, check_config, insert_problems, problems
from pyzenoh.config.nodes import (
    AnyV,
    BoolV,
    ChoiceV,
    EnumV,
    FloatV,
    IntV,
    ListV,
    ModeV,
    Node,
    ObjV,
    StrV,
    TargetV,
    TextV,
)
from pyzenoh.router.config import config_from_dict
from pyzenoh.session.config import Config
from tests.config.trees import (
    VALUES,
    documented_tree,
    mutations,
    zenoh_accepts,
    zenoh_default_tree,
    zenoh_error,
    zenoh_inserts,
)
from tests.hyp import IN_CI, examples

#: Mutations checked of the default (3 kB) and the documented (7 kB) tree: one in this
#: many. Each one costs zenoh a parse of the whole tree (1.3 ms; the documented tree's
#: 30,370 mutations took 70 s of the suite's CI time when all ran); every stride still
#: draws all 72 kinds of mutation, each path many times over (CI=true checks more than a local run).
STRIDE = {"default": 2 if IN_CI else 4, "documented": 3 if IN_CI else 8}


def _compare(tree: Any, where: str, what: str, report: dict[str, list[str]]) -> None:
    found = problems(tree, own=False)
    accepted = zenoh_accepts(tree)
    if not accepted and not found:
        report["missed"].append(f"{where} {what}: zenoh refuses ({zenoh_error(tree)[:100]}), pyzenoh accepts")
    elif accepted and found:
        report["stricter"].append(where)
        untagged = [p.text for p in found if not p.stricter]
        if untagged:
            report["untagged"].append(f"{where} {what}: zenoh accepts, pyzenoh refuses: {untagged}")


def _check(report: dict[str, list[str]], total: int, least: int = 1000) -> None:
    assert total > least
    assert not report["missed"], f"{len(report['missed'])} of {total}:\n" + "\n".join(report["missed"][:20])
    assert not report["untagged"], f"{len(report['untagged'])} of {total}:\n" + "\n".join(report["untagged"][:20])


# --- the default tree and the documented tree ----------------------------------------------


def test_the_default_tree_validates_in_both_roles(caplog: pytest.LogCaptureFixture) -> None:
    tree = zenoh_default_tree()
    # every key, listen/endpoints as a per-mode dict {router: [...], peer: [...]}
    assert isinstance(tree["listen"]["endpoints"], dict) and "access_control" in tree
    assert problems(tree, own=False) == [] and problems(tree) == []
    with caplog.at_level(logging.WARNING):
        assert check_config(tree, "router") == []
        assert check_config(tree, "session", "peer") == []
        assert check_config(tree, "session", "client") == []
    assert not caplog.records  # nothing set differs from zenohd's defaults
    router = config_from_dict({**tree, "mode": "router"})
    assert router.listen == ("tcp/[::]:7447",)  # the router's entry of the per-mode dict
    session = Config(tree)
    assert session.check_open() == [] and session.connect == []


def test_the_documented_tree_is_zenohs_and_validates() -> None:
    tree = documented_tree()
    assert zenoh_accepts(tree), zenoh_error(tree)
    assert problems(tree) == []
    # every key of the schema is set somewhere in it
    missing = [p for p in _schema_paths(ZENOH_SCHEMA) if not _present(tree, p)]
    assert not missing, missing


def _schema_paths(node: ObjV, prefix: str = "") -> list[str]:
    out = []
    for key, child in node.fields.items():
        path = f"{prefix}{key}"
        out.append(path)
        if isinstance(child, ObjV):
            out.extend(_schema_paths(child, path + "/"))
    return out


def _present(tree: dict[str, Any], path: str) -> bool:
    node: Any = tree
    for part in path.split("/"):
        if not isinstance(node, dict):
            return False
        if part not in node:
            # *_base64 and file forms of one TLS item cannot both be set
            return part.endswith("_base64") or f"{part}_base64" in node
        node = node[part]
    return True


#: The sweep is cut into this many shards of interleaved mutations, so that parallel
#: workers share it (each shard still draws every kind of mutation).
SHARDS = 4


@pytest.mark.slow
@pytest.mark.parametrize("shard", range(SHARDS))
@pytest.mark.parametrize("name", ["default", "documented"])
def test_mutations_at_every_depth_agree_with_zenoh(name: str, shard: int) -> None:
    tree = zenoh_default_tree() if name == "default" else documented_tree()
    stride = STRIDE[name]
    report: dict[str, list[str]] = {"missed": [], "untagged": [], "stricter": []}
    total = 0
    for i, (where, what, mutated) in enumerate(mutations(tree)):
        if i % stride or (i // stride) % SHARDS != shard:
            continue
        total += 1
        _compare(mutated, where, what, report)
    _check(report, total, 1000 // SHARDS)
    if name == "documented":
        assert report["stricter"]  # the documented strictness does show up


# --- random trees built from the schema ----------------------------------------------------

_SCALARS = [v for v in VALUES if not isinstance(v, list | dict)]
_STRINGS = [v for v in _SCALARS if isinstance(v, str)] + [
    "38a4829bce9166ee",
    "demo/**",
    "a/$*/b",
    "tcp/127.0.0.1:7447",
    "tls/localhost:7447#iface=lo",
    "udp/[::1]:0?rel=0",
    "224.0.0.224:7446",
    "[ff02::1]:7446",
    "1000..",
    "..5",
]


def _value(node: Node, rnd: random.Random, depth: int) -> Any:
    """A value for ``node``: mostly fitting, sometimes not (a random one of VALUES)."""
    if rnd.random() < 0.015:
        return rnd.choice(VALUES)
    if node.null and rnd.random() < 0.1:
        return None
    if isinstance(node, ObjV):
        keys = [k for k in node.fields if k in node.required or rnd.random() < 0.3]
        out = {k: _value(node.fields[k], rnd, depth + 1) for k in keys}
        if rnd.random() < 0.01:
            out[rnd.choice(list(node.fields) or ["x"]) + "_"] = 1
        return out
    if isinstance(node, ModeV):
        if rnd.random() < 0.3:
            return {m: _value(node.inner, rnd, depth + 1) for m in ("router", "peer", "client") if rnd.random() < 0.6}
        return _value(node.inner, rnd, depth)
    if isinstance(node, ListV):
        return [_value(node.item, rnd, depth + 1) for _ in range(rnd.randint(0, 2 if depth < 6 else 0))]
    if isinstance(node, ChoiceV):
        options = [n for n in (node.text, node.number, node.obj, node.array) if n is not None]
        return _value(rnd.choice(options), rnd, depth)
    if isinstance(node, EnumV):
        return rnd.choice(node.values)
    if isinstance(node, BoolV):
        return rnd.random() < 0.5
    if isinstance(node, IntV):
        return rnd.choice([node.lo, node.hi, rnd.randint(node.lo, min(node.hi, node.lo + 100))])
    if isinstance(node, FloatV):
        return rnd.choice([0.5, 1, 2.5, 100])
    if isinstance(node, TargetV):
        return rnd.choice(["always", "greater-zid", {"to_peer": "always"}, {"to_router": "greater-zid"}])
    if isinstance(node, TextV):
        fitting = [s for s in _STRINGS if node.why(s) is None]
        return rnd.choice(fitting if fitting and rnd.random() < 0.8 else _STRINGS)
    if isinstance(node, StrV):
        return rnd.choice(_STRINGS)
    if isinstance(node, AnyV):
        return {"k": rnd.choice(_SCALARS)}
    return rnd.choice(_SCALARS)


@pytest.mark.slow
@examples(ci=1200, local=300)
@given(st.randoms(use_true_random=False))
def test_random_trees_from_the_schema_agree_with_zenoh(rnd: random.Random) -> None:
    tree = _value(ZENOH_SCHEMA, rnd, 0)
    report: dict[str, list[str]] = {"missed": [], "untagged": [], "stricter": []}
    _compare(tree, "<random tree>", json.dumps(tree)[:300], report)
    assert not report["missed"], report["missed"]
    assert not report["untagged"], report["untagged"]


# --- strings of each syntax ----------------------------------------------------------------

_SYNTAXES: dict[str, tuple[Any, str, list[str]]] = {
    "endpoint": (
        lambda s: {"connect": {"endpoints": [s]}},
        "tcp/:?#=;a1[]%.x",
        ["tcp/", "tls/", "1.2.3.4:5", "[::1]", "?a=1", "#b=2", ";"],
    ),
    "socket address": (
        lambda s: {"scouting": {"multicast": {"address": s}}},
        "0123456789.:[]%abcdefx ",
        ["224.0.0.224", ":7446", "[ff02::1]", "[fe80::1%2]", "::", "256", "65536", "+1"],
    ),
    "zid": (lambda s: {"id": s}, "0123456789abcdefABCDEFxg ", ["0", "f" * 32]),
    "key expression": (lambda s: {"aggregation": {"subscribers": [s]}}, "ab/*$?#@ ", ["**", "$*", "/", "@"]),
    "namespace": (lambda s: {"namespace": s}, "ab/*$?#@ ", ["**", "$*", "/"]),
    "range": (
        lambda s: {"qos": {"network": [{"messages": ["put"], "overwrite": {}, "payload_size": s}]}},
        "0123456789.-+ x",
        ["..", "18446744073709551615", "18446744073709551616"],
    ),
    "region name": (lambda s: {"region_name": s}, "aé€ ", ["a" * 32, "é" * 16, "🎉"]),
}


@pytest.mark.parametrize("syntax", list(_SYNTAXES))
def test_strings_of_each_syntax_agree_with_zenoh(syntax: str) -> None:
    build, alphabet, pieces = _SYNTAXES[syntax]
    rnd = random.Random(syntax)
    disagree = []
    runs = 3000 if IN_CI else 600
    for _ in range(runs):
        text = "".join(
            rnd.choice(pieces) if rnd.random() < 0.3 else rnd.choice(alphabet) for _ in range(rnd.randint(0, 12))
        )
        tree = build(text)
        if zenoh_accepts(tree) != (not problems(tree)):
            disagree.append((text, zenoh_error(tree)[:80], [p.text for p in problems(tree)]))
    assert not disagree, disagree[:10]


# --- insert_json5 --------------------------------------------------------------------------

_INSERT_VALUES: list[Any] = [
    None,
    True,
    0,
    1,
    -1,
    1.5,
    65536,
    2**64,
    "x",
    "",
    "router",
    "tcp/1.2.3.4:5",
    "1",
    "always",
    "lazy",
    "32bit",
    "allow",
    [],
    ["router"],
    ["x"],
    {},
    {"router": 1},
    {"a": 1},
]


def _insert_keys() -> list[str]:
    keys: set[str] = set()

    def walk(node: Any, path: str) -> None:
        keys.add(path)
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, f"{path}/{k}" if path else k)
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, f"{path}/{i}")

    walk(documented_tree(), "")
    keys |= {k + "x" for k in keys if k} | {k + "/zzz" for k in keys if k}
    return sorted(keys | {"/", "//transport//link/tx/lease/", "plugins/a/b"})


@pytest.mark.slow
def test_insert_json5_refuses_what_zenoh_refuses() -> None:
    keys = _insert_keys()[:: 2 if IN_CI else 3]  # every other key in CI: 14 s when all ran
    missed, unexplained, total = [], [], 0
    for key in keys:
        for value in _INSERT_VALUES:
            total += 1
            text = json.dumps(value)
            theirs = zenoh_inserts(key, text)
            config = Config()
            try:
                config.insert_json5(key, text)
                ours = True
            except ValueError:
                ours = False
                assert config.to_dict() == {}, "a refused insert changed nothing"
            if theirs and not ours:
                # zenoh's insert_json5 skips a few validators that its from_json5 runs
                # (e.g. queue sizes 1..16): pyzenoh refuses what from_json5 refuses.
                found = insert_problems(key, value)
                nested: Any = value
                for part in reversed([p for p in key.split("/") if p]):
                    nested = {part: nested}
                if not all(p.stricter for p in found) and zenoh_accepts(nested):
                    unexplained.append((key, text, [p.text for p in found]))
            elif ours and not theirs:
                missed.append((key, text))
    assert total > 1000
    assert not missed, missed[:20]
    assert not unexplained, unexplained[:20]


def test_the_pyzenoh_section_is_not_zenohs() -> None:
    assert "pyzenoh" in SCHEMA.fields and "pyzenoh" not in ZENOH_SCHEMA.fields
    tree = {"pyzenoh": {"limits": {"send_queue_max_bytes": 1}}}
    assert not zenoh_accepts(tree)
    assert problems(tree) == [] and problems(tree, own=False)
