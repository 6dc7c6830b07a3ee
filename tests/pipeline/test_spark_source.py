"""The ``pyzenoh`` format through a real local SparkSession."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pyzenoh.recording import NetRecord, Recorder, read_records

pytestmark = pytest.mark.spark

SEC = 1_000_000_000
MS = 1_000_000


def _push(i: int) -> bytes:
    return b"\x7d\x00\x05k/abc\x01\x02" + i.to_bytes(2, "little")


def _write(rec: Recorder, start: int, n: int) -> None:
    for i in range(start, start + n):
        rec.message(i * MS, 1 + i % 3, "rx", f"k/{i % 5}", _push(i))


def test_batch_read(spark: Any, tmp_path: Path) -> None:
    with Recorder(tmp_path, max_segment_bytes=8_000) as rec:
        rec.link_opened(0, 1, "a1", "client", "tcp/x:1")
        _write(rec, 0, 500)
        rec.message(600 * MS, 1, "rx", "k/bad", b"\xff")
    df = spark.read.format("pyzenoh").load(str(tmp_path))
    assert df.columns[:6] == ["seg", "rec", "run", "seq", "time_ns", "timestamp"]
    assert df.count() == 501
    counts = {r["msg_type"]: r["count"] for r in df.groupBy("msg_type").count().collect()}
    assert counts == {"push": 500, "invalid": 1}
    row = df.where("seq = 1").first()
    assert row is not None
    assert (row["zid"], row["whatami"], row["key"], row["payload"]) == (
        "a1",
        "client",
        "k/0",
        b"\x00\x00",
    )
    assert row["timestamp"].year == 1970
    bad = df.where("msg_type = 'invalid'").first()
    assert bad is not None and bad["error"] and bad["raw"] == b"\xff"
    assert spark.read.format("pyzenoh").option("table", "links").load(str(tmp_path)).where("not carried").count() == 1


@pytest.mark.slow
def test_stream_max_records_and_available_now(spark: Any, tmp_path: Path) -> None:
    rec_dir = tmp_path / "rec"
    with Recorder(rec_dir, max_segment_bytes=8_000) as rec:
        _write(rec, 0, 450)
    query = (
        spark.readStream.format("pyzenoh")
        .option("maxRecordsPerTrigger", 100)
        .load(str(rec_dir))
        .writeStream.format("memory")
        .queryName("stream_limits")
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    sizes = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    assert sizes == [100, 100, 100, 100, 50]
    got = spark.sql("SELECT count(*) AS n, count(DISTINCT seq) AS d FROM stream_limits").first()
    assert (got["n"], got["d"]) == (450, 450)


@pytest.mark.slow
def test_stream_restarts_exactly_once_into_parquet(spark: Any, tmp_path: Path) -> None:
    rec_dir, out, ck = tmp_path / "rec", tmp_path / "out", tmp_path / "ck"

    def run(trigger: dict[str, Any]) -> None:
        query = (
            spark.readStream.format("pyzenoh")
            .option("maxRecordsPerTrigger", 100)
            .load(str(rec_dir))
            .select("seg", "rec", "seq", "key", "payload")
            .writeStream.format("parquet")
            .option("path", str(out))
            .option("checkpointLocation", str(ck))
            .trigger(**trigger)
            .start()
        )
        try:
            if trigger.get("availableNow"):
                query.awaitTermination(120)
            else:
                query.processAllAvailable()
        finally:
            query.stop()

    rec = Recorder(rec_dir, max_segment_bytes=8_000)
    _write(rec, 0, 150)
    rec.tick(150 * MS + SEC)  # write the pending chunk: the recording stays open
    run({"availableNow": True})
    _write(rec, 150, 200)  # the recording grows (and rotates) while no stream runs
    rec.tick(350 * MS + SEC)
    run({"processingTime": "50 milliseconds"})
    _write(rec, 350, 100)
    rec.close()
    run({"availableNow": True})
    run({"availableNow": True})  # nothing new: no duplicate either

    written = [r.seq for r in read_records(rec_dir) if isinstance(r, NetRecord)]
    assert len(written) == 450
    got = spark.read.parquet(str(out))
    stats = got.selectExpr("count(*) AS n", "count(DISTINCT seq) AS d", "min(seq) AS lo", "max(seq) AS hi").first()
    assert (stats["n"], stats["d"], stats["lo"], stats["hi"]) == (
        450,
        450,
        min(written),
        max(written),
    )
    assert sorted(r["seq"] for r in got.select("seq").collect()) == written
