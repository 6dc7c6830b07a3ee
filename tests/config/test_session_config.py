"""``pyzenoh.session.Config`` is as strict as zenoh-python's ``zenoh.Config``, at the same
points (from_json5, from_file, insert_json5), and ``open()`` runs the start-up gate."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pytest
import zenoh

from pyzenoh.errors import UsageError
from pyzenoh.session import aio, api
from pyzenoh.session.config import DEFAULT_SEND_QUEUE_MAX_BYTES, Config, to_config
from pyzenoh.session.scouting import scout
from tests.config.trees import zenoh_default_tree, zenoh_inserts
from tests.fixtures.procs import running_zenohd

BAD_TEXTS = [
    ("{acces_control: {}}", "unknown config key 'acces_control' (did you mean 'access_control'?)"),
    ("{transport: {link: {tx: {lease: 'x'}}}}", 'transport/link/tx/lease: expected an unsigned integer, got "x"'),
    ("{connect: {endpoints: {router: [], pear: []}}}", "connect/endpoints/pear"),
    ("{transport: {link: {tx: {queue: {max_bytes: 5}}}}}", "pyzenoh/limits/send_queue_max_bytes"),
    ("{mode: 'client', mode: 'peer'}", 'Duplicate key "mode"'),
    ("[1]", "a config must be a JSON5 object"),
    ("{mode: ", "invalid JSON5"),
]


@pytest.mark.parametrize(("text", "message"), BAD_TEXTS)
def test_from_json5_refuses_as_zenoh_does(text: str, message: str) -> None:
    with pytest.raises(UsageError) as info:
        Config.from_json5(text)
    assert message in str(info.value)
    if not text.startswith("["):  # zenoh's serde takes a struct from a list (documented)
        with pytest.raises(Exception):  # noqa: B017 - zenoh raises ZError
            zenoh.Config.from_json5(text)


def test_from_file_and_from_env_name_the_file_and_the_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "session.json5"
    path.write_text("{ mode: 'client', scouting: { multicast: { enabeld: false } } }")
    with pytest.raises(UsageError, match=f"{path}.*scouting/multicast/enabeld.*did you mean 'enabled'"):
        Config.from_file(path)
    monkeypatch.setenv("ZENOH_CONFIG", str(path))
    with pytest.raises(UsageError, match="scouting/multicast/enabeld"):
        Config.from_env()
    with pytest.raises(UsageError, match="cannot read config file"):
        Config.from_file(tmp_path / "missing.json5")


def test_dicts_and_text_given_to_open_are_checked() -> None:
    with pytest.raises(UsageError, match="unknown config key 'conect'"):
        Config({"conect": {}})
    with pytest.raises(UsageError, match="unknown config key 'conect'"):
        to_config({"conect": {}})
    with pytest.raises(UsageError, match="mode: expected one of"):
        to_config("{mode: 'client '}")
    with pytest.raises(UsageError, match="unknown config key 'conect'"):
        api.open({"mode": "client", "conect": {"endpoints": ["tcp/127.0.0.1:1"]}})


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("transport/link/tx/leas", "1"),
        ("transport/link/tx/lease", '"x"'),
        ("transport/link/tx", "{leas: 5}"),
        ("listen/endpoints/router", '["tcp/127.0.0.1:1"]'),  # not into mode dicts
        ("connect/endpoints/0", '"tcp/127.0.0.1:1"'),  # nor lists
        ("metadata/name", '"x"'),  # nor metadata
        ("connect/retry/period_init_ms", "5"),  # nor into connect/retry (only as a whole)
        ("transport/auth/usrpwd", '{user: "u"}'),
        ("id", '"ABC"'),
        ("", "{}"),
    ],
)
def test_insert_json5_refuses_as_zenoh_does_and_changes_nothing(key: str, value: str) -> None:
    assert not zenoh_inserts(key, value)
    config = Config.from_json5("{mode: 'client'}")
    with pytest.raises(UsageError):
        config.insert_json5(key, value)
    assert config.to_dict() == {"mode": "client"}


def test_insert_json5_takes_what_zenoh_takes() -> None:
    config, theirs = Config(), zenoh.Config()
    for key, value in [
        ("mode", '"client"'),
        ("connect/endpoints", '{client: ["tcp/127.0.0.1:7447"]}'),
        ("transport/auth/usrpwd/user", '"u"'),  # user then password, one at a time
        ("transport/auth/usrpwd/password", '"p"'),
        ("/transport//link/tx/lease/", "5000"),
        ("connect/retry", "{period_init_ms: 5}"),
        ("plugins/rest/http_port", "8000"),
        ("metadata", "{name: 'n'}"),
        ("pyzenoh/limits/send_queue_max_bytes", "65536"),
    ]:
        if not key.startswith("pyzenoh"):
            theirs.insert_json5(key, value)
        config.insert_json5(key, value)
    assert config.connect == ["tcp/127.0.0.1:7447"] and config.lease_ms == 5000
    assert config.get_json("transport/auth/usrpwd") == json.dumps({"user": "u", "password": "p"})
    assert config.max_queue_bytes == 65536 and Config().max_queue_bytes == DEFAULT_SEND_QUEUE_MAX_BYTES
    with pytest.raises(UsageError, match="unknown config key"):
        config.get_json("transport/link/tx/leas")


def test_set_is_checked_like_insert_json5() -> None:
    config = Config()
    config.set("transport/link/tx/lease", 3000)
    with pytest.raises(UsageError, match="transport/link/tx/lease: expected an unsigned integer"):
        config.set("transport/link/tx/lease", -1)
    with pytest.raises(UsageError, match="unknown config key 'transport/link/tx/queue/max_bytes'"):
        config.set("transport/link/tx/queue/max_bytes", 5)
    assert config.lease_ms == 3000


def test_zenohs_default_tree_opens_cleanly() -> None:
    config = Config(zenoh_default_tree())
    assert config.mode == "peer" and config.check_open() == []


@pytest.mark.parametrize(
    ("tree", "named"),
    [
        ({"transport": {"auth": {"pubkey": {"public_key_pem": "k"}}}}, "transport/auth/pubkey/public_key_pem"),
        ({"access_control": {"enabled": True}}, "access_control/enabled"),
        ({"connect": {"endpoints": ["serial/127.0.0.1:7447"]}}, "serial/127.0.0.1:7447"),
    ],
)
def test_open_refuses_what_a_session_does_not_implement(tree: dict[str, Any], named: str) -> None:
    tree = {"mode": "client", "connect": {"endpoints": ["tcp/127.0.0.1:1"]}, **tree}
    Config(tree)  # valid: it is open() that refuses
    with pytest.raises(UsageError, match="refusing to start") as info:
        api.open(tree)
    assert named in str(info.value)
    with pytest.raises(UsageError, match="refusing to start"):
        asyncio.run(aio.open(tree))


def test_scouting_takes_checked_configs_only() -> None:
    with pytest.raises(UsageError, match="scouting/multicast/adress"):
        scout(config={"scouting": {"multicast": {"adress": "224.0.0.224:7446"}}})


@pytest.mark.interop
def test_open_warns_once_about_ignored_settings(caplog: pytest.LogCaptureFixture) -> None:
    with running_zenohd() as proc:
        tree = {
            "mode": "client",
            "connect": {"endpoints": [proc.endpoint]},
            "scouting": {"multicast": {"enabled": False}},
            "transport": {"link": {"tcp": {"so_rcvbuf": 1 << 20}}},
            "timestamping": {"enabled": True},
        }
        with caplog.at_level(logging.WARNING, logger="pyzenoh.config"), api.open(tree) as session:
            session.put("demo/config", b"x")
    records = [r.getMessage() for r in caplog.records if r.name.startswith("pyzenoh.config")]
    assert len(records) == 1, records
    for name in ("transport/link/tcp/so_rcvbuf", "timestamping/enabled"):
        assert name in records[0]
