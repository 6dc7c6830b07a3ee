"""RecorderProcess: the router's calls replayed on a Recorder in a child process."""

from __future__ import annotations

import logging
import os
import signal
import time
from pathlib import Path

import pytest

from pyzenoh.errors import UsageError
from pyzenoh.recording import NetRecord, Recorder, read_records
from pyzenoh.recording.process import BATCH_CALLS, RecorderProcess
from pyzenoh.recording.reader import list_segments, scan_segment
from tests.recording._killme import raw_for, start_child
from tests.recording.test_recorder import _mcap_messages

SEC = 1_000_000_000


def _drive(rec: Recorder | RecorderProcess) -> None:
    """A router's worth of calls, every kind, with what the calls return as causes."""
    rec.link_opened(1_000, 1, "a1", "client", "tcp/127.0.0.1:1")
    rec.link_opened(2_000, 2, "b2", "peer", "tcp/127.0.0.1:2")
    now = 10_000
    for i in range(3 * BATCH_CALLS + 17):
        now += 3_000_000 if i % 50 else SEC // 3  # chunks and segments by time too
        key = f"demo/k{i % 5}" if i % 9 else f"other/k{i % 3}"
        body = bytes([i & 0xFF]) * (i % 64)
        if i % 7 == 0:
            cause = rec.message(now, 1, "rx", key, b"\x1d" + body)
            rec.message(now + 1, 1, "tx", None, b"\x1a" + body, cause)  # keyless: kept
            rec.messages(now + 2, "tx", key, [(2, b"\x3d" + body)], cause)
            if i % 2:
                rec.route(now + 2, cause, key, [2, 3])
        else:
            cause = rec.routed(now, 1 + i % 2, key, b"\x7d" + body, [(2, body), (3, body)])
            if i % 11 == 0:
                rec.route(now, cause, key, [2, 3, 7])
        if i % 13 == 0:  # access control's denials, about the message just recorded
            flow = "ingress" if i % 2 else "egress"
            rec.access_denied(
                now,
                cause,
                1 + i % 3,
                flow,
                "put",
                key,
                f"{flow} put denied by rule 'r{i % 4}'",
            )
            if i % 39 == 0:
                rec.access_denied(now, -1, 2, "egress", "declare_subscriber", None, "no key")
        if i % 100 == 99:
            rec.link_closed(now, 2, "peer gone")
            rec.link_opened(now, 2, "b2", "peer", "tcp/127.0.0.1:2")
        if i % 170 == 0:
            rec.tick(now + SEC)
    rec.close()


@pytest.mark.parametrize("key_filter", [None, "demo/**"])
def test_writes_exactly_what_a_recorder_in_process_writes(tmp_path: Path, key_filter: str | None) -> None:
    opts = {
        "max_segment_bytes": 40_000,
        "max_segment_seconds": 5.0,
        "key_filter": key_filter,
    }
    _drive(Recorder(tmp_path / "inproc", **opts))  # type: ignore[arg-type]
    _drive(RecorderProcess(tmp_path / "process", **opts))  # type: ignore[arg-type]
    a, b = list_segments(tmp_path / "inproc"), list_segments(tmp_path / "process")
    assert len(a) > 3
    assert [n for n, _ in a] == [n for n, _ in b]
    for (_, pa), (_, pb) in zip(a, b, strict=True):
        assert pa.read_bytes() == pb.read_bytes()
    recs = list(read_records(tmp_path / "process", include_carried=True))
    assert [r.seq for r in recs] == list(range(len(recs)))
    net = [r for r in recs if isinstance(r, NetRecord)]
    assert any(r.cause >= 0 for r in net)
    if key_filter:
        assert all(r.key is None or r.key.startswith("demo/") for r in net)


def test_resumes_seq_and_segments_like_a_recorder(tmp_path: Path) -> None:
    with RecorderProcess(tmp_path) as rec:
        rec.routed(1, 1, "a", b"1", [(2, b"2")])
    with Recorder(tmp_path) as rec2:
        assert rec2.segment == 2 and rec2.next_seq == 2
    with RecorderProcess(tmp_path) as rec:
        rec.message(5, 1, "rx", "a", b"3")
    assert [r.seq for r in read_records(tmp_path)] == [0, 1, 2]
    assert [n for n, _ in list_segments(tmp_path)] == [1, 2, 3]


def test_bad_options_and_directory_raise_in_the_caller(tmp_path: Path) -> None:
    with pytest.raises(UsageError):
        RecorderProcess(tmp_path, max_segment_bytes=0)
    with pytest.raises(UsageError):
        RecorderProcess(tmp_path, key_filter="a//b")
    not_a_dir = tmp_path / "file"
    not_a_dir.write_bytes(b"x")
    with pytest.raises(UsageError, match="recorder process"):
        RecorderProcess(not_a_dir)
    rec = RecorderProcess(tmp_path / "ok")
    rec.close()
    rec.close()  # idempotent
    with pytest.raises(UsageError):
        rec.routed(1, 1, "a", b"", [])
    with pytest.raises(UsageError):
        rec.message(1, 1, "rx", "a", b"")
    with pytest.raises(UsageError):
        RecorderProcess(tmp_path / "d").message(1, 1, "up", "a", b"")


