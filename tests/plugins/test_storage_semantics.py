"""StorageState alone: zenoh 1.10's storage service rules, with explicit timestamps."""

from __future__ import annotations

from pyzenoh.codec import Encoding, Timestamp, ZenohId
from pyzenoh.plugins.storage.semantics import DELETE, PUT, MemoryVolume, StorageState

A = ZenohId(0xA)
B = ZenohId(0xB)
TEXT = Encoding.from_str("text/plain")


def ts(t: int, zid: ZenohId = A) -> Timestamp:
    return Timestamp(t << 32, zid)


def storage(key: str = "demo/**", prefix: str | None = None) -> StorageState:
    return StorageState(key, MemoryVolume(), prefix, lifespan_s=100.0)


def values(s: StorageState, key: str = "**") -> dict[str, bytes]:
    return {k: v.payload for k, v in s.query(key)}


def test_latest_value_per_key_by_timestamp_older_ignored() -> None:
    s = storage()
    s.on_sample(PUT, "demo/a", b"2", TEXT, ts(2))
    s.on_sample(PUT, "demo/a", b"1", TEXT, ts(1))  # older: ignored
    assert values(s) == {"demo/a": b"2"}
    s.on_sample(PUT, "demo/a", b"3", TEXT, ts(2, B))  # same time, greater id: newer
    assert values(s) == {"demo/a": b"3"}
    [(key, stored)] = s.query("demo/a")
    assert key == "demo/a" and stored.encoding == TEXT and stored.timestamp == ts(2, B)
    assert s.ignored == 1


def test_delete_forgets_the_key_and_an_older_put_comes_back() -> None:
    s = storage()
    s.on_sample(PUT, "demo/a", b"1", TEXT, ts(1))
    s.on_sample(DELETE, "demo/a", b"", TEXT, ts(3))
    assert values(s) == {}
    s.on_sample(PUT, "demo/a", b"2", TEXT, ts(2))  # 1.10: no tombstone, so it is stored
    assert values(s) == {"demo/a": b"2"}


def test_missing_keys_give_no_reply() -> None:
    assert storage().query("demo/nothing") == []


def test_wildcard_put_updates_existing_and_later_older_keys() -> None:
    s = storage()
    s.on_sample(PUT, "demo/a/x", b"old", TEXT, ts(1))
    s.on_sample(PUT, "demo/b/x", b"new", TEXT, ts(9))
    s.on_sample(PUT, "demo/*/x", b"W", TEXT, ts(5))
    assert values(s) == {"demo/a/x": b"W", "demo/b/x": b"new"}
    s.on_sample(PUT, "demo/c/x", b"late-but-older", TEXT, ts(4))  # overridden by the newer wildcard put
    s.on_sample(PUT, "demo/d/x", b"newer", TEXT, ts(6))
    assert values(s, "demo/c/x") == {"demo/c/x": b"W"}
    assert values(s, "demo/d/x") == {"demo/d/x": b"newer"}


def test_wildcard_delete_removes_existing_and_later_older_keys() -> None:
    s = storage()
    s.on_sample(PUT, "demo/a", b"1", TEXT, ts(1))
    s.on_sample(PUT, "demo/b", b"9", TEXT, ts(9))
    s.on_sample(DELETE, "demo/*", b"", TEXT, ts(5))
    assert values(s) == {"demo/b": b"9"}
    s.on_sample(PUT, "demo/c", b"older", TEXT, ts(4))  # the wildcard delete wins
    s.on_sample(PUT, "demo/d", b"newer", TEXT, ts(6))
    assert values(s) == {"demo/b": b"9", "demo/d": b"newer"}


def test_wildcard_updates_are_forgotten_after_their_lifespan() -> None:
    s = storage()
    s.on_sample(DELETE, "demo/*", b"", TEXT, ts(5))
    assert s.collect_garbage(now_s=50.0) == 0
    assert s.collect_garbage(now_s=200.0) == 1
    s.on_sample(PUT, "demo/c", b"older", TEXT, ts(4))
    assert values(s) == {"demo/c": b"older"}


def test_strip_prefix_is_removed_in_the_volume_and_restored_in_replies() -> None:
    vol = MemoryVolume()
    s = StorageState("demo/example/**", vol, "demo/example")
    s.on_sample(PUT, "demo/example/a/b", b"1", TEXT, ts(1))
    s.on_sample(PUT, "demo/example", b"root", TEXT, ts(1))
    assert set(vol.data) == {"a/b", None}
    assert values(s, "demo/**") == {"demo/example/a/b": b"1", "demo/example": b"root"}
    assert values(s, "demo/example/a/b") == {"demo/example/a/b": b"1"}
    assert s.query("other/key") == []  # outside the prefix: an error logged, no reply
    assert s.errors == 1


def test_a_failing_volume_is_counted_not_raised() -> None:
    class Broken(MemoryVolume):
        def put(self, key, value):  # type: ignore[no-untyped-def]
            raise OSError("disk full")

    s = StorageState("demo/**", Broken())
    assert s.on_sample(PUT, "demo/a", b"1", TEXT, ts(1)) == 0
    assert s.errors == 1
