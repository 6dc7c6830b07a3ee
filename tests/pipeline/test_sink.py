"""The ``pyzenoh`` sink against a real eclipse-zenoh 1.10.2 router and subscriber."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pyzenoh.recording import Recorder

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
WAIT_S = 60.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _client(endpoint: str) -> Any:
    conf = zenoh.Config()
    conf.insert_json5("mode", '"client"')
    conf.insert_json5("connect/endpoints", json.dumps([endpoint]))
    conf.insert_json5("scouting/multicast/enabled", "false")
    return zenoh.open(conf)


class Collector:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.samples: list[tuple[str, bytes, str]] = []

    def __call__(self, sample: Any) -> None:
        with self.lock:
            self.samples.append(
                (str(sample.key_expr), sample.payload.to_bytes(), str(sample.encoding))
            )

    def matching(self, prefix: str) -> list[tuple[str, bytes, str]]:
        with self.lock:
            return [s for s in self.samples if s[0].startswith(prefix)]

    def wait_for(self, prefix: str, n: int) -> list[tuple[str, bytes, str]]:
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline and len(self.matching(prefix)) < n:
            time.sleep(0.05)
        return self.matching(prefix)


@pytest.fixture(scope="module")
def router() -> Iterator[str]:
    endpoint = f"tcp/127.0.0.1:{_free_port()}"
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
    session = _client(router)
    sub = session.declare_subscriber("**", collector)
    try:
        # The subscription has reached the router once a probe comes back through it.
        probe = _client(router)
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


def test_batch_write_publishes_every_row(
    spark: Any, router: str, subscriber: Collector
) -> None:
    rows = [
        (f"sink/batch/{i}", f"value-{i}".encode(), "text/plain") for i in range(200)
    ]
    rows.append((None, b"skipped", None))  # type: ignore[arg-type]
    df = spark.createDataFrame(
        rows, "key STRING, payload BINARY, encoding STRING"
    ).repartition(2)
    df.write.format("pyzenoh").option("connect", router).mode("append").save()
    got = subscriber.wait_for("sink/batch/", 200)
    assert sorted(got) == sorted(
        (k, p, "text/plain") for k, p, _ in rows if k is not None
    )


def test_string_payload_and_custom_columns(
    spark: Any, router: str, subscriber: Collector
) -> None:
    df = spark.createDataFrame([("sink/str/a", "hello")], "topic STRING, body STRING")
    (
        df.write.format("pyzenoh")
        .option("connect", router)
        .option("keyColumn", "topic")
        .option("payloadColumn", "body")
        .mode("append")
        .save()
    )
    assert subscriber.wait_for("sink/str/", 1) == [
        ("sink/str/a", b"hello", "zenoh/bytes")
    ]


def test_missing_options_are_reported(spark: Any, router: str) -> None:
    df = spark.createDataFrame([("k", b"v")], "key STRING, payload BINARY")
    with pytest.raises(Exception, match="connect"):
        df.write.format("pyzenoh").mode("append").save()
    with pytest.raises(Exception, match="payload"):
        df.select("key").write.format("pyzenoh").option("connect", router).mode(
            "append"
        ).save()


def test_stream_replays_a_recording_onto_the_bus(
    spark: Any, router: str, subscriber: Collector, tmp_path: Path
) -> None:
    rec_dir = tmp_path / "rec"
    with Recorder(rec_dir, max_segment_bytes=8_000) as rec:
        for i in range(120):
            key = f"replay/{i % 4}"
            raw = (
                b"\x7d\x00"
                + bytes([len(key)])
                + key.encode()
                + b"\x41\x0a"
                + bytes([2])
                + i.to_bytes(2, "little")
            )
            rec.message(i * 1_000_000, 1, "rx", key, raw)
            rec.message(i * 1_000_000, 2, "tx", key, raw, cause=i)
    query = (
        spark.readStream.format("pyzenoh")
        .option("maxRecordsPerTrigger", 100)
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
    assert sorted(got) == sorted(
        (f"replay/{i % 4}", i.to_bytes(2, "little"), "application/json")
        for i in range(120)
    )
