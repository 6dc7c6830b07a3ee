"""``pyzenoh replay``: real eclipse-zenoh 1.10.2 traffic through ``pyzenoh router --record``,
played into a fresh router, seen by a real subscriber there as it was seen the first time;
and the selection rules of :mod:`pyzenoh.recording.replay` on synthetic recordings."""

from __future__ import annotations

import queue
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import zenoh

from pyzenoh.codec import Push, Put, Timestamp, WireExpr, ZenohId, encode_network_message
from pyzenoh.codec.network import QOS_BLOCK
from pyzenoh.recording.format import LinkRecord, NetRecord, Record
from pyzenoh.recording.replay import Pacing, recorded_samples
from tests.fixtures.pyzenoh_router import run_router, zenoh_config
from tests.waits import routed

WAIT = 20.0


def _seen(sample: Any) -> tuple[object, ...]:
    """What a subscriber sees of a sample (the timestamp's time and id included)."""
    att = sample.attachment
    return (
        str(sample.key_expr),
        str(sample.kind),
        sample.payload.to_bytes(),
        str(sample.encoding),
        None if att is None else att.to_bytes(),
        None if sample.timestamp is None else str(sample.timestamp),
        str(sample.priority),
    )


def _publish(session: Any, prefix: str) -> None:
    session.put(f"{prefix}/temp/a", b"21.5", encoding="application/json", attachment=b"meta")
    session.put(f"{prefix}/temp/b", "text", encoding="text/plain", priority=zenoh.Priority.DATA_HIGH)
    session.put(f"{prefix}/other", b"\x00\x01")
    session.delete(f"{prefix}/temp/a")
    session.put(f"{prefix}/temp/a", b"22.0", encoding="application/json")


def _collector(session: Any, key: str) -> tuple[Any, queue.Queue[Any]]:
    q: queue.Queue[Any] = queue.Queue()
    return session.declare_subscriber(key, q.put), q


def _take(q: queue.Queue[Any], n: int) -> list[tuple[object, ...]]:
    return [_seen(q.get(timeout=WAIT)) for _ in range(n)]


def _per_key(samples: list[Any], key: Any = lambda s: s[0]) -> dict[object, list[Any]]:
    """Samples in order per key: Zenoh orders a key's samples, not samples of different
    keys sent at different priorities (rp/temp/b may overtake rp/temp/a)."""
    out: dict[object, list[Any]] = {}
    for sample in samples:
        out.setdefault(key(sample), []).append(sample)
    return out


@pytest.fixture
def recording(tmp_path: Path) -> Iterator[tuple[Path, list[tuple[object, ...]]]]:
    """Samples published through a recording router, and what a subscriber saw there."""
    rec = tmp_path / "rec"
    with run_router(tmp_path, "--record", str(rec)) as router:
        with zenoh.open(zenoh_config(router.endpoint)) as sub_s, zenoh.open(zenoh_config(router.endpoint)) as pub_s:
            sub, q = _collector(sub_s, "rp/**")
            routed(pub_s, "rp/probe")  # the subscriber is known to the router
            _publish(pub_s, "rp")
            seen = _take(q, 5)
            sub.undeclare()
        router.stop()  # SIGTERM: the recording is closed
    yield rec, seen


@pytest.mark.interop
def test_a_replayed_recording_gives_the_samples_a_subscriber_saw(
    recording: tuple[Path, list[tuple[object, ...]]], tmp_path: Path
) -> None:
    rec, seen = recording
    with run_router(tmp_path) as router, zenoh.open(zenoh_config(router.endpoint)) as s:
        sub, q = _collector(s, "rp/**")
        routed(s, "rp/probe2")
        out = _replay(rec, "-e", router.endpoint, "--speed", "0", "--keys", "rp/temp/**")
        assert "replayed 4 samples (3 puts, 1 deletes)" in out
        assert _per_key(_take(q, 4)) == _per_key([s for s in seen if s[0] != "rp/other"])
        assert q.empty()  # rp/other was not selected
        sub.undeclare()


