"""The ``samples`` table (:mod:`pyzenoh.pipeline.samples`): one row per published sample,
not one per link it crossed; its HLC timestamp from the router's copies; typed payload
columns. The rules on synthetic recordings, then real eclipse-zenoh 1.10.2 traffic through
a recording ``pyzenoh router`` read with Spark."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import zenoh
from hypothesis import given
from hypothesis import strategies as st

from pyzenoh.codec import Del, Encoding, Push, Put, Timestamp, WireExpr, ZenohId, encode_network_message
from pyzenoh.pipeline.rows import SAMPLES_DDL, ddl_columns, ntp64_to_ns
from pyzenoh.pipeline.samples import SampleRows, typed_values
from pyzenoh.recording import NetRecord
from tests.fixtures.pyzenoh_router import run_router, zenoh_config
from tests.hyp import FUZZ
from tests.waits import routed, until

COLUMNS = ddl_columns(SAMPLES_DDL)
TS = Timestamp(0x6000_0000_0000_0001, ZenohId(0xAB))
CLIENT = ("c1", "client", "tcp/127.0.0.1:1")
ROUTER = ("r2", "router", "tcp/127.0.0.1:2")


def _row(values: tuple[Any, ...]) -> dict[str, Any]:
    return dict(zip(COLUMNS, values, strict=True))


def _push(key: str, body: Put | Del) -> bytes:
    return encode_network_message(Push(WireExpr(0, key), body))


def _feed(records: list[tuple[NetRecord, tuple[str, str, str] | None]]) -> list[dict[str, Any]]:
    rows = SampleRows(seg=0, run=0)
    out = [rows.on_record(i, rec, info, True) for i, (rec, info) in enumerate(records)]
    return [_row(r) for r in [*out, rows.finish()] if r is not None]


def test_one_row_per_sample_with_the_routers_timestamp() -> None:
    put = Put(b"21.5", encoding=Encoding.from_str("application/json"), attachment=b"meta")
    stamped = Put(b"21.5", encoding=Encoding.from_str("application/json"), attachment=b"meta", timestamp=TS)
    rows = _feed(
        [
            (NetRecord(10, 1000, 1, "rx", "t/a", _push("t/a", put), -1), CLIENT),
            (NetRecord(11, 1001, 2, "tx", "t/a", _push("t/a", stamped), 10), ROUTER),
            (NetRecord(12, 1002, 3, "tx", "t/a", _push("t/a", stamped), 10), CLIENT),
            (NetRecord(13, 2000, 1, "rx", "t/a", _push("t/a", Del()), -1), CLIENT),
        ]
    )
    assert [(r["seq"], r["key"], r["kind"]) for r in rows] == [(10, "t/a", "put"), (13, "t/a", "delete")]
    first = rows[0]
    assert (first["hlc_ns"], first["hlc_id"]) == (ntp64_to_ns(TS.time), str(TS.id))
    assert (first["publisher_zid"], first["publisher_whatami"], first["attachment"]) == ("c1", "client", b"meta")
    assert (first["value_json"], first["value_number"], first["value_text"]) == ("21.5", 21.5, "21.5")
    assert rows[1]["hlc_ns"] is None  # a DELETE nobody received: no copy carried a stamp


def test_a_hop_from_another_router_is_not_a_sample() -> None:
    rows = _feed([(NetRecord(1, 5, 2, "rx", "t/a", _push("t/a", Put(b"x", timestamp=TS)), -1), ROUTER)])
    assert rows == []


def test_rows_belong_to_the_reader_of_their_rx_record() -> None:
    rows = SampleRows(0, 0)
    rec = NetRecord(1, 5, 1, "rx", "t/a", _push("t/a", Put(b"x")), -1)
    assert rows.on_record(0, rec, CLIENT, in_window=False) is None
    assert rows.finish() is None  # outside the window: another slice's row


def test_typed_values() -> None:
    assert typed_values("application/json", b'{"t": 1}') == ('{"t": 1}', '{"t": 1}', None)
    assert typed_values("application/json", b"-3") == ("-3", "-3", -3.0)
    assert typed_values("application/json", b"true") == ("true", "true", None)  # a bool is no number
    assert typed_values("text/plain;charset=utf-8", b" 4.25\n") == (" 4.25\n", None, 4.25)
    assert typed_values("zenoh/string", b"hello") == ("hello", None, None)
    assert typed_values("zenoh/bytes", b"\x00\x01") == (None, None, None)
    assert typed_values("text/plain", b"\xff") == (None, None, None)  # not UTF-8
    assert typed_values("application/json", b"{") == ("{", None, None)  # not JSON
    assert typed_values("text/plain", b"nan") == ("nan", None, None)


@FUZZ
@given(st.text(max_size=40), st.binary(max_size=64))
def test_typed_values_never_raise(encoding: str, payload: bytes) -> None:
    typed_values(encoding, payload)


@pytest.mark.spark
@pytest.mark.interop
def test_samples_of_real_traffic_through_spark(spark: Any, tmp_path: Path) -> None:
    rec = tmp_path / "rec"
    with run_router(tmp_path, "--record", str(rec)) as router:
        with (
            zenoh.open(zenoh_config(router.endpoint)) as sub_s,
            zenoh.open(zenoh_config(router.endpoint)) as sub2_s,
            zenoh.open(zenoh_config(router.endpoint)) as pub_s,
        ):
            seen: list[Any] = []
            subs = [sub_s.declare_subscriber("sm/**", seen.append), sub2_s.declare_subscriber("sm/**", lambda _: None)]
            routed(pub_s, "sm/probe")
            pub_s.put("sm/temp", b"21.5", encoding="application/json", attachment=b"meta")
            pub_s.put("sm/name", "kitchen", encoding="text/plain")
            pub_s.delete("sm/temp")
            assert until(lambda: len(seen) >= 3), "the subscriber did not get the samples"
            for s in subs:
                s.undeclare()
        router.stop()
    df = spark.read.format("pyzenoh").option("table", "samples").load(str(rec)).where("key like 'sm/%'")
    rows = {(r["key"], r["kind"]): r for r in df.collect()}
    # each sample once, though the router sent it to two subscribers
    assert sorted(rows) == [("sm/name", "put"), ("sm/temp", "delete"), ("sm/temp", "put")]
    temp = rows[("sm/temp", "put")]
    assert (temp["value_json"], temp["value_number"], temp["attachment"]) == ("21.5", 21.5, b"meta")
    assert rows[("sm/name", "put")]["value_text"] == "kitchen"
    assert temp["publisher_whatami"] == "client"
    # the HLC timestamp is the one the subscribers got
    got = {str(s.key_expr): s.timestamp for s in seen if s.kind == zenoh.SampleKind.PUT}
    assert temp["hlc_id"] is not None and temp["hlc_id"] == str(got["sm/temp"].get_id())
    messages = spark.read.format("pyzenoh").load(str(rec)).where("key = 'sm/temp' and msg_type = 'push'")
    assert messages.count() > 2  # the messages table holds the copies the samples table folds


@pytest.mark.parametrize("per_slice", [1, 2, 7])
def test_rows_do_not_depend_on_the_slicing(tmp_path: Path, per_slice: int) -> None:
    # what gives streams their exactly-once samples: cut anywhere, the same rows once each
    from pyzenoh.pipeline.source import advance, catalog_for, earliest, plan_slices, sample_rows
    from pyzenoh.recording import Recorder
    from pyzenoh.recording import format as fmt

    with Recorder(tmp_path, max_segment_bytes=2_000) as rec:
        rec.link_opened(0, 1, "c1", "client", "tcp/x:1")
        rec.link_opened(0, 2, "r2", "router", "tcp/x:2")
        for i in range(40):
            put = Put(b"%d" % i, encoding=Encoding.from_str("text/plain"))
            seq = rec.message(1000 + i, 1 if i % 4 else 2, "rx", f"t/{i}", _push(f"t/{i}", put))
            stamped = Put(put.payload, encoding=put.encoding, timestamp=Timestamp(TS.time + i, TS.id))
            rec.message(1000 + i, 3, "tx", f"t/{i}", _push(f"t/{i}", stamped), cause=seq)
    catalog = catalog_for(str(tmp_path))
    segments = catalog.refresh()
    start = earliest(segments)
    end = advance(segments, fmt.CH_NET, start)

    def rows(max_records: int) -> list[tuple[Any, ...]]:
        slices = plan_slices(catalog, segments, fmt.CH_NET, start, end, max_records)
        return [row for part in slices for row in sample_rows(part)]

    whole, cut = rows(10_000), rows(per_slice)
    assert cut == whole
    assert len(segments) > 1 and len(whole) == 30  # every 4th came from a router: a hop
    assert [_row(r)["value_number"] for r in whole][:3] == [1.0, 2.0, 3.0]
