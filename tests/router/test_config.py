"""The router's JSON5 configuration: zenohd key names, pyzenoh limits, bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from pyzenoh.errors import UsageError
from pyzenoh.router.config import (
    DEFAULT_LISTEN,
    RouterConfig,
    config_from_dict,
    load_config,
)


def test_defaults_are_zenohd_defaults() -> None:
    c = RouterConfig()
    assert c.listen == (DEFAULT_LISTEN,) == ("tcp/[::]:7447",)
    assert (c.lease_ms, c.keep_alive, c.queries_default_timeout_ms, c.timestamping) == (10_000, 4, 10_000, True)


def test_json5_file_with_zenohd_keys(tmp_path: Path) -> None:
    path = tmp_path / "router.json5"
    path.write_text(
        """{
          // comments and trailing commas are JSON5
          mode: "router", id: "a1a2a3",
          listen: { endpoints: ["tcp/127.0.0.1:7447", "tcp/[::1]:7448"] },
          connect: { endpoints: ["tcp/127.0.0.1:7449"] },
          queries_default_timeout: 2500,
          timestamping: { enabled: { router: false } },
          transport: { link: { tx: { lease: 3000, batch_size: 8192 } },
                       unicast: { qos: { enabled: false } } },
          pyzenoh: { limits: { max_declarations_per_face: 7, send_queue_max_bytes: 65536 },
                     record: { dir: "rec", key_filter: "demo/**" },
                     msgq: { socket_file: "/tmp/m.sock" },
                     routing: { enforce_budget: true } },
        }"""
    )
    c = load_config(path)
    assert c.id == "a1a2a3" and c.listen == ("tcp/127.0.0.1:7447", "tcp/[::1]:7448")
    assert c.connect == ("tcp/127.0.0.1:7449",)
    assert (c.queries_default_timeout_ms, c.timestamping, c.qos) == (2500, False, False)
    assert (c.lease_ms, c.batch_size, c.send_queue_max_bytes) == (3000, 8192, 65536)
    assert c.max_declarations_per_face == 7 and c.enforce_budget and c.gossip
    assert (c.record.dir, c.record.key_filter) == ("rec", "demo/**")
    assert c.msgq.enabled and c.msgq.socket_file == "/tmp/m.sock"


@pytest.mark.parametrize(
    "tree",
    [
        {"mode": "routre"},  # not a mode (a peer or client mode only warns)
        {"transport": {"link": {"tx": {"lease": -1}}}},
        {"transport": {"link": {"tx": {"batch_size": 70000}}}},
        {"listen": {"endpoints": [7447]}},
        {"id": 12},
    ],
)
def test_bad_config_is_a_usage_error(tree: dict[str, object]) -> None:
    with pytest.raises(UsageError):
        config_from_dict(tree)


def test_unreadable_or_invalid_file(tmp_path: Path) -> None:
    with pytest.raises(UsageError):
        load_config(tmp_path / "missing.json5")
    bad = tmp_path / "bad.json5"
    bad.write_text("{ mode: ")
    with pytest.raises(UsageError):
        load_config(bad)