@pytest.mark.interop
def test_replaying_at_recorded_pace_and_into_a_recording_router_again(
    recording: tuple[Path, list[tuple[object, ...]]], tmp_path: Path
) -> None:
    rec, seen = recording
    again = tmp_path / "again"
    with run_router(tmp_path, "--record", str(again)) as router:
        with zenoh.open(zenoh_config(router.endpoint)) as s:
            sub, q = _collector(s, "rp/**")
            routed(s, "rp/probe3")
            _replay(rec, "-e", router.endpoint, "--speed", "4", "--from", "0")
            assert _per_key(_take(q, 5)) == _per_key(seen)
            sub.undeclare()
        router.stop()
    # recorded again, the replay holds the same samples
    replayed = list(recorded_samples([_records(again)]))
    original = list(recorded_samples([_records(rec)]))
    fields = [(s.key, s.put, s.payload, s.encoding, s.attachment, s.timestamp) for s in replayed]
    assert _per_key(fields) == _per_key(
        [(s.key, s.put, s.payload, s.encoding, s.attachment, s.timestamp) for s in original]
    )


def _records(path: Path) -> list[Record]:
    from pyzenoh.recording import read_records

    return list(read_records(path))


def _replay(*args: object) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "pyzenoh", "--log-level", "warning", "replay", "--quiet", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


# --- the selection rules, on synthetic recordings ------------------------------------------

A = ZenohId.from_str("a1")
ROUTER_B = ZenohId.from_str("b2")


def _push(key: str, payload: bytes, ts: Timestamp | None = None) -> bytes:
    return encode_network_message(Push(WireExpr(0, key, True), Put(payload, timestamp=ts), qos=5 | QOS_BLOCK))


def _opened(seq: int, link: int, whatami: str) -> LinkRecord:
    return LinkRecord(seq, seq, "open", link, "z", whatami, "tcp/x", None, False)


def test_each_sample_once_with_its_copies_timestamp_across_the_recordings_of_a_mesh() -> None:
    ts = Timestamp(7 << 32, ROUTER_B)
    # router B: the sample entered from its client (link 1), its copy to router A is stamped
    b: list[Record] = [
        _opened(0, 1, "client"),
        _opened(1, 2, "router"),
        NetRecord(2, 100, 1, "rx", "m/x", _push("m/x", b"v"), -1),
        NetRecord(3, 101, 2, "tx", "m/x", _push("m/x", b"v", ts), 2),
        NetRecord(4, 300, 1, "rx", "m/y", _push("m/y", b"w"), -1),
    ]
    # router A: the same sample again, from router B (a hop), and one of its own client's
    a: list[Record] = [
        _opened(0, 5, "router"),
        _opened(1, 6, "client"),
        NetRecord(2, 150, 5, "rx", "m/x", _push("m/x", b"v", ts), -1),
        NetRecord(3, 200, 6, "rx", "m/z", _push("m/z", b"u"), -1),
    ]
    got = [(s.time_ns, s.key, s.payload, s.timestamp) for s in recorded_samples([b, a])]
    assert got == [(100, "m/x", b"v", ts), (200, "m/z", b"u", None), (300, "m/y", b"w", None)]
    # one recording alone: a router face's rx is a sample published elsewhere in the mesh
    assert [s.key for s in recorded_samples([a])] == ["m/x", "m/z"]
    assert [s.key for s in recorded_samples([b, a], keys="m/y")] == ["m/y"]
    assert [s.key for s in recorded_samples([b, a], from_s=0.0000001)] == ["m/z", "m/y"]
    assert [s.key for s in recorded_samples([b, a], start_ns=150, end_ns=300)] == ["m/z"]


def test_pacing() -> None:
    pace = Pacing(2.0, 10.0)
    assert [pace.due(t) for t in (5_000_000_000, 6_000_000_000, 9_000_000_000)] == [10.0, 10.5, 12.0]
    assert Pacing(0, 3.0).due(9) == 3.0
    with pytest.raises(ValueError):
        Pacing(-1, 0)


def test_a_synthetic_meshs_recordings_replay_each_sample_once(tmp_path: Path) -> None:
    # link events as the recorder writes them ("open"), not as a test would make them up
    from pyzenoh.pipeline.synth_mesh import generate_mesh
    from pyzenoh.recording.reader import read_records
    from pyzenoh.recording.replay import recorded_samples

    dirs = [tmp_path / f"r{i}" for i in range(3)]
    made = generate_mesh(dirs, 5_000, drop_every=0, cut=(2.0, 2.0))
    assert sum(1 for _ in recorded_samples([read_records(d) for d in dirs])) == made["samples"]
