"""The schema's messages, its documented strictness, and the start-up policy (in process)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

import pyzenoh.config
from pyzenoh.config import STRICTER, check_config, loads, problems, validate
from pyzenoh.errors import UsageError
from pyzenoh.router.config import config_from_dict
from tests.config.trees import documented_tree, zenoh_accepts, zenoh_default_tree

# --- messages name the key -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("tree", "message"),
    [
        ({"acces_control": {"enabled": True}}, "unknown config key 'acces_control' (did you mean 'access_control'?)"),
        (
            {"transport": {"link": {"tls": {"enable_mtsl": True}}}},
            "unknown config key 'transport/link/tls/enable_mtsl' (did you mean 'enable_mtls'?)",
        ),
        (
            {"transport": {"unicast": {"max_sesions": 5}}},
            "unknown config key 'transport/unicast/max_sesions' (did you mean 'max_sessions'?)",
        ),
        (
            {"access_control": {"rules": [{"id": "r", "key_exprs": ["a"], "messages": ["put"], "permision": "allow"}]}},
            "unknown config key 'access_control/rules/0/permision' (did you mean 'permission'?)",
        ),
        (
            {"transport": {"unicast": {"max_sessions": "x"}}},
            'transport/unicast/max_sessions: expected an unsigned integer, got "x"',
        ),
        (
            {"listen": {"endpoints": {"router": ["tcp/1.2.3.4:1"], "routr": []}}},
            "unknown config key 'listen/endpoints/routr' (did you mean 'router'?)",
        ),
        ({"connect": {"endpoints": ["tcp"]}}, 'connect/endpoints/0: "tcp" is not an endpoint'),
        ({"id": "ABC"}, "uppercase hexadecimal is not accepted"),
        (
            {"transport": {"auth": {"usrpwd": {"user": "u"}}}},
            "transport/auth/usrpwd/password: missing (user and password go together)",
        ),
        ({"transport": {"link": {"tx": {"sequence_number_resolution": "64bit"}}}}, "zenoh refuses 64bit"),
        (
            {"transport": {"link": {"tx": {"queue": {"max_bytes": 1}}}}},
            (
                "unknown config key 'transport/link/tx/queue/max_bytes' (pyzenoh's own keys live under pyzenoh/: "
                "'pyzenoh/limits/send_queue_max_bytes')"
            ),
        ),
        (
            {"pyzenoh": {"limits": {"send_queue_max_byte": 1}}},
            "unknown config key 'pyzenoh/limits/send_queue_max_byte' (did you mean 'send_queue_max_bytes'?)",
        ),
        (
            {"pyzenoh": {"limits": {"max_links_per_address": 0}}},
            "pyzenoh/limits/max_links_per_address: expected an integer >= 1, got 0",
        ),
    ],
)
def test_problems_name_the_key(tree: dict[str, Any], message: str) -> None:
    found = validate(tree)
    assert any(message in p for p in found), found
    if not str(tree).startswith("{'pyzenoh'"):
        assert not zenoh_accepts(tree)  # zenoh refuses each of them too


def test_every_problem_is_reported_with_its_path() -> None:
    tree = {"mode": "rooter", "transport": {"link": {"tx": {"lease": "1", "keep_alive": True}}}, "zz": 1}
    found = validate(tree)
    assert len(found) == 4
    with pytest.raises(UsageError, match="mode.*transport/link/tx/lease.*keep_alive.*'zz'"):
        config_from_dict(tree)


def test_duplicate_keys_are_refused_everywhere() -> None:
    with pytest.raises(UsageError, match='Duplicate key "lease"'):
        loads("{transport: {link: {tx: {lease: 1, lease: 2}}}}")
    # zenoh keeps the last one inside metadata; pyzenoh refuses (documented)
    assert zenoh_accepts_text("{metadata: {a: 1, a: 2}}")
    with pytest.raises(UsageError, match='Duplicate key "a"'):
        loads("{metadata: {a: 1, a: 2}}")
    assert "duplicate keys" in (pyzenoh.config.__doc__ or "")


def zenoh_accepts_text(text: str) -> bool:
    import zenoh

    try:
        zenoh.Config.from_json5(text)
    except Exception:  # noqa: BLE001
        return False
    return True


def test_json5_syntax_is_json5() -> None:
    text = """{
      // a comment
      mode: 'client', /* another */ queries_default_timeout: 0x10,
      transport: { link: { tx: { lease: +5000, }, }, },
    }"""
    assert zenoh_accepts_text(text)
    tree = loads(text)
    assert validate(tree) == [] and tree["queries_default_timeout"] == 16


# --- deliberate strictness: each case documented, tagged, and taken by zenoh ----------------

STRICTER_CASES: list[tuple[str, dict[str, Any]]] = [
    ("number", {"transport": {"link": {"tx": {"lease": -1}}}}),
    ("number", {"transport": {"link": {"tx": {"batch_size": 70000}}}}),
    ("number", {"transport": {"link": {"tx": {"lease": 1.5}}}}),
    ("number", {"scouting": {"multicast": {"ttl": 2**40}}}),
    ("number", {"downsampling": [{"messages": ["put"], "rules": [{"key_expr": "a", "freq": float("nan")}]}]}),
    ("number", {"metadata": {"x": float("inf")}}),
    ("list", {"transport": {"link": {"rx": [1]}}}),
    ("list", {"transport": {"unicast": []}}),
    ("lax", {"connect": {"retry": {"period_init_msx": 5}}}),
    ("lax", {"connect": {"endpoints": [{"strategy": "allOf", "locators": [], "locator": []}]}}),
    ("lax", {"scouting": {"gossip": {"autoconnect_strategy": {"peer": {"to_router": "always"}, "pear": 1}}}}),
    ("lax", {"qos": {"publication": [{"key_exprs": ["a"], "config": {"priorty": "data"}}]}}),
    ("lax", {"qos": {"network": [{"messages": ["put"], "overwrite": {"expres": True}}]}}),
    ("lax", {"routing": {"router": {"linkstate": {"transport_weights": [{"dst_zid": "1", "weight": 1, "w": 2}]}}}}),
    ("lax", {"stats": {"filters": [{"key": "a", "kye": "b"}]}}),
    ("lax", {"plugins_loading": {"search_dirs": [{"kind": "path", "value": "/x", "vale": "/y"}]}}),
]


@pytest.mark.parametrize(("tag", "tree"), STRICTER_CASES)
def test_deliberate_strictness_is_tagged_and_documented(tag: str, tree: dict[str, Any]) -> None:
    assert zenoh_accepts(tree)
    found = problems(tree)
    assert found and all(p.stricter == tag for p in found), found
    doc = pyzenoh.config.__doc__ or ""
    assert f"``{tag}``" in doc and tag in STRICTER


def test_every_strictness_tag_has_a_case() -> None:
    assert {tag for tag, _ in STRICTER_CASES} == set(STRICTER)


# --- the start-up policy -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("role", "tree", "named"),
    [
        ("router", {"transport": {"auth": {"pubkey": {"key_size": 2048}}}}, "transport/auth/pubkey/key_size"),
        (
            "session",
            {"transport": {"auth": {"pubkey": {"public_key_file": "k.pem"}}}},
            "transport/auth/pubkey/public_key_file",
        ),
        ("router", {"namespace": "ns"}, "namespace"),
        ("session", {"access_control": {"enabled": True}}, "access_control/enabled"),
        ("router", {"listen": {"endpoints": ["serial/127.0.0.1:7447"]}}, "serial/127.0.0.1:7447"),
        ("router", {"connect": {"endpoints": ["vsock/VMADDR_CID_LOCAL:7447"]}}, "vsock/VMADDR_CID_LOCAL:7447"),
        ("session", {"connect": {"endpoints": {"peer": ["vsock/127.0.0.1:7447"]}}}, "vsock/127.0.0.1:7447"),
        (
            "session",
            {"connect": {"endpoints": [{"strategy": "allOf", "locators": ["tcp/1.2.3.4:5"]}]}},
            "endpoint groups",
        ),
        ("router", {"transport": {"link": {"protocols": ["tls"]}}}, "does not allow listen/endpoints"),
        ("router", {"plugins": {"nosuch": {"__required__": True}}}, "plugins/nosuch"),
    ],
)
def test_what_pyzenoh_does_not_implement_stops_start_up(role: str, tree: dict[str, Any], named: str) -> None:
    assert problems(tree) == []  # valid: refused by the policy, not the schema
    with pytest.raises(UsageError, match="refusing to start") as info:
        check_config(tree, role)  # type: ignore[arg-type]
    assert named in str(info.value)


def test_a_router_with_an_unimplemented_security_key_does_not_parse() -> None:
    with pytest.raises(UsageError, match="transport/auth/pubkey/private_key_file"):
        config_from_dict({"transport": {"auth": {"pubkey": {"private_key_file": "k.pem"}}}})


def test_harmless_settings_are_named_in_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    tree = {
        "transport": {
            "unicast": {"max_links": 4, "lowlatency": True},  # max_links: the router's (multilink)
            "link": {"tcp": {"so_sndbuf": 65536}},
            "shared_memory": {"enabled": False},
        },  # what pyzenoh does anyway: no warning
        "scouting": {"gossip": {"multihop": True}},
        "plugins": {"nosuch": {"http_port": 8000}},
        "open": {"return_conditions": {"declares": True}},  # the default: no warning
    }
    with caplog.at_level(logging.WARNING, logger="pyzenoh.config"):
        warned = check_config(tree, "router")
    assert [w.split("=")[0].split(" ")[0] for w in warned] == [
        "transport/unicast/lowlatency",
        "transport/link/tcp/so_sndbuf",
        "scouting/gossip/multihop",
        "plugins/nosuch",
    ]
    records = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(records) == 1
    for name in warned:
        assert name.split("=")[0].split(" ")[0] in records[0].getMessage()


def test_default_values_given_explicitly_warn_nothing(caplog: pytest.LogCaptureFixture) -> None:
    tree = {
        "transport": {"unicast": {"max_links": 1}, "shared_memory": {"mode": "lazy"}},
        "scouting": {"gossip": {"autoconnect_strategy": "always", "target": {"router": ["peer", "router"]}}},
        "timestamping": {"drop_future_timestamp": None},
        "listen": {"retry": {"period_increase_factor": 2.0}},
    }
    with caplog.at_level(logging.WARNING, logger="pyzenoh.config"):
        assert check_config(tree, "router") == []
    assert not caplog.records


def test_documented_keys_that_are_harmless_only_warn(caplog: pytest.LogCaptureFixture) -> None:
    tree = documented_tree()
    for key in ("namespace", "downsampling", "low_pass_filter", "plugins"):
        del tree[key]
    del tree["transport"]["auth"]["pubkey"]
    del tree["transport"]["auth"]["usrpwd"]  # its dictionary_file is read when a router parses it
    tree["connect"]["endpoints"]["peer"] = ["tcp/11.11.11.11:7447"]
    tree["connect"]["endpoints"]["router"] = tree["listen"]["endpoints"]["router"] = ["tls/127.0.0.1:0"]
    tree["mode"] = "router"
    with caplog.at_level(logging.WARNING, logger="pyzenoh.config"):
        warned = check_config(tree, "router")
        warned_session = check_config(tree, "session", "client")
    assert warned and len(caplog.records) == 2
    # a router and a session apply qos/network (pyzenoh.interceptors): neither warns of it
    assert not any(w.startswith("qos/network=") for w in warned + warned_session)


@pytest.mark.parametrize("role", ["router", "session"])
def test_zenohs_default_tree_starts_both_roles(role: str) -> None:
    assert check_config(zenoh_default_tree(), role) == []  # type: ignore[arg-type]


def test_per_mode_endpoints_are_read_for_the_mode() -> None:
    tree = {
        "listen": {"endpoints": {"router": ["tcp/127.0.0.1:7001"], "peer": ["quic/1.2.3.4:5"]}},
        "connect": {"endpoints": {"router": None, "client": ["tcp/127.0.0.1:7002"]}},
    }
    config = config_from_dict(tree)
    assert config.listen == ("tcp/127.0.0.1:7001",) and config.connect == ()
    retry = {
        "period_init_ms": {"router": 500, "peer": 5},
        "period_max_ms": {"client": 3},
        "period_increase_factor": {"router": 1.5},
    }
    config = config_from_dict({"connect": {"retry": retry}, "timestamping": {"enabled": {"peer": True}}})
    assert (
        config.retry_period_init_ms,
        config.retry_period_max_ms,
        config.retry_period_increase_factor,
        config.timestamping,
    ) == (500, 4000, 1.5, True)
