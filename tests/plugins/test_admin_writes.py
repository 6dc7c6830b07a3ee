"""Admin-space writes on ``@/<zid>/router/config/**`` with real eclipse-zenoh 1.10.2 clients
and the REST plugin: storages added and removed at run time, and writes refused without
``adminspace/permissions/write``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pyzenoh.localnet import free_port, wait_listening
from tests.plugins.conftest import WAIT, eventually, plugin_router, zget

pytestmark = pytest.mark.interop

ZID = "5eed"
STORAGE_CONFIG = f"@/{ZID}/router/config/plugins/storage_manager/storages/live"
STATUS = f"@/{ZID}/router/status/plugins/storage_manager/storages/live"


def stored(session: Any, key: str) -> dict[str, bytes]:
    return {str(s.key_expr): s.payload.to_bytes() for s in zget(session, key)}


def test_a_storage_added_and_removed_through_the_admin_space(tmp_path: Path) -> None:
    with plugin_router(
        tmp_path,
        "-i",
        ZID,
        "--adminspace-permissions",
        "rw",
        "--cfg",
        "plugins/storage_manager:{}",
        ready=("storage_manager",),
    ) as r:
        s = r.open()
        try:
            s.put(STORAGE_CONFIG, '{key_expr: "live/**", volume: "memory"}')
            eventually(lambda: zget(s, STATUS), "the new storage is running")
            s.put("live/a", b"1")
            assert eventually(lambda: stored(s, "live/a"), "the new storage answers") == {"live/a": b"1"}
            # the fs backend README's workflow, through REST: another storage by curl-like PUT
            status, _, _ = r.request(
                "PUT",
                "/@/local/router/config/plugins/storage_manager/storages/viarest",
                b'{key_expr:"rest/**",volume:"memory"}',
                {"Content-Type": "application/json"},
            )
            assert status == 200
            eventually(
                lambda: zget(s, f"@/{ZID}/router/status/plugins/storage_manager/storages/viarest"),
                "the storage added through REST is running",
            )
            s.delete(STORAGE_CONFIG)
            eventually(lambda: not zget(s, STATUS), "the storage is gone")
            assert stored(s, "live/a") == {}
            [info] = zget(s, f"@/{ZID}/router")
            assert '"storage_manager":{"name":"storage_manager"' in info.payload.to_string()
            # a plugin whose section changes restarts with it: REST moves to another port
            moved = free_port()
            s.put(f"@/{ZID}/router/config/plugins/rest/http_port", f'"127.0.0.1:{moved}"')
            wait_listening(moved, r.router.proc, WAIT)
            r.http = moved
            assert r.request("PUT", "/rest/moved", b"1")[0] == 200
            assert [x["key"] for x in r.get_json("/rest/moved")] == ["rest/moved"]
        finally:
            s.close()
    assert "config plugins/storage_manager/storages/live set" in r.router.log.read_text()


def test_writes_without_permission_are_logged_and_change_nothing(tmp_path: Path) -> None:
    with plugin_router(
        tmp_path, "-i", ZID, "--cfg", "plugins/storage_manager:{}", rest=False, ready=("storage_manager",)
    ) as r:
        s = r.open()
        try:
            s.put(STORAGE_CONFIG, '{key_expr: "live/**", volume: "memory"}')
            log = eventually(
                lambda: (text := r.router.log.read_text()) and "adminspace.permissions.write=false" in text and text,
                "the refusal is logged",
            )
            assert STORAGE_CONFIG in log
            assert zget(s, STATUS) == []
        finally:
            s.close()


def test_write_only_permissions_take_writes_and_answer_no_reads(tmp_path: Path) -> None:
    with plugin_router(
        tmp_path, "-i", ZID, "--adminspace-permissions", "w", "--cfg", "plugins/storage_manager:{}", rest=False
    ) as r:
        s = r.open()
        try:
            s.put(STORAGE_CONFIG, '{key_expr: "wo/**", volume: "memory"}')
            s.put("wo/a", b"1")  # may precede the storage: put again until it answers
            eventually(lambda: stored(s, "wo/a") or s.put("wo/a", b"1"), "the storage added by a write answers")
            assert zget(s, f"@/{ZID}/router") == []  # reads refused: RESPONSE_FINAL alone
        finally:
            s.close()
    assert "adminspace.permissions.read=false" in r.router.log.read_text()
