"""The ``pyzenoh`` sink against a real eclipse-zenoh 1.10.2 router and subscriber."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pyzenoh.recording import Recorder
from tests.fixtures.procs import Proc
from tests.pipeline.zenoh_helpers import WAIT_S, Collector, client

zenoh = pytest.importorskip("zenoh")
pytestmark = [pytest.mark.spark, pytest.mark.interop]


@pytest.fixture(scope="module")
def subscriber(zenohd: Proc) -> Iterator[Collector]:
    collector = Collector()
    session = client(zenohd.endpoint)
    sub = session.declare_subscriber("**", collector)
    try:
        # The subscription has reached the router once a probe comes back through it.
        probe = client(zenohd.endpoint)
        try:
            deadline = time.monotonic() + WAIT_S
            while time.monotonic() < deadline and not collector.matching("probe/"):
                probe.put("probe/x", b"p")
                time.sleep(0.1)
        finally:
            probe.close()
        assert collector.matching("probe/")
        yield collector
    finally:
        sub.undeclare()
        session.close()


@pytest.mark.slow
def test_batch_write_publishes_every_row(spark: Any, zenohd: Proc, subscriber: Collector) -> None:
    rows = [(f"sink/batch/{i}", f"value-{i}".encode(), "text/plain") for i in range(200)]
    rows.append((None, b"skipped", None))  # type: ignore[arg-type]
    df = spark.createDataFrame(rows, "key STRING, payload BINARY, encoding STRING").repartition(2)
    df.write.format("pyzenoh").option("connect", zenohd.endpoint).mode("append").save()
    got = subscriber.wait_for("sink/batch/", 200)
    assert sorted(got) == sorted((k, p, "text/plain") for k, p, _ in rows if k is not None)


def test_string_payload_and_custom_columns(spark: Any, zenohd: Proc, subscriber: Collector) -> None:
    df = spark.createDataFrame([("sink/str/a", "hello")], "topic STRING, body STRING")
    (
        df.write.format("pyzenoh")
        .option("connect", zenohd.endpoint)
        .option("keyColumn", "topic")
        .option("payloadColumn", "body")
        .mode("append")
        .save()
    )
    assert subscriber.wait_for("sink/str/", 1) == [("sink/str/a", b"hello", "zenoh/bytes")]


def test_missing_options_are_reported(spark: Any, zenohd: Proc) -> None:
    df = spark.createDataFrame([("k", b"v")], "key STRING, payload BINARY")
    with pytest.raises(Exception, match="connect"):
        df.write.format("pyzenoh").mode("append").save()
    with pytest.raises(Exception, match="payload"):
        df.select("key").write.format("pyzenoh").option("connect", zenohd.endpoint).mode("append").save()


@pytest.mark.slow
def test_stream_replays_a_recording_onto_the_bus(
    spark: Any, zenohd: Proc, subscriber: Collector, tmp_path: Path
) -> None:
    rec_dir = tmp_path / "rec"
    with Recorder(rec_dir, max_segment_bytes=8_000) as rec:
        for i in range(120):
            key = f"replay/{i % 4}"
            raw = b"\x7d\x00" + bytes([len(key)]) + key.encode() + b"\x41\x0a" + bytes([2]) + i.to_bytes(2, "little")
            rec.message(i * 1_000_000, 1, "rx", key, raw)
            rec.message(i * 1_000_000, 2, "tx", key, raw, cause=i)
    query = (
        spark.readStream.format("pyzenoh")
        .option("maxRecordsPerTrigger", 160)  # two micro-batches
        .load(str(rec_dir))
        .where("msg_type = 'push' AND direction = 'rx'")
        .select("key", "payload", "encoding")
        .writeStream.format("pyzenoh")
        .option("connect", zenohd.endpoint)
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    got = subscriber.wait_for("replay/", 120)
    assert sorted(got) == sorted((f"replay/{i % 4}", i.to_bytes(2, "little"), "application/json") for i in range(120))
