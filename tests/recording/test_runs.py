"""A routed run recorded in one call writes the records of its messages routed one by one.

Two recorders (in process, and in a process of their own) get the same runs: one as
``routed_run`` calls, the other as one ``routed`` (and ``route``) call per message; the
recordings must read back equal, record for record, and valid for the mcap library.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyzenoh.recording import Recorder, read_records
from pyzenoh.recording.process import RecorderProcess
from pyzenoh.recording.runs import run_slices
from tests.hyp import examples

RUNS = examples(200, 40)


def split_ends(sizes: list[int]) -> list[int]:
    out, at = [], 0
    for n in sizes:
        at += n
        out.append(at)
    return out


@st.composite
def runs(
    draw: st.DrawFn,
) -> tuple[bytes, list[int] | range, list[tuple[int, bytes, list[int] | range]], list[int] | None]:
    n = draw(st.integers(1, 30))
    equal = draw(st.booleans())

    def blob(size_max: int) -> tuple[bytes, list[int] | range]:
        if equal:
            size = draw(st.integers(1, size_max))
            return bytes(i * 7 % 256 for i in range(n * size)), range(size, n * size + 1, size)
        sizes = [draw(st.integers(1, size_max)) for _ in range(n)]
        return b"".join(bytes([i % 251]) * s for i, s in enumerate(sizes)), split_ends(sizes)

    data, ends = blob(40)
    copies = []
    for link in draw(st.lists(st.integers(2, 9), max_size=4, unique=True)):
        d, e = blob(60)
        copies.append((link, d, e))
    expected = sorted([1, *(c[0] for c in copies)]) if draw(st.integers(0, 4)) == 0 else None
    return data, ends, copies, expected


def record_both(tmp: Path, cases: list, key: str | None) -> tuple[list, list]:  # type: ignore[type-arg]
    with Recorder(tmp / "run") as one, Recorder(tmp / "each") as each:
        for t, (data, ends, copies, expected) in enumerate(cases):
            now = 1_000 + t
            one.routed_run(now, 1, key, data, ends, copies, expected)
            sent = [(link, run_slices(d, e if isinstance(e, list) else e.step)) for link, d, e in copies]
            for i, raw in enumerate(run_slices(data, ends if isinstance(ends, list) else ends.step)):
                seq = each.routed(now, 1, key, raw, [(link, msgs[i]) for link, msgs in sent])
                if expected is not None and key is not None:
                    each.route(now, seq, key, expected)
    return list(read_records(tmp / "run")), list(read_records(tmp / "each"))


@RUNS
@given(st.lists(runs(), min_size=1, max_size=4), st.sampled_from(["demo/a", None]))
def test_a_run_records_what_its_messages_routed_one_by_one_record(cases: list, key: str | None) -> None:  # type: ignore[type-arg]
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        got, expected = record_both(Path(tmp), cases, key)
    assert got == expected


def test_a_recorder_process_writes_the_same(tmp_path: Path) -> None:
    data = b"".join(b"%04d" % i for i in range(500))
    copies = [(2, b"".join(b"tx%04d" % i for i in range(500)), range(6, 3001, 6)), (3, data, range(4, 2001, 4))]
    with RecorderProcess(tmp_path / "proc") as rec:
        ref = rec.routed_run(5, 1, "k/a", data, range(4, 2001, 4), copies)
        rec.message(6, 2, "tx", "k/a", b"after", cause=ref)
    with Recorder(tmp_path / "inproc") as rec2:
        seq = rec2.routed_run(5, 1, "k/a", data, range(4, 2001, 4), copies)
        rec2.message(6, 2, "tx", "k/a", b"after", cause=seq)
    got = list(read_records(tmp_path / "proc"))
    assert got == list(read_records(tmp_path / "inproc"))
    assert len([r for r in got if getattr(r, "direction", "") == "rx"]) == 500


def test_bad_runs_are_refused(tmp_path: Path) -> None:
    with Recorder(tmp_path) as rec:
        with pytest.raises(ValueError):
            rec.routed_run(1, 1, "k", b"abcde", 2, [])
        with pytest.raises(ValueError):
            rec.routed_run(1, 1, "k", b"abcd", 2, [(2, b"abc", 1)])
