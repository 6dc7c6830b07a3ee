"""Row extraction with the real codec (no JVM)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("pyarrow")
pytest.importorskip("pyspark")

from pyzenoh.codec.data import Consolidation, Del, Err, Put, Query, QueryBody, Reply
from pyzenoh.codec.network import (
    QOS_DECLARE,
    QOS_REQUEST,
    Declare,
    DeclareFinal,
    DeclareKeyExpr,
    DeclareQueryable,
    DeclareSubscriber,
    DeclareToken,
    Interest,
    InterestMode,
    InterestOptions,
    NetworkOam,
    Push,
    QueryTarget,
    Request,
    Response,
    ResponseFinal,
    UndeclareKeyExpr,
    UndeclareQueryable,
    UndeclareSubscriber,
    UndeclareToken,
    encode_network_message,
)
from pyzenoh.codec.primitives import (
    Encoding,
    EntityGlobalId,
    Timestamp,
    WireExpr,
    ZenohId,
)
from pyzenoh.pipeline import rows as R
from tests.hyp import FUZZ

ZID = ZenohId(0xC1C2C3C4C5C6C7C8)


def row_of(msg: object | bytes, key: str | None = "k/x", direction: str = "rx") -> dict[str, Any]:
    raw = msg if isinstance(msg, bytes) else encode_network_message(msg)  # type: ignore[arg-type]
    row = R.message_row(
        1,
        2,
        1,
        42,
        1_500_000_000_123_456_789,
        7,
        ("aa", "client", "tcp/x:1"),
        direction,
        -1,
        key,
        raw,
    )
    assert len(row) == len(R.MESSAGE_COLUMNS)
    return dict(zip(R.MESSAGE_COLUMNS, row, strict=True))


def test_position_and_link_columns() -> None:
    r = row_of(Push(WireExpr(0, "k/x"), Put(b"hi")))
    assert (r["seg"], r["rec"], r["run"], r["seq"]) == (1, 2, 1, 42)
    assert r["time_ns"] == 1_500_000_000_123_456_789 and r["timestamp"] == 1_500_000_000_123_456
    assert (r["link"], r["zid"], r["whatami"], r["remote"]) == (
        7,
        "aa",
        "client",
        "tcp/x:1",
    )
    assert (r["direction"], r["cause"]) == ("rx", -1)


def test_push_put_with_everything() -> None:
    ts = Timestamp.from_ns(1_700_000_000_500_000_000, ZID)
    msg = Push(
        WireExpr(3, "/b", mapping_sender=False),
        Put(
            b"hello",
            Encoding.from_str("text/plain;charset=utf-8"),
            ts,
            attachment=b"ATT",
        ),
        qos=0x1A,
    )
    r = row_of(msg, key="demo/a/b")
    assert (r["msg_type"], r["body_type"], r["key"]) == ("push", "put", "demo/a/b")
    assert (r["wire_scope"], r["wire_suffix"], r["wire_mapping_sender"]) == (
        3,
        "/b",
        False,
    )
    assert (r["priority"], r["congestion_block"], r["express"]) == (2, True, True)
    assert (r["payload"], r["payload_size"], r["encoding"]) == (
        b"hello",
        5,
        "text/plain;charset=utf-8",
    )
    assert r["attachment_size"] == 3
    assert abs(r["data_ts_ns"] - 1_700_000_000_500_000_000) < 2
    assert r["data_ts_id"] == str(ZID)
    assert r["error"] is None and r["raw"] is None


def test_push_del_and_unscoped_key_fallback() -> None:
    r = row_of(Push(WireExpr(0, "x/y"), Del()), key=None)
    assert (r["msg_type"], r["body_type"], r["payload_size"], r["key"]) == (
        "push",
        "del",
        0,
        "x/y",
    )


def test_request_query() -> None:
    msg = Request(
        9,
        WireExpr(0, "demo/**"),
        Query(
            Consolidation.NONE,
            "a=1;b=2",
            QueryBody(b"qb", Encoding.from_str("application/json")),
        ),
        qos=QOS_REQUEST,
        target=QueryTarget.ALL,
        budget=3,
        timeout_ms=5000,
    )
    r = row_of(msg, key="demo/**")
    assert (r["msg_type"], r["body_type"], r["request_id"]) == ("request", "query", 9)
    assert (r["target"], r["consolidation"], r["parameters"]) == (
        "all",
        "none",
        "a=1;b=2",
    )
    assert (r["budget"], r["timeout_ms"]) == (3, 5000)
    assert (r["payload"], r["encoding"]) == (b"qb", "application/json")


def test_responses_and_final() -> None:
    responder = EntityGlobalId(ZID, 6)
    reply = row_of(
        Response(
            1,
            WireExpr(0, "demo/q1"),
            Reply(Put(b"r")),
            QOS_REQUEST,
            responder=responder,
        )
    )
    assert (
        reply["msg_type"],
        reply["reply_kind"],
        reply["body_type"],
        reply["payload"],
    ) == (
        "response",
        "reply",
        "put",
        b"r",
    )
    assert (reply["responder_zid"], reply["responder_eid"], reply["request_id"]) == (
        str(ZID),
        6,
        1,
    )
    err = row_of(Response(2, WireExpr(0, "demo/q1"), Err(b"nope", Encoding.from_str("text/plain"))))
    assert (err["reply_kind"], err["body_type"], err["payload"], err["encoding"]) == (
        "err",
        "err",
        b"nope",
        "text/plain",
    )
    fin = row_of(ResponseFinal(5, qos=QOS_REQUEST), key=None)
    assert (fin["msg_type"], fin["request_id"], fin["key"]) == (
        "response_final",
        5,
        None,
    )


@pytest.mark.parametrize(
    ("body", "body_type", "kind", "op", "eid"),
    [
        (DeclareKeyExpr(1, WireExpr(0, "demo")), "d_keyexpr", "keyexpr", "declare", 1),
        (UndeclareKeyExpr(1), "u_keyexpr", "keyexpr", "undeclare", 1),
        (
            DeclareSubscriber(2, WireExpr(1, "/**")),
            "d_subscriber",
            "subscriber",
            "declare",
            2,
        ),
        (UndeclareSubscriber(2), "u_subscriber", "subscriber", "undeclare", 2),
        (
            DeclareQueryable(3, WireExpr(0, "q"), complete=True, distance=2),
            "d_queryable",
            "queryable",
            "declare",
            3,
        ),
        (UndeclareQueryable(3), "u_queryable", "queryable", "undeclare", 3),
        (DeclareToken(4, WireExpr(0, "t")), "d_token", "token", "declare", 4),
        (UndeclareToken(4), "u_token", "token", "undeclare", 4),
        (DeclareFinal(), "d_final", "final", "final", None),
    ],
)
def test_declarations(body: object, body_type: str, kind: str, op: str, eid: int | None) -> None:
    r = row_of(Declare(body, interest_id=4, qos=QOS_DECLARE), key=None)  # type: ignore[arg-type]
    assert (r["msg_type"], r["body_type"], r["decl_kind"], r["decl_op"]) == (
        "declare",
        body_type,
        kind,
        op,
    )
    assert (r["entity_id"], r["interest_id"]) == (eid, 4)
    if isinstance(body, DeclareQueryable):
        assert (r["queryable_complete"], r["queryable_distance"]) == (True, 2)


def test_interest_and_oam() -> None:
    msg = Interest(
        4,
        InterestMode.CURRENT_FUTURE,
        InterestOptions.KEYEXPRS | InterestOptions.TOKENS,
        WireExpr(1, "/**"),
        qos=QOS_DECLARE,
    )
    r = row_of(msg)
    assert (
        r["msg_type"],
        r["interest_id"],
        r["interest_mode"],
        r["interest_options"],
    ) == (
        "interest",
        4,
        "current_future",
        0x09,
    )
    assert row_of(Interest(4, InterestMode.FINAL), key=None)["interest_mode"] == "final"
    oam = row_of(NetworkOam(1, b"\x00"), key=None)
    assert (oam["msg_type"], oam["oam_id"], oam["payload"]) == ("oam", 1, b"\x00")


def test_captured_bytes_decode() -> None:
    # zenoh-wire.md 3.2: PUSH(N, M) key=[1]+"/b", PUT "world"; 3.3: REQUEST with timeout 5000.
    r = row_of(bytes.fromhex("7d01022f620105776f726c64"), key="demo/b")
    assert (r["msg_type"], r["wire_scope"], r["wire_suffix"], r["payload"]) == (
        "push",
        1,
        "/b",
        b"world",
    )
    q = row_of(bytes.fromhex("fc0101032f2a2aa10d268827" + "2303"), key="demo/**")
    assert (q["msg_type"], q["request_id"], q["timeout_ms"], q["consolidation"]) == (
        "request",
        1,
        5000,
        "latest",
    )


def test_invalid_bytes_become_an_invalid_row() -> None:
    r = row_of(b"\x7d\xff", key="demo/bad")
    assert r["msg_type"] == "invalid"
    assert r["error"] and r["raw"] == b"\x7d\xff" and r["raw_size"] == 2
    assert (r["key"], r["link"], r["seq"]) == ("demo/bad", 7, 42)
    empty = row_of(b"", key=None)
    assert empty["msg_type"] == "invalid" and empty["raw"] == b""


@FUZZ
@given(st.binary(max_size=64))
def test_any_bytes_give_a_row(raw: bytes) -> None:
    r = row_of(raw)
    assert r["msg_type"] in {
        "push",
        "request",
        "response",
        "response_final",
        "declare",
        "interest",
        "oam",
        "invalid",
    }
    assert (r["msg_type"] == "invalid") == (r["error"] is not None)


def test_batches_match_the_spark_schema_exactly() -> None:
    pa = pytest.importorskip("pyarrow")
    schema = R.arrow_schema(R.MESSAGES_DDL)
    rows = [tuple(row_of(Push(WireExpr(0, "k"), Put(bytes([i])))).values()) for i in range(5)] + [
        tuple(row_of(b"\x00").values())
    ]
    (batch,) = R.rows_to_batches(iter(rows), schema)
    assert isinstance(batch, pa.RecordBatch) and batch.schema == schema and batch.num_rows == 6
    assert str(schema.field("timestamp").type) == "timestamp[us, tz=UTC]"
    routes = list(
        R.rows_to_batches(
            iter([R.route_row(1, 0, 1, 5, 10, 3, "k", [2, 4])]),
            R.arrow_schema(R.ROUTES_DDL),
        )
    )
    assert routes[0].column("expected_links").to_pylist() == [[2, 4]]
    assert list(R.rows_to_batches(iter([]), schema)) == []
    small = list(R.rows_to_batches(iter(rows), schema, batch_rows=4))
    assert [b.num_rows for b in small] == [4, 2]
