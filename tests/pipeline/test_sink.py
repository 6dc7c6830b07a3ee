"""The ``pyzenoh`` sink against a real eclipse-zenoh 1.10.2 router and subscriber."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pyzenoh.localnet import free_port
from pyzenoh.recording import Recorder
from tests.pipeline.zenoh_helpers import WAIT_S, Collector, client

zenoh = pytest.importorskip("zenoh")
pytestmark = [pytest.mark.spark, pytest.mark.interop]

ROUTER_SCRIPT = """
import json, sys, zenoh
conf = zenoh.Config()
conf.insert_json5("mode", '"router"')
conf.insert_json5("listen/endpoints", json.dumps([sys.argv[1]]))
conf.insert_json5("scouting/multicast/enabled", "false")
session = zenoh.open(conf)
print("ready", flush=True)
sys.stdin.read()  # runs until the test closes our stdin
session.close()
"""


@pytest.fixture(scope="module")
def router() -> Iterator[str]:
    endpoint = f"tcp/127.0.0.1:{free_port()}"
    proc = subprocess.Popen(
        [sys.executable, "-c", ROUTER_SCRIPT, endpoint],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        yield endpoint
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@pytest.fixture(scope="module")
def subscriber(router: str) -> Iterator[Collector]:
    collector = Collector()
    session = client(router)
    sub = session.declare_subscriber("**", collector)
    try:
        # The subscription has reached the router once a probe comes back through it.
        probe = client(router)
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
def test_batch_write_publishes_every_row(spark: Any, router: str, subscriber: Collector) -> None:
    rows = [(f"sink/batch/{i}", f"value-{i}".encode(), "text/plain") for i in range(200)]
    rows.append((None, b"skipped", None))  # type: ignore[arg-type]
    df = spark.createDataFrame(rows, "key STRING, payload BINARY, encoding STRING").repartition(2)
    df.write.format("pyzenoh").option("connect", router).mode("append").save()
    got = subscriber.wait_for("sink/batch/", 200)
    assert sorted(got) == sorted((k, p, "text/plain") for k, p, _ in rows if k is not None)


def test_string_payload_and_custom_columns(spark: Any, router: str, subscriber: Collector) -> None:
    df = spark.createDataFrame([("sink/str/a", "hello")], "topic STRING, body STRING")
    (
        df.write.format("pyzenoh")
        .option("connect", router)
        .option("keyColumn", "topic")
        .option("payloadColumn", "body")
        .mode("append")
        .save()
    )
    assert subscriber.wait_for("sink/str/", 1) == [("sink/str/a", b"hello", "zenoh/bytes")]


def test_missing_options_are_reported(spark: Any, router: str) -> None:
    df = spark.createDataFrame([("k", b"v")], "key STRING, payload BINARY")
    with pytest.raises(Exception, match="connect"):
        df.write.format("pyzenoh").mode("append").save()
    with pytest.raises(Exception, match="payload"):
        df.select("key").write.format("pyzenoh").option("connect", router).mode("append").save()


@pytest.mark.slow
def test_stream_replays_a_recording_onto_the_bus(
    spark: Any, router: str, subscriber: Collector, tmp_path: Path
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
        .option("connect", router)
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    got = subscriber.wait_for("replay/", 120)
    assert sorted(got) == sorted((f"replay/{i % 4}", i.to_bytes(2, "little"), "application/json") for i in range(120))
