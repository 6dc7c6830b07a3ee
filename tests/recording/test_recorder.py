from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcap.reader import make_reader
from mcap.stream_reader import StreamReader

from pyzenoh.errors import DecodeError, UsageError
from pyzenoh.recording import (
    LinkRecord,
    NetRecord,
    Recorder,
    RouteRecord,
    SegmentReader,
    read_records,
)
from pyzenoh.recording.reader import list_segments, scan_segment
from tests.hyp import FUZZ
from tests.recording._killme import raw_for, start_child

SEC = 1_000_000_000


def _mcap_messages(path: Path) -> int:
    """Count messages through the mcap library's indexed reader, validating CRCs."""
    with open(path, "rb") as f:
        reader = make_reader(f, validate_crcs=True)
        summary = reader.get_summary()
        assert summary is not None and summary.statistics is not None
        n = sum(1 for _ in reader.iter_messages())
        assert n == summary.statistics.message_count
        return n


def test_round_trip_all_record_kinds(tmp_path: Path) -> None:
    with Recorder(tmp_path) as rec:
        rec.link_opened(10, 3, "a1b2", "client", "tcp/127.0.0.1:4000")
        s0 = rec.message(20, 3, "rx", "demo/a", b"\x7d\x00\x01", cause=-1)
        rec.route(21, s0, "demo/a", [4, 5])
        s1 = rec.message(22, 4, "tx", "demo/a", b"\x3d\x01", cause=s0)
        s2 = rec.message(23, 3, "rx", None, b"\x1a\x07")
        rec.link_closed(30, 3, "peer closed")
    recs = list(read_records(tmp_path))
    assert [r.seq for r in recs] == [0, 1, 2, 3, 4, 5]
    assert (s0, s1, s2) == (1, 3, 4)
    assert recs[0] == LinkRecord(0, 10, "open", 3, "a1b2", "client", "tcp/127.0.0.1:4000", None, False)
    assert recs[1] == NetRecord(1, 20, 3, "rx", "demo/a", b"\x7d\x00\x01", -1)
    assert recs[2] == RouteRecord(2, 21, 1, "demo/a", (4, 5))
    assert recs[3] == NetRecord(3, 22, 4, "tx", "demo/a", b"\x3d\x01", 1)
    assert recs[4] == NetRecord(4, 23, 3, "rx", None, b"\x1a\x07", -1)
    assert recs[5] == LinkRecord(5, 30, "close", 3, None, None, None, "peer closed", False)
    (seg,) = list_segments(tmp_path)
    assert _mcap_messages(seg[1]) == 6


def test_rotation_by_size_keeps_seq_and_carries_links(tmp_path: Path) -> None:
    with Recorder(tmp_path, max_segment_bytes=20_000) as rec:
        rec.link_opened(0, 1, "aa", "client", "tcp/x:1")
        rec.link_opened(0, 2, "bb", "peer", "tcp/x:2")
        for i in range(3000):
            seq = rec.message(1000 + i, 1 + i % 2, "rx", f"k/{i % 5}", bytes(40))
            assert seq >= 0
    segments = list_segments(tmp_path)
    assert len(segments) > 5
    assert [n for n, _ in segments] == list(range(1, len(segments) + 1))
    all_seqs: list[int] = []
    for number, path in segments:
        assert path.name == f"seg-{number:06d}.mcap"
        _mcap_messages(path)  # every segment is a complete, valid MCAP file
        recs = list(SegmentReader(path).records())
        all_seqs += [r.seq for r in recs]
        if number > 1:  # each later segment starts by restating the two open links
            head = recs[:2]
            assert all(isinstance(r, LinkRecord) and r.carried and r.event == "open" for r in head)
            assert {r.link for r in head if isinstance(r, LinkRecord)} == {1, 2}
        # Rotation happens at the first chunk boundary past the limit.
        assert os.path.getsize(path) < 20_000 + 16_000
    assert all_seqs == list(range(len(all_seqs)))
    net = [r for r in read_records(tmp_path) if isinstance(r, NetRecord)]
    assert len(net) == 3000
    # The restated (carried) link events are skipped.
    assert sum(isinstance(r, LinkRecord) for r in read_records(tmp_path)) == 2


