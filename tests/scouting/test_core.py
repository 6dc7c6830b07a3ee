"""The sans-IO scouting core: settings, interface choice, HELLO locators, decisions."""

from __future__ import annotations

import ipaddress

import pytest

from pyzenoh.codec import WhatAmI, ZenohId
from pyzenoh.codec.scouting import (
    Hello,
    Scout,
    WhatAmIMatcher,
    decode_scouting_message,
    encode_scouting_message,
)
from pyzenoh.errors import UsageError
from pyzenoh.router.scouting import ScoutingSettings, scouting_settings
from pyzenoh.scouting.core import (
    ADDRESS_ENV,
    Interface,
    ResponderCore,
    ScouterCore,
    best_match,
    hello_locators,
    multicast_interfaces,
    parse_scouting,
)

ip = ipaddress.ip_address
R, P, C = WhatAmIMatcher.ROUTER, WhatAmIMatcher.PEER, WhatAmIMatcher.CLIENT

# The host the 1.10.2 measurements were made on (zenoh-mesh.md 3 and this module's tests).
LO = Interface("lo", (ip("127.0.0.1"), ip("::1")), multicast=False, loopback=True)
IFB = Interface("ifb0", (), up=False, running=False, multicast=False)
ETH = Interface("eth0", (ip("192.0.2.2"), ip("fd00::2"), ip("fe80::fc:ff:fe00:1")))
HOST = [LO, IFB, ETH]


# --- settings ------------------------------------------------------------------------------


def test_router_defaults_are_zenohds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ADDRESS_ENV)  # the suite's own group (tests/conftest.py)
    s = scouting_settings({})
    assert s == ScoutingSettings()
    assert (s.enabled, s.address, s.interface, s.ttl, s.listen) == (True, "224.0.0.224:7446", "auto", 1, True)
    assert s.autoconnect == WhatAmIMatcher.empty() and (s.timeout_ms, s.delay_ms) == (3000, 500)
    assert parse_scouting({}, "client").autoconnect == R | P | C


def test_the_default_group_can_be_moved_by_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ADDRESS_ENV, "224.0.0.224:17446")
    assert parse_scouting({}, "peer").address == "224.0.0.224:17446"
    assert parse_scouting({"scouting": {"multicast": {"address": "224.0.0.225:7446"}}}, "peer").address == (
        "224.0.0.225:7446"
    )


def test_settings_read_zenohs_keys_and_mode_dependent_values() -> None:
    tree = {
        "scouting": {
            "timeout": 1500,
            "delay": 0,
            "multicast": {
                "enabled": False,
                "address": "224.1.2.3:17000",
                "interface": "lo,eth0",
                "ttl": 4,
                "listen": {"router": False, "peer": True},
                "autoconnect": {"router": ["peer"], "client": "router|peer"},
            },
        },
        "pyzenoh": {"scouting": {"unicast": "127.0.0.1:7446"}},
    }
    r = scouting_settings(tree)
    assert (r.enabled, r.address, r.interface, r.ttl, r.listen) == (False, "224.1.2.3:17000", "lo,eth0", 4, False)
    assert (r.autoconnect, r.timeout_ms, r.delay_ms, r.unicast) == (P, 1500, 0, "127.0.0.1:7446")
    assert r.group == (ip("224.1.2.3"), 17000)
    c = parse_scouting(tree, "client")
    assert c.listen and c.autoconnect == R | P


@pytest.mark.parametrize(
    "tree",
    [
        {"scouting": {"multicast": {"enabled": "yes"}}},
        {"scouting": {"multicast": {"address": "224.0.0.224"}}},
        {"scouting": {"multicast": {"address": "10.0.0.1:7446"}}},  # not a group
        {"scouting": {"multicast": {"address": "224.0.0.224:70000"}}},
        {"scouting": {"multicast": {"ttl": 256}}},
        {"scouting": {"multicast": {"ttl": -1}}},
        {"scouting": {"multicast": {"interface": ""}}},
        {"scouting": {"multicast": {"listen": {"routers": True}}}},
        {"scouting": {"multicast": {"autoconnect": ["router", "nobody"]}}},
        {"scouting": {"timeout": "3s"}},
        {"scouting": []},
        {"pyzenoh": {"scouting": {"unicast": 7446}}},
        {"pyzenoh": {"scouting": {"unicast": "localhost:7446"}}},
    ],
)
def test_bad_settings_raise_usage_error(tree: dict[str, object]) -> None:
    with pytest.raises(UsageError):
        scouting_settings(tree)


