"""``export_table``: the Spark tasks write Parquet themselves; the result must be exactly
the table the ``pyzenoh`` source gives, and the output is replaced only on success."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from pyzenoh.pipeline.synth import generate
from pyzenoh.recording import Recorder
from tests.pipeline import scenario

pytestmark = pytest.mark.spark


def _assert_same_table(spark: Any, exported: Path, recording: Path, table: str) -> None:
    a = spark.read.parquet(str(exported))
    # (cached: the recording is decoded once for the three comparisons, not three times)
    b = spark.read.format("pyzenoh").option("table", table).load(str(recording)).cache()
    try:
        assert a.schema == b.schema
        assert a.count() == b.count()
        assert a.exceptAll(b).count() == 0
        assert b.exceptAll(a).count() == 0
    finally:
        b.unpersist()


@pytest.mark.slow
@pytest.mark.parametrize("table", ["messages", "links", "routes"])
def test_scenario_tables_equal_the_source(spark: Any, tmp_path: Path, table: str) -> None:
    from pyzenoh.pipeline.export import export_table

    scenario.build(tmp_path / "rec", max_segment_bytes=4_000)
    out = tmp_path / "out" / table
    rows = export_table(spark, tmp_path / "rec", out, table, partition_records=7)
    assert rows > 0
    _assert_same_table(spark, out, tmp_path / "rec", table)
    assert (out / "_SUCCESS").exists()
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [table]  # no staging


@pytest.mark.slow
def test_generated_recording_with_a_torn_segment(spark: Any, tmp_path: Path) -> None:
    from pyzenoh.pipeline.export import export_table

    rec = tmp_path / "rec"
    generate(rec, 15_000, max_segment_bytes=200_000)
    last = max(rec.glob("seg-*.mcap"))
    with open(last, "r+b") as f:  # a crash tore the last chunk
        f.truncate(os.path.getsize(last) - 3_000)
    out = tmp_path / "messages"
    rows = export_table(spark, rec, out, partition_records=2_000)
    assert len(list(out.glob("part-*.parquet"))) > 2
    assert spark.read.parquet(str(out)).count() == rows
    _assert_same_table(spark, out, rec, "messages")


def test_an_empty_table_is_still_a_readable_table(spark: Any, tmp_path: Path) -> None:
    from pyzenoh.pipeline.export import export_table
    from pyzenoh.pipeline.rows import MESSAGE_COLUMNS

    with Recorder(tmp_path / "rec") as rec:
        rec.link_opened(0, 1, "a1", "client", "tcp/127.0.0.1:1")
    out = tmp_path / "messages"
    assert export_table(spark, tmp_path / "rec", out) == 0
    df = spark.read.parquet(str(out))
    assert df.columns == MESSAGE_COLUMNS and df.count() == 0


def test_overwrite_and_a_failed_job_keeps_the_old_output(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pyzenoh.pipeline.export import export_table

    rec = tmp_path / "rec"
    generate(rec, 5_000, max_segment_bytes=100_000)
    out = tmp_path / "messages"
    first = export_table(spark, rec, out, partition_records=1_000)
    files = sorted(p.name for p in out.iterdir())
    assert export_table(spark, rec, out, partition_records=1_000) == first
    assert sorted(p.name for p in out.iterdir()) == files

    # A segment that vanishes after planning: a task fails, so the job does.
    from pyzenoh.pipeline import source

    real_plan = source.plan_slices

    def plan_then_lose_a_segment(*args: Any, **kwargs: Any) -> Any:
        slices = real_plan(*args, **kwargs)
        os.rename(slices[-1].path, str(tmp_path / "moved.mcap"))
        return slices

    monkeypatch.setattr(source, "plan_slices", plan_then_lose_a_segment)
    with pytest.raises(Exception, match="No such file|FileNotFoundError"):
        export_table(spark, rec, out, partition_records=1_000)
    assert sorted(p.name for p in out.iterdir()) == files
    assert spark.read.parquet(str(out)).count() == first
    assert not [p for p in tmp_path.iterdir() if "staging" in p.name]


def test_write_batches_leaves_nothing_when_decoding_fails(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pyzenoh.pipeline.export import write_batches

    schema = pa.schema([("x", pa.int64())])

    def batches() -> Any:
        yield pa.RecordBatch.from_pylist([{"x": 1}], schema=schema)
        raise ValueError("decoder gave up")

    with pytest.raises(ValueError):
        write_batches(batches(), schema, str(tmp_path / "part-00000.parquet"))
    assert list(tmp_path.iterdir()) == []
    assert write_batches(iter(()), schema, str(tmp_path / "p.parquet")) == 0
    assert pq.read_table(tmp_path / "p.parquet").num_rows == 0
