"""The fs and rocksdb volumes on real files and a real RocksDB: upstream's layouts, their
option checks, and what a damaged store does."""

from __future__ import annotations

from pathlib import Path

import pytest

from pyzenoh.codec import Encoding, Timestamp, ZenohId
from pyzenoh.errors import UsageError
from pyzenoh.plugins.storage.semantics import Stored
from pyzenoh.plugins.storage.volumes import datainfo

rocksdict = pytest.importorskip("rocksdict")

from pyzenoh.plugins.storage.volumes.fs import FsVolume
from pyzenoh.plugins.storage.volumes.rocksdb import RocksdbVolume

TS = Timestamp(7 << 32, ZenohId(0xABC))
TEXT = Encoding.from_str("text/plain")


def test_fs_layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZENOH_BACKEND_FS_ROOT", str(tmp_path))
    vol = FsVolume("s", {"dir": "example"})
    vol.put("a", Stored(b"A", TEXT, TS))
    vol.put("a/b", Stored(b"AB", TEXT, TS))  # "a" must become a directory: the file moves to a.##z
    vol.put(None, Stored(b"root", TEXT, TS))
    base = tmp_path / "example"
    assert (base / "a.##z").read_bytes() == b"A" and (base / "a" / "b").read_bytes() == b"AB"
    assert (base / "@root").read_bytes() == b"root" and (base / ".zenoh_datainfo").is_dir()
    assert sorted(vol.stored_keys(), key=str) == [None, "a", "a/b"]
    assert vol.get("a") == Stored(b"A", TEXT, TS)
    vol.delete("a/b", TS)
    assert vol.get("a/b") is None and not (base / "a").exists()  # empty directories go too
    (base / "notes.json").write_text("{}")  # a file someone else wrote: guessed encoding, mtime
    foreign = vol.get("notes.json")
    assert foreign is not None and str(foreign.encoding) == "application/json"
    vol.close()
    db = rocksdict.Rdict(str(base / ".zenoh_datainfo"), options=rocksdict.Options(raw_mode=True))
    try:
        raw = db[str(base / "@root").encode()]
        assert datainfo.decode(raw, with_deleted=False) == (TEXT, TS, False)
    finally:
        db.close()


def test_rocksdb_layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZENOH_BACKEND_ROCKSDB_ROOT", str(tmp_path))
    with pytest.raises(UsageError, match="failed to open"):
        RocksdbVolume("s", {"dir": "db"})  # create_db defaults to false, as upstream
    vol = RocksdbVolume("s", {"dir": "db", "create_db": True})
    vol.put("k", Stored(b"v", TEXT, TS))
    vol.put(None, Stored(b"r", TEXT, TS))
    vol.delete("k", TS)
    vol.put("x", Stored(b"x", TEXT, TS))
    vol.close()
    assert rocksdict.Rdict.list_cf(str(tmp_path / "db"), rocksdict.Options(raw_mode=True)) == ["default", "data_info"]
    again = RocksdbVolume("s", {"dir": "db", "read_only": True})
    try:
        assert sorted(again.stored_keys(), key=str) == [None, "x"]
        assert again.get(None) == Stored(b"r", TEXT, TS)
        with pytest.raises(PermissionError):
            again.put("y", Stored(b"y", TEXT, TS))
    finally:
        again.close()


@pytest.mark.parametrize(
    ("cls", "cfg", "named"),
    [
        (FsVolume, {}, "dir"),
        (FsVolume, {"dir": "/abs"}, "dir"),
        (FsVolume, {"dir": "a/../b"}, "dir"),
        (FsVolume, {"dir": "d", "on_closure": "keep"}, "on_closure"),
        (FsVolume, {"dir": "d", "read_only": "yes"}, "read_only"),
        (FsVolume, {"dir": "d", "dri": "x"}, "dri"),
        (RocksdbVolume, {"dir": "d", "create_db": 1}, "create_db"),
        (RocksdbVolume, {"dir": "d", "on_closure": "delete_all"}, "on_closure"),
    ],
)
def test_bad_volume_options_name_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cls: type, cfg: dict[str, object], named: str
) -> None:
    monkeypatch.setenv("ZENOH_BACKEND_FS_ROOT", str(tmp_path))
    monkeypatch.setenv("ZENOH_BACKEND_ROCKSDB_ROOT", str(tmp_path))
    with pytest.raises(UsageError, match=f"storages/s/volume/{named}"):
        cls("s", cfg)


def test_a_damaged_data_info_value_is_an_error_for_that_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZENOH_BACKEND_ROCKSDB_ROOT", str(tmp_path))
    vol = RocksdbVolume("s", {"dir": "db", "create_db": True})
    try:
        vol.put("good", Stored(b"1", TEXT, TS))
        vol.put("bad", Stored(b"2", TEXT, TS))
        vol.info[b"bad"] = b"\x01garbage"
        with pytest.raises(datainfo.DataInfoError):
            vol.get("bad")
        assert vol.get("good") == Stored(b"1", TEXT, TS)
    finally:
        vol.close()