# --- interfaces ------------------------------------------------------------------------------


def test_interface_choice() -> None:
    assert multicast_interfaces("auto", HOST) == [ip("192.0.2.2")]  # lo lacks MULTICAST
    assert multicast_interfaces("auto", [LO]) == [ip("0.0.0.0")]
    assert multicast_interfaces("lo", HOST) == [ip("127.0.0.1")]
    assert multicast_interfaces("lo, eth0,lo", HOST) == [ip("127.0.0.1"), ip("192.0.2.2")]
    assert multicast_interfaces("10.1.1.1", HOST) == [ip("10.1.1.1")]
    assert multicast_interfaces("nosuch", HOST) == []


def test_best_match_prefers_the_longest_common_prefix() -> None:
    cands = [ip("127.0.0.1"), ip("192.0.2.2")]
    assert best_match(ip("192.0.2.77"), cands) == 1
    assert best_match(ip("127.0.0.1"), cands) == 0
    assert best_match(ip("10.0.0.1"), cands) == 1  # no octet in common: the last one


# --- HELLO locators: what a real 1.10.2 router answered on HOST --------------------------------

MEASURED = [
    # (listen endpoints, SCOUT source, locators in the HELLO)
    (["tcp/127.0.0.1:17001"], "127.0.0.1", ["tcp/127.0.0.1:17001"]),
    (["tcp/0.0.0.0:17002"], "127.0.0.1", ["tcp/127.0.0.1:17002", "tcp/192.0.2.2:17002"]),
    (["tcp/0.0.0.0:17002"], "192.0.2.2", ["tcp/192.0.2.2:17002"]),
    (
        ["tcp/[::]:17003"],
        "127.0.0.1",
        [
            "tcp/[::1]:17003",
            "tcp/[fd00::2]:17003",
            "tcp/127.0.0.1:17003",
            "tcp/192.0.2.2:17003",
            "tcp/[fe80::fc:ff:fe00:1]:17003",
        ],
    ),
    (["tcp/[::]:17003"], "192.0.2.2", ["tcp/[fd00::2]:17003", "tcp/192.0.2.2:17003", "tcp/[fe80::fc:ff:fe00:1]:17003"]),
    (
        ["tcp/192.0.2.2:17005", "tcp/127.0.0.1:17005"],
        "192.0.2.2",
        ["tcp/192.0.2.2:17005", "tcp/127.0.0.1:17005"],
    ),  # explicit loopback is kept
]


@pytest.mark.parametrize(("endpoints", "source", "expected"), MEASURED)
def test_hello_locators_as_measured(endpoints: list[str], source: str, expected: list[str]) -> None:
    assert hello_locators(endpoints, HOST, ip(source)) == expected


def test_hello_locators_keep_metadata_drop_config_and_private_v4_goes_last() -> None:
    home = Interface("wlan0", (ip("192.168.1.5"), ip("8.8.4.4"), ip("169.254.1.1")))
    assert hello_locators(["tcp/[::]:1?prio=1#iface=x"], [home], ip("192.168.1.9")) == [
        "tcp/8.8.4.4:1?prio=1",
        "tcp/192.168.1.5:1?prio=1",
    ]
    assert hello_locators(["tcp/localhost:7447"], HOST, ip("127.0.0.1")) == ["tcp/localhost:7447"]


# --- responder -------------------------------------------------------------------------------


def test_responder_answers_only_scouts_for_its_kind() -> None:
    core = ResponderCore(ZenohId(0xABCD), WhatAmI.ROUTER)
    eps = ["tcp/127.0.0.1:17001"]
    ans = core.on_datagram(bytes.fromhex("010903"), ip("127.0.0.1"), eps, HOST, 0.0)
    assert ans == bytes.fromhex("220910cdab0113") + b"tcp/127.0.0.1:17001"  # the measured HELLO
    for wire in (bytes.fromhex("010902"), bytes.fromhex("010906"), ans, b"\xff"):
        assert core.on_datagram(wire, ip("127.0.0.1"), eps, HOST, 0.0) is None
    assert (core.stats.answered, core.stats.not_for_us, core.stats.malformed) == (1, 3, 1)
    peer = ResponderCore(ZenohId(7), WhatAmI.PEER)
    assert peer.on_datagram(bytes.fromhex("010902"), ip("127.0.0.1"), [], HOST, 0.0) == bytes.fromhex("02090107")


