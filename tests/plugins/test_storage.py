"""The storage manager with real eclipse-zenoh 1.10.2 clients against ``pyzenoh router``:
semantics through the wire, persistence of the fs and rocksdb volumes across SIGTERM and
a real kill -9, a damaged database, and the refusal without timestamps."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pyzenoh.localnet import free_port
from tests.fixtures.pyzenoh_router import zenoh
from tests.plugins.conftest import WAIT, PluginRouter, eventually, plugin_router, zget

pytestmark = pytest.mark.interop

SM = ("storage_manager",)

STORAGES = (
    "plugins/storage_manager:{storages:{"
    'demo:{key_expr:"demo/**",volume:"memory"},'
    'pre:{key_expr:"site/a/**",strip_prefix:"site/a",volume:"memory",complete:true}}}'
)


@pytest.fixture(scope="module")
def storages(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PluginRouter]:
    with plugin_router(tmp_path_factory.mktemp("storage"), "--cfg", STORAGES, rest=False, ready=SM) as r:
        yield r


@pytest.fixture
def client(storages: PluginRouter) -> Iterator[Any]:
    session = storages.open()
    yield session
    session.close()


def stored(session: Any, selector: str, **kw: Any) -> dict[str, bytes]:
    return {str(s.key_expr): s.payload.to_bytes() for s in zget(session, selector, **kw)}


def test_put_get_delete_with_encoding_and_timestamp(client: Any) -> None:
    ts = client.new_timestamp()
    client.put("demo/a", b'{"x":1}', encoding=zenoh.Encoding.APPLICATION_JSON, timestamp=ts)
    [sample] = eventually(lambda: zget(client, "demo/a"), "the storage has demo/a")
    assert sample.payload.to_bytes() == b'{"x":1}'
    assert str(sample.encoding) == "application/json" and sample.timestamp == ts
    assert zget(client, "demo/missing") == []  # no reply, no error
    client.delete("demo/a")
    eventually(lambda: zget(client, "demo/a") == [], "demo/a deleted")


def test_an_older_update_is_ignored(client: Any) -> None:
    older, newer = client.new_timestamp(), client.new_timestamp()
    client.put("demo/order", b"new", timestamp=newer)
    client.put("demo/order", b"old", timestamp=older)
    client.put("demo/order-done", b"")  # same session and link: stored after the two above
    eventually(lambda: stored(client, "demo/order-done"), "the storage took the three puts")
    assert stored(client, "demo/order") == {"demo/order": b"new"}


def test_wildcard_put_and_delete(client: Any) -> None:
    for key in ("demo/w/1", "demo/w/2"):
        client.put(key, b"v")
    eventually(lambda: len(stored(client, "demo/w/*")) == 2, "two keys stored")
    client.put("demo/w/*", b"all")
    eventually(lambda: stored(client, "demo/w/*") == {"demo/w/1": b"all", "demo/w/2": b"all"}, "wildcard put")
    client.delete("demo/w/*")
    eventually(lambda: stored(client, "demo/w/*") == {}, "wildcard delete")


def test_strip_prefix_and_complete(client: Any) -> None:
    client.put("site/a/x/y", b"1")
    client.put("site/a", b"root")
    want = {"site/a/x/y": b"1", "site/a": b"root"}
    eventually(lambda: stored(client, "site/**") == want, "prefixed keys stored")
    # a complete storage answers ALL_COMPLETE queries; the demo one (not complete) does not
    assert stored(client, "site/a/x/y", target=zenoh.QueryTarget.ALL_COMPLETE) == {"site/a/x/y": b"1"}
    client.put("demo/c", b"c")
    eventually(lambda: stored(client, "demo/c"), "demo/c stored")
    assert stored(client, "demo/c", target=zenoh.QueryTarget.ALL_COMPLETE) == {}


def test_status_keys(client: Any) -> None:
    status = {
        str(s.key_expr).split("/status/plugins/storage_manager/")[1]: s.payload.to_string()
        for s in zget(client, "@/*/router/status/plugins/storage_manager/**")
    }
    assert status["storages/pre"] == '{"key_expr":"site/a/**","strip_prefix":"site/a","volume":"memory"}'
    assert status["volumes/memory"] == '{"__required__":false}'
    assert set(status) >= {"version", "volumes/memory/__path__", "storages/demo"}


# --- persistence ---------------------------------------------------------------------------

VOLUMES = {
    "fs": (
        "ZENOH_BACKEND_FS_ROOT",
        'volumes:{fs:{}},storages:{p:{key_expr:"keep/**",strip_prefix:"keep",volume:{id:"fs",dir:"data"}}}',
    ),
    "rocksdb": (
        "ZENOH_BACKEND_ROCKSDB_ROOT",
        'volumes:{rocksdb:{}},storages:{p:{key_expr:"keep/**",volume:{id:"rocksdb",dir:"data",create_db:true}}}',
    ),
}


@pytest.mark.parametrize("stop", ["SIGTERM", "SIGKILL"])
@pytest.mark.parametrize("backend", ["fs", "rocksdb"])
def test_stored_values_survive_sigterm_and_kill_9(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str, stop: str
) -> None:
    env, section = VOLUMES[backend]
    monkeypatch.setenv(env, str(tmp_path / "root"))
    cfg = f"plugins/storage_manager:{{{section}}}"
    with plugin_router(tmp_path, "--cfg", cfg, "-i", "abcd", rest=False, ready=SM) as r:
        s = r.open()
        try:
            s.put("keep/a/b", b"ab", encoding=zenoh.Encoding.TEXT_PLAIN)
            s.put("keep/a", b"a")  # a key that is also the parent of another (fs: a conflict file)
            s.put("keep", b"root")
            s.put("keep/gone", b"x")
            s.delete("keep/gone")
            want = {"keep/a/b": b"ab", "keep/a": b"a", "keep": b"root"}
            eventually(lambda: stored(s, "keep/**") == want, "stored before the stop")
            stamps = {str(x.key_expr): x.timestamp for x in zget(s, "keep/**")}
        finally:
            s.close()
        r.router.proc.send_signal(getattr(signal, stop))
        r.router.proc.wait(timeout=WAIT)
    with plugin_router(tmp_path, "--cfg", cfg, rest=False, ready=SM) as again:
        s = again.open()
        try:
            samples = eventually(
                lambda: zget(s, "keep/**") if len(zget(s, "keep/**")) == 3 else None, "the restarted storage serves"
            )
            assert {str(x.key_expr): x.payload.to_bytes() for x in samples} == want
            assert {str(x.key_expr): x.timestamp for x in samples} == stamps
            [ab] = [x for x in samples if str(x.key_expr) == "keep/a/b"]
            assert str(ab.encoding) == "text/plain"
        finally:
            s.close()


def test_a_damaged_database_is_reported_and_other_storages_serve(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "rdb"
    (root / "bad").mkdir(parents=True)
    (root / "bad" / "CURRENT").write_text("MANIFEST-999999\n")  # a foreign/damaged RocksDB directory
    monkeypatch.setenv("ZENOH_BACKEND_ROCKSDB_ROOT", str(root))
    cfg = (
        "plugins/storage_manager:{volumes:{rocksdb:{}},storages:{"
        'bad:{key_expr:"bad/**",volume:{id:"rocksdb",dir:"bad"}},'
        'good:{key_expr:"good/**",volume:"memory"}}}'
    )
    with plugin_router(tmp_path, "--cfg", cfg, rest=False, ready=SM) as r:
        s = r.open()
        try:
            s.put("good/x", b"1")
            eventually(lambda: stored(s, "good/x"), "the other storage serves")
            [status] = zget(s, "@/*/router/status/plugins/storage_manager/storages/bad")
            assert "failed to open the database" in status.payload.to_string()
        finally:
            s.close()
    assert "Cannot spawn storage 'bad'" in r.router.log.read_text()


def test_no_timestamping_refuses_a_required_storage_manager(tmp_path: Path) -> None:
    cmd = [
        sys.executable,
        "-m",
        "pyzenoh",
        "router",
        "-l",
        f"tcp/127.0.0.1:{free_port()}",
        "--no-timestamp",
        "--no-multicast-scouting",
        "-P",
        "storage_manager",
    ]
    done = subprocess.run(cmd, check=False, capture_output=True, timeout=60, env=os.environ.copy())
    assert done.returncode == 2
    err = done.stderr.decode()
    assert "storage_manager" in err and "'timestamping' is disabled" in err