def test_bad_calls_are_skipped_by_the_child(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    with RecorderProcess(tmp_path) as rec:
        s = rec.message(1, 1, "rx", "a", b"1")
        rec.route(2, s, "a", [-1])  # a Recorder raises UsageError
        rec.message(3, 1, "tx", "a", b"2", s)
    recs = list(read_records(tmp_path))
    assert [(r.seq, getattr(r, "cause", None)) for r in recs] == [(0, -1), (1, 0)]
    assert "skipped" in capfd.readouterr().err


def test_chunks_follow_router_time_and_ticks(tmp_path: Path) -> None:
    """A batch waits at most BATCH_NS of router time, then the child's Recorder applies
    its own one-second rule: what is recorded reaches the file without close()."""
    rec = RecorderProcess(tmp_path)
    try:
        rec.link_opened(0, 1, "a1", "client", "tcp/x:1")
        for i in range(5):
            rec.routed(SEC // 4 * i, 1, "demo/a", b"\x7d", [(2, b"\x7e")])
        rec.tick(3 * SEC)  # traffic stops: the tick sends and flushes
        path = list_segments(tmp_path)[0][1]
        deadline = time.monotonic() + 20
        while scan_segment(path).count(1) < 10 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert scan_segment(path).count(1) == 10
    finally:
        rec.close()


def test_recorder_process_killed_routing_goes_on(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    rec = RecorderProcess(tmp_path, max_segment_bytes=16 << 10)
    for i in range(2000):
        rec.routed(i * 1000, 1, "demo/a", raw_for(i), [(2, raw_for(i))])
    rec.tick(SEC)
    os.kill(rec.pid, signal.SIGKILL)
    rec._proc.wait(timeout=10)
    with caplog.at_level(logging.ERROR):
        for i in range(2000, 20_000):  # batches keep coming: no exception here
            rec.routed(i * 1000, 1, "demo/a", raw_for(i), [(2, raw_for(i))])
        rec.tick(2 * SEC)
        rec.close()
    assert "recording stopped" in caplog.text
    segments = list_segments(tmp_path)
    for _, path in segments[:-1]:
        _mcap_messages(path)  # the closed ones are intact
    every = [r.seq for r in read_records(tmp_path, include_carried=True)]
    assert every == list(range(len(every)))


def _gone(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


@pytest.mark.slow
def test_router_killed_the_recorder_process_closes_the_segment(tmp_path: Path) -> None:
    rec_dir = tmp_path / "rec"
    proc = start_child("tests.recording._killme_proc", rec_dir)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("ready "), line
        recorder_pid = int(line.split()[1])
        time.sleep(0.2)  # the point: the child records on, so the kill lands in the middle of it
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait(timeout=30)
    deadline = time.monotonic() + 60
    while not _gone(recorder_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(recorder_pid)
    segments = list_segments(rec_dir)
    assert len(segments) >= 4
    for _, path in segments:
        _mcap_messages(path)  # every segment, the last one too, closed cleanly
    every = [r.seq for r in read_records(rec_dir, include_carried=True)]
    assert every == list(range(len(every)))
    net = [r for r in read_records(rec_dir) if isinstance(r, NetRecord)]
    assert len(net) > 1500 and len(net) % 2 == 0  # no routed message torn apart
    for i, (rx, tx) in enumerate(zip(net[0::2], net[1::2], strict=True)):
        assert (rx.direction, rx.raw, rx.cause) == ("rx", raw_for(i), -1)
        assert (tx.direction, tx.raw, tx.cause) == ("tx", raw_for(i) + b"tx", rx.seq)


def test_access_denied_causes_resolve_and_bad_values_stay_in_the_router(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from pyzenoh.recording import LinkRecord

    with (
        caplog.at_level(logging.WARNING),
        RecorderProcess(tmp_path, key_filter="demo/**") as rec,
    ):
        rx = rec.message(1, 1, "rx", "demo/a", b"\x7d")
        assert rec.access_denied(1, rx, 1, "ingress", "put", "demo/a", "ingress put denied by rule 'x'") >= 0
        assert rec.access_denied(2, rx, 1, "ingress", "put", "other/a", "filtered") == -1
        assert rec.access_denied(3, -1, -5, "ingress", "put", "demo/a", "bad link") == -1
        assert rec.access_denied(3, rx, 1, "ingress", object(), "demo/a", "bad") == -1  # type: ignore[arg-type]
        rx2 = rec.routed(4, 1, "demo/b", b"\x7d", [(2, b"\x7e")])
        rec.access_denied(4, rx2, 3, "egress", "put", "demo/b", "e" * 5000)
        rec.intercepted(5, rx2, 2, "egress", "put", "demo/b", "egress put dropped by downsampling 'd'")
        assert rec.intercepted(5, rx2, 2, "egress", "put", "other/b", "filtered") == -1
    assert "access_denied skipped" in caplog.text
    recs = list(read_records(tmp_path))
    stops = [r for r in recs if isinstance(r, LinkRecord)]
    assert [(d.seq, d.event, d.cause, d.link, d.flow) for d in stops] == [
        (1, "denied", 0, 1, "ingress"),
        (4, "denied", 2, 3, "egress"),
        (5, "intercepted", 2, 2, "egress"),
    ]
    assert stops[1].reason == "e" * 512
    assert stops[2].reason == "egress put dropped by downsampling 'd'"