def test_responder_rate_limit_refills_with_time() -> None:
    core = ResponderCore(ZenohId(1), WhatAmI.ROUTER, max_answers_per_s=5)
    scout = encode_scouting_message(Scout(R))
    answers = [core.on_datagram(scout, ip("127.0.0.1"), [], HOST, 10.0) for _ in range(8)]
    assert sum(a is not None for a in answers) == 5 and core.stats.rate_limited == 3
    assert core.on_datagram(scout, ip("127.0.0.1"), [], HOST, 10.5) is not None  # 2.5 tokens back


# --- scouter ---------------------------------------------------------------------------------


def test_scouter_schedule_is_zenohs() -> None:
    core = ScouterCore(R | P, now=100.0)
    assert core.scout == bytes.fromhex("010903")
    sent = []
    now = 100.0
    while now < 130.0:
        if core.handle_timer(now):
            sent.append(now - 100.0)
        now = core.next_deadline()
    assert sent == [0.0, 1.0, 3.0, 7.0, 15.0, 23.0]
    assert not core.handle_timer(core.next_deadline() - 0.5)


def test_scouter_reports_matching_hellos_only() -> None:
    core = ScouterCore(R, now=0.0)
    router = Hello(WhatAmI.ROUTER, ZenohId(1), ("tcp/127.0.0.1:1",))
    assert core.on_datagram(encode_scouting_message(router)) == router
    assert core.on_datagram(encode_scouting_message(Hello(WhatAmI.PEER, ZenohId(2)))) is None
    assert core.on_datagram(bytes.fromhex("010903")) is None
    assert core.on_datagram(b"\x00garbage") is None
    assert core.ignored == 3
    with pytest.raises(UsageError):
        ScouterCore(WhatAmIMatcher.empty(), now=0.0)
    assert decode_scouting_message(ScouterCore(R | P | C, now=0.0, zid=ZenohId(5)).scout) == Scout(
        R | P | C, ZenohId(5)
    )


_A, _B = ZenohId(1), ZenohId(2)


def test_autoconnect_strategy_as_zenohs_should_autoconnect() -> None:
    # a router's default: no kind, so never
    assert not parse_scouting({}, "router").should_autoconnect(_B, _A, WhatAmI.ROUTER)
    tree = {"scouting": {"multicast": {"autoconnect": {"router": ["router", "peer"]}}}}
    always = parse_scouting(tree, "router")
    assert always.should_autoconnect(_A, _B, WhatAmI.ROUTER) and always.should_autoconnect(_B, _A, WhatAmI.ROUTER)
    assert not always.should_autoconnect(_A, _B, WhatAmI.CLIENT)  # not a listed kind
    assert not always.should_autoconnect(_A, _A, WhatAmI.ROUTER)  # never itself
    for strategy in ("greater-zid", {"to_router": "greater-zid"}, {"router": {"to_router": "greater-zid"}}):
        tree["scouting"]["multicast"]["autoconnect_strategy"] = strategy
        s = parse_scouting(tree, "router")
        assert s.should_autoconnect(_B, _A, WhatAmI.ROUTER) and not s.should_autoconnect(_A, _B, WhatAmI.ROUTER)
    # per target: greater-zid to routers only, peers always
    tree["scouting"]["multicast"]["autoconnect_strategy"] = {"to_router": "greater-zid", "to_peer": "always"}
    s = parse_scouting(tree, "router")
    assert s.should_autoconnect(_A, _B, WhatAmI.PEER) and not s.should_autoconnect(_A, _B, WhatAmI.ROUTER)
    # another mode's strategy does not apply
    tree["scouting"]["multicast"]["autoconnect_strategy"] = {"peer": "greater-zid"}
    assert parse_scouting(tree, "router").should_autoconnect(_A, _B, WhatAmI.ROUTER)


def test_a_bad_autoconnect_strategy_is_refused() -> None:
    tree = {"scouting": {"multicast": {"autoconnect_strategy": "sometimes"}}}
    with pytest.raises(UsageError):
        parse_scouting(tree, "router")
