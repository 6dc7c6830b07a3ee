"""zenohd's command line as a config tree (pyzenoh.router.cli), the config path edits it
and admin-space writes share (pyzenoh.config.paths), and the storage manager's section."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from pyzenoh.cli import build_parser
from pyzenoh.config.paths import insert_at, remove_at
from pyzenoh.errors import UsageError
from pyzenoh.plugins.storage.config import parse_manager_config
from pyzenoh.router.cli import config_from_args, tree_from_args


def tree(*argv: str) -> dict[str, Any]:
    return tree_from_args(build_parser().parse_args(["router", *argv]))


def test_connect_and_listen_replace_the_files_endpoints(tmp_path: Path) -> None:
    conf = tmp_path / "c.json5"
    conf.write_text('{connect: {endpoints: ["tcp/10.0.0.1:7447"]}, listen: {endpoints: ["tcp/[::]:7447"]}}')
    t = tree("-c", str(conf), "-e", "tcp/127.0.0.1:1", "-e", "tcp/127.0.0.1:2", "-l", "tcp/127.0.0.1:3")
    assert t["connect"]["endpoints"] == ["tcp/127.0.0.1:1", "tcp/127.0.0.1:2"]
    assert t["listen"]["endpoints"] == ["tcp/127.0.0.1:3"]


def test_a_yaml_config_file(tmp_path: Path) -> None:
    pytest.importorskip("yaml")
    conf = tmp_path / "c.yaml"
    conf.write_text(
        "mode: router\nconnect:\n  endpoints: [tcp/10.0.0.1:7447]\nplugins:\n  rest:\n    http_port: 8000\n"
    )
    assert tree("-c", str(conf), "--rest-http-port", "none")["plugins"] == {"rest": {"http_port": 8000}}
    assert tree("-c", str(conf), "-e", "tcp/127.0.0.1:1")["connect"] == {"endpoints": ["tcp/127.0.0.1:1"]}


def test_zenohd_flags_become_config_keys() -> None:
    t = tree(
        "-i",
        "a1b2",
        "--no-timestamp",
        "--no-multicast-scouting",
        "--rest-http-port",
        "8000",
        "--adminspace-permissions",
        "rw",
        "-P",
        "storage_manager",
        "--plugin-search-dir",
        "/x",
    )
    assert t["id"] == "a1b2"
    assert t["timestamping"] == {"enabled": False}
    assert t["scouting"] == {"multicast": {"enabled": False}}
    assert t["plugins"] == {
        "rest": {"http_port": "8000", "__required__": True},
        "storage_manager": {"__required__": True},
    }
    assert t["adminspace"] == {"permissions": {"read": True, "write": True}}
    assert "plugins" not in tree("--rest-http-port", "none")
    config = config_from_args(build_parser().parse_args(["router", "--adminspace-permissions", "w"]))
    assert config.adminspace_write and config.adminspace and not config.adminspace_read  # reads: no answer


def test_cfg_pairs_apply_last_and_an_empty_key_is_the_whole_config(tmp_path: Path) -> None:
    conf = tmp_path / "c.json5"
    conf.write_text('{metadata: {name: "file"}}')
    t = tree(
        "-c",
        str(conf),
        "--cfg",
        ":{metadata:{name:'inline'}}",
        "--no-timestamp",
        "--cfg",
        "/timestamping/enabled:true",
        "--cfg",
        'plugins/storage_manager/storages/demo:{key_expr:"demo/example/**",volume:"memory"}',
    )
    assert t["metadata"] == {"name": "inline"}  # the inline whole config wins over -c
    assert t["timestamping"] == {"enabled": True}  # --cfg after --no-timestamp
    assert t["plugins"]["storage_manager"]["storages"]["demo"]["volume"] == "memory"


def test_a_failing_cfg_pair_is_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="pyzenoh.router.cli"):
        t = tree("--cfg", "transport/unicast/max_sesions:1", "--cfg", "id:{oops")
    assert t == {}
    assert len(caplog.records) == 2 and "max_sesions" in caplog.records[0].getMessage()


def test_bad_flags_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="adminspace-permissions=x"):
        tree("--adminspace-permissions", "x")
    with pytest.raises(UsageError, match="KEY:VALUE"):
        tree("--cfg", "novalue")


def test_paths_insert_and_remove() -> None:
    base = {"a": {"b": [1, 2]}}
    assert insert_at(base, "a/c/d", 3) == {"a": {"b": [1, 2], "c": {"d": 3}}}
    assert insert_at(base, "/a/b/2", 3) == {"a": {"b": [1, 2, 3]}}
    assert insert_at(base, "a/b/0", 9) == {"a": {"b": [9, 2]}}
    assert remove_at(base, "a/b/0") == {"a": {"b": [2]}}
    assert remove_at(base, "a") == {}
    assert base == {"a": {"b": [1, 2]}}  # never changed in place
    with pytest.raises(UsageError):
        remove_at(base, "a/x")
    with pytest.raises(UsageError):
        insert_at(base, "a/b/5", 1)


def test_storage_manager_section() -> None:
    config = parse_manager_config(
        {
            "volumes": {"fs": {}, "disk": {"backend": "rocksdb"}},
            "storages": {
                "demo": {"key_expr": "demo/example/**", "volume": "memory", "complete": "true"},
                "files": {
                    "key_expr": "demo/fs/**",
                    "strip_prefix": "demo/fs",
                    "volume": {"id": "fs", "dir": "x"},
                    "garbage_collection": {"period": 5, "lifespan": 60},
                },
            },
        }
    )
    assert set(config.volumes) == {"memory", "fs", "disk"} and config.volumes["disk"].backend == "rocksdb"
    demo, files = config.storages["demo"], config.storages["files"]
    assert demo.complete and demo.status_json() == {"key_expr": "demo/example/**", "volume": "memory"}
    assert files.status_json() == {
        "key_expr": "demo/fs/**",
        "strip_prefix": "demo/fs",
        "volume": {"dir": "x", "id": "fs"},
    }
    assert (files.gc_period_s, files.gc_lifespan_s) == (5, 60)


@pytest.mark.parametrize(
    ("storage", "named"),
    [
        ({"volume": "memory"}, "key_expr"),
        ({"key_expr": "a//b", "volume": "memory"}, "key_expr"),
        ({"key_expr": "a/**", "volume": "memory", "strip_prefix": "b"}, "strip_prefix"),
        ({"key_expr": "a/**", "volume": "memory", "strip_prefix": "a/*"}, "strip_prefix"),
        ({"key_expr": "a/**"}, "volume"),
        ({"key_expr": "a/**", "volume": {"dir": "x"}}, "volume"),
        ({"key_expr": "a/**", "volume": "memory", "complete": "yes"}, "complete"),
        ({"key_expr": "a/**", "volume": "memory", "garbage_collection": {"period": -1}}, "garbage_collection/period"),
        ({"key_expr": "a/**", "volume": "memory", "replication": {}}, "replication"),
        ({"key_expr": "a/**", "volume": "memory", "keyexpr": "typo"}, "keyexpr"),
    ],
)
def test_a_bad_storage_names_its_key(storage: dict[str, Any], named: str) -> None:
    with pytest.raises(UsageError, match=f"storages/s/{named}"):
        parse_manager_config({"storages": {"s": storage}})


def test_admin_space_writes_edit_the_tree_as_zenoh_does() -> None:
    from pyzenoh.router.admin.writes import config_path, config_write

    root = "@/abc/router"
    assert (
        config_path(root, f"{root}/config/plugins/storage_manager/storages/s") == "plugins/storage_manager/storages/s"
    )
    assert config_path(root, f"{root}/config/") is None and config_path(root, "@/other/router/config/x") is None
    tree = config_write({}, "plugins/storage_manager/storages/s", b'{key_expr: "a/**", volume: "memory"}')
    assert tree == {"plugins": {"storage_manager": {"storages": {"s": {"key_expr": "a/**", "volume": "memory"}}}}}
    assert config_write(tree, "plugins/storage_manager/storages/s", None) == {
        "plugins": {"storage_manager": {"storages": {}}}
    }
    tree = config_write({"connect": {"endpoints": ["tcp/127.0.0.1:1"]}}, "connect/endpoints/1", b'"tcp/127.0.0.1:2"')
    assert tree["connect"]["endpoints"] == ["tcp/127.0.0.1:1", "tcp/127.0.0.1:2"]  # an array item
    for path, payload in [("transport/unicast/max_sesions", b"5"), ("plugins/x", b"{oops"), ("plugins/x", b"\xff")]:
        with pytest.raises(UsageError):
            config_write({}, path, payload)
    with pytest.raises(UsageError):
        config_write({}, "plugins/missing", None)