def test_rotation_by_time_and_tick(tmp_path: Path) -> None:
    def layout() -> list[tuple[int, bool, int]]:
        return [(n, (info := scan_segment(p)).closed, info.count(1)) for n, p in list_segments(tmp_path)]

    rec = Recorder(tmp_path, max_segment_seconds=2.0)
    # 0.0 .. 4.5 s: a chunk per second, a segment per 2 s of router time.
    for i in range(10):
        rec.message(i * SEC // 2, 1, "rx", "demo/t", b"x")
    assert layout() == [(1, True, 5), (2, False, 4)]
    rec.message(47 * SEC // 10, 1, "rx", "demo/t", b"x")
    assert layout() == [(1, True, 5), (2, False, 4)]  # still buffered
    # Time passes without traffic: the chunk is written and the segment rotated.
    rec.tick(58 * SEC // 10)
    assert layout() == [(1, True, 5), (2, True, 6), (3, False, 0)]
    rec.tick(20 * SEC)  # an empty segment is never rotated
    assert layout() == [(1, True, 5), (2, True, 6), (3, False, 0)]
    rec.close()
    assert [r.time_ns for r in read_records(tmp_path)] == [i * SEC // 2 for i in range(10)] + [47 * SEC // 10]


def test_open_segment_readable_before_close(tmp_path: Path) -> None:
    rec = Recorder(tmp_path, max_segment_bytes=1 << 30)
    for i in range(20_000):
        rec.message(i, 1, "rx", "demo/x", bytes(100))
    info = scan_segment(list_segments(tmp_path)[0][1])
    assert not info.closed and info.chunks
    n = sum(1 for _ in read_records(tmp_path))
    assert 0 < n < 20_000
    assert n == info.count(1)
    rec.close()
    assert sum(1 for _ in read_records(tmp_path)) == 20_000


def test_resume_continues_segment_numbers_and_seq(tmp_path: Path) -> None:
    with Recorder(tmp_path) as rec:
        for i in range(5):
            rec.message(i, 1, "rx", "a", b"1")
    with Recorder(tmp_path) as rec:
        assert rec.segment == 2
        assert rec.next_seq == 5
        assert rec.message(100, 1, "rx", "a", b"2") == 5
    info = scan_segment(list_segments(tmp_path)[1][1])
    assert info.run == 2 and info.first_seq == 5
    assert [r.seq for r in read_records(tmp_path)] == list(range(6))


def test_segments_name_the_recording_router(tmp_path: Path) -> None:
    with Recorder(tmp_path, max_segment_bytes=4096, zid="a1b2") as rec:
        for i in range(400):
            rec.message(i, 1, "rx", "a", b"x" * 40)
    segments = list_segments(tmp_path)
    assert len(segments) > 1
    assert {scan_segment(path).zid for _, path in segments} == {"a1b2"}
    with Recorder(tmp_path / "older") as rec:  # a recorder not told its router's zid
        rec.message(0, 1, "rx", "a", b"1")
    assert scan_segment(list_segments(tmp_path / "older")[0][1]).zid is None


def test_key_filter(tmp_path: Path) -> None:
    with Recorder(tmp_path, key_filter="demo/**") as rec:
        assert rec.message(1, 1, "rx", "demo/a/b", b"1") == 0
        assert rec.message(2, 1, "rx", "other/a", b"2") == -1
        assert rec.message(3, 1, "rx", "demo", b"3") == 1
        assert rec.message(4, 1, "rx", "*/a", b"4") == 2  # a wildcard that intersects
        # Keyless control messages are kept.
        assert rec.message(5, 1, "rx", None, b"\x1a\x01") == 3
        rec.route(6, 0, "other/a", [1])
        rec.route(7, 0, "demo/a/b", [1])
    recs = list(read_records(tmp_path))
    keys = [r.key for r in recs]
    assert keys == ["demo/a/b", "demo", "*/a", None, "demo/a/b"]


def test_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError):
        Recorder(tmp_path, max_segment_bytes=0)
    with pytest.raises(UsageError):
        Recorder(tmp_path / "b", max_segment_seconds=0)
    for bad_filter in ("", "a//b", "a*"):
        with pytest.raises(UsageError):
            Recorder(tmp_path / "f", key_filter=bad_filter)
    rec = Recorder(tmp_path / "c")
    with pytest.raises(UsageError):
        rec.message(1, 1, "up", "a", b"")
    with pytest.raises(UsageError):
        rec.route(1, 1, "a", [-1])
    rec.close()
    rec.close()  # idempotent
    with pytest.raises(UsageError):
        rec.message(1, 1, "rx", "a", b"")


def test_kill_9_leaves_closed_segments_intact_and_open_one_readable(
    tmp_path: Path,
) -> None:
    rec_dir = tmp_path / "rec"
    proc = start_child("tests.recording._killme", rec_dir)
    try:
        assert proc.stdout is not None
        # Bounded by the child's own loop and the test timeout.
        line = proc.stdout.readline()
        assert line.startswith("ready "), line
        # Let the open segment get a few complete chunks, then kill mid-write. The child
        # is frozen while we look, so it cannot start a new segment between look and kill;
        # it may be frozen between closing one segment and opening the next, so the newest
        # must still be open.
        for _ in range(2000):
            os.kill(proc.pid, signal.SIGSTOP)
            newest = scan_segment(list_segments(rec_dir)[-1][1])
            if not newest.closed and len(newest.chunks) >= 2:
                break
            os.kill(proc.pid, signal.SIGCONT)
            time.sleep(0.005)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    segments = list_segments(rec_dir)
    assert len(segments) >= 4
    for _, path in segments[:-1]:
        _mcap_messages(path)  # closed: footer, summary and CRCs all valid
    last = segments[-1][1]
    assert not scan_segment(last).closed
    with pytest.raises(Exception):  # noqa: B017 - the stock streaming reader chokes on the cut
        sum(1 for _ in StreamReader(str(last)).records)
    net = [r for r in read_records(rec_dir) if isinstance(r, NetRecord)]
    # No gap anywhere: every seq from 0 up to the last complete chunk survived.
    every = [r.seq for r in read_records(rec_dir, include_carried=True)]
    assert every == list(range(len(every)))
    assert len(scan_segment(last).chunks) >= 2
    assert net[-1].seq > 1500  # three closed 64 KiB segments of ~100-byte records
    for r in net:
        assert r.raw == raw_for(r.seq)
    # A recorder restarted after the crash continues after the last surviving seq.
    with Recorder(rec_dir) as rec:
        assert rec.segment == segments[-1][0] + 1
        assert rec.next_seq > net[-1].seq


def _small_recording(path: Path) -> Path:
    with Recorder(path, max_segment_bytes=1 << 20) as rec:
        rec.link_opened(1, 1, "aa", "client", "tcp/x:1")
        for i in range(12):
            s = rec.message(2 + i, 1, "rx", "demo/a", bytes([0x7D, i]))
            rec.route(2 + i, s, "demo/a", [2])
            if i % 4 == 3:
                rec.tick(2 + i + 2 * SEC)  # several chunks
    return list_segments(path)[0][1]


def test_every_truncation_reads_a_prefix(tmp_path: Path) -> None:
    full_path = _small_recording(tmp_path / "full")
    full = list(SegmentReader(full_path).records())
    data = full_path.read_bytes()
    cut_dir = tmp_path / "cut"
    cut_dir.mkdir()
    cut = cut_dir / full_path.name
    for n in range(0, len(data), 7):
        cut.write_bytes(data[:n])
        got = list(SegmentReader(cut).records())
        assert got == full[: len(got)]


@pytest.mark.slow
@FUZZ
@given(st.data())
def test_corrupted_segment_raises_only_decode_error(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    base = tmp_path_factory.getbasetemp() / "fuzzsrc"
    if not base.exists():
        _small_recording(base)
    src = list_segments(base)[0][1]
    blob = bytearray(src.read_bytes())
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(blob) - 1))
        blob[i] = data.draw(st.integers(0, 255))
    out = tmp_path_factory.getbasetemp() / "fuzzout"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    (out / src.name).write_bytes(bytes(blob))
    try:
        for _ in SegmentReader(out / src.name).records():
            pass
    except DecodeError:
        pass
    for verify in (False,):
        try:
            for _ in read_records(out, verify=verify):
                pass
        except DecodeError:
            pass


# --- access control's denials ("denied" link events) ----------------------------------------


def test_denied_round_trip(tmp_path: Path) -> None:
    from pyzenoh.recording import format as fmt

    long_key = "k/" + "x" * (fmt.MAX_DENIED_KEY_CHARS + 50)
    with Recorder(tmp_path) as rec:
        rec.link_opened(10, 3, "a1b2", "client", "tcp/127.0.0.1:4000")
        s0 = rec.message(20, 3, "rx", "vault/a", b"\x7d\x00\x01")
        d0 = rec.access_denied(20, s0, 3, "ingress", "put", "vault/a", "ingress put denied by rule 'v'")
        d1 = rec.access_denied(21, -1, 7, "egress", "declare_subscriber", None, "r" * 2000)
        d2 = rec.access_denied(22, s0, 4, "egress", "put", long_key, "egress put denied by rule 'é'")
        rec.message(23, 3, "rx", "demo/b", b"\x7d")
    recs = list(read_records(tmp_path))
    assert (s0, d0, d1, d2) == (1, 2, 3, 4)
    assert recs[2] == LinkRecord(
        2,
        20,
        "denied",
        3,
        None,
        None,
        None,
        "ingress put denied by rule 'v'",
        False,
        cause=1,
        flow="ingress",
        message="put",
        key="vault/a",
    )
    assert recs[3] == LinkRecord(
        3,
        21,
        "denied",
        7,
        None,
        None,
        None,
        "r" * fmt.MAX_DENIED_TEXT_CHARS,
        False,
        cause=-1,
        flow="egress",
        message="declare_subscriber",
        key=None,
    )
    assert recs[4].key == long_key[: fmt.MAX_DENIED_KEY_CHARS]  # type: ignore[union-attr]
    assert recs[4].reason == "egress put denied by rule 'é'"  # type: ignore[union-attr]
    # The other events carry none of the denial fields.
    assert recs[0].cause is None and recs[0].flow is None  # type: ignore[union-attr]
    (seg,) = list_segments(tmp_path)
    assert _mcap_messages(seg[1]) == 6


def test_intercepted_round_trip(tmp_path: Path) -> None:
    """An interceptor's drop: a link event of its own, with a denial's fields."""
    with Recorder(tmp_path) as rec:
        s0 = rec.message(20, 3, "rx", "demo/a", b"\x7d\x00\x01")
        d0 = rec.intercepted(20, s0, 4, "egress", "put", "demo/a", "egress put dropped by downsampling 'ds'")
    recs = list(read_records(tmp_path))
    assert recs[1] == LinkRecord(
        d0,
        20,
        "intercepted",
        4,
        None,
        None,
        None,
        "egress put dropped by downsampling 'ds'",
        False,
        cause=s0,
        flow="egress",
        message="put",
        key="demo/a",
    )


def test_denied_key_filter_and_bad_values(tmp_path: Path) -> None:
    with Recorder(tmp_path, key_filter="demo/**") as rec:
        assert rec.access_denied(1, -1, 1, "ingress", "put", "other/a", "r") == -1
        assert rec.access_denied(2, -1, 1, "ingress", "put", "demo/a", "r") == 0
        assert rec.access_denied(3, -1, 1, "ingress", "query", None, "no key") == 1
        bad: list[tuple[object, ...]] = [
            (-1, -1, 1, "ingress", "put", "demo/a", "r"),  # time
            (4, -2, 1, "ingress", "put", "demo/a", "r"),  # cause
            (4, 1 << 63, 1, "ingress", "put", "demo/a", "r"),
            (4, -1, -1, "ingress", "put", "demo/a", "r"),  # link id
            (4, -1, 1 << 31, "ingress", "put", "demo/a", "r"),
            (4, -1, "1", "ingress", "put", "demo/a", "r"),
            (4, -1, 1, None, "put", "demo/a", "r"),  # strings
            (4, -1, 1, "ingress", b"put", "demo/a", "r"),
            (4, -1, 1, "ingress", "put", 7, "r"),
            (4, -1, 1, "ingress", "put", "demo/a", None),
        ]
        for args in bad:
            with pytest.raises(UsageError):
                rec.access_denied(*args)  # type: ignore[arg-type]
        assert rec.next_seq == 2  # nothing written, no seq spent
    assert [(r.seq, r.key) for r in read_records(tmp_path)] == [
        (0, "demo/a"),
        (1, None),
    ]


def test_link_json_round_trips_and_stays_bounded() -> None:
    from pyzenoh.recording import format as fmt

    for key in (None, "", "a/b", "\U0001f600" * 10_000, "\udcff\x00" * 9_000):
        data = fmt.link_json(
            5, "denied", 9, cause=4, reason="\U0001f600" * 10_000, flow="\x01" * 999, message="put", key=key
        )
        assert len(data) <= fmt.MAX_JSON_BYTES
        rec = fmt.parse_link(memoryview(data), 77)
        assert (rec.seq, rec.time_ns, rec.event, rec.link, rec.cause, rec.message) == (
            5,
            77,
            "denied",
            9,
            4,
            "put",
        )
        assert rec.key == (None if key is None else key[: fmt.MAX_DENIED_KEY_CHARS])
        assert rec.flow == "\x01" * fmt.MAX_DENIED_NAME_CHARS
        assert rec.reason == "\U0001f600" * fmt.MAX_DENIED_TEXT_CHARS


@pytest.mark.parametrize(
    "obj",
    [
        {"seq": 1, "event": "denied", "link": 2},  # no cause
        {"seq": 1, "event": "denied", "link": 2, "cause": -2},
        {"seq": 1, "event": "denied", "link": 2, "cause": 1 << 63},
        {"seq": 1, "event": "denied", "link": 2, "cause": "3"},
        {"seq": 1, "event": "denied", "link": 2, "cause": 1.5},
        {
            "seq": 1,
            "event": "renamed",
            "link": 2,
            "cause": 1,
        },  # unknown events stay refused
    ],
)
def test_parse_link_refuses_bad_denied_events(obj: dict[str, object]) -> None:
    import json

    from pyzenoh.recording import format as fmt

    with pytest.raises(DecodeError):
        fmt.parse_link(memoryview(json.dumps(obj).encode()), 0)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(1 << 64), 1 << 64) | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
_LINK_FIELDS = st.fixed_dictionaries(
    {},
    optional={
        "seq": st.integers(-2, (1 << 64)) | _JSON,
        "event": st.sampled_from(["open", "close", "denied", "x"]) | _JSON,
        "link": st.integers(-2, 1 << 32) | _JSON,
        "cause": st.integers(-3, 1 << 64) | _JSON,
        "reason": _JSON,
        "flow": _JSON,
        "message": _JSON,
        "key": _JSON,
        "zid": _JSON,
        "carried": _JSON,
    },
)


@pytest.mark.slow
@FUZZ
@given(obj=_LINK_FIELDS, junk=st.binary(max_size=8), mode=st.integers(0, 2))
def test_parse_link_raises_only_decode_error(obj: dict[str, object], junk: bytes, mode: int) -> None:
    import json

    from pyzenoh.recording import format as fmt

    data = json.dumps(obj).encode()
    if mode == 1:
        data = data[: len(junk)] + junk
    elif mode == 2:
        data = junk + data
    try:
        rec = fmt.parse_link(memoryview(data), 1)
    except DecodeError:
        return
    assert rec.event in fmt.LINK_EVENTS and 0 <= rec.link <= fmt.MAX_LINK_ID and 0 <= rec.seq <= fmt.MAX_SEQ
    assert (rec.cause is None) == (rec.event != "denied")
    assert rec.cause is None or -1 <= rec.cause <= fmt.MAX_SEQ
    for text in (rec.reason, rec.flow, rec.message, rec.key, rec.zid):
        assert text is None or isinstance(text, str)


def test_corrupted_segment_with_denials_raises_only_decode_error(
    tmp_path: Path,
) -> None:
    """Every single-byte change of a segment holding denials reads or raises DecodeError."""
    with Recorder(tmp_path / "src") as rec:
        rec.link_opened(1, 1, "aa", "client", "tcp/x:1")
        s = rec.message(2, 1, "rx", "vault/a", b"\x7d\x01")
        rec.access_denied(2, s, 1, "ingress", "put", "vault/a", "ingress put denied by rule 'v'")
    src = list_segments(tmp_path / "src")[0][1]
    blob = src.read_bytes()
    start = blob.index(b'"event":"denied"') - 40
    out = tmp_path / "out"
    out.mkdir()
    for i in range(start, start + 200):
        for value in (0, ord("}"), ord("9"), 0xFF):
            damaged = bytearray(blob)
            damaged[i] = value
            (out / src.name).write_bytes(bytes(damaged))
            try:
                for _ in read_records(out, verify=False):
                    pass
            except DecodeError:
                pass
